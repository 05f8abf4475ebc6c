"""Confirmation: an input inside the box that makes a hazard's op non-finite, with the weights.

The box's corners come first, then random vertices and interior points, then a sign-gradient
climb of the checked input toward its danger zone (RANUM's unit test on the model).  The
symptom is a non-finite value of the op's output; where the graph is trained (the file keeps
its loss: training.py), a non-finite gradient of that loss with respect to a trainable weight
the op reads (what a training step on that input computes); else, for the gradient hazards (a
sqrt at 0, a select that hides a NaN), a non-finite gradient of the op with respect to the
checked input.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from .loader import Input
from .patterns import Hazard
from .training import TARGET, Training

RANDOM_POINTS = 12
CLIMB_STEPS = 40
CLIMB_STARTS = 3
BUDGET_SECONDS = 8.0


@dataclass
class Witness:
    feed: dict[str, np.ndarray]  # placeholder tensor name -> value
    symptom: str  # what was non-finite: value | training | gradient
    value: float
    weight: str | None = None  # training: the weight whose gradient it is (its Const node)


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
        training: Training | None = None,
    ):
        self.graph = graph
        self.training = training
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
        if self.training is not None:
            feed[self.training.target.op.name] = self.training.sample(self.rng)
        return feed

    def _cast(self, v: np.ndarray, inp: Input) -> np.ndarray:
        dt = tf.as_dtype(inp.dtype)
        if dt.is_integer:
            return np.rint(v).astype(dt.as_numpy_dtype)
        return np.asarray(v, dt.as_numpy_dtype)

    def _fd(self, feed: dict[str, np.ndarray]) -> dict[tf.Tensor, np.ndarray]:
        out = {self._tensor(i): feed[i.name] for i in self.inputs}
        if self.training is not None:
            out[self.training.target] = feed[self.training.target.op.name]
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
        out: dict[str, Any] = {"value": target}
        if self.training is not None:
            weights = self.training.upstream(hazard.op)
            grads = tf.gradients(self.training.loss, weights) if weights else []
            found = {w.op.name: g for w, g in zip(weights, grads, strict=True) if g is not None}
            if found:
                out["training"] = found
        if x is not None and x.dtype.is_floating and target.dtype == x.dtype:
            grad = tf.gradients(target, x)[0]
            if grad is not None:
                out["gradient"] = grad
            objective = _objective(hazard, x)
            if objective is not None:
                placeholders = [self._tensor(i) for i in self.inputs]
                grads = tf.gradients(objective, placeholders)
                if all(g is not None for g in grads):
                    out["climb"] = (objective, grads)
        return out

    def _check(self, fetches: dict[str, Any], feed) -> Witness | None:
        wanted = {k: v for k, v in fetches.items() if k != "climb"}
        try:
            values = self.session.run(wanted, feed_dict=self._fd(feed))
        except (tf.errors.OpError, ValueError):
            return None
        for key in ("value", "training", "gradient"):
            v = values.get(key)
            if v is None:
                continue
            named = sorted(v.items()) if isinstance(v, dict) else [(None, v)]
            for weight, each in named:
                arr = np.asarray(each, np.float64)
                bad = ~np.isfinite(arr)
                if bad.any():
                    return Witness(
                        self._needed(feed, key), key, float(arr[bad].reshape(-1)[0]), weight
                    )
        return None

    def _needed(self, feed: dict[str, np.ndarray], key: str) -> dict[str, np.ndarray]:
        """The witness's feed: the loss's target only when the symptom is the loss's."""
        if self.training is None or key == "training":
            return feed
        return {k: v for k, v in feed.items() if k != self.training.target.op.name}

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


def describe_feed(feed: dict[str, np.ndarray], inputs: list[Input]) -> dict[str, Any]:
    """The witness as JSON: the values when few, else their shape, range and a few values."""
    out: dict[str, Any] = {}
    labels = {i.name: i.label for i in inputs}
    labels[TARGET] = "y_true"  # the training loss's target (training.py)
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
