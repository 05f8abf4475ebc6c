"""Training-configuration probes (TNL403, TNL501, TNL502): run a few real optimizer steps.

The user's optimizer class and hyper-parameters train a tiny one-layer model (784 inputs in
[0, 1], like normalised pixels; a sigmoid or softmax output; noisy labels) with the
hand-written log loss (with the module's epsilon if it has one).  The same run with a safe
configuration is the control: a finding is confirmed only when the configured run shows a
symptom (NaN/Inf, or examples stuck saturated with an exactly-zero gradient) and the control
does not; when both or neither do, the probe cannot tell them apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from .trace import DTYPES, format_number

STEPS = 25
FEATURES = 784
EXAMPLES = 32
KERAS = {
    "adam": "Adam",
    "adamw": "AdamW",
    "adamax": "Adamax",
    "nadam": "Nadam",
    "rmsprop": "RMSprop",
    "adagrad": "Adagrad",
    "adadelta": "Adadelta",
    "ftrl": "Ftrl",
    "sgd": "SGD",
}
TF1 = {
    "adam": "AdamOptimizer",
    "rmsprop": "RMSPropOptimizer",
    "adagrad": "AdagradOptimizer",
    "adadelta": "AdadeltaOptimizer",
    "ftrl": "FtrlOptimizer",
    "sgd": "GradientDescentOptimizer",
}
TF1_EPSILON = {"adam": 1e-8, "rmsprop": 1e-10, "adadelta": 1e-8}
EPSILON_OPTIMIZERS = frozenset(
    {"adam", "adamw", "adamax", "nadam", "rmsprop", "adagrad", "adadelta"}
)


@dataclass
class Config:
    optimizer: str
    tf1: bool
    lr: float
    epsilon: float | None
    clipnorm: float | None

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


def make_optimizer(cfg: Config) -> Any:
    """The user's optimizer class with their hyper-parameters (TF1 in eager mode)."""
    if cfg.tf1:
        name = TF1.get(cfg.optimizer)
        if name is None:
            raise ValueError(f"no TF1 optimizer for {cfg.optimizer!r}")
        cls = getattr(tf.compat.v1.train, name)
        kw: dict[str, Any] = {"learning_rate": cfg.lr}
        if cfg.epsilon is not None and cfg.optimizer in TF1_EPSILON:
            kw["epsilon"] = cfg.epsilon
        return cls(**kw)
    cls = getattr(tf.keras.optimizers, KERAS[cfg.optimizer])
    kw = {"learning_rate": cfg.lr}
    if cfg.epsilon is not None and cfg.optimizer in EPSILON_OPTIMIZERS:
        kw["epsilon"] = cfg.epsilon
    if cfg.clipnorm is not None:
        kw["clipnorm"] = cfg.clipnorm
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
    rule = probe.get("rule")
    if rule == "TNL403":
        return Config(cfg.optimizer, cfg.tf1, cfg.lr, 1e-4, cfg.clipnorm)
    if rule == "TNL502":
        return Config(cfg.optimizer, False, cfg.lr, cfg.epsilon, 1.0)
    return Config(cfg.optimizer, cfg.tf1, 1e-3, cfg.epsilon, cfg.clipnorm)


TINY_STEPS = 200


def tiny_gradient_step(cfg: Config, dtype: tf.DType) -> tuple[bool, float]:
    """TNL403: updates with small (and zero) gradients, as late in training.

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


def verify_training(probe: dict[str, Any]) -> dict[str, Any]:
    """Run the configured and the control training; the verdict is what they show."""
    dtype_name = probe.get("dtype") or "float32"
    dtype = DTYPES[dtype_name]
    name = str(probe.get("optimizer") or "").lower()
    if name not in KERAS:
        return {
            "status": "inconclusive",
            "detail": f"unknown optimizer {name!r}",
            "dtype": dtype_name,
        }
    eps = probe.get("epsilon")
    cfg = Config(name, bool(probe.get("tf1")), float(probe.get("learning_rate") or 1e-3),
                 None if eps is None else float(eps), probe.get("clipnorm"))  # fmt: skip
    safe = control(probe, cfg)
    if probe.get("rule") == "TNL403":
        return verify_epsilon(cfg, safe, dtype_name)
    output = probe.get("output") or "sigmoid"
    loss_eps = probe.get("loss_eps")
    loss_eps = None if loss_eps is None else float(loss_eps)
    got, ref = train(cfg, output, loss_eps, dtype), train(safe, output, loss_eps, dtype)
    return compare(probe, cfg, safe, got, ref, output, dtype_name)


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
