"""The saturation recipe (a learning rate that drives a sigmoid/softmax output layer into the
zone where its hand-written loss's gradient is dead or NaN): the rule's stand-in model on
separable targets, trained until the logits get there, against the lr / 10 control.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import tensorflow as tf

from ..floats import sigmoid_one
from . import training_text as wording
from .trace import format_number
from .trace_ops import DTYPES
from .training_base import (
    CONTROL_FACTOR,
    DEAD_LOSS,
    DEFAULT_FAN_IN,
    HORIZON,
    MAX_UNITS,
    Config,
    Params,
    Rerun,
    compile_loop,
    spec_config,
)

# -- saturation (TNL501) -------------------------------------------------------------------

# The targets of the simulation: binary, as pixels or implicit preferences are, with a long tail
# of rarely-positive outputs (each output's positive rate log-uniform in [RARE, COMMON]).  They
# are a threshold of a rank-LATENT score, so a model can learn them (separable targets).
RARE, COMMON, LATENT = 1e-4, 1 / 8, 8
BATCH_501 = 64
TARGETS = (f"binary targets, each output positive in 1 of 8 to 1 of {round(1 / RARE):,} rows "
           "(as sparse pixels or preferences)")  # fmt: skip


def element_loss(z: tf.Tensor, y: tf.Tensor, output: str, form: str, eps: float) -> tf.Tensor:
    """The hand-written probability-space loss, element by element, as the source writes it."""
    p = tf.nn.softmax(z) if output == "softmax" else tf.math.sigmoid(z)
    if form == "clip":
        p = tf.clip_by_value(p, eps, 1 - eps)
    add = eps if form == "log_eps" else 0.0
    if output == "softmax":
        return -y * tf.math.log(p + add)
    return -(y * tf.math.log(p + add) + (1 - y) * tf.math.log(1 - p + add))


@contextmanager
def graph_optimizer() -> Iterator[None]:
    """Compile as the user's program is compiled: a TF1 Session and a tf.function (Keras's
    fit included) run TensorFlow's graph optimizer, whose constant folding can move a loss's
    epsilon (``1 - p + 1e-10`` becomes ``(1 + 1e-10) - p``, and 1 + 1e-10 == 1 in float32).
    The worker turns it off for exact op semantics; the training simulation turns it back on."""
    before = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options(before)


@dataclass
class Saturation:
    step: int | None  # first step with a dead (or NaN) element, None within the horizon
    logit: float = 0.0  # the dead element's logit, the largest |logit| at a NaN, or seen
    loss: float = 0.0  # the dead element's loss
    nonfinite: bool = False
    steps: int = 0  # the steps the run took


@dataclass(frozen=True)
class Model501:
    """The sliced model the simulation trains, as the source shows it."""

    output: str
    units: int
    fan_in: int
    below: tuple[int, str] | None  # (input width, activation) of the hidden layer
    bias: bool
    form: str
    eps: float
    declared: int | None = None  # the source's width when wider than MAX_UNITS

    @property
    def autoencoder(self) -> bool:
        return self.below is not None and self.below[0] == self.units

    def describe(self, probe: dict[str, Any]) -> str:
        """The layers as the source shows them, then what the simulation assumed."""
        units = wording.units_text(probe, self.units)
        if self.declared and self.declared > self.units:
            units = f"{self.declared} units, {self.units} simulated"
        head = f"the {self.output} output layer ({units}, {self.fan_in} inputs)"
        guesses = wording.output_assumptions(probe, self.units, self.fan_in)
        if self.below is None:
            act = str((probe.get("below") or {}).get("activation") or "relu")
            head += f" on fixed {act} features"
            guesses.append(f"fixed {act} features: the hidden layer's input width is unseen")
        else:
            width, act = self.below
            what = "the model's inputs are its targets" if self.autoencoder else "dense features"
            head += f" on its {act} hidden layer ({width} inputs; {what})"
        targets = TARGETS if self.autoencoder else TARGETS.split(" (as ")[0]
        loss, stand_in = wording.loss_501(probe)
        guesses += [*stand_in, targets, f"batches of {BATCH_501}"]
        init = ", Keras's glorot initialisation"  # a Keras layer's default, read as such
        if probe.get("tf1") or probe.get("graph"):  # the program's or the file's own weights
            init = ""
            own = (
                "the model file's trained weights"
                if probe.get("graph")
                else "the source's own weights"
            )
            guesses.append(f"glorot initialisation in place of {own}")
        return f"{head}{init}, trained with {loss}{wording.assumed(guesses)}"


def model_501(probe: dict[str, Any]) -> Model501:
    loss = probe.get("loss") or {}
    below = probe.get("below") or {}
    units = max(2, min(int(probe.get("units") or 16), MAX_UNITS))
    fan_in = min(int(probe.get("fan_in") or DEFAULT_FAN_IN), MAX_UNITS)
    width = below.get("fan_in")
    return Model501(
        "softmax" if probe.get("output") == "softmax" else "sigmoid",
        units,
        fan_in,
        (min(int(width), MAX_UNITS), str(below.get("activation") or "linear")) if width else None,
        probe.get("bias") is not False,
        str(loss.get("form") or "log"),
        float(loss.get("eps") or 0.0),
        int(probe["units"]) if probe.get("units") else None,
    )


def glorot(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    limit = math.sqrt(6.0 / sum(shape))
    return rng.uniform(-limit, limit, shape)


def activation_fn(name: str) -> Any:
    try:
        return tf.keras.activations.get(name)
    except ValueError:
        return tf.keras.activations.get("relu")


class SaturationTrainer:
    """The sliced model, its streamed targets and the user's optimizer, compiled once.

    ``run(lr, steps)`` trains from the same start at any learning rate: the run at lr / 10
    reuses the graph of the run at the user's (tracing the optimizer costs hundreds of steps).
    """

    def __init__(self, m: Model501, cfg: Config, dtype: tf.DType) -> None:
        self.m, self.dtype = m, dtype
        rng = np.random.default_rng(0)
        rate = np.exp(rng.uniform(math.log(RARE), math.log(COMMON), m.units))
        v = rng.normal(size=(LATENT, m.units))
        # the score of output j is N(0, |v_j|^2): cut at its (1 - rate_j) quantile
        cut = np.array([NormalDist().inv_cdf(1 - r) for r in rate]) * np.linalg.norm(v, axis=0)
        self.prior = tf.constant(np.log(rate), dtype)
        self.v, self.cut = tf.constant(v, dtype), tf.constant(cut, dtype)
        n_in = m.below[0] if m.below else m.fan_in
        self.project = tf.constant(rng.normal(size=(LATENT, n_in)) / math.sqrt(LATENT), dtype)
        hidden_w = glorot(rng, (n_in, m.fan_in))
        weights = {"w": glorot(rng, (m.fan_in, m.units))}
        self.b = tf.zeros([m.units], dtype)  # a layer without bias: a constant zero
        if m.bias:
            weights["b"] = np.zeros(m.units)
        if m.below:
            weights |= {"hidden_w": hidden_w, "hidden_b": np.zeros(m.fan_in)}
        self.act = activation_fn(m.below[1]) if m.below else tf.nn.relu
        self.params = Params(weights, dtype, packed=cfg.clipnorm is None)
        self.counter = tf.Variable(0, dtype=tf.int32)
        self.rerun = Rerun(cfg, self.params.variables, [self.counter])
        shape = [BATCH_501, m.units]
        zeros = (tf.constant(False), *(tf.zeros(shape, dtype) for _ in range(3)))
        self.loop = compile_loop(self.step, zeros)

    def batch(self) -> tuple[tf.Tensor, tf.Tensor]:
        """The next deterministic batch of targets (and inputs: the targets for an autoencoder)."""
        m = self.m
        self.counter.assign_add(1)
        seed = tf.stack([0, self.counter])
        u = tf.cast(tf.random.stateless_normal([BATCH_501, LATENT], seed=seed), self.dtype)
        score = u @ self.v
        if m.output == "softmax":
            y = tf.one_hot(tf.argmax(score + self.prior, -1), m.units, dtype=self.dtype)
        else:
            y = tf.cast(score > self.cut, self.dtype)
        return (y if m.autoencoder else u @ self.project), y

    def step(self) -> tuple[tf.Tensor, ...]:
        """One optimizer step: (stop, logits, element losses, their gradients) of its batch."""
        m = self.m
        x, y = self.batch()
        trained = self.params.variables
        with tf.GradientTape() as tape:
            p = self.params.views()
            h = self.act(x @ p["hidden_w"] + p["hidden_b"]) if m.below else tf.nn.relu(x)
            z = h @ p["w"] + p.get("b", self.b)
            tape.watch(z)
            per = element_loss(z, y, m.output, m.form, m.eps)
            rows = tf.reduce_sum(per, axis=-1)
            loss = tf.reduce_mean(rows)
        dz, *grads = tape.gradient(loss, [z, *trained])
        self.rerun.opt.apply_gradients(zip(grads, trained, strict=True))
        # a float minimum over |dz| is cheap, boolean ops over every element are not: the exact
        # check runs only on a step where some dz is 0 (or NaN)
        maybe = tf.logical_not(tf.reduce_min(tf.abs(dz)) > 0)
        dead = tf.cond(maybe, lambda: tf.reduce_any(is_dead(per, dz)), lambda: tf.constant(False))
        # a row's sum is finite exactly when its elements are (each is below -log of the
        # smallest float, so a row cannot overflow): 64 checks instead of one per element
        broken = tf.logical_not(tf.reduce_all(tf.math.is_finite(rows)))
        return tf.logical_or(dead, broken), z, per, dz

    def run(self, lr: float, steps: int) -> Saturation:
        """Train from the start at ``lr`` for at most ``steps`` steps; stop at the first step
        with a dead or NaN element."""
        self.rerun.restart(lr)
        with graph_optimizer():
            done, stop, z, per, dz = self.loop(tf.constant(steps))
        if not bool(stop):
            return Saturation(None, float(np.nanmax(np.abs(z.numpy()))), steps=int(done))
        return stopped_at(int(done), z.numpy(), per.numpy(), dz.numpy())


def is_dead(per: Any, dz: Any) -> Any:
    """Elements whose loss is above DEAD_LOSS with a gradient of exactly 0 (tensors or arrays)."""
    return (per > DEAD_LOSS) & (dz == 0)


def stopped_at(step: int, z: np.ndarray, per: np.ndarray, dz: np.ndarray) -> Saturation:
    """The first NaN/Inf element of the step that stopped the run, else its first dead one."""
    dead = is_dead(per, dz)
    z, per = z.astype(np.float64), per.astype(np.float64)
    if not np.isfinite(per).all():
        i = tuple(np.argwhere(~np.isfinite(per))[0])
        return Saturation(step, float(z[i]), float(per[i]), True, steps=step)
    i = tuple(np.argwhere(dead)[0])
    return Saturation(step, float(z[i]), float(per[i]), steps=step)


def compiled_floor(m: Model501, dtype: tf.DType) -> float:
    """The compiled loss of a negative target at logit 30 (p == 1): finite when the epsilon
    survived compilation, inf when the graph optimizer folded it away."""

    @tf.function(autograph=False)
    def at(z: tf.Tensor) -> tf.Tensor:
        return element_loss(z, tf.zeros_like(z), m.output, m.form, m.eps)

    with graph_optimizer():
        return float(at(tf.constant([[30.0]], dtype)).numpy().ravel()[0])


def dead_zone(probe: dict[str, Any]) -> str:
    loss = probe.get("loss") or {}
    form, eps = loss.get("form"), float(loss.get("eps") or 0.0)
    if form == "log_eps" and eps:
        return (
            f"log(p + {format_number(eps)}) has a zero gradient past |logit| {-math.log(eps):.3g}"
        )
    if form == "clip" and eps:
        return (f"the clip to [{format_number(eps)}, 1 - {format_number(eps)}] zeroes the "
                f"gradient past |logit| {-math.log(eps):.3g}")  # fmt: skip
    return "log(p) is -inf past |logit| 88 (float32)"


def _seen(m: Model501, got: Saturation, dtype: tf.DType) -> str:
    """What the simulation saw at the step it stopped, in the loss's own terms."""
    if not got.nonfinite:
        return (f"a logit reaches {got.logit:.3g} against its target; the loss is then "
                f"{got.loss:.4g} with zero gradient")  # fmt: skip
    text = f"a logit reaches {got.logit:.3g} and the loss is NaN/Inf"
    if (
        m.output == "sigmoid"
        and m.form == "log_eps"
        and not math.isfinite(compiled_floor(m, dtype))
    ):
        eps = format_number(m.eps)
        name = dtype.name
        text += (f": sigmoid rounds to 1 past {sigmoid_one(name):.3g} in {name}, and the compiled "
                 f"log(1 - p + {eps}) is then log(0), because 1 + {eps} == 1 in {name} "
                 "(TensorFlow's graph optimizer adds the constants first)")  # fmt: skip
    return text


def verify_saturation(probe: dict[str, Any], dtype_name: str) -> dict[str, Any]:
    """Saturation at a high learning rate: confirmed when the logits reach the loss's dead or
    NaN zone within HORIZON steps and at lr / 10 they do not within CONTROL_FACTOR times as
    many.  The control stops there, so its count is exact or a lower bound."""
    dtype = DTYPES[dtype_name]
    cfg = spec_config(probe)
    slow = spec_config(probe, cfg.lr / 10)
    m = model_501(probe)
    trainer = SaturationTrainer(m, cfg, dtype)
    got = trainer.run(cfg.lr, HORIZON)
    layer = m.describe(probe)
    inputs = {"optimizer": cfg.optimizer, "learning_rate": cfg.lr, "fan_in": m.fan_in,
              "units": m.units, "below": m.below, "loss": probe.get("loss"),
              "targets": TARGETS}  # fmt: skip
    if got.step is None:
        return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs,
                "observed": {"steps": HORIZON, "largest_logit": got.logit},
                "detail": f"{layer}: after {HORIZON} {cfg.optimizer} steps at lr "
                f"{format_number(cfg.lr)} the loss is finite and no logit is in the zone where "
                f"{dead_zone(probe)} against its target (the largest |logit| is "
                f"{got.logit:.3g}); the simulation cannot tell this learning rate from a safe "
                "one"}  # fmt: skip
    ref = trainer.run(slow.lr, CONTROL_FACTOR * got.step)
    ref_text = (f"lr {format_number(slow.lr)}: {ref.step} steps" if ref.step is not None
                else f"lr {format_number(slow.lr)}: not within {ref.steps} steps")  # fmt: skip
    observed = {"step": got.step, "logit": got.logit, "loss": got.loss, "control_lr": slow.lr,
                "control_step": ref.step, "control_steps_run": ref.steps}  # fmt: skip
    detail = (f"{layer}: after {got.step} {cfg.optimizer} steps at lr {format_number(cfg.lr)} "
              f"{_seen(m, got, dtype)} ({ref_text})")  # fmt: skip
    if ref.step is not None and ref.step < CONTROL_FACTOR * got.step:
        return {"status": "inconclusive", "dtype": dtype_name, "inputs": inputs,
                "observed": observed, "detail": detail + "; the control is not much later, so "
                "the learning rate is not what decides it"}  # fmt: skip
    symptom = "nan-value" if got.nonfinite else "dead-gradient"
    return {"status": "confirmed", "symptom": symptom, "dtype": dtype_name, "inputs": inputs,
            "observed": observed, "detail": detail}  # fmt: skip
