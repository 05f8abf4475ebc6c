"""The training loss of a saved model that keeps one: what "its gradient, where the graph is
trained" means for the search.

A ``.keras`` file compiled before saving keeps its loss in the compile config.  The loss is
rebuilt on the frozen graph from that config with Keras's own built-in loss (the config was
screened: a loss outside ``keras.losses`` is not built, nothing of the author's runs), fed by
a target placeholder (``tfnumlint_target``) beside the model's inputs.  Training differentiates
that loss with respect to the trainable weights; a weight upstream of a hazard's op gets its
gradient through the op, so a non-finite gradient there is what training on that input does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

TARGET = "tfnumlint_target"  # the target placeholder's name in the graph


@dataclass
class Training:
    loss: tf.Tensor
    name: str  # the loss as the config names it
    target: tf.Tensor  # the target placeholder
    kind: str  # index | onehot | unit | free: which targets are valid
    weights: list[tf.Tensor]  # the trainable weights (frozen variables' constants)
    classes: int  # the output's last axis

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """A valid target for a batch of one: a class, a one-hot row, a value in [0, 1] or in
        [-1, 1]."""
        shape = [1 if d is None else int(d) for d in self.target.shape.as_list()]
        dtype = self.target.dtype.as_numpy_dtype
        if self.kind == "index":
            return rng.integers(0, self.classes, shape).astype(dtype)
        if self.kind == "onehot":
            hot = np.zeros(shape, dtype)
            hot.reshape(-1, self.classes)[:, rng.integers(0, self.classes)] = 1
            return hot
        low = 0.0 if self.kind == "unit" else -1.0
        return rng.uniform(low, 1.0, shape).astype(dtype)

    def upstream(self, op: tf.Operation) -> list[tf.Tensor]:
        """The trainable weights ``op`` reads (directly or through other ops)."""
        wanted = {w.op.name: w for w in self.weights}
        seen: set[str] = set()
        todo = [op]
        found = []
        while todo:
            cur = todo.pop()
            if cur.name in seen:
                continue
            seen.add(cur.name)
            if cur.name in wanted:
                found.append(wanted[cur.name])
            todo.extend(t.op for t in cur.inputs)
        return sorted(found, key=lambda t: t.name)


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
    """The loss the model file keeps, built on ``graph`` (the imported frozen graph), or None
    when the file keeps none, has several outputs, or names a loss Keras does not provide."""
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
    return Training(loss, name, target, kind, weights, classes)
