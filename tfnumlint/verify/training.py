"""Training probes: run the user's optimizer class and hyper-parameters for real.

The learning-rate rules declare a ``recipe`` next to their check (``rules/training.py``) and
send a plain training spec; each recipe here replays it and reports only what it observes,
next to a control (lr / 10, the batch mean, clipping):

- ``saturation``: the sliced sigmoid/softmax output layer on separable targets, until the
  logits reach the zone where the hand-written loss's gradient is dead or NaN;
- ``divergence``: plain or momentum SGD on a squared error over the literal features;
- ``summed`` / ``summed_update``: a loss summed over the batch against its mean;
- ``clipping``: the one-layer model with and without ``clipnorm``;
- the optimizer-epsilon probe (tiny gradients in float16).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import tensorflow as tf

from ..floats import sigmoid_one
from ..optimizers import OPTIMIZERS
from . import training_text as wording
from .trace import DTYPES, format_number

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


def verify_training(probe: dict[str, Any]) -> dict[str, Any]:
    """Run the configured and the control training; the verdict is what they show."""
    dtype_name = probe.get("dtype") or "float32"
    dtype = DTYPES[dtype_name]
    name = str(probe.get("optimizer") or "").lower()
    if name not in KERAS and probe.get("recipe") != "summed_update":
        return {
            "status": "inconclusive",
            "detail": f"unknown optimizer {name!r}",
            "dtype": dtype_name,
        }
    recipe = RECIPES.get(str(probe.get("recipe")))
    if recipe is not None:
        return recipe(probe, dtype_name)
    cfg = spec_config(probe)
    safe = control(probe, cfg)
    if probe.get("control") == "epsilon":
        return verify_epsilon(cfg, safe, dtype_name)
    output = probe.get("output") or "sigmoid"
    loss_eps = (
        (probe.get("loss") or {}).get("eps") if probe.get("recipe") else probe.get("loss_eps")
    )
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
        if probe.get("tf1"):  # the source creates its own weights
            init = ""
            guesses.append("glorot initialisation in place of the source's own weights")
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


def _glorot(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    limit = math.sqrt(6.0 / sum(shape))
    return rng.uniform(-limit, limit, shape)


def _activation(name: str) -> Any:
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
        hidden_w = _glorot(rng, (n_in, m.fan_in))
        weights = {"w": _glorot(rng, (m.fan_in, m.units))}
        self.b = tf.zeros([m.units], dtype)  # a layer without bias: a constant zero
        if m.bias:
            weights["b"] = np.zeros(m.units)
        if m.below:
            weights |= {"hidden_w": hidden_w, "hidden_b": np.zeros(m.fan_in)}
        self.act = _activation(m.below[1]) if m.below else tf.nn.relu
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
    ratios = [b / a for a, b in zip(losses[-11:], losses[-10:], strict=False) if a > 0]
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
            weights |= {f"w{i}": _glorot(rng, (n, units)), f"b{i}": np.zeros(units)}
            n = units
        self.params = Params(weights, dtype, packed=cfg.clipnorm is None)
        self.acts = [_activation(a) for _, a in layers]
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


RECIPES = {
    "saturation": verify_saturation,
    "divergence": verify_divergence,
    "summed": verify_summed,
    "summed_update": verify_summed,
    "clipping": verify_clipping,
}
