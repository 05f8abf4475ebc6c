"""Confirmation: an input inside the box that makes a hazard's op non-finite, with the weights.

The box's corners come first, then random vertices and interior points, then a sign-gradient
climb of the checked input toward its danger zone (RANUM's unit test on the model).  The
symptom is a non-finite value of the op's output, or a non-finite gradient:

- where the graph is trained (the file keeps its loss: training.py) and the loss reads the op,
  the gradient of that loss with respect to a trainable weight the op reads (what a training
  step on that input computes), else with respect to the op's checked input (what the
  backward pass carries through the op); the loss's targets are fed valid labels;
- in a graph that keeps no loss, for the gradient hazards (a sqrt at 0, a select that hides a
  NaN), the gradient of the op with respect to the checked input.  In a trained graph that
  local gradient is still looked for on the ops no loss reads, and marked as such
  (``Witness.off_loss``): the verdict is then a condition, not a confirmation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from .loader import Input
from .patterns import Hazard
from .training import Training

RANDOM_POINTS = 12
CLIMB_STEPS = 40
CLIMB_STARTS = 3
BUDGET_SECONDS = 8.0


@dataclass
class Witness:
    feed: dict[str, np.ndarray]  # placeholder op name -> value
    symptom: str  # what was non-finite: value | training | loss-gradient | gradient
    value: float
    weight: str | None = None  # training: the weight whose gradient it is (its Const node)
    training: Training | None = None  # training / loss-gradient: whose loss
    off_loss: bool = False  # gradient: the graph trains losses, and none of them reads the op


def concrete_shape(inp: Input) -> list[int]:
    if not inp.shape:
        return []
    return [
        1 if i == 0 and d is None else (d if d is not None else 8) for i, d in enumerate(inp.shape)
    ]


def graph_session(graph: tf.Graph) -> tf.compat.v1.Session:
    """A session that runs the graph as written: TensorFlow's graph optimizer (grappler) off.

    Grappler rewrites the graph again for every new set of fetches, and on a large model it
    copies and folds every weight each time (seconds per hazard on a 100 MB model); it may
    also fuse the flagged op away (a log of a softmax into a log_softmax).  The search and
    the reproducer both evaluate the ops the model file holds.
    """
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.compat.v1.Session(graph=graph, config=config)


class Searcher:
    """One session over the model graph; each hazard adds its own fetches."""

    def __init__(
        self,
        graph: tf.Graph,
        inputs: list[Input],
        boxes: dict[str, tuple[float, float]],
        trainings: list[Training] | None = None,
    ):
        self.graph = graph
        self.trainings = trainings or []
        self.inputs = [
            i for i in inputs if tf.as_dtype(i.dtype).is_floating or tf.as_dtype(i.dtype).is_integer
        ]
        self.boxes = boxes
        self.session = graph_session(graph)
        self.rng = np.random.default_rng(0)

    def close(self) -> None:
        self.session.close()

    def _tensor(self, inp: Input) -> tf.Tensor:
        return self.graph.get_tensor_by_name(f"{inp.name}:0")

    def _point(self, kind: str) -> dict[str, np.ndarray]:
        feed = {}
        for inp in self.inputs:
            lo, hi = self.boxes[inp.name]
            shape = concrete_shape(inp)
            if kind == "lo":
                v = np.full(shape, lo)
            elif kind == "hi":
                v = np.full(shape, hi)
            elif kind == "vertex":
                v = np.where(self.rng.random(shape) < 0.5, lo, hi)
            elif kind == "zero":
                v = np.full(shape, min(max(0.0, lo), hi))
            else:
                v = self.rng.uniform(lo, hi, shape)
            feed[inp.name] = self._cast(v, inp)
        for target in self._targets():
            feed[target.tensor.op.name] = target.sample(self.rng)
        return feed

    def _targets(self):
        seen = set()
        for training in self.trainings:
            for target in training.targets:
                if target.tensor.op.name not in seen:
                    seen.add(target.tensor.op.name)
                    yield target

    def _cast(self, v: np.ndarray, inp: Input) -> np.ndarray:
        dt = tf.as_dtype(inp.dtype)
        if dt.is_integer:
            return np.rint(v).astype(dt.as_numpy_dtype)
        return np.asarray(v, dt.as_numpy_dtype)

    def _fd(self, feed: dict[str, np.ndarray]) -> dict[tf.Tensor, np.ndarray]:
        out = {self._tensor(i): feed[i.name] for i in self.inputs}
        for target in self._targets():
            out[target.tensor] = feed[target.tensor.op.name]
        return out

    def confirm(self, hazard: Hazard) -> Witness | None:
        """The first input found that makes the hazard's op non-finite, or None."""
        if hazard.checked is None or not self.inputs:
            return None
        with self.graph.as_default():
            fetches = self._fetches(hazard)
        if fetches is None:
            return None
        deadline = time.monotonic() + BUDGET_SECONDS
        starts = (
            ["lo", "hi", "zero"]
            + ["vertex"] * (RANDOM_POINTS // 2)
            + ["uniform"] * (RANDOM_POINTS // 2)
        )
        for kind in starts:
            feed = self._point(kind)
            found = self._check(fetches, feed)
            if found is not None or time.monotonic() > deadline:
                return found
        return self._climb(hazard, fetches, deadline)

    def _fetches(self, hazard: Hazard) -> dict[str, Any] | None:
        target = hazard.op.outputs[0]
        if not target.dtype.is_floating:
            return None
        x = hazard.checked
        local = x is not None and x.dtype.is_floating and target.dtype == x.dtype
        out: dict[str, Any] = {"value": target}
        training = next((t for t in self.trainings if t.reads(hazard.op)), None)
        if training is not None and x is not None and x.dtype.is_floating:
            arriving = tf.gradients(training.loss, target)[0]
            if arriving is not None:
                out.update(_through(training, hazard.op, target, x, arriving))
        reading = training is not None
        if local and not reading:
            grad = tf.gradients(target, x)[0]
            if grad is not None:
                out["gradient"] = grad
        if local:
            objective = _objective(hazard, x)
            if objective is not None:
                placeholders = [self._tensor(i) for i in self.inputs]
                grads = tf.gradients(objective, placeholders)
                if all(g is not None for g in grads):
                    out["climb"] = (objective, grads)
        return out

    def _check(self, fetches: dict[str, Any], feed) -> Witness | None:
        owners = {k: v[0] for k, v in fetches.items() if k in ("training", "loss-gradient")}
        wanted = {k: (v[1] if k in owners else v) for k, v in fetches.items() if k != "climb"}
        try:
            values = self.session.run(wanted, feed_dict=self._fd(feed))
        except (tf.errors.OpError, ValueError):
            return None
        # a loss's gradient is the op's symptom only when the op turns it non-finite: finite
        # at its output, non-finite at its input (see _through)
        arriving, leaving = values.get("arriving"), values.get("leaving")
        from_op = (
            arriving is not None
            and leaving is not None
            and bool(np.isfinite(np.asarray(arriving)).all())
            and not np.isfinite(np.asarray(leaving)).all()
        )
        for key in ("value", "training", "loss-gradient", "gradient"):
            v = values.get(key)
            if v is None or (key in owners and not from_op):
                continue
            named = sorted(v.items()) if isinstance(v, dict) else [(None, v)]
            for weight, each in named:
                arr = np.asarray(each, np.float64)
                bad = ~np.isfinite(arr)
                if bad.any():
                    return Witness(
                        self._needed(feed, owners.get(key)),
                        key,
                        float(arr[bad].reshape(-1)[0]),
                        weight,
                        owners.get(key),
                        off_loss=key == "gradient" and bool(self.trainings),
                    )
        return None

    def _needed(
        self, feed: dict[str, np.ndarray], training: Training | None
    ) -> dict[str, np.ndarray]:
        """The witness's feed: a loss's targets only when the symptom is that loss's."""
        keep = {t.tensor.op.name for t in training.targets} if training is not None else set()
        extra = {t.tensor.op.name for t in self._targets()} - keep
        return {k: v for k, v in feed.items() if k not in extra}

    def _climb(self, hazard: Hazard, fetches, deadline: float) -> Witness | None:
        if "climb" not in fetches:
            return None
        _objective_tensor, grads = fetches["climb"]
        for start in range(CLIMB_STARTS):
            feed = self._point("uniform" if start else "zero")
            for _ in range(CLIMB_STEPS):
                if time.monotonic() > deadline:
                    return None
                try:
                    gs = self.session.run(grads, feed_dict=self._fd(feed))
                except (tf.errors.OpError, ValueError):
                    return None
                feed = self._step(feed, gs)
                found = self._check(fetches, feed)
                if found is not None:
                    return found
        return None

    def _step(self, feed, grads) -> dict[str, np.ndarray]:
        """One signed step down the objective, kept inside the box."""
        out = dict(feed)
        for inp, g in zip(self.inputs, grads, strict=True):
            lo, hi = self.boxes[inp.name]
            if not tf.as_dtype(inp.dtype).is_floating:
                continue
            step = (hi - lo) / 10.0
            v = np.asarray(feed[inp.name], np.float64) - step * np.sign(
                np.nan_to_num(np.asarray(g))
            )
            out[inp.name] = self._cast(np.clip(v, lo, hi), inp)
        return out


def _through(
    training: Training, op: tf.Operation, target: tf.Tensor, x: tf.Tensor, arriving: tf.Tensor
) -> dict[str, Any]:
    """The loss's backward pass through the op, seeded with the gradient the loss brings to
    the op's output (``arriving``): into the op's checked input (``leaving``), and on to the
    trainable weights the op reads (what a training step adds to their gradients through this
    op).  The op is the cause only when it turns a finite ``arriving`` into a non-finite
    ``leaving`` (``_check``): a loss already non-finite, or another hazard further back in
    the backward pass, is not this op's symptom."""
    out: dict[str, Any] = {"arriving": arriving}
    leaving = tf.gradients(target, x, grad_ys=arriving)[0]
    if leaving is None:
        return {}
    out["leaving"] = leaving
    weights = training.upstream(op)
    grads = tf.gradients(target, weights, grad_ys=arriving) if weights else []
    found = {w.op.name: g for w, g in zip(weights, grads, strict=True) if g is not None}
    if found:  # non-finite there, or the op's gradient is masked before any weight
        out["training"] = (training, found)
    else:
        out["loss-gradient"] = (training, leaving)
    return out


def _objective(hazard: Hazard, x: tf.Tensor) -> tf.Tensor | None:
    """Smaller is closer to the danger zone of the checked input."""
    b = tf.constant(hazard.bound, x.dtype)
    if hazard.test == "reaches":
        return tf.reduce_min(x)
    if hazard.test == "straddles":
        return tf.reduce_min(tf.abs(x - b))
    if hazard.test == "overflows":
        return -tf.reduce_max(x)
    if hazard.test == "leaves_unit":
        return -tf.reduce_max(tf.abs(x))
    if hazard.test == "pow_base":
        return tf.reduce_min(x)
    return None


def describe_feed(
    feed: dict[str, np.ndarray], inputs: list[Input], trainings: Sequence[Training] = ()
) -> dict[str, Any]:
    """The witness as JSON: the values when few, else their shape, range and a few values."""
    out: dict[str, Any] = {}
    labels = {i.name: i.label for i in inputs}
    labels.update({t.tensor.op.name: t.label for tr in trainings for t in tr.targets})
    for name, value in feed.items():
        arr = np.asarray(value, np.float64)
        flat = [_num(v) for v in arr.reshape(-1)]
        if arr.size <= 16:
            out[labels.get(name, name)] = flat
        else:
            out[labels.get(name, name)] = {
                "shape": list(arr.shape),
                "min": _num(arr.min()),
                "max": _num(arr.max()),
                "first": flat[:8],
            }
    return out


def _num(v: float) -> float:
    f = float(v)
    return (
        f
        if math.isfinite(f)
        else (math.inf if f > 0 else -math.inf)
        if not math.isnan(f)
        else math.nan
    )
