"""The training losses of a saved model that keeps them: what "its gradient, where the graph is
trained" means for the search.

Two kinds of files keep a loss:

- A ``.keras`` file compiled before saving keeps its loss in the compile config.  The loss is
  rebuilt on the frozen graph from that config with Keras's own built-in loss (the config was
  screened: a loss outside ``keras.losses`` is not built, nothing of the author's runs), fed
  by a target placeholder (``tfnumlint_target``) beside the model's inputs.
- A TF1 training graph saved as a SavedModel keeps its loss, the gradients of it and the
  optimizer's update ops (loader.py's ``trained_losses`` finds which loss each update's
  gradient is of).  The loss was frozen with the model; the placeholders it reads beyond the
  signature's inputs are its targets (the labels a training step feeds).

Training differentiates a loss with respect to the trainable weights; a weight upstream of a
hazard's op gets its gradient through the op, so a non-finite gradient there is what training
on that input does.  An op on the loss's path with no weight upstream still has the gradient
the backward pass carries through it: d(loss)/d(the op's input).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from .inputs import DEFAULT_BOX, consumers
from .patterns import passthrough

TARGET = "tfnumlint_target"  # the target placeholder's name in a rebuilt Keras loss
_LOGS = ("Log", "Log1p", "LogSoftmax")  # a target multiplying one of these is a distribution
_DENSE_LABELS = ("SoftmaxCrossEntropyWithLogits",)
_SPARSE_LABELS = ("SparseSoftmaxCrossEntropyWithLogits",)
_KIND_TEXT = {
    "index": "a class index",
    "onehot": "one-hot rows",
    "unit": "values in [0, 1]",
}


@dataclass
class Target:
    """A placeholder the loss reads beside the model's inputs: the training labels."""

    tensor: tf.Tensor
    label: str  # as findings name it
    kind: str  # index | onehot | unit | free: which values are valid
    classes: int  # index/onehot: the number of classes
    box: tuple[float, float]  # the range its values take

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """A valid target for a batch of one: a class, a one-hot row, a value in its box."""
        shape = [1 if d is None else int(d) for d in self.tensor.shape.as_list()]
        dtype = self.tensor.dtype.as_numpy_dtype
        if self.kind == "index":
            return rng.integers(0, self.classes, shape).astype(dtype)
        if self.kind == "onehot":
            hot = np.zeros(shape, dtype)
            hot.reshape(-1, self.classes)[:, rng.integers(0, self.classes)] = 1
            return hot
        value = rng.uniform(self.box[0], self.box[1], shape)
        return np.rint(value).astype(dtype) if self.tensor.dtype.is_integer else value.astype(dtype)

    def describe(self) -> str:
        text = _KIND_TEXT.get(self.kind)
        return text or f"values in [{self.box[0]:g}, {self.box[1]:g}]"


@dataclass
class Training:
    loss: tf.Tensor
    name: str  # how a finding names the loss: "the model's loss (mse)"
    targets: list[Target]
    weights: list[tf.Tensor]  # the trainable weights (frozen variables' constants)
    builtin: str | None = None  # a .keras compile config's loss: its Keras name
    squared: bool = False  # that loss is Keras's mean squared error
    _reads: set[str] = field(default_factory=set)  # the ops the loss reads

    def __post_init__(self) -> None:
        self._reads = _ancestors(self.loss.op)

    def reads(self, op: tf.Operation) -> bool:
        """Whether the loss is computed from ``op``'s output."""
        return op.name in self._reads

    def upstream(self, op: tf.Operation) -> list[tf.Tensor]:
        """The trainable weights ``op`` reads (directly or through other ops)."""
        wanted = {w.op.name: w for w in self.weights}
        return sorted((wanted[n] for n in _ancestors(op) if n in wanted), key=lambda t: t.name)


def _ancestors(op: tf.Operation) -> set[str]:
    seen: set[str] = set()
    todo = [op]
    while todo:
        cur = todo.pop()
        if cur.name in seen:
            continue
        seen.add(cur.name)
        todo.extend(t.op for t in cur.inputs)
    return seen


def training_losses(
    graph: tf.Graph, loaded: Any, given: dict[str, list[float]] | None = None
) -> list[Training]:
    """The losses the model file keeps, on ``graph`` (the imported frozen graph): a TF1
    graph's own, or the ``.keras`` compile config's rebuilt; ``given``: ``--input-range``
    boxes, which may name a TF1 target."""
    if loaded.trained:
        return [
            t
            for t in (_graph_loss(graph, loaded, lost, given or {}) for lost in loaded.trained)
            if t
        ]
    keras_loss = training_loss(graph, loaded)
    return [keras_loss] if keras_loss is not None else []


# ---------------------------------------------------------------- a TF1 graph's own loss


def _graph_loss(graph: tf.Graph, loaded: Any, trained: Any, given) -> Training | None:
    try:
        loss = graph.get_tensor_by_name(trained.tensor)
        weights = [graph.get_tensor_by_name(f"{w}:0") for w in trained.weights]
    except (KeyError, ValueError):
        return None
    if not loss.dtype.is_floating:
        return None
    inputs = {i.name for i in loaded.inputs}
    reads = _ancestors(loss.op)
    targets = [
        _target(graph.get_operation_by_name(name).outputs[0], loaded, given)
        for name in sorted(reads)
        if graph.get_operation_by_name(name).type == "Placeholder" and name not in inputs
    ]
    name = f"the graph's loss `{loss.op.name}`"
    return Training(loss, name, targets, weights)


def _target(t: tf.Tensor, loaded: Any, given: dict[str, list[float]]) -> Target:
    """A label placeholder and the values it takes, by how the loss reads it: the labels of a
    sparse softmax cross-entropy are class indices, of a dense one one-hot rows; a target
    that multiplies a log (``-y * log(p)``) is a distribution (one-hot rows, or a value in
    [0, 1] for one column); ``--input-range`` gives any other target its box."""
    label = t.op.name
    user = given.get(label)
    if user is not None:
        return Target(t, label, "free", 0, (float(user[0]), float(user[1])))
    last = t.shape.as_list()[-1] if t.shape.rank else None
    users = consumers(t)
    for op in users:
        if op.type in _SPARSE_LABELS:
            classes = op.inputs[0].shape.as_list()[-1] or 2
            return Target(t, label, "index", classes, (0.0, classes - 1.0))
        if op.type in _DENSE_LABELS and last:
            return Target(t, label, "onehot", last, (0.0, 1.0))
    if t.dtype.is_floating and any(_times_log(op, t) for op in users):
        if last and last > 1:
            return Target(t, label, "onehot", last, (0.0, 1.0))
        return Target(t, label, "unit", 0, (0.0, 1.0))
    return Target(t, label, "free", 0, DEFAULT_BOX)


def _times_log(op: tf.Operation, t: tf.Tensor) -> bool:
    if op.type != "Mul":
        return False
    return any(passthrough(x).op.type in _LOGS for x in op.inputs if passthrough(x).op != t.op)


# ---------------------------------------------------------------- a .keras compile config's loss


def loss_name(spec: Any) -> str | None:
    """The built-in Keras loss a compile config names, or None (none, or not Keras's)."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and str(spec.get("module", "")).startswith("keras"):
        inner = spec.get("config")
        name = inner.get("name") if isinstance(inner, dict) else None
        return str(name or spec.get("class_name"))
    return None


def _kind(name: str) -> str:
    lowered = name.lower()
    if "sparse" in lowered:
        return "index"
    if "categorical" in lowered or lowered in ("kl_divergence", "kld", "kullback_leibler"):
        return "onehot"
    if "binary" in lowered or "hinge" in lowered or "poisson" in lowered:
        return "unit"
    return "free"


def training_loss(graph: tf.Graph, loaded: Any) -> Training | None:
    """The loss a ``.keras`` file keeps, built on ``graph``, or None when the file keeps none,
    has several outputs, or names a loss Keras does not provide."""
    name = loss_name(loaded.loss)
    if name is None or len(loaded.outputs) != 1 or not loaded.trainable:
        return None
    import keras

    try:
        fn = keras.losses.get(loaded.loss)
    except (ValueError, TypeError, KeyError):
        return None
    if fn is None:
        return None
    kind = _kind(name)
    with graph.as_default():
        out = graph.get_tensor_by_name(loaded.outputs[0])
        if not out.dtype.is_floating or out.shape.rank is None:
            return None
        if kind == "index":
            target = tf.compat.v1.placeholder(tf.int32, out.shape[:-1], name=TARGET)
        else:
            target = tf.compat.v1.placeholder(out.dtype, out.shape, name=TARGET)
        try:
            loss = fn(target, out)
        except Exception:  # Keras raises many kinds: the loss does not fit this output
            return None
        weights = [graph.get_tensor_by_name(f"{w}:0") for w in loaded.trainable]
    classes = int(out.shape[-1] or 1) if out.shape.rank else 1
    box = {"index": (0.0, classes - 1.0), "free": (-1.0, 1.0)}.get(kind, (0.0, 1.0))
    y_true = Target(target, "y_true", kind, classes, box)
    squared = getattr(fn, "fn", fn) is keras.losses.mean_squared_error  # a function or a class
    return Training(loss, f"the model's loss ({name})", [y_true], weights, name, squared)
