"""The step-size recipes: divergence (plain or momentum SGD on a squared error over the
program's features), a loss summed over the batch against its mean, and a gradient-norm
explosion without clipping against ``clipnorm``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from . import training_text as wording
from .trace import format_number
from .trace_ops import DTYPES
from .training_base import (
    DIVERGENCE_STEPS,
    EXAMPLES_502,
    MAX_FEATURES,
    SUMMED_STEPS,
    Config,
    Params,
    Rerun,
    compile_loop,
    make_optimizer,
    rebuild_features,
    run_training,
    spec_config,
)
from .training_saturation import (
    activation_fn,
    glorot,
)

# -- divergence (TNL505) -------------------------------------------------------------------


@dataclass
class Descent:
    first: float
    last: float
    nonfinite_step: int | None
    growth: float  # median loss ratio per step over the last finite steps


def descent_run(x: np.ndarray, cfg: Config, dtype: tf.DType, steps: int) -> Descent:
    """Mean squared error of a linear model (weights and bias from zero) on these features."""
    d = x.shape[1]
    y = 3.0 * x.mean(axis=1, keepdims=True) + 2.0
    xt, yt = tf.constant(x, dtype), tf.constant(y, dtype)
    w = tf.Variable(tf.zeros([d, 1], dtype))
    b = tf.Variable(tf.zeros([1], dtype))
    opt = make_optimizer(cfg)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(xt @ w + b - yt))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients([(grads[0], w), (grads[1], b)])
        return loss

    losses: list[float] = []

    def watch(_i: int, loss: Any) -> bool | None:
        value = float(loss.numpy())
        if not math.isfinite(value):
            return True
        losses.append(value)
        return None

    at, _ = run_training(step, steps, watch)
    ratios = [b / a for a, b in itertools.pairwise(losses[-11:]) if a > 0]
    growth = float(np.median(ratios)) if ratios else 1.0
    return Descent(
        losses[0] if losses else math.inf, losses[-1] if losses else math.inf, at, growth
    )


def verify_divergence(probe: dict[str, Any], dtype_name: str) -> dict[str, Any]:
    """Divergence of plain SGD: the user's SGD on the literal features; lr / 10 is the control."""
    cfg = spec_config(probe)
    data = probe.get("data") or "the features"
    features = probe.get("features")
    x = rebuild_features(features, None, None)
    if x is None:
        limit = probe.get("rms_limit")
        cond = f"diverges once the features' RMS exceeds {limit:.3g}" if limit else "may diverge"
        return {"status": "inconclusive", "dtype": dtype_name,
                "detail": f"SGD at lr {format_number(cfg.lr)} on a squared error {cond}; the scale "
                f"of `{data}` is not visible, so nothing was simulated"}  # fmt: skip
    dtype = DTYPES[dtype_name]
    got = descent_run(x, cfg, dtype, DIVERGENCE_STEPS)
    slow = spec_config(probe, cfg.lr / 10)
    ref = descent_run(x, slow, dtype, DIVERGENCE_STEPS)
    source = (features or {}).get("text") or data
    inputs = {"features": source, "shape": list(x.shape), "learning_rate": cfg.lr,
              "momentum": cfg.momentum}  # fmt: skip
    observed = {"first_loss": got.first, "nonfinite_step": got.nonfinite_step,
                "growth_per_step": got.growth, "control_lr": slow.lr,
                "control_first_loss": ref.first, "control_last_loss": ref.last}  # fmt: skip
    model = f"a linear model on `{data}` = {source} ({x.shape[0]} x {x.shape[1]})"
    diverged = got.nonfinite_step is not None and got.growth > 1.0
    converged = ref.nonfinite_step is None and ref.last < ref.first
    if diverged and converged:
        return {"status": "confirmed", "symptom": "diverges", "dtype": dtype_name,
                "inputs": inputs, "observed": observed,
                "detail": f"{model}: {cfg.describe_sgd()} the mean squared error grows about "
                f"{got.growth:.3g}x per step, from {got.first:.4g} to inf at step "
                f"{got.nonfinite_step}; at lr {format_number(slow.lr)} it falls from "
                f"{ref.first:.4g} to {ref.last:.4g} in {DIVERGENCE_STEPS} steps"}  # fmt: skip
    if got.nonfinite_step is None and got.last < got.first:
        return {"status": "refuted", "dtype": dtype_name, "inputs": inputs, "observed": observed,
                "detail": f"{model}: {cfg.describe_sgd()} the loss falls from {got.first:.4g} to "
                f"{got.last:.4g} in {DIVERGENCE_STEPS} steps"}  # fmt: skip
    return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs, "observed": observed,
            "detail": f"{model}: {cfg.describe_sgd()} the loss goes from {got.first:.4g} to "
            f"{got.last:.4g} in {DIVERGENCE_STEPS} steps without reaching inf, and lr "
            f"{format_number(slow.lr)} {'converges' if converged else 'does not converge either'}"}  # fmt: skip


# -- summed over the batch (TNL506) --------------------------------------------------------


def batch_loss(z: tf.Tensor, y: tf.Tensor, form: str) -> tf.Tensor:
    """Per-example loss of the form the source writes."""
    if form == "softmax_xent":
        return tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=z)
    if form == "sigmoid_xent":
        return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z), -1)
    if form == "squared":
        return tf.reduce_sum(tf.square(z - y), -1)
    return -tf.reduce_sum(y * tf.math.log(tf.nn.softmax(z)), -1)  # softmax_log


def summed_run(x: np.ndarray, y: np.ndarray, form: str, cfg: Config, summed: bool,
               dtype: tf.DType) -> Descent:  # fmt: skip
    """One linear layer from zero; the loss summed over the batch or averaged."""
    xt, yt = tf.constant(x, dtype), tf.constant(y, dtype)
    w = tf.Variable(tf.zeros([x.shape[1], y.shape[1]], dtype))
    b = tf.Variable(tf.zeros([y.shape[1]], dtype))
    opt = make_optimizer(cfg)
    reduce = tf.reduce_sum if summed else tf.reduce_mean

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            per = batch_loss(xt @ w + b, yt, form)
            loss = reduce(per)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients([(grads[0], w), (grads[1], b)])
        return tf.reduce_mean(per)

    losses: list[float] = []

    def watch(_i: int, mean: Any) -> bool | None:
        value = float(mean.numpy())
        if not math.isfinite(value):
            return True
        losses.append(value)
        return None

    at, _ = run_training(step, SUMMED_STEPS, watch)
    return Descent(losses[0] if losses else math.inf, losses[-1] if losses else math.inf, at, 1.0)


def verify_summed(probe: dict[str, Any], dtype_name: str) -> dict[str, Any]:
    """A summed loss: the same layer, loss and optimizer, summed over the batch against its mean."""
    cfg = spec_config(probe)
    batch = int(probe.get("batch") or 0)
    lr_text = f"{format_number(cfg.lr)} x {batch} = {format_number(cfg.lr * batch)}"
    if probe.get("recipe") == "summed_update":
        return {"status": "inconclusive", "dtype": dtype_name,
                "inputs": {"learning_rate": cfg.lr, "batch": batch},
                "detail": f"a hand-written update is not simulated: its step is {lr_text} times "
                "the per-example average"}  # fmt: skip
    form = str(probe.get("loss") or "unknown")
    if form == "unknown":
        return {"status": "inconclusive", "dtype": dtype_name,
                "detail": "the summed loss is not a cross-entropy or a squared error the verifier "
                "can rebuild"}  # fmt: skip
    d = int(probe.get("feature_count") or 0) or None
    x = rebuild_features(probe.get("features"), batch, d)
    if x is None:
        return {"status": "inconclusive", "dtype": dtype_name,
                "inputs": {"learning_rate": cfg.lr, "batch": batch},
                "detail": f"each SGD step is {lr_text} times the mean gradient; the features' "
                "scale is not visible, so nothing was simulated"}  # fmt: skip
    rng = np.random.default_rng(1)
    classes = 1 if form in ("sigmoid_xent", "squared") else 10
    if form == "squared":
        y = x.mean(axis=1, keepdims=True)
    elif classes == 1:
        y = rng.integers(0, 2, (x.shape[0], 1)).astype(np.float64)
    else:
        y = np.eye(classes)[rng.integers(0, classes, x.shape[0])]
    dtype = DTYPES[dtype_name]
    got = summed_run(x, y, form, cfg, True, dtype)
    ref = summed_run(x, y, form, cfg, False, dtype)
    inputs = {"batch": x.shape[0], "features": x.shape[1], "learning_rate": cfg.lr,
              "loss": form}  # fmt: skip
    observed = {"summed_nonfinite_step": got.nonfinite_step, "summed_last_loss": got.last,
                "mean_first_loss": ref.first, "mean_last_loss": ref.last}  # fmt: skip
    failed = got.nonfinite_step is not None or got.last > got.first
    healthy = ref.nonfinite_step is None and ref.last < ref.first
    summed = (f"is NaN/Inf at step {got.nonfinite_step}" if got.nonfinite_step is not None
              else f"goes from {got.first:.4g} to {got.last:.4g}")  # fmt: skip
    head = (f"a linear {form.replace('_', ' ')} layer on a batch of {x.shape[0]} x {x.shape[1]} "
            f"features, SGD at lr {format_number(cfg.lr)}")  # fmt: skip
    text = (f"{head}: summed over the batch (each step {lr_text} times the mean gradient) the "
            f"per-example loss {summed}; with reduce_mean it falls from {ref.first:.4g} to "
            f"{ref.last:.4g} in {SUMMED_STEPS} steps")  # fmt: skip
    if failed and healthy:
        return {"status": "confirmed", "symptom": "diverges", "dtype": dtype_name,
                "inputs": inputs, "observed": observed, "detail": text}  # fmt: skip
    if not failed:
        return {"status": "refuted", "dtype": dtype_name, "inputs": inputs, "observed": observed,
                "detail": text}  # fmt: skip
    return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs,
            "observed": observed, "detail": text + " (the mean run does not converge either)"}  # fmt: skip


# -- gradient-norm explosion (no clipping) ---------------------------------------------------

NORM_STEPS = 300  # the horizon of the gradient-norm simulation, at lr and at lr / 10
EXPLODES = 1e3  # the global gradient norm grows past this multiple of its first value
CALM = 1e2  # ... and at lr / 10 stays below this multiple
NORM_INPUTS = 16  # input width when the stack's Input is not visible


@dataclass
class NormTrace:
    first: float
    peak: float  # the largest global gradient norm (inf when it overflowed)
    peak_step: int
    steps: int

    @property
    def growth(self) -> float:
        return self.peak / self.first if self.first > 0 else math.inf


class NormTrainer:
    """The user's Dense stack (glorot weights, zero biases) on a regression of standardised
    features (MSE), trained with the user's optimizer, compiled once for every learning rate.
    The global gradient norm is tracked inside the compiled loop, which stops once the norm
    is NaN/Inf or has grown ``limit``-fold: past that the run's outcome is decided."""

    def __init__(self, stack: dict[str, Any], cfg: Config, dtype: tf.DType) -> None:
        rng = np.random.default_rng(0)
        d = int(stack.get("inputs") or NORM_INPUTS)
        layers = [(min(int(u), MAX_FEATURES), str(a)) for u, a in stack["layers"]]
        x = rng.normal(size=(EXAMPLES_502, d))
        y = np.sin(x @ rng.normal(size=(d, layers[-1][0])) / math.sqrt(d))
        self.x, self.y = tf.constant(x, dtype), tf.constant(y, dtype)
        weights: dict[str, np.ndarray] = {}
        n = d
        for i, (units, _) in enumerate(layers):
            weights |= {f"w{i}": glorot(rng, (n, units)), f"b{i}": np.zeros(units)}
            n = units
        self.params = Params(weights, dtype, packed=cfg.clipnorm is None)
        self.acts = [activation_fn(a) for _, a in layers]
        self.first = tf.Variable(-1.0, dtype=tf.float64)
        self.peak = tf.Variable(0.0, dtype=tf.float64)
        self.count, self.peak_step = tf.Variable(0), tf.Variable(0)
        counters = [self.first, self.peak, self.count, self.peak_step]
        self.rerun = Rerun(cfg, self.params.variables, counters)
        self.loop = compile_loop(self.step, (tf.constant(False),))

    def step(self, limit: tf.Tensor) -> tuple[tf.Tensor]:
        trained = self.params.variables
        with tf.GradientTape() as tape:
            p = self.params.views()
            h = self.x
            for i, act in enumerate(self.acts):
                h = act(h @ p[f"w{i}"] + p[f"b{i}"])
            loss = tf.reduce_mean(tf.square(h - self.y))
        grads = tape.gradient(loss, trained)
        self.rerun.opt.apply_gradients(zip(grads, trained, strict=True))
        norm = tf.cast(tf.linalg.global_norm(grads), tf.float64)
        norm = tf.where(tf.math.is_nan(norm), tf.constant(math.inf, tf.float64), norm)
        count = self.count.assign_add(1)
        first = self.first.assign(tf.where(self.first < 0, norm, self.first))
        higher = norm > self.peak
        peak = self.peak.assign(tf.where(higher, norm, self.peak))
        self.peak_step.assign(tf.where(higher, count, self.peak_step))
        growth = tf.where(first > 0, peak / first, tf.constant(math.inf, tf.float64))
        return (tf.logical_or(tf.logical_not(tf.math.is_finite(norm)), growth >= limit),)

    def run(self, lr: float, limit: float) -> NormTrace:
        """Train from the start at ``lr`` for NORM_STEPS steps, or until the norm has grown
        ``limit``-fold."""
        self.rerun.restart(lr)
        self.loop(tf.constant(NORM_STEPS), tf.constant(limit, tf.float64))
        return NormTrace(float(self.first.numpy()), float(self.peak.numpy()),
                         int(self.peak_step.numpy()), int(self.count.numpy()))  # fmt: skip


def _stack_text(probe: dict[str, Any], stack: dict[str, Any]) -> str:
    """The user's stack and task as read from the source, and what the simulation assumed."""
    head, guesses = wording.stack_502(stack, NORM_INPUTS)
    task, stand_in = wording.task_502(probe)
    return f"{head} {task}{wording.assumed(guesses + stand_in)}"


def verify_clipping(probe: dict[str, Any], dtype_name: str) -> dict[str, Any]:
    """No gradient clipping: confirmed when the user's stack, optimizer and lr grow the global
    gradient norm by EXPLODES within NORM_STEPS steps while lr / 10 keeps it within CALM.  Each
    run stops once that is decided; without an explosion there is nothing to control for."""
    cfg = spec_config(probe)
    stack = probe.get("stack")
    if not stack or not stack.get("layers"):
        return {"status": "inconclusive", "dtype": dtype_name,
                "detail": f"{cfg.optimizer} at lr {format_number(cfg.lr)} without clipping: no "
                "Sequential Dense stack is visible, so the gradient norm was not simulated and "
                "the probe cannot tell this configuration from a safe one"}  # fmt: skip
    trainer = NormTrainer(stack, cfg, DTYPES[dtype_name])
    got = trainer.run(cfg.lr, EXPLODES)
    model = _stack_text(probe, stack)
    inputs = {"optimizer": cfg.optimizer, "learning_rate": cfg.lr, "stack": stack,
              "examples": EXAMPLES_502}  # fmt: skip
    observed: dict[str, Any] = {"first_norm": got.first, "peak_norm": got.peak,
                                "peak_step": got.peak_step, "growth": got.growth,
                                "steps": got.steps}  # fmt: skip
    at = f"with {cfg.optimizer} at lr {format_number(cfg.lr)} the global gradient norm"
    if got.growth < EXPLODES:
        return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs,
                "observed": observed, "detail": f"{model}: {at} stays within x{got.growth:.3g} "
                f"of its first value, {got.first:.3g}, over {got.steps} steps (largest "
                f"{got.peak:.3g}, at step {got.peak_step}); short of x{EXPLODES:,.0f}, so the "
                "probe cannot tell this configuration from a safe one"}  # fmt: skip
    slow = spec_config(probe, cfg.lr / 10)
    ref = trainer.run(slow.lr, CALM)
    observed.update(control_lr=slow.lr, control_growth=ref.growth, control_steps=ref.steps)
    seen = (f"{at} goes from {got.first:.3g} to {got.peak:.3g} at step {got.peak_step} "
            f"(x{got.growth:.3g}); at lr {format_number(slow.lr)} ")  # fmt: skip
    if ref.growth < CALM:
        seen += f"its largest is {ref.peak:.3g} (x{ref.growth:.3g}) over {ref.steps} steps"
        return {"status": "confirmed", "symptom": "exploding-gradient", "dtype": dtype_name,
                "inputs": inputs, "observed": observed, "detail": f"{model}: {seen}"}  # fmt: skip
    seen += (f"it grows too, to {ref.peak:.3g} at step {ref.peak_step} (x{ref.growth:.3g}, past "
             f"x{CALM:.0f})")  # fmt: skip
    return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs,
            "observed": observed, "detail": f"{model}: {seen}; the probe cannot tell this "
            "configuration from a safe one"}  # fmt: skip
