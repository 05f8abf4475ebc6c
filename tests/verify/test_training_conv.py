"""The training rung on convolutional networks (issue 23): TF1's ``tf.nn.conv2d`` + bias + relu
+ ``max_pool`` + reshape + ``dropout(h, keep_prob)`` with weights from helpers, and a Keras
``Sequential`` of ``Conv2D`` / ``MaxPooling2D`` / ``Flatten`` / ``Dropout`` / ``Dense``.  Their
slices are the program's own networks (kernels [kh, kw, in, out], images tracked to the
Flatten's width, the keep probability the training run feeds), trained until the hand-written
cross-entropy breaks; their fused twins confirm nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.engine import LintOptions, lint_source, load_all
from tfnumlint.model import Verification
from tfnumlint.rules.registry import CHECKS
from tfnumlint.source import Source
from tfnumlint.verify import repro

# Four classes of 8x8 one-channel images (a template each, plus noise), a small conv net with
# dropout, and the tutorial's summed cross-entropy on softmax outputs, trained with Adam
TF1_CONV = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()

    def shapes(n):
        rng = np.random.RandomState(0)
        templates = (rng.rand(4, 64) < 0.3).astype(np.float32)
        labels = rng.randint(0, 4, size=n)
        imgs = np.clip(templates[labels] + 0.2 * rng.rand(n, 64), 0.0, 1.0).astype(np.float32)
        return imgs, np.eye(4, dtype=np.float32)[labels]

    def weight(shape):
        return tf.Variable(tf.random.truncated_normal(shape, stddev=0.1))

    def bias(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    train_x, train_y = shapes(1000)
    x = tf.compat.v1.placeholder(tf.float32, [None, 64])
    y_ = tf.compat.v1.placeholder(tf.float32, [None, 4])
    keep = tf.compat.v1.placeholder(tf.float32)
    W1 = weight([3, 3, 1, 8])
    b1 = bias([8])
    image = tf.reshape(x, [-1, 8, 8, 1])
    h = tf.nn.relu(tf.nn.conv2d(image, W1, strides=[1, 1, 1, 1], padding="SAME") + b1)
    pooled = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    flat = tf.reshape(pooled, [-1, 4 * 4 * 8])
    W2 = weight([4 * 4 * 8, 4])
    b2 = bias([4])
    y = tf.nn.softmax(tf.matmul(tf.compat.v1.nn.dropout(flat, keep_prob=keep), W2) + b2)
    cross_entropy = -tf.reduce_sum(y_ * tf.math.log(y))
    train_step = tf.compat.v1.train.AdamOptimizer(0.05).minimize(cross_entropy)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for i in range(200):
            idx = np.random.randint(0, 1000, 50)
            sess.run(train_step, feed_dict={x: train_x[idx], y_: train_y[idx], keep: 0.5})
        print(sess.run(cross_entropy, feed_dict={x: train_x, y_: train_y, keep: 1.0}))
"""
TF1_LOG = "tf.math.log(y)"

KERAS_CONV = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(0)
    labels = rng.randint(0, 4, size=1000)
    templates = rng.rand(4, 8, 8, 1)
    images = np.clip(templates[labels] + 0.2 * rng.rand(1000, 8, 8, 1), 0.0, 1.0).astype(np.float32)
    targets = np.eye(4, dtype=np.float32)[labels]


    def xent(y_true, y_pred):
        return -tf.reduce_sum(y_true * tf.math.log(y_pred), axis=-1)


    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, (3, 3), activation="relu", input_shape=(8, 8, 1)),
        tf.keras.layers.MaxPooling2D((2, 2)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dropout(0.25),
        tf.keras.layers.Dense(4, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=xent)
    model.fit(images, targets, batch_size=32, epochs=5)
"""
KERAS_LOG = "tf.math.log(y_pred)"


def program_of(program: str) -> dict:
    """The training rung's slice of ``program``'s objective (linted, not verified)."""
    load_all()
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    found = lint_source(Source("train.py", text, text.encode()), options).findings
    probes = [f.probe for f in found if f.probe and f.probe.get("program")]
    assert probes, [f.message for f in found]
    return probes[0]["program"]


def slice_forward(spec: dict, rows: int = 16) -> tuple[str, list, dict, dict]:
    """The rendered slice's forward on the first ``rows`` rows of its data: (the forward's
    code, each watched operation's value, the weights, the data arrays)."""
    import numpy as np
    import tensorflow as tf

    from tfnumlint.verify import training_rung

    body = training_rung.rendered(spec).body
    namespace = training_rung._namespace(body)
    arrays = {k: np.asarray(v, np.float32) for k, v in namespace["data"]().items()}
    weights = namespace["weights"](arrays)
    batch = {k: tf.constant(a[:rows]) for k, a in arrays.items()}
    _, ts = namespace["forward"](**batch, **weights)
    return body[body.index("def forward") :], ts, weights, arrays


def calls(spec: dict) -> list[dict]:
    return [n for n in walk(spec["loss"]) if n.get("k") == "call"]


def test_a_tf1_conv_net_is_confirmed_by_its_own_training() -> None:
    results = on_line(verified(TF1_CONV), TF1_LOG, TF1_CONV)
    confirmed = [v for _, v in results if by_training(v)]
    assert confirmed, [v.get("detail") for _, v in results]
    assert "batches of 50" in confirmed[0]["detail"]
    assert "assumed" not in confirmed[0]["detail"]


def test_the_tf1_conv_net_s_fused_twin_has_nothing_to_confirm() -> None:
    fused = TF1_CONV.replace("y = tf.nn.softmax(tf.matmul(", "logits = (tf.matmul(").replace(
        "-tf.reduce_sum(y_ * tf.math.log(y))",
        "tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))",
    )
    assert "softmax_cross_entropy_with_logits" in fused and "logits = (tf.matmul(" in fused
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_the_tf1_slice_is_the_program_s_conv_net() -> None:
    spec = program_of(TF1_CONV)
    shapes = {k: w["shape"] for k, w in spec["weights"].items()}
    assert shapes == {"W1": [3, 3, 1, 8], "b1": [8], "W2": [128, 4], "b2": [4]}
    ops = [n["op"] for n in calls(spec)]
    assert ops.count("conv2d_nhwc") == 1 and ops.count("pool2d_nhwc") == 1
    conv = next(n for n in calls(spec) if n["op"] == "conv2d_nhwc")
    assert [a.get("v") for a in conv["args"][3:]] == ["SAME"]
    assert [i["v"] for i in conv["args"][2]["items"]] == [1.0, 1.0]
    pool = next(n for n in calls(spec) if n["op"] == "pool2d_nhwc")
    assert [i["v"] for i in pool["args"][1]["items"]] == [2.0, 2.0] and pool["args"][2][
        "v"
    ] == "MAX"
    dropout = next(n for n in calls(spec) if n["op"] == "dropout")
    assert dropout["args"][1] == {"k": "const", "v": 0.5}  # 1 - the keep_prob training feeds
    assert spec["assumed"] == []


def test_a_keep_probability_no_training_feed_gives_is_an_assumption() -> None:
    unfed = TF1_CONV.replace(", keep: 0.5}", "}")
    spec = program_of(unfed)
    assert not [n for n in calls(spec) if n["op"] == "dropout"]
    assert any("trains without dropout" in a for a in spec["assumed"])


def test_a_keras_conv_net_is_confirmed_by_its_own_training() -> None:
    results = on_line(verified(KERAS_CONV), KERAS_LOG, KERAS_CONV)
    assert any(by_training(v) for _, v in results), [v.get("detail") for _, v in results]


def test_the_keras_conv_net_s_fused_twin_has_nothing_to_confirm() -> None:
    fused = KERAS_CONV.replace("loss=xent", 'loss="categorical_crossentropy"')
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_the_keras_slice_tracks_the_images_to_the_flatten_s_width() -> None:
    spec = program_of(KERAS_CONV)
    shapes = {k.rsplit(".", 2)[-2:][0][-2:] + k.rsplit(".", 1)[-1]: w["shape"]
              for k, w in spec["weights"].items()}  # fmt: skip
    # 8x8x1 -> a 3x3 VALID conv: 6x6x8 -> a 2x2 pool: 3x3x8 -> Flatten: 72
    assert shapes == {"0]kernel": [3, 3, 1, 8], "0]bias": [8], "4]kernel": [72, 4], "4]bias": [4]}
    assert any(n["op"] == "dropout" for n in calls(spec))


def test_a_conv_confirmation_ships_a_reproducer_that_reproduces(tmp_path: Path) -> None:
    f, v = next((f, v) for f, v in verified(TF1_CONV) if by_training(v))
    f.verification = Verification(**{k: v[k] for k in ("status", "detail", "symptom", "dtype",
                                                       "observed", "repro") if k in v})  # fmt: skip
    notices = repro.emit_all([f], tmp_path)
    assert notices == [] and f.repro is not None
    run = subprocess.run([sys.executable, f.repro], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "non-finite (nan/inf)" in run.stdout


@pytest.mark.parametrize(
    "given", ["dilation_rate=2, ", 'data_format="channels_first", ', "dilation_rate=(2, 2), "]
)
def test_a_keras_conv_the_slice_would_not_compute_as_keras_does_leaves_it_cut(given) -> None:
    """A dilated or channels-first Conv2D is not the plain conv the slice writes: no slice
    (the rung would train another net), rather than a wrong one."""
    other = KERAS_CONV.replace("Conv2D(8, (3, 3), ", f"Conv2D(8, (3, 3), {given}")
    load_all()
    text = textwrap.dedent(other)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    found = lint_source(Source("train.py", text, text.encode()), options).findings
    assert found and not [f for f in found if f.probe and f.probe.get("program")]


def test_a_keras_conv_at_its_default_dilation_and_layout_is_read() -> None:
    same = KERAS_CONV.replace(
        "Conv2D(8, (3, 3), ", 'Conv2D(8, (3, 3), dilation_rate=1, data_format="channels_last", '
    )
    assert program_of(same)["weights"]


def test_a_run_s_steps_count_a_conv_kernel_s_work_at_every_output_position() -> None:
    """A row's work is a multiply-add per weight, and a conv kernel's at each position of its
    output: W1 (3x3x1x8 = 72 weights) is applied at the 8x8 = 64 positions of a "SAME" conv, so
    the slice's 596 weights do 596 + 72 * 63 = 5132 multiply-adds a row, 256600 a batch of 50.
    A run's budget of multiply-adds then buys 70 steps; counted once per weight, 602."""
    from tfnumlint.verify import training_rung

    namespace = training_rung._namespace(training_rung.rendered(program_of(TF1_CONV)).body)
    namespace["WORK"] = 256600 * 70
    run = namespace["train"](float(namespace["LEARNING_RATE"]), steps=2)
    assert run["budget"] == 70
