"""Reproducers for training-simulation confirmations (static side, no TF import).

Each replays the run ``training.py`` made, with the same seeds, model, optimizer and stopping
rule, written out as a plain script: the optimizer-epsilon updates, and the saturation run of
a sigmoid/softmax output layer.  Other training recipes have no reproducer yet: ``script``
raises ValueError, which ``repro.emit_all`` reports as a notice.
"""

from __future__ import annotations

from typing import Any

from ..model import Finding
from ..optimizers import OPTIMIZERS
from .repro_code import header, number

TINY_STEPS = 200  # training.TINY_STEPS
STEP_BLOWUP = 50.0  # training.STEP_BLOWUP
MAX_UNITS, DEFAULT_FAN_IN = 512, 64  # training.MAX_UNITS, DEFAULT_FAN_IN


def script(finding: Finding, probe: dict[str, Any]) -> str:
    if probe.get("control") == "epsilon":
        how = (
            "It replays the verifier's optimizer probe: the program's optimizer and epsilon\n"
            f"applying small (and zero) gradients {TINY_STEPS} times, as late in training."
        )
        return header(finding, how) + "\n\n" + epsilon_body(finding, probe)
    if probe.get("recipe") == "saturation":
        how = (
            "It replays the verifier's training run: the program's output layer, loss and\n"
            "optimizer trained on separable synthetic targets, compiled as the program is\n"
            "(tf.function, graph optimizer on), until an element's loss is NaN/Inf or dead."
        )
        return header(finding, how) + "\n\n" + saturation_body(finding, probe)
    if probe.get("recipe") in ("divergence", "summed"):
        how = (
            "It replays the verifier's training run: a linear model on the features the source\n"
            "builds, the program's optimizer and learning rate, until the loss is NaN/Inf."
        )
        return header(finding, how) + "\n\n" + descent_body(finding, probe)
    raise ValueError(f"no reproducer for the training recipe {probe.get('recipe')!r} yet")


def optimizer_source(probe: dict[str, Any], packed_lr: bool = False) -> str:
    """The optimizer construction as the verifier's ``make_optimizer`` builds it."""
    family = str(probe.get("optimizer") or "").lower()
    facts = OPTIMIZERS[family]
    lr = number(probe.get("learning_rate") or 1e-3)
    eps, momentum = probe.get("epsilon"), float(probe.get("momentum") or 0.0)
    if probe.get("tf1"):
        if family == "sgd" and momentum:
            return f"tf.compat.v1.train.MomentumOptimizer({lr}, {number(momentum)})"
        kw = [f"learning_rate={lr}"]
        if eps is not None and facts.tf1_epsilon:
            kw.append(f"epsilon={number(eps)}")
        return f"tf.compat.v1.train.{facts.tf1}({', '.join(kw)})"
    kw = [f"learning_rate={lr}"]
    if eps is not None and facts.keras_epsilon is not None:
        kw.append(f"epsilon={number(eps)}")
    if probe.get("clipnorm") is not None:
        kw.append(f"clipnorm={number(probe['clipnorm'])}")
    if family == "sgd" and momentum:
        kw.append(f"momentum={number(momentum)}")
    return f"tf.keras.optimizers.{facts.keras}({', '.join(kw)})"


def epsilon_body(finding: Finding, probe: dict[str, Any]) -> str:
    symptom = finding.verification.symptom
    dtype = probe.get("dtype") or "float32"
    lr = float(probe.get("learning_rate") or 1e-3)
    eps = (finding.verification.inputs or {}).get("epsilon")
    if symptom == "nan-value":
        verdict = "return not finite"
    elif symptom == "diverges":
        verdict = f"return finite and largest > {number(STEP_BLOWUP * lr)}  # 50 x lr"
    elif symptom == "epsilon-underflow":
        verdict = "return stored == 0.0"
    else:
        raise ValueError(f"no reproducer for the optimizer symptom {symptom!r}")
    return f"""DTYPE = tf.{dtype}
EPSILON = {number(eps if eps is not None else 0.0)}


def main():
    w = tf.Variable(tf.ones([4], DTYPE))
    opt = {optimizer_source(probe)}
    grad = tf.constant([1e-4, 1e-3, 0.0, 1e-2], DTYPE)
    stored = float(tf.cast(tf.constant(EPSILON, tf.float64), DTYPE).numpy())
    print("epsilon", EPSILON, "in", DTYPE.name, "is", stored)
    largest, finite = 0.0, True
    for step in range({TINY_STEPS}):
        before = w.numpy().astype(np.float64)
        opt.apply_gradients([(grad, w)])
        after = w.numpy().astype(np.float64)
        if not np.isfinite(after).all():
            print(f"step {{step}}: weights {{after}}: non-finite (nan/inf)")
            finite = False
            break
        largest = max(largest, float(np.max(np.abs(after - before))))
    print("largest single-step move", largest)
    if shows(finite, largest, stored):
        print("REPRODUCED")
        return 1
    print("not reproduced")
    return 0


def shows(finite, largest, stored):
    {verdict}


if __name__ == "__main__":
    sys.exit(main())
"""


def saturation_body(finding: Finding, probe: dict[str, Any]) -> str:
    loss = probe.get("loss") or {}
    below = probe.get("below") or {}
    units = max(2, min(int(probe.get("units") or 16), MAX_UNITS))
    fan_in = min(int(probe.get("fan_in") or DEFAULT_FAN_IN), MAX_UNITS)
    width = below.get("fan_in")
    hidden = (
        (min(int(width), MAX_UNITS), str(below.get("activation") or "linear")) if width else None
    )
    steps = int((finding.verification.observed or {}).get("step") or 300)
    tf1 = bool(probe.get("tf1"))
    build = "opt._create_slots(params)" if tf1 else "opt.build(params)"
    return f'''DTYPE = tf.{probe.get("dtype") or "float32"}
OUTPUT = {("softmax" if probe.get("output") == "softmax" else "sigmoid")!r}
UNITS, FAN_IN, HIDDEN = {units}, {fan_in}, {hidden!r}  # HIDDEN: (its inputs, activation)
BIAS = {probe.get("bias") is not False!r}
FORM, EPS = {str(loss.get("form") or "log")!r}, {number(loss.get("eps") or 0.0)}
STEPS = {steps + 5}  # the verifier saw it at step {steps}
RARE, COMMON, LATENT, BATCH = 1e-4, 1 / 8, 8, 64


def element_loss(z, y):
    """The program's hand-written loss, element by element."""
    p = tf.nn.softmax(z) if OUTPUT == "softmax" else tf.math.sigmoid(z)
    if FORM == "clip":
        p = tf.clip_by_value(p, EPS, 1 - EPS)
    add = EPS if FORM == "log_eps" else 0.0
    if OUTPUT == "softmax":
        return -y * tf.math.log(p + add)
    return -(y * tf.math.log(p + add) + (1 - y) * tf.math.log(1 - p + add))


def glorot(rng, shape):
    limit = np.sqrt(6.0 / sum(shape))
    return rng.uniform(-limit, limit, shape)


def main():
    from statistics import NormalDist

    rng = np.random.default_rng(0)
    rate = np.exp(rng.uniform(np.log(RARE), np.log(COMMON), UNITS))
    v = rng.normal(size=(LATENT, UNITS))
    cut = np.array([NormalDist().inv_cdf(1 - r) for r in rate]) * np.linalg.norm(v, axis=0)
    prior, v, cut = (tf.constant(a, DTYPE) for a in (np.log(rate), v, cut))
    n_in = HIDDEN[0] if HIDDEN else FAN_IN
    autoencoder = HIDDEN is not None and HIDDEN[0] == UNITS
    project = tf.constant(rng.normal(size=(LATENT, n_in)) / np.sqrt(LATENT), DTYPE)
    hidden_w = glorot(rng, (n_in, FAN_IN))
    weights = {{"w": glorot(rng, (FAN_IN, UNITS))}}
    if BIAS:
        weights["b"] = np.zeros(UNITS)
    if HIDDEN:
        weights["hidden_w"], weights["hidden_b"] = hidden_w, np.zeros(FAN_IN)
    act = tf.keras.activations.get(HIDDEN[1]) if HIDDEN else tf.nn.relu
    p = {{k: tf.Variable(tf.constant(a, DTYPE)) for k, a in weights.items()}}
    params = list(p.values())
    opt = {optimizer_source(probe)}
    {build}
    counter = tf.Variable(0, dtype=tf.int32)

    @tf.function(autograph=False)
    def step():
        counter.assign_add(1)
        u = tf.cast(tf.random.stateless_normal([BATCH, LATENT], seed=tf.stack([0, counter])), DTYPE)
        score = u @ v
        if OUTPUT == "softmax":
            y = tf.one_hot(tf.argmax(score + prior, -1), UNITS, dtype=DTYPE)
        else:
            y = tf.cast(score > cut, DTYPE)
        x = y if autoencoder else u @ project
        with tf.GradientTape() as tape:
            h = act(x @ p["hidden_w"] + p["hidden_b"]) if HIDDEN else tf.nn.relu(x)
            z = h @ p["w"] + (p["b"] if BIAS else 0.0)
            tape.watch(z)
            per = element_loss(z, y)
            loss = tf.reduce_mean(tf.reduce_sum(per, axis=-1))
        dz, *grads = tape.gradient(loss, [z, *params])
        opt.apply_gradients(zip(grads, params))
        return z, per, dz

    for i in range(1, STEPS + 1):
        z, per, dz = (t.numpy().astype(np.float64) for t in step())
        if not np.isfinite(per).all():
            j = tuple(np.argwhere(~np.isfinite(per))[0])
            print(f"step {{i}}: logit {{z[j]:.4g}}, element loss {{per[j]}}: non-finite (nan/inf)")
            return report({{"nan-value"}})
        dead = (per > 1.0) & (dz == 0)
        if dead.any():
            j = tuple(np.argwhere(dead)[0])
            print(f"step {{i}}: logit {{z[j]:.4g}}, element loss {{per[j]:.4g}}, gradient 0: dead")
            return report({{"dead-gradient"}})
    print(f"after {{STEPS}} steps every element loss is finite with a live gradient")
    return report(set())


def report(seen):
    if {finding.verification.symptom!r} in seen:
        print("REPRODUCED")
        return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


# the verifier's training.rebuild_features, for the spec the probe carries
FEATURES = """def features(spec, rows=None, cols=None, seed=0):
    rng = np.random.default_rng(seed)
    p = [float(v) for v in spec.get("params") or []]
    n = min(int(rows or spec.get("rows") or 256), 1024)
    d = min(int(cols or spec.get("cols") or 1), 1024)
    dist = spec.get("dist")
    if dist == "linspace":
        x = np.linspace(p[0], p[1], min(int(p[2]), 1024) if len(p) > 2 else n)
        return np.resize(x, (n * d,)).reshape(n, d) if d > 1 else x.reshape(-1, 1)
    if dist == "uniform":
        return rng.uniform(p[0], p[1], (n, d))
    if dist == "normal":
        return rng.normal(p[0], p[1], (n, d))
    return np.asarray(p, dtype=np.float64).reshape(-1, int(spec.get("cols") or 1))"""

BATCH_LOSS = """def batch_loss(z, y):
    if FORM == "softmax_xent":
        return tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=z)
    if FORM == "sigmoid_xent":
        return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z), -1)
    if FORM == "squared":
        return tf.reduce_sum(tf.square(z - y), -1)
    return -tf.reduce_sum(y * tf.math.log(tf.nn.softmax(z)), -1)"""

SUMMED_DATA = """FORM = {form!r}
X = features({spec!r}, {batch}, {d!r})
rng = np.random.default_rng(1)
if FORM == "squared":
    Y = X.mean(axis=1, keepdims=True)
elif FORM == "sigmoid_xent":
    Y = rng.integers(0, 2, (X.shape[0], 1)).astype(np.float64)
else:
    Y = np.eye(10)[rng.integers(0, 10, X.shape[0])]


{batch_loss}


def loss_of(z, y):
    per = batch_loss(z, y)
    return tf.reduce_sum(per), tf.reduce_mean(per)  # summed over the batch, as the source"""

DIVERGENCE_DATA = """X = features({spec!r})
Y = 3.0 * X.mean(axis=1, keepdims=True) + 2.0


def loss_of(z, y):
    loss = tf.reduce_mean(tf.square(z - y))
    return loss, loss"""

DESCENT_MAIN = """DTYPE = tf.{dtype}
STEPS = 100


{features}


{data}


def main():
    xt, yt = tf.constant(X, DTYPE), tf.constant(Y, DTYPE)
    w = tf.Variable(tf.zeros([X.shape[1], Y.shape[1]], DTYPE))
    b = tf.Variable(tf.zeros([Y.shape[1]], DTYPE))
    opt = {optimizer}

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss, shown = loss_of(xt @ w + b, yt)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients([(grads[0], w), (grads[1], b)])
        return shown

    for i in range(1, STEPS + 1):
        loss = float(step().numpy())
        if i <= 3 or i % 10 == 0 or not np.isfinite(loss):
            print(f"step {{i}}: loss {{loss}}")
        if not np.isfinite(loss):
            print(f"step {{i}}: the loss is non-finite (nan/inf)")
            print("REPRODUCED")
            return 1
    print(f"after {{STEPS}} steps the loss is finite: not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""


def descent_body(finding: Finding, probe: dict[str, Any]) -> str:
    """The divergence run (a linear model's squared error) or the summed run (a loss summed
    over the batch), 100 steps each: stops at the first NaN/Inf loss."""
    spec = probe.get("features") or {}
    if probe.get("recipe") == "summed":
        d = int(probe.get("feature_count") or 0) or None
        data = SUMMED_DATA.format(form=str(probe.get("loss")), spec=spec,
                                  batch=int(probe.get("batch") or 0), d=d,
                                  batch_loss=BATCH_LOSS)  # fmt: skip
    else:
        data = DIVERGENCE_DATA.format(spec=spec)
    return DESCENT_MAIN.format(dtype=probe.get("dtype") or "float32", features=FEATURES,
                               data=data, optimizer=optimizer_source(probe))  # fmt: skip
