"""What every training recipe shares: the configuration and the user's optimizer built for
real (Keras or TF1, with its epsilon), the plain output-layer run on a synthetic dataset and
its control, the optimizer-epsilon probe, the comparison that makes a verdict, and the
compiled training loop, parameters and re-runs of the recipes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from ..optimizers import OPTIMIZERS
from .trace import format_number
from .trace_ops import DTYPES

STEPS = 25
FEATURES = 784
EXAMPLES = 32
KERAS = {family: o.keras for family, o in OPTIMIZERS.items()}
TF1 = {family: o.tf1 for family, o in OPTIMIZERS.items() if o.tf1}
TF1_EPSILON = {family: o.tf1_epsilon for family, o in OPTIMIZERS.items() if o.tf1 and o.tf1_epsilon}
EPSILON_OPTIMIZERS = frozenset(f for f, o in OPTIMIZERS.items() if o.keras_epsilon is not None)


@dataclass
class Config:
    optimizer: str
    tf1: bool
    lr: float
    epsilon: float | None
    clipnorm: float | None
    momentum: float = 0.0

    def describe_sgd(self) -> str:
        """``SGD at lr 0.1 (momentum 0.9),`` as the start of a witness clause."""
        extra = f" (momentum {format_number(self.momentum)})" if self.momentum else ""
        return f"{self.optimizer.upper()} at lr {format_number(self.lr)}{extra},"

    def describe(self) -> str:
        parts = [f"lr {format_number(self.lr)}"]
        if self.epsilon is not None:
            parts.append(f"epsilon {format_number(self.epsilon)}")
        if self.clipnorm is not None:
            parts.append(f"clipnorm {format_number(self.clipnorm)}")
        return ", ".join(parts)


@dataclass
class Outcome:
    nonfinite_step: int | None = None
    dead: int = 0
    dead_loss: float = 0.0
    dead_logit: float = 0.0

    @property
    def symptom(self) -> str | None:
        if self.nonfinite_step is not None:
            return "nan-value"
        return "dead-gradient" if self.dead else None


def make_optimizer(cfg: Config, lr: tf.Variable | None = None) -> Any:
    """The user's optimizer class with their hyper-parameters (TF1 in eager mode).  A TF1
    optimizer can read its learning rate from ``lr``, a variable that a traced graph reads."""
    if cfg.tf1:
        name = TF1.get(cfg.optimizer)
        if name is None:
            raise ValueError(f"no TF1 optimizer for {cfg.optimizer!r}")
        rate: float | tf.Variable = cfg.lr if lr is None else lr
        if cfg.optimizer == "sgd" and cfg.momentum:
            return tf.compat.v1.train.MomentumOptimizer(rate, cfg.momentum)
        cls = getattr(tf.compat.v1.train, name)
        kw: dict[str, Any] = {"learning_rate": rate}
        if cfg.epsilon is not None and cfg.optimizer in TF1_EPSILON:
            kw["epsilon"] = cfg.epsilon
        return cls(**kw)
    cls = getattr(tf.keras.optimizers, KERAS[cfg.optimizer])
    kw = {"learning_rate": cfg.lr}
    if cfg.epsilon is not None and cfg.optimizer in EPSILON_OPTIMIZERS:
        kw["epsilon"] = cfg.epsilon
    if cfg.clipnorm is not None:
        kw["clipnorm"] = cfg.clipnorm
    if cfg.optimizer == "sgd" and cfg.momentum:
        kw["momentum"] = cfg.momentum
    return cls(**kw)


def dataset(output: str, dtype: tf.DType) -> tuple[tf.Tensor, tf.Tensor]:
    """Deterministic pixel-like inputs with a quarter of the labels flipped (real data is noisy)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (EXAMPLES, FEATURES))
    score = x @ rng.normal(size=FEATURES)
    classes = 1 if output != "softmax" else 3
    if classes == 1:
        y = (score > np.median(score)).astype(np.float64)[:, None]
        y[::4] = 1 - y[::4]
    else:
        idx = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
        idx[::4] = (idx[::4] + 1) % 3
        y = np.eye(3)[idx]
    return tf.constant(x, dtype), tf.constant(y, dtype)


def per_example_loss(logits: tf.Tensor, y: tf.Tensor, output: str, eps: float | None) -> tf.Tensor:
    """The hand-written log loss, with the module's epsilon when it has one."""
    if output == "softmax":
        p = tf.nn.softmax(logits)
        return -tf.reduce_sum(y * tf.math.log(p + eps if eps else p), axis=-1)
    p = tf.math.sigmoid(logits)
    if eps:
        out = y * tf.math.log(p + eps) + (1 - y) * tf.math.log(1 - p + eps)
    else:
        out = y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p)
    return -tf.reduce_sum(out, axis=-1)


def train(cfg: Config, output: str, eps: float | None, dtype: tf.DType) -> Outcome:
    """A few real optimizer steps from the zero start; watch for NaN/Inf and dead examples."""
    x, y = dataset(output, dtype)
    classes = 3 if output == "softmax" else 1
    w = tf.Variable(tf.zeros([FEATURES, classes], dtype))
    opt = make_optimizer(cfg)
    out = Outcome()
    for step in range(1, STEPS + 1):
        with tf.GradientTape(persistent=True) as tape:
            logits = x @ w
            losses = per_example_loss(logits, y, output, eps)
            loss = tf.reduce_mean(losses)
        dlogits = tape.gradient(loss, logits)
        grad = tape.gradient(loss, w)
        del tape
        if not np.isfinite(loss.numpy()) or not np.isfinite(w.numpy()).all():
            out.nonfinite_step = step
            return out
        record_dead(out, losses.numpy(), dlogits.numpy(), logits.numpy())
        opt.apply_gradients([(grad, w)])
    if not np.isfinite(w.numpy()).all():
        out.nonfinite_step = STEPS
    return out


def record_dead(out: Outcome, losses: np.ndarray, dlogits: np.ndarray, logits: np.ndarray) -> None:
    """Examples whose loss is >= 1 while the gradient w.r.t. their logits is exactly 0."""
    dead = (losses >= 1.0) & (dlogits == 0).all(-1)
    if dead.sum() > out.dead:
        i = int(np.flatnonzero(dead)[0])
        out.dead = int(dead.sum())
        out.dead_loss = float(losses[i])
        out.dead_logit = float(np.abs(logits[i]).max())


def control(probe: dict[str, Any], cfg: Config) -> Config:
    """The safe configuration the rule recommends: the control run."""
    if probe.get("control") == "epsilon":
        return Config(cfg.optimizer, cfg.tf1, cfg.lr, 1e-4, cfg.clipnorm)
    if probe.get("recipe") == "clipping":
        return Config(cfg.optimizer, False, cfg.lr, cfg.epsilon, 1.0)
    return Config(cfg.optimizer, cfg.tf1, 1e-3, cfg.epsilon, cfg.clipnorm)


TINY_STEPS = 200


def tiny_gradient_step(cfg: Config, dtype: tf.DType) -> tuple[bool, float]:
    """The optimizer-epsilon check: updates with small (and zero) gradients, as late in training.

    Returns (a weight became NaN/Inf, the largest single-step move).  An adaptive optimizer
    moves a weight by about lr per step; with an epsilon lost in the dtype, sqrt(v) + eps
    collapses and a small gradient moves it by hundreds of lr.
    """
    w = tf.Variable(tf.ones([4], dtype))
    opt = make_optimizer(cfg)
    grad = tf.constant([1e-4, 1e-3, 0.0, 1e-2], dtype)
    largest = 0.0
    # Enough steps for an accumulator that starts at 1 (TF1 RMSProp) to decay below the
    # float16 range: 0.9**158 < 6e-8.  Stops at the first non-finite weight.
    for _ in range(TINY_STEPS):
        before = w.numpy().astype(np.float64)
        opt.apply_gradients([(grad, w)])
        after = w.numpy().astype(np.float64)
        if not np.isfinite(after).all():
            return True, math.inf
        largest = max(largest, float(np.max(np.abs(after - before))))
    return False, largest


STEP_BLOWUP = 50.0  # a step of more than 50 x lr on a gradient of 1e-4..1e-2 is not Adam's


def verify_epsilon(cfg: Config, safe: Config, dtype: str) -> dict[str, Any]:
    (bad, step), (ref, ref_step) = (
        tiny_gradient_step(cfg, DTYPES[dtype]),
        tiny_gradient_step(safe, DTYPES[dtype]),
    )
    eps = (
        cfg.epsilon
        if cfg.epsilon is not None
        else (TF1_EPSILON.get(cfg.optimizer) if cfg.tf1 else 1e-7)
    )
    what = f"{cfg.optimizer} (epsilon {format_number(eps or 0)})"
    inputs = {"gradient": [1e-4, 1e-3, 0.0, 1e-2], "epsilon": eps}
    if bad and not ref:
        return {
            "status": "confirmed",
            "symptom": "nan-value",
            "dtype": dtype,
            "inputs": inputs,
            "observed": {"weights_finite": False, "control_epsilon": 1e-4},
            "detail": f"{what} in {dtype}: repeated updates with gradients 1e-4..1e-2 and 0 turn the weights "
            f"into NaN/Inf (m / (sqrt(v) + eps) with eps == 0 in {dtype}); with epsilon 1e-4 they stay finite",
        }
    if not bad and step > STEP_BLOWUP * cfg.lr and ref_step <= STEP_BLOWUP * cfg.lr:
        return {
            "status": "confirmed",
            "symptom": "diverges",
            "dtype": dtype,
            "inputs": inputs,
            "observed": {
                "largest_step": step,
                "control_largest_step": ref_step,
                "learning_rate": cfg.lr,
            },
            "detail": f"{what} in {dtype}: a gradient of 1e-4..1e-2 moves a weight by "
            f"{format_number(step)} in one step ({format_number(step / cfg.lr)} x lr); with "
            f"epsilon 1e-4 the largest step is {format_number(ref_step)}",
        }
    stored = float(tf.cast(tf.constant(eps or 0.0, tf.float64), DTYPES[dtype]).numpy())
    if not bad and eps and stored == 0.0:
        return {
            "status": "confirmed",
            "symptom": "epsilon-underflow",
            "dtype": dtype,
            "inputs": {"epsilon": eps},
            "observed": {"epsilon_in_dtype": 0.0, "weights_finite": True},
            "detail": f"{what}: tf.cast({format_number(eps)}, {dtype}) == 0, so the update's guard "
            f"is gone (the {TINY_STEPS} probe updates with gradients 1e-4..1e-2 and 0 still "
            "stayed finite)",
        }
    if not bad:
        return {"status": "refuted", "dtype": dtype,
                "detail": f"{what} in {dtype}: {TINY_STEPS} updates with small and zero gradients stay finite"}  # fmt: skip
    return {"status": "inconclusive", "dtype": dtype,
            "detail": f"{what} in {dtype}: the control (epsilon 1e-4) also reaches NaN/Inf"}  # fmt: skip


def compare(probe: dict[str, Any], cfg: Config, safe: Config, got: Outcome, ref: Outcome,
            output: str, dtype: str) -> dict[str, Any]:  # fmt: skip
    """Confirmed only when the configured run fails and the control does not."""
    model = f"a 1-layer {output} model ({FEATURES} inputs, noisy labels) after {STEPS} {cfg.optimizer} steps"
    observed = {
        "configured": outcome_json(got),
        "control": outcome_json(ref),
        "control_config": safe.describe(),
    }
    inputs = {"optimizer": cfg.optimizer, "learning_rate": cfg.lr, "epsilon": cfg.epsilon,
              "clipnorm": cfg.clipnorm}  # fmt: skip
    if got.symptom and not ref.symptom:
        return {
            "status": "confirmed",
            "symptom": got.symptom,
            "dtype": dtype,
            "inputs": inputs,
            "observed": observed,
            "detail": f"{model} at {cfg.describe()}: {outcome_text(got)}; at {safe.describe()}: "
            f"{outcome_text(ref)}",
        }
    if not got.symptom:  # a toy model that trains fine proves nothing about the user's model
        return {"status": "inconclusive", "dtype": dtype, "inputs": inputs, "observed": observed,
                "detail": f"{model} at {cfg.describe()}: {outcome_text(got)}, as at "
                f"{safe.describe()}: the probe cannot tell the two apart"}  # fmt: skip
    return {"status": "inconclusive", "dtype": dtype, "inputs": inputs, "observed": observed,
            "detail": f"{model}: the configured run and the control ({safe.describe()}) both "
            f"fail, so the probe cannot tell them apart"}  # fmt: skip


def outcome_json(o: Outcome) -> dict[str, Any]:
    return {"nonfinite_step": o.nonfinite_step, "dead_examples": o.dead,
            "dead_loss": o.dead_loss, "dead_logit": o.dead_logit}  # fmt: skip


def outcome_text(o: Outcome) -> str:
    if o.nonfinite_step is not None:
        return f"the loss is NaN/Inf at step {o.nonfinite_step}"
    if o.dead:
        return (f"{o.dead} example(s) saturated (|logit| {o.dead_logit:.3g}) with loss "
                f"{o.dead_loss:.4g} and a gradient of exactly 0")  # fmt: skip
    return "no NaN/Inf and no saturated example with a dead gradient"


# -- recipes declared by the rules: each replays the static training spec --------------------

HORIZON = 300  # steps within which a saturation has to show up to count (19,200 rows of 64)
DIVERGENCE_STEPS = 100
SUMMED_STEPS = 100
DEAD_LOSS = 1.0  # an element this far from its minimum with an exactly-zero gradient is dead
DEFAULT_FAN_IN = 64
MAX_UNITS = 512  # the widest layer simulated at full width
EXAMPLES_502 = 64
CONTROL_FACTOR = 3  # the lr / 10 run must need at least this many times as many steps
MAX_ROWS = 1024
MAX_FEATURES = 1024


def spec_config(probe: dict[str, Any], lr: float | None = None) -> Config:
    """The user's optimizer from the probe's spec, optionally at another learning rate."""
    eps = probe.get("epsilon")
    return Config(
        str(probe.get("optimizer") or "").lower(),
        bool(probe.get("tf1")),
        float(lr if lr is not None else probe.get("learning_rate") or 1e-3),
        None if eps is None else float(eps),
        probe.get("clipnorm"),
        float(probe.get("momentum") or 0.0),
    )


def run_training(step: Any, steps: int, watch: Any) -> tuple[int | None, Any]:
    """Call the compiled ``step`` until ``watch(step_number, outputs)`` returns a value."""
    last = None
    for i in range(1, steps + 1):
        last = step()
        seen = watch(i, last)
        if seen is not None:
            return i, seen
    return None, last


def compile_loop(step: Callable[..., tuple[tf.Tensor, ...]], zeros: tuple[tf.Tensor, ...]) -> Any:
    """``loop(n, *args)``: up to ``n`` calls of ``step(*args)`` in one ``tf.while_loop``, which
    stops after the first call whose first output is True, so the step count is exact and a
    run costs one call from Python.  ``zeros`` are outputs of the right shapes.  Traced once,
    without AutoGraph (converting the step's Python source costs more than the trace itself);
    pass tensors as ``n`` and ``args``, or each new value traces again."""

    @tf.function(autograph=False)
    def loop(n: tf.Tensor, *args: tf.Tensor) -> tuple[tf.Tensor, ...]:
        def more(i: tf.Tensor, out: tuple[tf.Tensor, ...]) -> tf.Tensor:
            return tf.logical_and(i < n, tf.logical_not(out[0]))

        def body(i: tf.Tensor, _out: tuple[tf.Tensor, ...]) -> tuple[Any, ...]:
            return i + 1, tuple(step(*args))

        done, out = tf.while_loop(more, body, (tf.constant(0), zeros))
        return (done, *out)

    return loop


def optimizer_variables(opt: Any) -> list[tf.Variable]:
    """Slots and counters of a Keras (a property) or a TF1 (a method) optimizer."""
    found = opt.variables
    return list(found() if callable(found) else found)


class Params:
    """Named weight tensors trained together, in one flat variable by default.

    Every optimizer family here updates each element on its own (a running mean, a running
    square, a sign), so one update of the flat vector is the arithmetic of one update per
    tensor, traced and run as a handful of ops instead of a handful per tensor.  Keras's
    ``clipnorm`` clips each variable by its own norm: with it the tensors stay separate."""

    def __init__(self, arrays: dict[str, np.ndarray], dtype: tf.DType, packed: bool) -> None:
        self.names = list(arrays)
        self.shapes = [a.shape for a in arrays.values()]
        self.sizes = [int(a.size) for a in arrays.values()]
        self.packed = packed
        if packed:
            flat = np.concatenate([a.ravel() for a in arrays.values()])
            self.variables = [tf.Variable(tf.constant(flat, dtype))]
        else:
            self.variables = [tf.Variable(tf.constant(a, dtype)) for a in arrays.values()]

    def views(self) -> dict[str, tf.Tensor]:
        """The tensors by name, read inside the traced step."""
        if not self.packed:
            return dict(zip(self.names, self.variables, strict=True))
        parts = tf.split(self.variables[0], self.sizes)
        return {n: tf.reshape(t, s) for n, t, s in zip(self.names, parts, self.shapes, strict=True)}


class Rerun:
    """The user's optimizer over ``trained``, built so that one traced graph serves every run:
    its slots exist before the trace (a TF1 optimizer creating them inside it traces twice),
    its learning rate is a variable the graph reads (a Python float is baked into the trace),
    and ``restart(lr)`` puts the weights, the slots and ``counters`` back where they started."""

    def __init__(self, cfg: Config, trained: list[tf.Variable], counters: list[tf.Variable]):
        if cfg.tf1:
            self.lr: tf.Variable | None = tf.Variable(cfg.lr, dtype=tf.float32, trainable=False)
            self.opt = make_optimizer(cfg, self.lr)
            # what apply_gradients does first, in an init_scope: done here, before tracing
            self.opt._create_slots(trained)
        else:
            self.lr = None
            self.opt = make_optimizer(cfg)
            self.opt.build(trained)
        self.state = [*trained, *optimizer_variables(self.opt), *counters]
        self.start = [v.numpy() for v in self.state]

    def restart(self, lr: float) -> None:
        for v, value in zip(self.state, self.start, strict=True):
            v.assign(value)
        if self.lr is not None:
            self.lr.assign(lr)
        else:
            self.opt.learning_rate = lr


def rebuild_features(spec: dict[str, Any] | None, rows: int | None, cols: int | None,
                     seed: int = 0) -> np.ndarray | None:  # fmt: skip
    """The features the source constructs, from the constructor's literal arguments."""
    if not spec:
        return None
    rng = np.random.default_rng(seed)
    p = [float(v) for v in spec.get("params") or []]
    n = min(int(rows or spec.get("rows") or 256), MAX_ROWS)
    d = min(int(cols or spec.get("cols") or 1), MAX_FEATURES)
    dist = spec.get("dist")
    if dist == "linspace":
        x = np.linspace(p[0], p[1], min(int(p[2]), MAX_ROWS) if len(p) > 2 else n)
        return np.resize(x, (n * d,)).reshape(n, d) if d > 1 else x.reshape(-1, 1)
    if dist == "uniform":
        return rng.uniform(p[0], p[1], (n, d))
    if dist == "normal":
        return rng.normal(p[0], p[1], (n, d))
    if dist == "values":
        values = np.asarray(p, dtype=np.float64)
        cols_here = int(spec.get("cols") or 1)
        return values.reshape(-1, cols_here)
    return None
