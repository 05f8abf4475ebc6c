"""What the training rules read of a model graph that keeps its optimizer: the dense stack its
loss trains, its output layer, the form of a hand-written log loss on that output, whether the
loss is a squared error, and the box of the features the first layer reads.

These are the facts the source rules read from code (``rules/training*.py``): the same
training recipes (``verify/training_*.py``) replay them.  Read from the ops, by their
registry names: a dense layer is a ``MatMul`` by a 2-D weight constant, then an optional bias
(an ``Add``/``BiasAdd`` of a 1-D constant), then an optional activation (a unary op the
registry names, e.g. ``relu``, ``sigmoid``); the stack ends at the first op that is none of
these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from .. import intervals as iv
from .inputs import DEFAULT_WHY, consumers
from .patterns import EPSILON_MAX, passthrough
from .ranges import Box, const_value
from .training import Training

_BIAS_OPS = ("Add", "AddV2", "BiasAdd")
_CLIPS = ("ClipByValue", "Maximum", "Minimum")


@dataclass
class Layer:
    fan_in: int
    units: int
    bias: bool
    activation: str  # the registry name, "linear" without one
    output: tf.Tensor = field(repr=False)
    probability: bool = False  # the activation's output is a probability (registry fact)


def _weight(t: tf.Tensor) -> np.ndarray | None:
    while t.op.type in ("Identity", "ReadVariableOp") and t.op.inputs:
        t = t.op.inputs[0]
    return const_value(t.op)


def _only(t: tf.Tensor, training: Training) -> tf.Operation | None:
    """The one op on the loss's path that reads ``t`` (through casts and identities)."""
    users = [op for op in consumers(t) if training.reads(op)]
    return users[0] if len(users) == 1 else None


_SCALING = ("Cast", "Identity", "Mul", "RealDiv", "Add", "AddV2", "Sub")


def features_of(x: tf.Tensor, training: Training) -> tf.Tensor:
    """What the first layer reads of input ``x``: through casts and constant scalings (a
    Rescaling, a Normalization's ``(x - mean) / std``), on the loss's path."""
    t = x
    while True:
        op = _only(t, training)
        if op is None or op.type not in _SCALING:
            return t
        if sum(_weight(i) is None for i in op.inputs) != 1:  # t, and constants
            return t
        t = op.outputs[0]


def dense_stack(x: tf.Tensor, training: Training) -> list[Layer]:
    """The dense layers the loss trains from ``x`` (what the first one reads) on, in order."""
    layers: list[Layer] = []
    t = x
    while True:
        op = _only(t, training)
        if op is None or op.type != "MatMul" or op.get_attr("transpose_b"):
            return layers
        w = _weight(op.inputs[1])
        if w is None or w.ndim != 2 or passthrough(op.inputs[0]).op != passthrough(t).op:
            return layers
        out, bias = op.outputs[0], False
        nxt = _only(out, training)
        if nxt is not None and nxt.type in _BIAS_OPS:
            b = next((_weight(i) for i in nxt.inputs if _weight(i) is not None), None)
            if b is not None and b.ndim == 1:
                out, bias, nxt = nxt.outputs[0], True, _only(nxt.outputs[0], training)
        activation, probability = "linear", False
        entry = iv.tables().ops.get(nxt.type) if nxt is not None else None
        if nxt is not None and entry is not None and len(nxt.inputs) == 1 and _activates(entry):
            activation, out, probability = entry.name, nxt.outputs[0], entry.probability
        layers.append(Layer(int(w.shape[0]), int(w.shape[1]), bias, activation, out, probability))
        t = out


def _activates(entry: Any) -> bool:
    """An elementwise activation the training recipes rebuild (Keras names it the same)."""
    try:
        import keras

        keras.activations.get(entry.name)
    except (ValueError, TypeError):
        return False
    return True


def log_loss(t: tf.Tensor, training: Training) -> dict[str, Any] | None:
    """The hand-written log loss on probabilities ``t``: ``log(p)`` (form ``log``),
    ``log(p + eps)`` (``log_eps``) or ``log(clip(p, eps, 1 - eps))`` (``clip``)."""
    for op in consumers(t):
        if not training.reads(op):
            continue
        if op.type == "Log":
            return {"form": "log", "eps": None}
        if op.type in _BIAS_OPS and len(op.inputs) == 2:
            eps = _small(op)
            if eps is not None and any(u.type == "Log" for u in consumers(op.outputs[0])):
                return {"form": "log_eps", "eps": eps}
        if op.type in _CLIPS:
            eps = _small(op) if op.type != "ClipByValue" else _scalar(op.inputs[1])
            if _reaches_log(op.outputs[0], 2):
                return {"form": "clip", "eps": eps}
    return None


def _scalar(t: tf.Tensor) -> float | None:
    value = _weight(t)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def _small(op: tf.Operation) -> float | None:
    for i in op.inputs:
        c = _scalar(i)
        if c is not None and 0 < c <= EPSILON_MAX:
            return c
    return None


def _reaches_log(t: tf.Tensor, depth: int) -> bool:
    for op in consumers(t):
        if op.type == "Log":
            return True
        if depth > 1 and op.type in _CLIPS and _reaches_log(op.outputs[0], depth - 1):
            return True
    return False


def squared_error(training: Training, output: tf.Tensor) -> bool:
    """The loss is a squared error of the stack's output: a ``Square`` of a difference with
    the output on one side, or a ``SquaredDifference`` that reads it."""
    for op in consumers(output):
        if not training.reads(op):
            continue
        if op.type == "SquaredDifference":
            return True
        if op.type == "Sub" and any(u.type == "Square" for u in consumers(op.outputs[0])):
            return True
    return training.squared  # a .keras file's built-in squared error


def training_facts(
    graph: tf.Graph,
    record: dict[str, Any],
    inputs: list[Any],
    trainings: list[Training],
    boxes: dict[str, tuple[tuple[float, float], str]],
    ranges: dict[str, Box],
) -> dict[str, Any]:
    """The facts an optimizer record gets beside its hyper-parameters: ``stack``, ``output``,
    ``log_loss``, ``squared`` and ``features`` (each absent when the graph does not show it)."""
    training = _owner(record, trainings)
    floats = [i for i in inputs if tf.as_dtype(i.dtype).is_floating or i.dtype == "uint8"]
    if training is None or len(floats) != 1:
        return {}
    inp = floats[0]
    x = features_of(graph.get_tensor_by_name(f"{inp.name}:0"), training)
    layers = dense_stack(x, training)
    if not layers:
        return {}
    last = layers[-1]
    out: dict[str, Any] = {
        "builtin_loss": training.builtin,  # a .keras compile config's loss, by its Keras name
        "stack": {
            "inputs": layers[0].fan_in,
            "layers": [[layer.units, layer.activation] for layer in layers],
        },
        "squared": last.activation == "linear" and squared_error(training, last.output),
    }
    (lo, hi), why = boxes[inp.name]
    if x.op.name != inp.name:  # scaled in the graph: the range the first layer reads
        lo, hi = ranges[x.name].hull if x.name in ranges else (-math.inf, math.inf)
        why = f"{inp.label} in [{boxes[inp.name][0][0]:g}, {boxes[inp.name][0][1]:g}] ({why}), scaled by the graph"
    out["features"] = {
        "name": inp.label,
        "box": [lo, hi],
        "why": why,
        "known": not why.startswith(DEFAULT_WHY),  # a fact of the model or --input-range
        "width": layers[0].fan_in,
    }
    if last.probability:  # a sigmoid or softmax output
        below = layers[-2] if len(layers) > 1 else None
        out["output"] = {
            "activation": last.activation,
            "units": last.units,
            "fan_in": last.fan_in,
            "bias": last.bias,
            "below": {"fan_in": below.fan_in, "activation": below.activation} if below else None,
        }
        loss = log_loss(last.output, training)
        if loss is not None:
            out["log_loss"] = loss
    return out


def _owner(record: dict[str, Any], trainings: list[Training]) -> Training | None:
    """The loss the optimizer's gradients are of: a TF1 graph's by name; a .keras file's one."""
    name = record.get("loss")
    if name:
        return next((t for t in trainings if t.loss.name == name), None)
    return trainings[0] if len(trainings) == 1 else None
