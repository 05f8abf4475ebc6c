"""The training rung: the program's own slice, trained on its own data, reaches the hazard.

Each test lints a small training program with probes attached, and runs the verifier in this
process (``probing.verify``): the objective the program optimizes is rebuilt from its weights'
initializers, its data code (replayed on our own generator) and its optimizer, trained compiled,
and the finding is confirmed only when the first non-finite value or gradient starts at the
operation it underlines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.model import Finding, Verification
from tfnumlint.rules.registry import CHECKS
from tfnumlint.source import Source
from tfnumlint.verify import probing, repro
from tfnumlint.verify.repro_program import compiled_form


def verified(program: str, path: str = "train.py") -> list[tuple[Finding, dict]]:
    """Every finding of ``program`` with the verdict the worker would give it."""
    from tfnumlint.engine import load_all

    load_all()
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    result = lint_source(Source(path, text, text.encode()), options)
    out = []
    for f in result.findings:
        verdict = probing.verify(f.probe, 1e6) if f.probe is not None else {"status": "skipped"}
        out.append((f, verdict))
    return out


def on_line(
    results: list[tuple[Finding, dict]], needle: str, program: str
) -> list[tuple[Finding, dict]]:
    lines = textwrap.dedent(program).splitlines()
    line = next(i for i, text in enumerate(lines, 1) if needle in text)
    return [(f, v) for f, v in results if f.line == line]


def by_training(verdict: dict) -> bool:
    return (
        verdict.get("status") == "confirmed"
        and (verdict.get("repro") or {}).get("rung") == "training-program"
    )


CLASSIFIER = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()

    def digits(n):
        rng = np.random.RandomState(0)
        templates = (rng.rand(10, 784) < 0.18).astype(np.float32)
        labels = rng.randint(0, 10, size=n)
        imgs = np.clip(templates[labels] + 0.15 * rng.rand(n, 784), 0.0, 1.0).astype(np.float32)
        return imgs, np.eye(10, dtype=np.float32)[labels]

    train_x, train_y = digits(2000)
    x = tf.compat.v1.placeholder(tf.float32, [None, 784])
    y_ = tf.compat.v1.placeholder(tf.float32, [None, 10])
    W1 = tf.Variable(tf.random.truncated_normal([784, 128], stddev=0.1))
    b1 = tf.Variable(tf.constant(0.1, shape=[128]))
    W2 = tf.Variable(tf.random.truncated_normal([128, 10], stddev=0.1))
    b2 = tf.Variable(tf.constant(0.1, shape=[10]))
    hidden = tf.nn.relu(tf.matmul(x, W1) + b1)
    y = tf.nn.softmax(tf.matmul(hidden, W2) + b2)
    cross_entropy = -tf.reduce_sum(y_ * tf.math.log(y))
    train_step = tf.compat.v1.train.GradientDescentOptimizer(0.02).minimize(cross_entropy)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for i in range(100):
            idx = np.random.randint(0, 2000, 100)
            sess.run(train_step, feed_dict={x: train_x[idx], y_: train_y[idx]})
"""


def test_the_textbook_cross_entropy_is_confirmed_by_its_own_training() -> None:
    results = on_line(verified(CLASSIFIER), "tf.math.log(y)", CLASSIFIER)
    logs = [(f, v) for f, v in results if f.rule == "TNL101"]
    assert logs, [f.rule for f, _ in results]
    _, v = logs[0]
    assert by_training(v), v.get("detail")
    assert v["observed"]["step"] <= 10  # summed over 100 rows at lr 0.02: within a few steps
    assert "data code replayed" in v["detail"] and "batches of 100" in v["detail"]


def test_the_fused_twin_has_nothing_to_confirm() -> None:
    fused = CLASSIFIER.replace(
        "y = tf.nn.softmax(tf.matmul(hidden, W2) + b2)", "logits = tf.matmul(hidden, W2) + b2"
    ).replace(
        "-tf.reduce_sum(y_ * tf.math.log(y))",
        "tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))",
    )
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_renaming_the_program_does_not_change_the_training_verdict() -> None:
    renames = {"train_x": "aa", "train_y": "bb", "digits": "make", "hidden": "hh",
               "cross_entropy": "objective", "W1": "p", "W2": "q", "b1": "r", "b2": "s"}  # fmt: skip
    renamed = CLASSIFIER
    for old, new in renames.items():
        renamed = renamed.replace(old, new)
    before = [v for f, v in verified(CLASSIFIER) if f.rule == "TNL101"]
    after = [v for f, v in verified(renamed) if f.rule == "TNL101"]
    assert [v["status"] for v in before] == [v["status"] for v in after]
    assert [v["observed"]["step"] for v in before] == [v["observed"]["step"] for v in after]


def autoencoder_tf1(n_in: int, n_hidden: int) -> str:
    return f"""\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    # who liked which item: a few items everyone likes, the rest rare
    data = np.concatenate([np.ones((1024, 4)), np.random.rand(1024, {n_in - 4}) < 0.1], axis=1).astype(np.float32)
    P = tf.compat.v1.placeholder(tf.float32, [None, {n_in}])
    W1 = tf.Variable(tf.random.normal([{n_in}, {n_hidden}], stddev=0.1))
    W2 = tf.Variable(tf.random.normal([{n_hidden}, {n_in}], stddev=0.1))
    P_pred = tf.sigmoid(tf.matmul(tf.nn.relu(tf.matmul(P, W1)), W2))
    loss = -tf.reduce_mean(P * tf.math.log(P_pred + 1e-10) + (1 - P) * tf.math.log(1 - P_pred + 1e-10))
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for i in range(100):
            sess.run(train_op, feed_dict={{P: data[np.random.randint(0, 1024, 64)]}})
    """


def autoencoder_keras(n_in: int, n_hidden: int, loss: str = "weighted_bce") -> str:
    return f"""\
    import numpy as np
    import tensorflow as tf

    def weighted_bce(y_true, y_pred):
        return -tf.reduce_mean(
            y_true * tf.math.log(y_pred + 1e-10) + (1 - y_true) * tf.math.log(1 - y_pred + 1e-10),
            axis=-1,
        )

    data = np.concatenate([np.ones((1024, 4)), np.random.rand(1024, {n_in - 4}) < 0.1], axis=1).astype(np.float32)
    model = tf.keras.Sequential([
        tf.keras.Input(({n_in},)),
        tf.keras.layers.Dense({n_hidden}, activation="relu"),
        tf.keras.layers.Dense({n_in}, activation="sigmoid"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss={loss})
    model.fit(data, data, batch_size=64, epochs=5)
    """


@pytest.mark.parametrize("sizes", [(784, 64), (512, 32), (100, 16)])
@pytest.mark.parametrize("style", ["tf1", "keras"])
def test_the_seed_autoencoder_is_confirmed_with_a_step_at_several_sizes(style, sizes) -> None:
    program = (autoencoder_tf1 if style == "tf1" else autoencoder_keras)(*sizes)
    found = on_line(
        verified(program), "tf.math.log(1 - P_pred" if style == "tf1" else "log(1 - y_pred", program
    )
    confirmed = [v for f, v in found if by_training(v)]
    assert confirmed, [(f.rule, v.get("detail")) for f, v in found]
    assert isinstance(confirmed[0]["observed"]["step"], int)
    assert "at step" in confirmed[0]["detail"]


def test_the_keras_builtin_loss_on_the_same_model_shows_nothing() -> None:
    program = autoencoder_keras(100, 16, loss='"binary_crossentropy"')
    program = (
        program[: program.index("    def weighted_bce")] + program[program.index("    data = ") :]
    )
    assert [f.rule for f, _ in verified(program) if f.rule.startswith("TNL1")] == []


CLAIMS = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    prng = np.random.RandomState(9)
    X_data = prng.randn(4000, 10).astype(np.float32)
    y_data = np.exp(1.5 + 0.9 * X_data[:, :1] + 0.4 * prng.randn(4000, 1)).astype(np.float32)
    X_ph = tf.compat.v1.placeholder(tf.float32, (None, 10))
    y_ph = tf.compat.v1.placeholder(tf.float32, (None, 1))
    W_h = tf.Variable(tf.random.normal((10, 32), stddev=0.1))
    b_h = tf.Variable(tf.zeros((32,)))
    W_o = tf.Variable(tf.random.normal((32, 1), stddev=0.1))
    b_o = tf.Variable(tf.constant([1.4]))
    log_y_hat = tf.matmul(tf.nn.relu(tf.matmul(X_ph, W_h) + b_h), W_o) + b_o
    y_hat = tf.exp(log_y_hat)
    rmsle = tf.sqrt(tf.reduce_mean(tf.square(log_y_hat - tf.math.log(y_ph))))
    step_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(rmsle)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        for t in range(300):
            pick = prng.choice(4000, 64, replace=False)
            session.run([step_op, y_hat], {X_ph: X_data[pick], y_ph: y_data[pick]})
"""


def test_a_witness_its_own_training_does_not_reach_is_not_a_confirmation() -> None:
    exps = [(f, v) for f, v in verified(CLAIMS) if f.rule == "TNL301"]
    assert exps
    _, v = exps[0]
    assert v["status"] == "inconclusive", v["detail"]
    assert "stays finite for" in v["detail"] and "the witness is not a state" in v["detail"]


def test_data_the_code_does_not_give_never_confirms() -> None:
    loaded = CLASSIFIER.replace("train_x, train_y = digits(2000)",
                                'train_x, train_y = np.load("x.npy"), np.load("y.npy")')  # fmt: skip
    logs = [v for f, v in verified(loaded) if f.rule == "TNL101"]
    assert logs and not any(by_training(v) for v in logs)
    reached = [v for v in logs if "training the program's slice" in v.get("detail", "")]
    assert all("not the program's own data" in v["detail"] or "on data the code does not give"
               in v["detail"] for v in reached)  # fmt: skip


def test_a_term_that_only_carries_a_nan_from_upstream_is_not_confirmed() -> None:
    relu = CLAIMS.replace("log_y_hat - tf.math.log(y_ph)", "tf.math.log(y_hat) - tf.math.log(y_ph)")
    relu = relu.replace("y_hat = tf.exp(log_y_hat)", "y_hat = tf.nn.relu(log_y_hat)")
    relu = relu.replace("tf.constant([1.4])", "tf.constant([4.0])")
    results = verified(relu)
    log = [v for f, v in results if f.rule == "TNL104"]
    sqrt = [v for f, v in results if f.rule == "TNL202"]
    assert log and by_training(log[0]), log and log[0].get("detail")
    assert sqrt and not by_training(sqrt[0])  # sqrt(mean(...)) only receives the -inf


def test_the_compiled_form_regroups_constants_in_the_graph_dtype() -> None:
    p = {"k": "input", "name": "p"}
    tree = {"k": "bin", "op": "+", "l": {"k": "bin", "op": "-", "l": {"k": "const", "v": 1.0}, "r": p},
            "r": {"k": "const", "v": 1e-10}}  # fmt: skip
    f32 = compiled_form(tree, "float32")
    assert f32["op"] == "-" and f32["l"] == {"k": "const", "v": 1.0} and f32["r"] == p
    f64 = compiled_form(tree, "float64")
    assert f64["l"]["v"] == 1.0 + 1e-10


def test_a_training_confirmation_ships_a_reproducer_that_reproduces(tmp_path: Path) -> None:
    f, v = next((f, v) for f, v in verified(CLASSIFIER) if by_training(v))
    f.verification = Verification(**{k: v[k] for k in ("status", "detail", "symptom", "dtype",
                                                       "observed", "repro") if k in v})  # fmt: skip
    notices = repro.emit_all([f], tmp_path)
    assert notices == [] and f.repro is not None
    run = subprocess.run([sys.executable, f.repro], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "non-finite (nan/inf)" in run.stdout


TUTORIAL = """\
    import tensorflow as tf
    from tensorflow.examples.tutorials.mnist import input_data
    mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
    x = tf.placeholder(tf.float32, [None, 784]); y_ = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10])); b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    cross_entropy = -tf.reduce_sum(y_ * tf.log(y))
    train_step = tf.train.GradientDescentOptimizer(0.01).minimize(cross_entropy)
    sess = tf.InteractiveSession(); tf.global_variables_initializer().run()
    for _ in range(1000):
        batch_xs, batch_ys = mnist.train.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
"""


def test_the_tf1_tutorial_is_confirmed_on_a_stand_in_for_its_mnist() -> None:
    logs = [v for f, v in on_line(verified(TUTORIAL), "tf.log(y)", TUTORIAL) if f.rule == "TNL101"]
    assert logs
    v = logs[0]
    assert by_training(v), v.get("detail")
    assert "a synthetic stand-in for the TF1 tutorial's MNIST" in v["detail"]
    assert "the real images are not read" in v["detail"] and "batches of 100" in v["detail"]


# The tutorial's model fed whole each step, its targets one-hot by ``np.eye(10)[labels]``: run
# as written, its loss is NaN at step 5
FULL_BATCH = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    rng = np.random.RandomState(0)
    xs = rng.rand(512, 784).astype("float32")
    labels = rng.randint(0, 10, 512)
    ys = np.eye(10, dtype="float32")[labels]
    x = tf.compat.v1.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.compat.v1.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.math.log(y), axis=[1]))
    train_step = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for i in range(1000):
            sess.run(train_step, feed_dict={x: xs, y_: ys})
"""


def test_one_hot_targets_fed_whole_train_with_their_images() -> None:
    """The one-hot table lookup is the targets' data, not a batch pick of the table's 10 rows
    (the rung failed on an IndexError and the finding stayed "a far tail")."""
    results = on_line(verified(FULL_BATCH), "tf.math.log(y)", FULL_BATCH)
    logs = [v for f, v in results if f.rule == "TNL101"]
    assert logs and by_training(logs[0]), logs and logs[0].get("detail")
    assert logs[0]["observed"]["step"] <= 50 and "every fed row" in logs[0]["detail"]


# A Keras model built by ``add`` statements, with its own loss, and a GradientTape step written
# inline in the loop over a ``tf.data`` pipeline: both run as written to NaN within 100 steps
ADDED_LAYERS = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow.keras import backend as K
    from tensorflow.keras.layers import Dense
    from tensorflow.keras.models import Sequential

    def calc(t, o):
        return -K.sum(t * K.log(o), axis=-1)

    rng = np.random.RandomState(1)
    centers = rng.randn(5, 30) * 5
    lab = rng.randint(0, 5, 2000)
    X = centers[lab] + rng.randn(2000, 30)
    Y = tf.keras.utils.to_categorical(lab, 5)
    m = Sequential()
    m.add(Dense(64, activation="relu", input_dim=30))
    m.add(Dense(5, activation="softmax"))
    m.compile(loss=calc, optimizer=tf.keras.optimizers.SGD(learning_rate=0.5))
    m.fit(X, Y, epochs=30, batch_size=64)
"""

INLINE_STEP = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(3)
    feat = rng.normal(size=(1000, 12)).astype(np.float32)
    tgt = (feat[:, :3].sum(1) > 0).astype(np.float32)[:, None]
    net = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="tanh"), tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.Adam(0.05)
    ds = tf.data.Dataset.from_tensor_slices((feat, tgt)).shuffle(1000).batch(50)
    for epoch in range(40):
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                p = tf.sigmoid(net(xb))
                l = -tf.reduce_mean(yb * tf.math.log(p) + (1 - yb) * tf.math.log(1 - p))
            gr = tape.gradient(l, net.trainable_variables)
            opt.apply_gradients(zip(gr, net.trainable_variables))
"""


def test_a_model_built_by_add_statements_is_trained_as_the_program_builds_it() -> None:
    results = on_line(verified(ADDED_LAYERS), "K.log(o)", ADDED_LAYERS)
    confirmed = [v for _, v in results if by_training(v)]
    assert confirmed, [(f.rule, v.get("detail")) for f, v in results]
    assert confirmed[0]["observed"]["step"] <= 20 and "batches of 64" in confirmed[0]["detail"]


def test_a_tape_step_inline_in_the_dataset_loop_trains_on_the_datasets_batches() -> None:
    results = verified(INLINE_STEP)
    logs = [v for f, v in on_line(results, "tf.math.log(1 - p)", INLINE_STEP) if f.rule == "TNL101"]
    trained = [v for v in logs if by_training(v)]  # log(1 - p): its value is the first to break
    assert trained, [v.get("detail") for v in logs]
    assert "batches of 50" in trained[0]["detail"]
    # the learning-rate finding reports the program's own run (it also breaks at lr / 10), not
    # a stand-in model's
    rate = [v for f, v in on_line(results, "Adam(0.05)", INLINE_STEP) if f.rule == "TNL501"]
    assert rate and rate[0]["status"] == "inconclusive"
    assert "the program's slice" in rate[0]["detail"] and "a tenth of the rate" in rate[0]["detail"]


# TF1 layers made by a helper with get_variable, called three times (one call inside another's
# argument); run as written, exp(-s) overflows within 10 steps
HELPER_LAYERS = """\
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    gen = np.random.RandomState(6)
    km = gen.uniform(0.5, 30, 4000)
    stops = gen.randint(1, 15, 4000)
    X = np.stack([km, stops], 1).astype(np.float32)
    T = (5 + 2.0 * km + 3 * stops + gen.randn(4000) * (2 + 0.3 * km)).astype(np.float32)[:, None]
    xx = tf1.placeholder(tf.float32, [None, 2])
    tt = tf1.placeholder(tf.float32, [None, 1])

    def fc(a, n_out, nm):
        w = tf1.get_variable(nm + "_w", [a.shape[1], n_out], initializer=tf1.glorot_uniform_initializer())
        b = tf1.get_variable(nm + "_b", [n_out], initializer=tf1.zeros_initializer())
        return tf.matmul(a, w) + b

    h = tf.nn.relu(fc(xx, 32, "l1"))
    mu = fc(h, 1, "l2")
    s = fc(tf.nn.relu(fc(xx, 16, "l3")), 1, "l4")
    out = tf.reduce_mean(0.5 * tf.exp(-s) * tf.square(tt - mu) + 0.5 * s)
    step = tf1.train.MomentumOptimizer(0.01, 0.9).minimize(out)
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        for it in range(300):
            b = gen.randint(0, 4000, 64)
            sess.run(step, {xx: X[b], tt: T[b]})
"""


def test_layers_a_helper_makes_are_weights_of_their_own_call() -> None:
    """Each call of ``fc`` makes its own weights, shaped by its arguments and by its input's
    width (``a.shape[1]``), and a call inside another call's argument is inlined too: the
    log-variance head is the program's, and its training overflows ``exp(-s)``."""
    results = verified(HELPER_LAYERS)
    overflow = [v for f, v in on_line(results, "tf.exp(-s)", HELPER_LAYERS) if f.rule == "TNL301"]
    assert overflow and by_training(overflow[0]), [v.get("detail") for v in overflow]
    weights = overflow[0]["repro"]["spec"]["weights"]
    kernels = sorted(w["shape"] for k, w in weights.items() if k.split("#")[0] == "w")
    assert kernels == [[2, 16], [2, 32], [16, 1], [32, 1]]  # numbered in the order sliced
    assert sorted(w["shape"] for k, w in weights.items() if k.split("#")[0] == "b") == [
        [1], [1], [16], [32]]  # fmt: skip


# Ten separable clusters of 64 features and their one-hot labels: the data of the programs below
CLUSTERS = """\
    rng = np.random.RandomState(0)
    centers = rng.randn(10, 64).astype(np.float32) * 4.0
    labels = rng.randint(0, 10, size=1000)
    features = (centers[labels] + rng.randn(1000, 64)).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[labels]
"""

# Models the program defines as classes: the rung follows the class's ``call``/``__call__``
SUBCLASSED = (
    """\
    import numpy as np
    import tensorflow as tf

    class Classifier(tf.keras.Model):
        def __init__(self, hidden, classes):
            super().__init__()
            self.body = tf.keras.layers.Dense(hidden, activation="relu")
            self.head = tf.keras.layers.Dense(classes)

        def call(self, x):
            h = self.body(x)
            return tf.nn.softmax(self.head(h))

"""
    + CLUSTERS
    + """\
    model = Classifier(128, 10)
    opt = tf.keras.optimizers.SGD(0.5)
    for step in range(200):
        idx = rng.randint(0, 1000, 100)
        xb, yb = features[idx], onehot[idx]
        with tf.GradientTape() as tape:
            p = model(xb)
            loss = -tf.reduce_sum(yb * tf.math.log(p))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
"""
)

MODULE = (
    """\
    import numpy as np
    import tensorflow as tf

    class Net(tf.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.w = tf.Variable(tf.random.normal([n_in, n_out], stddev=0.5))
            self.b = tf.Variable(tf.zeros([n_out]))

        def __call__(self, x):
            return tf.nn.softmax(tf.matmul(x, self.w) + self.b)

"""
    + CLUSTERS
    + """\
    net = Net(64, 10)
    opt = tf.keras.optimizers.SGD(0.5)
    for step in range(200):
        idx = rng.randint(0, 1000, 100)
        xb = features[idx]
        yb = onehot[idx]
        with tf.GradientTape() as tape:
            loss = -tf.reduce_sum(yb * tf.math.log(net(xb)))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
"""
)


def trained_by_fit(program: str) -> str:
    """The program's custom loop replaced by ``compile(loss=xent)`` and ``fit``."""
    return program[: program.index("    opt = ")] + textwrap.indent(
        textwrap.dedent("""\
        def xent(y_true, y_pred):
            return -tf.reduce_sum(y_true * tf.math.log(y_pred), axis=-1)
        model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss=xent)
        model.fit(features, onehot, batch_size=100, epochs=3)
        """),
        "    ",
    )


def with_a_dropout_attribute(program: str) -> str:
    """SUBCLASSED with a Dropout attribute its ``call`` runs in the call's ``training`` mode."""
    out = (
        program.replace(
            "self.head = tf.keras.layers.Dense(classes)",
            "self.head = tf.keras.layers.Dense(classes)\n"
            "            self.drop = tf.keras.layers.Dropout(0.25)",
        )
        .replace("def call(self, x):", "def call(self, x, training=False):")
        .replace("h = self.body(x)", "h = self.drop(self.body(x), training=training)")
    )
    assert "self.drop(self.body(x), training=training)" in out
    return out


def xent_log_verdicts(program: str, needle: str = "tf.math.log(") -> list[dict]:
    """The verdicts of the log findings on the line of ``needle``."""
    found = on_line(verified(program), needle, program)
    return [v for f, v in found if f.rule in ("TNL101", "TNL103")]


@pytest.mark.parametrize("program", [SUBCLASSED, MODULE], ids=["keras-model", "tf-module"])
def test_a_model_class_of_the_program_is_trained_as_the_program_defines_it(program) -> None:
    verdicts = xent_log_verdicts(program)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert v["observed"]["step"] <= 10  # the program itself goes NaN in its first steps
    assert "its data code replayed" in v["detail"] and "batches of 100" in v["detail"]


def test_a_model_class_returning_logits_with_the_fused_loss_has_nothing_to_confirm() -> None:
    fused = SUBCLASSED.replace("return tf.nn.softmax(self.head(h))", "return self.head(h)")
    fused = fused.replace(
        "-tf.reduce_sum(yb * tf.math.log(p))",
        "tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=yb, logits=p))",
    )
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_renaming_a_model_class_and_its_layers_keeps_the_verdict() -> None:
    renames = {"Classifier": "Zq", "body": "first", "head": "second", "hidden": "u",
               "classes": "v", "features": "aa", "onehot": "bb", "model": "mm", "xb": "i1",
               "yb": "i2", "centers": "cc"}  # fmt: skip
    renamed = SUBCLASSED
    for old, new in renames.items():
        renamed = renamed.replace(old, new)
    before, after = xent_log_verdicts(SUBCLASSED), xent_log_verdicts(renamed)
    assert [v["status"] for v in before] == [v["status"] for v in after]
    assert [(v.get("observed") or {}).get("step") for v in before] == [
        (v.get("observed") or {}).get("step") for v in after
    ]


def test_a_model_class_trained_by_fit_with_its_own_loss_is_confirmed() -> None:
    program = trained_by_fit(SUBCLASSED)
    verdicts = xent_log_verdicts(program)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


def test_a_class_whose_base_is_not_tensorflows_is_not_followed() -> None:
    foreign = SUBCLASSED.replace("class Classifier(tf.keras.Model):",
                                 "class Classifier(Model):").replace(
        "import numpy as np\n", "import numpy as np\n    from mylib import Model\n", 1)  # fmt: skip
    assert not any(by_training(v) for v in xent_log_verdicts(foreign))


DROPOUT = (
    """\
    import numpy as np
    import tensorflow as tf

"""
    + CLUSTERS
    + """\
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(128, activation="relu", input_shape=(64,)),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    opt = tf.keras.optimizers.SGD(0.5)
    dataset = tf.data.Dataset.from_tensor_slices((features, onehot)).shuffle(1000).batch(100)

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            p = model(xb, training=True)
            loss = -tf.reduce_sum(yb * tf.math.log(p))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    for epoch in range(5):
        for xb, yb in dataset:
            train_step(xb, yb)
"""
)


def test_a_dropout_layer_trains_with_its_masks_not_assumed_away() -> None:
    verdicts = xent_log_verdicts(DROPOUT)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert "assumed" not in v["detail"]
    trained = v["repro"]["spec"]["loss"]
    assert '"op": "dropout"' in json.dumps(trained)  # the layer is in the slice, as it trains
    again = next(v for v in xent_log_verdicts(DROPOUT) if by_training(v))
    assert again["observed"]["step"] == v["observed"]["step"]  # seeded masks: the same run


def test_a_dropout_rate_the_code_does_not_fix_leaves_the_model_unsliced() -> None:
    unknown = DROPOUT.replace("Dropout(0.2)", "Dropout(float(np.load('rate.npy')))")
    assert not any(by_training(v) for v in xent_log_verdicts(unknown))


FLATTENED = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(0)
    templates = rng.rand(10, 28, 28).astype(np.float32)
    labels = rng.randint(0, 10, size=2000)
    images = (templates[labels] * 255.0 + rng.rand(2000, 28, 28) * 20).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[labels]

    def my_loss(y_true, y_pred):
        return -tf.reduce_sum(y_true * tf.math.log(y_pred), axis=1)

    model = tf.keras.Sequential([
        tf.keras.layers.Flatten(input_shape=(28, 28)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="sgd", loss=my_loss)
    model.fit(images, onehot, epochs=2, batch_size=32)
"""


def test_a_flatten_layer_on_raw_pixel_images_is_trained_as_declared() -> None:
    verdicts = xent_log_verdicts(FLATTENED)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert v["observed"]["step"] <= 2  # pixels up to 275 saturate the softmax at once
    kernel = v["repro"]["spec"]["weights"]["model.layers[1].kernel"]
    assert kernel["shape"] == [784, 128]  # Flatten is model.layers[0]: 28 x 28 inputs


def test_a_batch_picked_inline_in_the_model_call_is_the_programs_data() -> None:
    inline = SUBCLASSED.replace("        xb, yb = features[idx], onehot[idx]\n", "")
    inline = inline.replace("model(xb)", "model(features[idx])").replace(
        "yb * tf.math.log(p)", "onehot[idx] * tf.math.log(p)"
    )
    verdicts = xent_log_verdicts(inline)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert "`features[idx]` = its data code replayed" in v["detail"]


def test_weights_made_by_the_tutorials_variable_helpers_start_as_the_helpers_make_them() -> None:
    helpers = CLASSIFIER.replace(
        "train_x, train_y = digits(2000)\n",
        "train_x, train_y = digits(2000)\n\n"
        "    def weight_variable(shape):\n"
        "        initial = tf.random.truncated_normal(shape, stddev=0.1)\n"
        "        return tf.Variable(initial)\n\n"
        "    def bias_variable(shape):\n"
        "        return tf.Variable(tf.constant(0.1, shape=shape))\n\n",
    )
    for w, b, shape in (("W1", "b1", "[784, 128]"), ("W2", "b2", "[128, 10]")):
        helpers = helpers.replace(
            f"{w} = tf.Variable(tf.random.truncated_normal({shape}, stddev=0.1))",
            f"{w} = weight_variable({shape})",
        )
        width = shape.split(", ")[1].rstrip("]")
        helpers = helpers.replace(
            f"{b} = tf.Variable(tf.constant(0.1, shape=[{width}]))",
            f"{b} = bias_variable([{width}])",
        )
    assert "weight_variable([784, 128])" in helpers and "bias_variable([10])" in helpers
    logs = [
        v for f, v in on_line(verified(helpers), "tf.math.log(y)", helpers) if f.rule == "TNL101"
    ]
    assert logs and by_training(logs[0]), logs and logs[0].get("detail")
    weights = logs[0]["repro"]["spec"]["weights"]
    assert weights["W1"] == {"init": "truncated_normal", "shape": [784, 128], "stddev": 0.1}
    assert weights["b2"] == {"init": "constant", "value": 0.1, "shape": [10]}


def _trained_loss(verdicts: list[dict]) -> str:
    v = next(v for v in verdicts if by_training(v))
    return json.dumps(v["repro"]["spec"]["loss"])


def test_dropout_runs_as_keras_runs_it_in_the_mode_of_the_call() -> None:
    inference = DROPOUT.replace("model(xb, training=True)", "model(xb)")
    assert '"op": "dropout"' not in _trained_loss(xent_log_verdicts(inference))
    subclassed = with_a_dropout_attribute(SUBCLASSED)
    trained = subclassed.replace("p = model(xb)", "p = model(xb, training=True)")
    assert '"op": "dropout"' in _trained_loss(xent_log_verdicts(trained))
    assert '"op": "dropout"' not in _trained_loss(xent_log_verdicts(subclassed))


def test_fit_calls_a_model_class_in_training_mode() -> None:
    program = trained_by_fit(with_a_dropout_attribute(SUBCLASSED))
    assert '"op": "dropout"' in _trained_loss(xent_log_verdicts(program))


def test_a_softmax_entry_in_a_witness_is_said_to_come_from_a_softmax() -> None:
    program = """\
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="softmax")])

        def xent(x, y):
            p = model(x)
            return -tf.reduce_sum(y * tf.math.log(p))
    """
    details = [v.get("detail", "") for f, v in verified(program) if f.rule in ("TNL101", "TNL103")]
    assert details and any("p = softmax([" in d for d in details), details
    assert not any("p = sigmoid(" in d for d in details)


def test_a_positional_argument_of_another_parameter_does_not_set_the_keras_mode() -> None:
    scaled = (
        SUBCLASSED.replace("def call(self, x):", "def call(self, x, scale=1.0):")
        .replace("h = self.body(x)", "h = self.body(x * scale)")
        .replace("p = model(xb)", "p = model(xb, 1.0)")
    )
    assert "p = model(xb, 1.0)" in scaled
    verdicts = xent_log_verdicts(scaled)
    assert any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


def test_a_stand_in_confirmation_where_the_programs_slice_failed_to_train_is_not_confirmed(
    monkeypatch,
) -> None:
    from tfnumlint.verify import training_rung

    def broken(spec):
        raise ValueError("the script did not render")

    monkeypatch.setattr(training_rung, "verify_program", broken)
    stand_in = {"status": "confirmed", "detail": "the stand-in's run saturates"}
    out = probing.with_training({"kind": "train", "program": {"loss": {}}}, stand_in)
    assert out["status"] == "inconclusive"
    assert "could not be trained (ValueError: the script did not render)" in out["detail"]
    witness = {"status": "confirmed", "detail": "at p = 0, log(p) = -inf"}
    assert probing.with_training({"kind": "expr", "program": {"loss": {}}}, witness) == witness
    # an inconclusive witness says why the training rung gave no verdict
    far = {"status": "inconclusive", "detail": "needs `logits` = -100, a far tail"}
    out = probing.with_training({"kind": "expr", "program": {"loss": {}}}, far)
    assert out["status"] == "inconclusive"
    assert out["detail"].endswith(
        "a far tail; the program's own slice could not be trained (ValueError: the script did "
        "not render)"
    )


def test_a_decaying_learning_rate_schedule_trains_as_the_program_schedules_it() -> None:
    decayed = SUBCLASSED.replace(
        "opt = tf.keras.optimizers.SGD(0.5)",
        "schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.5, decay_steps=100, "
        "decay_rate=0.9)\n    opt = tf.keras.optimizers.SGD(learning_rate=schedule)",
    )
    assert "learning_rate=schedule" in decayed
    verdicts = xent_log_verdicts(decayed)
    v = next((v for v in verdicts if by_training(v)), None)
    assert v is not None, [v.get("detail") for v in verdicts]
    assert "sgd at lr 0.5, decayed by its ExponentialDecay" in v["detail"]
    assert v["repro"]["spec"]["optimizer"]["schedule"] == {
        "kind": "ExponentialDecay", "args": {"decay_steps": 100.0, "decay_rate": 0.9}}  # fmt: skip


def test_the_runs_stop_within_the_share_a_training_probe_gets(monkeypatch) -> None:
    """A probe that trains the program's slice is given more than the probe budget (the
    worker's request), and its runs stop within that extra share, whatever the budget."""
    from tfnumlint.verify import runner, training_rung

    trains = {"probe": {"kind": "expr", "program": {"loss": {}}}}
    for budget in ("10", "60"):
        monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", budget)
        timeout = runner.probe_timeout()
        extra = runner.request_budget(trains, timeout) - timeout
        assert runner.request_budget({"probe": {"kind": "expr"}}, timeout) == timeout
        assert timeout < training_rung.safety_seconds() < extra


UNFED_LABELS = """\
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()

    x = tf.compat.v1.placeholder(tf.float32, [None, 6])
    y_ = tf.compat.v1.placeholder(tf.float32, [None, 3])
    t = tf.compat.v1.placeholder(tf.float32, [None, 1])
    W = tf.Variable(tf.random.truncated_normal([6, 3], stddev=0.1))
    V = tf.Variable(tf.random.truncated_normal([6, 1], stddev=0.1))
    y = tf.nn.softmax(tf.matmul(x, W))
    p = tf.sigmoid(tf.matmul(x, V))
    xent = -tf.reduce_sum(y_ * tf.math.log(y))
    bce = -tf.reduce_sum(t * tf.math.log(p) + (1 - t) * tf.math.log(1 - p))
    train_step = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(xent + bce)
"""


def test_labels_the_code_does_not_feed_are_drawn_as_labels_of_their_loss() -> None:
    """A target the code never feeds is drawn as the loss reads it: one-hot rows for a
    softmax cross-entropy, 0/1 for a binary one; never uniform in [-1, 1], where a target
    of -1 rewards a log-probability of -inf (a run no labelled data makes)."""
    from test_reachability import probed

    from tfnumlint.verify import training_rung

    found = [f for f in probed(UNFED_LABELS, "train.py", ["TNL103"]) if f.probe]
    assert found
    spec = found[0].probe["program"]
    namespace: dict = {}
    exec(compile(training_rung.rendered(spec).body, "<rung>", "exec"), namespace)
    arrays = namespace["data"]()
    labels = {k: v for k, v in arrays.items() if v.shape[1:] == (3,)}
    [one_hot] = labels.values()
    assert set(one_hot.ravel()) == {0.0, 1.0} and (one_hot.sum(axis=1) == 1).all()
    binary = [v for v in arrays.values() if v.shape[1:] == (1,)]
    assert binary and set(binary[0].ravel()) == {0.0, 1.0}
    features = [v for v in arrays.values() if v.shape[1:] == (6,)]
    assert features and features[0].min() < 0  # the features stay unknown: uniform in [-1, 1]
    text = training_rung.sources(spec)
    assert "`y_` = one-hot rows of 3 classes" in text and "`t` = 0/1 labels" in text


UNFED_ACTIONS = """\
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    obs = tf.compat.v1.placeholder(tf.float32, [None, 4])
    act = tf.compat.v1.placeholder(tf.int32, [None])
    W = tf.Variable(tf.zeros([4, 5]))
    probs = tf.nn.softmax(tf.matmul(obs, W))
    taken = tf.reduce_sum(probs * tf.one_hot(act, 5), axis=1)
    loss = -tf.reduce_mean(tf.math.log(taken))
    step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
"""


def test_indices_a_one_hot_reads_are_drawn_as_whole_numbers_below_its_depth() -> None:
    """An action or class id the code feeds without data code is drawn as what ``one_hot``
    reads: whole numbers in [0, depth), not uniform draws in [-1, 1] (whose one-hot rows are
    empty or the first class)."""
    from test_reachability import probed

    from tfnumlint.verify import training_rung

    found = [f for f in probed(UNFED_ACTIONS, "train.py", ["TNL101"]) if f.probe]
    assert found and found[0].probe.get("program"), [f.rule for f in found]
    spec = found[0].probe["program"]
    namespace: dict = {}
    exec(compile(training_rung.rendered(spec).body, "<rung>", "exec"), namespace)
    arrays = namespace["data"]()
    [actions] = [v for v in arrays.values() if v.ndim == 1]
    assert set(actions.tolist()) == {0.0, 1.0, 2.0, 3.0, 4.0}
    assert "`act` = whole numbers drawn uniformly in [0, 5)" in training_rung.sources(spec)


VAE = """\
    import numpy as np
    import tensorflow as tf

    BATCH, LATENT = 32, 4


    def _dense(n_in, n_out, seed):
        init = tf.keras.initializers.GlorotUniform(seed=seed)
        return tf.Variable(init((n_in, n_out))), tf.Variable(tf.zeros([n_out]))


    class Encoder(tf.Module):
        def __init__(self, n_in, n_hidden, n_latent):
            super().__init__()
            self.w_h, self.b_h = _dense(n_in, n_hidden, 1)
            self.w_mu, self.b_mu = _dense(n_hidden, n_latent, 2)
            self.w_lv, self.b_lv = _dense(n_hidden, n_latent, 3)

        def __call__(self, x):
            h = tf.nn.relu(tf.matmul(x, self.w_h) + self.b_h)
            return tf.matmul(h, self.w_mu) + self.b_mu, tf.matmul(h, self.w_lv) + self.b_lv


    def variance_and_std(z_log_var):
        var = tf.exp(z_log_var)
        return var, tf.sqrt(var)


    def sample(z_mean, z_log_var):
        _, std = variance_and_std(z_log_var)
        eps = tf.random.normal(tf.shape(z_mean))
        return z_mean + std * eps


    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (1000, 196)).astype(np.float32)
    data = PIXELS
    encoder = Encoder(196, 64, LATENT)
    w_out = tf.Variable(tf.random.normal([LATENT, 196], stddev=0.1))
    optimizer = tf.keras.optimizers.Adam(1e-3)


    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            z_mean, z_log_var = encoder(x)
            x_hat = tf.matmul(sample(z_mean, z_log_var), w_out)
            var, _ = variance_and_std(z_log_var)
            kl = -0.5 * tf.reduce_sum(1.0 + z_log_var - tf.square(z_mean) - var, axis=1)
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(x - x_hat), axis=1) + kl)
        params = encoder.trainable_variables + [w_out]
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss


    for step in range(100):
        batch = data[rng.integers(0, len(data), BATCH)]
        train_step(tf.constant(batch))
"""


def verified_project(root: Path, program: str) -> list[tuple[str, dict]]:
    """(rule, verdict) of every probed finding of ``program``, linted as a project (so a
    helper's parameters carry what its callers pass, as the command line reads them)."""
    from test_caller_ranges import probes

    from tfnumlint.engine import load_all

    load_all()
    (root / "train.py").write_text(textwrap.dedent(program), encoding="utf-8")
    out = []
    for code in sorted({c.code for c in CHECKS}):
        for probe in probes(root, "train.py", code):
            out.append((code, probing.verify(probe, 1e6)))
    return out


@pytest.mark.parametrize(
    "draw",
    [
        "tf.random.normal(tf.shape(z_mean))",
        # Keras's VAE example writes the shape out from the mean's own
        "tf.random.normal(shape=(tf.shape(z_mean)[0], tf.shape(z_mean)[1]))",
        "tf.random.normal([tf.shape(z_mean)[0], LATENT])",
    ],
)
def test_a_vae_on_raw_pixels_overflows_its_variance_in_its_own_first_step(tmp_path, draw) -> None:
    """The program's own encoder (a ``tf.Module`` returning the mean and the log-variance,
    its weights made in pairs by a helper from an initializer object), its reparameterised
    draw and its raw 0..255 pixels: exp(log_var) is inf at step 0, as the program runs it.
    Its twin, on pixels scaled to [0, 1], confirms nothing."""
    (tmp_path / "buggy").mkdir()
    (tmp_path / "twin").mkdir()
    program = VAE.replace("tf.random.normal(tf.shape(z_mean))", draw)
    found = verified_project(tmp_path / "buggy", program.replace("PIXELS", "pixels"))
    exps = [v for rule, v in found if rule == "TNL301"]
    assert exps and by_training(exps[0]), exps
    assert "reaches it at step 0" in exps[0]["detail"]
    assert "its data code replayed" in exps[0]["detail"] and "assumed" not in exps[0]["detail"]
    twin = verified_project(tmp_path / "twin", program.replace("PIXELS", "pixels / 255.0"))
    assert twin and not [v for _, v in twin if v.get("status") == "confirmed"]


def test_an_inconclusive_finding_says_what_its_programs_own_training_did() -> None:
    """A far-tail witness stays inconclusive, and the verdict says that the program's own
    training was run and what it saw (here: finite), not nothing."""
    logs = [v for f, v in verified(UNFED_LABELS) if f.rule == "TNL103"]
    assert logs and all(v["status"] == "inconclusive" for v in logs)
    assert any(
        "training the program's slice" in v["detail"] and "stays finite for" in v["detail"]
        for v in logs
    ), [v["detail"] for v in logs]


def _learning_rate_spec() -> dict:
    """The training spec of the autoencoder example's TNL501 finding (the program's slice)."""
    text = (Path(__file__).resolve().parents[2] / "examples" / "autoencoder_keras.py").read_text()
    result = lint_source(
        Source("autoencoder_keras.py", text, text.encode()),
        LintOptions(codes=frozenset({"TNL501"}), slice_probes=True),
    )
    [finding] = [f for f in result.findings if f.rule == "TNL501" and f.probe]
    return finding.probe["program"]


@pytest.mark.parametrize(("control_steps", "confirmed"), [(1, False), (43, False), (440, True)])
def test_a_control_cut_short_by_its_time_budget_does_not_confirm_a_learning_rate(
    monkeypatch, control_steps, confirmed
) -> None:
    """The run breaks at step 43; a control at lr / 10 that stayed finite only because a busy
    machine stopped it by step 43 shows nothing about the rate."""
    from tfnumlint.verify import training_rung

    run = {"step": 43, "steps": 44, "budget": 500, "loss": "nan", "first_loss": 201.0,
           "loss_finite": False, "weights_finite": False, "origins": []}  # fmt: skip
    control = {"step": None, "steps": control_steps, "budget": 500}
    monkeypatch.setattr(
        training_rung, "run_body", lambda *a, **k: {"run": run, "control": control, "steer": False}
    )
    verdict = training_rung.verify_program(_learning_rate_spec())
    assert (verdict["status"] == "confirmed") is confirmed, verdict
    if not confirmed:
        assert "the control stopped at its time budget before step 43" in verdict["detail"]
        assert "repro" not in verdict


@pytest.mark.parametrize("cut", [False, True])
def test_a_training_run_stopped_by_its_time_budget_leaves_no_confirmation_standing(
    monkeypatch, cut
) -> None:
    """A run that stayed finite for all its steps says the witness is not a state training
    reaches; one a busy machine stopped early (38 of 500 steps) does not know, so the witness
    is not confirmed either: a verdict never depends on how busy the machine was (nanruns
    g03's clean twin was confirmed on a busy machine only)."""
    from tfnumlint.verify import training_rung

    run = {"step": None, "steps": 38 if cut else 500, "budget": 500, "loss": 1.0,
           "first_loss": 2.0, "origins": {}, "loss_finite": True, "weights_finite": True}  # fmt: skip
    monkeypatch.setattr(
        training_rung, "run_body",
        lambda *a, **k: {"run": run, "control": None, "steer": False, "cut": cut},
    )  # fmt: skip
    spec = _learning_rate_spec()
    trained = training_rung.verify_program(spec)
    assert trained["status"] == "finite" and trained["cut"] is cut
    witness = {"status": "confirmed", "symptom": "nan-value", "detail": "at x = 1, y = nan"}
    out = probing.with_training({"program": spec}, witness, trained)
    assert out["status"] == "inconclusive", out
    if cut:
        assert "was stopped by its time budget after 38 steps" in out["detail"]
        assert "whether its training reaches the witness is not known" in out["detail"]
    else:
        assert "stays finite for 500 steps" in out["detail"]
    # a stand-in model's confirmation yields to the program's own slice either way (nanruns
    # p02's clean twin: its slice ran 1 step on a busy machine, and it trains finite)
    stand_in = {"status": "confirmed", "symptom": "dead-gradient", "detail": "a stand-in"}
    out = probing.with_training({"program": spec, "kind": "train"}, stand_in, trained)
    assert out["status"] == "inconclusive", out
    assert out["detail"].endswith("the stand-in's run is not the program's"), out


BANDIT = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    rng = np.random.RandomState(3)
    n_arms, n_feat = 4, 8
    obs = tf.compat.v1.placeholder(tf.float32, [None, n_feat])
    choice = tf.compat.v1.placeholder(tf.int32, [None])
    gain = tf.compat.v1.placeholder(tf.float32, [None])
    W = tf.Variable(tf.zeros([n_feat, n_arms]))
    pi = tf.nn.softmax(tf.matmul(obs, W))
    picked = tf.reduce_sum(pi * tf.one_hot(choice, n_arms), axis=1)
    loss = -tf.reduce_mean(tf.math.log(picked) * gain)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)
    sess = tf.compat.v1.Session()
    sess.run(tf.compat.v1.global_variables_initializer())
    avg = 0.0
    for t in range(200):
        x = rng.poisson(20, (32, n_feat)).astype(np.float32)
        p = sess.run(pi, {obs: x})
        a = np.array([rng.choice(n_arms, p=q / q.sum()) for q in p])
        r = (a == 0).astype(np.float32)
        avg = 0.9 * avg + 0.1 * r.mean()
        sess.run(step, {obs: x, choice: a, gain: r - avg})
"""


def test_a_policy_gradient_is_confirmed_with_actions_and_advantages_the_code_allows() -> None:
    """REINFORCE on raw counts: the chosen actions are whole numbers below the one_hot's depth
    (any of them the program can pick) and the advantage ``r - avg`` lies in the range the
    code gives it, so a run on them is the program's; its log-probability underflows."""
    logs = [v for f, v in on_line(verified(BANDIT), "tf.math.log(picked)", BANDIT)]
    assert any(by_training(v) for v in logs), [v.get("detail") for v in logs]
    detail = next(v["detail"] for v in logs if by_training(v))
    assert "`choice` = whole numbers drawn uniformly in [0, 4)" in detail
    assert "`gain` = uniform draws in its fed range" in detail


def test_the_log_softmax_twin_of_the_policy_gradient_has_nothing_to_confirm() -> None:
    fused = (
        BANDIT.replace(
            "pi = tf.nn.softmax(tf.matmul(obs, W))\n",
            "logp = tf.nn.log_softmax(tf.matmul(obs, W))\n    pi = tf.exp(logp)\n",
        )
        .replace("pi * tf.one_hot", "logp * tf.one_hot")
        .replace("tf.math.log(picked)", "picked")
    )
    assert "log_softmax" in fused and "math.log" not in fused
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_a_feed_drawn_from_a_range_is_also_held_at_each_end_of_it() -> None:
    """A sign decides which way training pushes: an advantage held at its lowest pushes the
    chosen action's probability down at every step (GRIST steers toward the hazard so)."""
    from tfnumlint.verify import training_rung

    [f] = [f for f, _ in verified(BANDIT) if f.probe and f.probe.get("program")][:1]
    body = training_rung.rendered(f.probe["program"]).body
    namespace: dict = {}
    exec(compile(body, "<rung>", "exec"), namespace)
    assert training_rung.steer_modes(namespace) == (False, True, "low", "high")
    arrays = {k: v.astype("float32") for k, v in namespace["data"]().items()}
    (name,) = namespace["RANGES"]
    lo, hi = namespace["RANGES"][name]
    assert (namespace["steered"](arrays, "low")[name] == np.float32(lo)).all()
    assert (namespace["steered"](arrays, "high")[name] == np.float32(hi)).all()
    assert training_rung.steer_modes({"RANGES": {}}) == (False, True)
