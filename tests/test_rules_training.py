"""TNL501-TNL504: learning rate, gradient clipping, logits vs probabilities, input checks."""

from __future__ import annotations

import textwrap

import pytest
from conftest import GD_LINSPACE, hits, lint, rules_of


def sequential(last: str, optimizer: str, loss: str) -> str:
    return (
        "import tensorflow as tf\n"
        "\n"
        "model = tf.keras.Sequential([\n"
        '    tf.keras.layers.Dense(64, activation="relu"),\n'
        f"    {last},\n"
        "])\n"
        f"model.compile(optimizer={optimizer}, loss={loss})\n"
    )


SIGMOID = 'tf.keras.layers.Dense(784, activation="sigmoid")'
SOFTMAX = 'tf.keras.layers.Dense(10, activation="softmax")'
LINEAR = "tf.keras.layers.Dense(10)"


# -- TNL501 high-lr-saturating-output ----------------------------------------------------

HAND_WRITTEN_LOSS = (
    "def recon(y, p):\n"
    "    return -tf.reduce_mean(y * tf.math.log(p + 1e-10) + (1 - y) * tf.math.log(1 - p + 1e-10))\n"
    "\n"
    "\n"
)


def custom(last: str, optimizer: str) -> str:
    """A Sequential model compiled with a hand-written probability-space loss."""
    return sequential(last, optimizer, "recon").replace(
        "\nmodel =", "\n" + HAND_WRITTEN_LOSS + "model =", 1
    )


def test_tnl501_sigmoid_autoencoder_adam_001():
    src = custom(SIGMOID, "tf.keras.optimizers.Adam(learning_rate=0.01)")
    [f] = hits("TNL501", src)
    assert (f.line, f.column) == (11, 25)  # the optimizer constructor
    assert (
        f.source_line[f.column - 1 : f.end_column - 1]
        == "tf.keras.optimizers.Adam(learning_rate=0.01)"
    )
    assert "0.01" in f.message and "0.003" in f.message
    assert "hand-written log(p + 1e-10) loss" in f.message
    assert f.severity == "warning"


def test_tnl501_the_issue_autoencoder_story():
    src = """\
        import tensorflow as tf

        encoder = tf.keras.layers.Dense(64, activation="relu")
        decoder = tf.keras.layers.Dense(784, activation="sigmoid")
        optimizer = tf.keras.optimizers.Adam(0.01)


        def loss_fn(p):
            p_pred = decoder(encoder(p))
            return -tf.reduce_sum(
                p * tf.math.log(p_pred + 1e-10) + 0.55 * (1 - p) * tf.math.log(1 - p_pred + 1e-10),
                axis=1,
            )
        """
    [f] = hits("TNL501", src)
    assert f.line == 5
    assert {"TNL102", "TNL103", "TNL501"} <= rules_of(src)


@pytest.mark.parametrize(
    "optimizer",
    [
        "tf.keras.optimizers.RMSprop(0.01)",
        "tf.keras.optimizers.Nadam(learning_rate=0.005)",
        "tf.keras.optimizers.SGD(2.0)",
        "tf.keras.optimizers.Adagrad(0.5)",
    ],
)
def test_tnl501_other_families(optimizer):
    assert len(hits("TNL501", custom(SOFTMAX, optimizer))) == 1


def probe_of(code: str, src: str) -> dict:
    """The training spec a rule hands to the verifier (static: no TensorFlow)."""
    import textwrap

    from tfnumlint.engine import LintOptions, lint_source
    from tfnumlint.source import Source

    text = textwrap.dedent(src)
    options = LintOptions(codes=frozenset({code}), slice_probes=True)
    [f] = lint_source(Source("m.py", text, text.encode()), options).findings
    return f.probe


def test_tnl501_spec_reads_the_output_layer_of_a_functional_model():
    src = """\
        import keras
        from keras import layers, ops

        inputs = keras.Input(shape=(512,))
        hidden = layers.Dense(64, activation="relu")(inputs)
        outputs = layers.Dense(512, activation="sigmoid")(hidden)
        model = keras.Model(inputs, outputs)


        def loss(p, p_pred):
            return -ops.sum(p * ops.log(p_pred + 1e-10) + (1 - p) * ops.log(1 - p_pred + 1e-10), axis=1)


        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss=loss)
        """
    probe = probe_of("TNL501", src)
    assert probe["recipe"] == "saturation"
    assert (probe["optimizer"], probe["learning_rate"]) == ("adam", 0.01)
    assert (probe["output"], probe["units"], probe["fan_in"]) == ("sigmoid", 512, 64)
    assert probe["below"] == {"fan_in": 512, "activation": "relu"}  # Input(512) -> Dense(64, relu)
    assert probe["bias"] is True
    assert probe["loss"] == {"form": "log_eps", "eps": 1e-10}


def test_tnl501_spec_reads_a_tf1_weight_shape_and_a_clipped_loss():
    src = """\
        import tensorflow.compat.v1 as tf

        P = tf.placeholder(tf.float32, [None, 512])
        W2 = tf.Variable(tf.random_normal([64, 512], stddev=0.1))
        hidden = tf.nn.relu(P)
        P_pred = tf.sigmoid(tf.matmul(hidden, W2))
        loss = -tf.reduce_sum(P * tf.log(tf.clip_by_value(P_pred, 1e-7, 1 - 1e-7)))
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        """
    probe = probe_of("TNL501", src)
    assert (probe["units"], probe["fan_in"], probe["tf1"]) == (512, 64, True)
    assert probe["below"] == {"fan_in": None, "activation": "relu"}  # relu(P): no weight shape
    assert probe["bias"] is False  # matmul(hidden, W2), nothing added
    assert probe["loss"] == {"form": "clip", "eps": 1e-7}


def test_tnl501_spec_reads_the_hidden_layer_of_a_tf1_autoencoder():
    src = """\
        import tensorflow.compat.v1 as tf

        P = tf.placeholder(tf.float32, shape=[None, 512])
        W1 = tf.Variable(tf.random_normal([512, 64], stddev=0.1))
        W2 = tf.Variable(tf.random_normal([64, 512], stddev=0.1))
        b2 = tf.Variable(tf.zeros([512]))
        hidden = tf.nn.relu(tf.matmul(P, W1))
        P_pred = tf.sigmoid(tf.matmul(hidden, W2) + b2)
        loss = -tf.reduce_sum(P * tf.log(P_pred + 1e-10) + (1 - P) * tf.log(1 - P_pred + 1e-10))
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        """
    probe = probe_of("TNL501", src)
    assert (probe["units"], probe["fan_in"], probe["bias"]) == (512, 64, True)
    assert probe["below"] == {"fan_in": 512, "activation": "relu"}


def test_tnl501_spec_reads_the_layer_below_in_a_sequential_list():
    src = """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(784,)),
            tf.keras.layers.Dense(32, activation="tanh"),
            tf.keras.layers.Dense(784, activation="sigmoid", use_bias=False),
        ])


        def recon(y, p):
            return -tf.reduce_mean(y * tf.math.log(p + 1e-10) + (1 - y) * tf.math.log(1 - p + 1e-10))


        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss=recon)
        """
    probe = probe_of("TNL501", src)
    assert (probe["units"], probe["fan_in"], probe["bias"]) == (784, 32, False)
    assert probe["below"] == {"fan_in": 784, "activation": "tanh"}


@pytest.mark.parametrize(
    "src",
    [
        custom(SIGMOID, "tf.keras.optimizers.Adam(1e-3)"),
        custom(SIGMOID, "tf.keras.optimizers.Adam()"),
        custom(SOFTMAX, "tf.keras.optimizers.SGD(0.5)"),
        # fused with-logits loss on a linear output: no saturation hazard
        sequential(
            LINEAR,
            "tf.keras.optimizers.Adam(1e-2)",
            "tf.keras.losses.BinaryCrossentropy(from_logits=True)",
        ),
        # Keras's built-in probability losses recover the logits of a sigmoid/softmax output
        sequential(SIGMOID, "tf.keras.optimizers.Adam(0.01)", '"binary_crossentropy"'),
        sequential(SOFTMAX, "tf.keras.optimizers.Adam(0.01)", '"categorical_crossentropy"'),
        sequential(
            SIGMOID, "tf.keras.optimizers.Adam(0.01)", "tf.keras.losses.BinaryCrossentropy()"
        ),
        sequential(LINEAR, "tf.keras.optimizers.Adam(0.01)", '"mse"'),
    ],
)
def test_tnl501_silent(src):
    assert hits("TNL501", src) == []


# -- TNL502 no-gradient-clipping ---------------------------------------------------------


def test_tnl502_adam_high_lr():
    src = "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-2)\n"
    [f] = hits("TNL502", src)
    assert (f.line, f.column, f.end_column) == (3, 7, 37)
    assert f.severity == "info"
    assert "clipnorm" in f.message


def test_tnl502_runs_by_default_but_needs_evidence_unless_named():
    """A configuration smell alone never fails CI: TNL502 runs by default, and its findings are
    shown only when a simulation confirms them, unless TNL502 is selected by its code."""
    from tfnumlint.config import Config, named_codes, resolve_codes
    from tfnumlint.ruledocs import all_docs

    assert "TNL502" in resolve_codes(Config(), None, None)
    assert all_docs()["TNL502"].evidence
    assert [c for c, d in all_docs().items() if d.evidence] == ["TNL502"]
    assert named_codes(Config(), None) == frozenset()
    assert named_codes(Config(), ["TNL502", "TNL1"]) == {"TNL502"}  # a prefix names nothing
    assert named_codes(Config(extend_select=["tnl502"]), None) == {"TNL502"}
    assert "TNL502" in named_codes(Config(), ["ALL"])  # everything, audits included


def test_tnl502_spec_reads_the_dense_stack():
    src = """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(16,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        """
    probe = probe_of("TNL502", src)
    assert probe["recipe"] == "clipping"
    assert probe["stack"] == {"inputs": 16, "layers": [[64, "relu"], [64, "relu"], [1, "linear"]]}


def test_tnl502_spec_has_no_stack_when_a_layer_is_not_a_dense_one():
    src = """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(100, 8)),
            tf.keras.layers.LSTM(64),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        """
    assert probe_of("TNL502", src)["stack"] is None


def test_tnl502_tf1_optimizer():
    src = "import tensorflow.compat.v1 as tf\n\nopt = tf.train.AdamOptimizer(0.01)\n"
    assert len(hits("TNL502", src)) == 1


@pytest.mark.parametrize(
    "src",
    [
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-2, clipnorm=1.0)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-2, global_clipnorm=1.0)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.RMSprop(1e-2, clipvalue=0.5)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-3)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.SGD(0.5)\n",  # not adaptive
    ],
)
def test_tnl502_silent(src):
    assert hits("TNL502", src) == []


def test_tnl502_silent_with_clip_by_global_norm_in_the_file():
    src = """\
        import tensorflow as tf

        opt = tf.keras.optimizers.Adam(1e-2)


        def train_step(model, x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            grads, _ = tf.clip_by_global_norm(grads, 1.0)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    assert hits("TNL502", src) == []


# -- TNL505 sgd-diverges-on-raw-features --------------------------------------------------


def test_tnl505_gd_on_linspace_features():
    [f] = hits("TNL505", GD_LINSPACE.format(lr="0.1"))
    assert f.line == 9
    assert "np.linspace(-8, 8, 100)" in f.message
    # 100 points evenly spaced on [-8, 8]: mean 0, mean(x^2) = 16^2 * 101 / (12 * 99) = 21.76;
    # the Hessian of the mean squared error is 2 * 21.76 = 43.5, the stable limit 2 / 43.5
    assert "43.5" in f.message and "0.0459" in f.message
    assert f.severity == "warning"


def test_tnl505_spec_carries_the_literal_features():
    probe = probe_of("TNL505", GD_LINSPACE.format(lr="0.1"))
    assert probe["recipe"] == "divergence"
    assert probe["features"]["dist"] == "linspace"
    assert probe["features"]["params"] == [-8.0, 8.0, 100.0]
    assert (probe["optimizer"], probe["learning_rate"], probe["momentum"]) == ("sgd", 0.1, 0.0)


@pytest.mark.parametrize("lr", ["0.001", "0.04"])
def test_tnl505_stable_learning_rate_is_silent(lr):
    assert hits("TNL505", GD_LINSPACE.format(lr=lr)) == []


def test_tnl505_momentum_widens_the_stable_range():
    # 2 (1 + 0.9) / 43.5 = 0.087: lr 0.06 is stable with momentum 0.9 but not without
    assert hits("TNL505", GD_LINSPACE.format(lr="0.06")) != []
    assert hits("TNL505", GD_LINSPACE.format(lr="0.06, momentum=0.9")) == []


def test_tnl505_scaled_uniform_features_in_tf1_feed():
    src = """\
        import numpy as np
        import tensorflow.compat.v1 as tf

        X = tf.placeholder(tf.float32, [None, 3])
        Y = tf.placeholder(tf.float32, [None, 1])
        W = tf.Variable(tf.zeros([3, 1]))
        cost = tf.reduce_mean(tf.square(tf.matmul(X, W) - Y))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
        x_data = np.random.rand(200, 3) * 100
        y_data = x_data.sum(axis=1, keepdims=True)
        with tf.Session() as sess:
            sess.run(train, feed_dict={X: x_data, Y: y_data})
        """
    [f] = hits("TNL505", src)
    assert "np.random.rand(200, 3) * 100" in f.message


@pytest.mark.parametrize(
    ("constructor", "shape"),
    [
        ("np.random.uniform(-8, 8, (100, 3))", [100, 3]),
        ("np.random.normal(0, 8, size=(100, 3))", [100, 3]),
        ("np.random.random((100, 3)) * 16", [100, 3]),
        ("np.random.randint(0, 17, (100, 3))", [100, 3]),
    ],
)
def test_tnl505_reads_the_size_argument_of_numpy_random_constructors(constructor, shape):
    src = f"""\
        import numpy as np
        import tensorflow as tf

        x_data = {constructor}
        w = tf.Variable(tf.zeros([3, 1]))
        opt = tf.keras.optimizers.SGD(learning_rate=0.5)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x_data, w) - 1.0))
        """
    [f] = hits("TNL505", src)
    assert constructor in f.message
    features = probe_of("TNL505", src)["features"]
    assert [features["rows"], features["cols"]] == shape


@pytest.mark.parametrize(
    "prep",
    [
        "x_data = (x_raw - x_raw.mean()) / x_raw.std()",
        "x_data = x_raw / 255.0",
    ],
)
def test_tnl505_normalised_features_are_silent(prep):
    src = f"""\
        import numpy as np
        import tensorflow as tf

        x_raw = np.linspace(-8, 8, 100)
        {prep}
        w = tf.Variable(0.0)
        opt = tf.keras.optimizers.SGD(learning_rate=0.1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(w * x_data - 1.0))
        """
    assert hits("TNL505", src) == []


# A TF1 linear regression by SGD at lr 0.5 on the `x_data` and `data` the head above it builds.
TF1_SGD_ON_X_DATA = """\
    X = tf.placeholder(tf.float32, [None, 13])
    Y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable(tf.zeros([13, 1]))
    cost = tf.reduce_mean(tf.square(tf.matmul(X, W) - Y))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    with tf.Session() as sess:
        sess.run(train, feed_dict={X: x_data, Y: data[:, -1:]})
    """

RAW_THROUGH_HELPER = """\
    import numpy as np
    import tensorflow.compat.v1 as tf


    def {helper}(v):
        return {body}


    data = np.random.uniform(0, 300, size=(500, 14))
    x_data = {helper}(data[:, :-1])
"""  # the TF1 tail follows at the same indentation


@pytest.mark.parametrize("helper", ["normalize", "standardise", "prepare", "f"])
@pytest.mark.parametrize("body, flagged", [("(v - v.mean()) / v.std()", False), ("v * 10.0", True)])
def test_tnl505_a_helper_is_read_by_its_body_not_its_name(helper, body, flagged):
    """Issue 22: `normalize` that scales by 10 leaves raw features; `prepare` that
    standardises does not."""
    src = RAW_THROUGH_HELPER.format(helper=helper, body=body) + TF1_SGD_ON_X_DATA
    found = hits("TNL505", src)
    assert bool(found) == flagged, found


def test_tnl505_unknown_scale_states_the_condition():
    head = """\
        import numpy as np
        import tensorflow.compat.v1 as tf

        data = np.loadtxt("housing.csv", delimiter=",")
        x_data = data[:, :-1]
    """
    src = textwrap.dedent(head) + textwrap.dedent(TF1_SGD_ON_X_DATA)
    [f] = hits("TNL505", src)
    assert "RMS exceeds 1.41" in f.message  # lr 0.5: 2 * rms^2 * 0.5 > 2
    assert "no normalisation of `x_data` is visible" in f.message


def test_tnl505_not_for_data_prepared_elsewhere():
    src = """\
        import tensorflow as tf


        def train(x_data, y_data):
            w = tf.Variable(0.0)
            opt = tf.keras.optimizers.SGD(learning_rate=0.5)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x_data - y_data))
            return tape, opt
        """
    assert hits("TNL505", src) == []


def test_tnl505_not_for_a_squared_weight_penalty():
    src = GD_LINSPACE.format(lr="0.1").replace(
        "tf.square(w * x_data + b - y_data)",
        "tf.nn.sigmoid_cross_entropy_with_logits(labels=y_data, logits=w * x_data + b))"
        " + 0.01 * tf.reduce_sum(tf.square(w)",
    )
    assert hits("TNL505", src) == []


def test_tnl505_not_for_adaptive_optimizers_or_cross_entropy():
    adam = GD_LINSPACE.format(lr="0.1").replace("SGD", "Adam")
    assert hits("TNL505", adam) == []
    xent = GD_LINSPACE.format(lr="0.1").replace(
        "tf.square(w * x_data + b - y_data)",
        "tf.nn.sigmoid_cross_entropy_with_logits(labels=y_data, logits=w * x_data + b)",
    )
    assert hits("TNL505", xent) == []


# -- TNL506 loss-summed-over-batch --------------------------------------------------------

SUMMED_XENT = """\
    import numpy as np
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()

    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    cross_entropy = {loss}
    train_step = tf.train.{optimizer}.minimize(cross_entropy)

    batch_x = np.random.rand(200, 784)
    batch_y = np.eye(10)[np.random.randint(0, 10, 200)]
    with tf.Session() as sess:
        sess.run(train_step, feed_dict={{x: batch_x, y_: batch_y}})
    """
SUM = "-tf.reduce_sum(y_ * tf.log(y))"


def test_tnl506_summed_cross_entropy_with_literal_batch():
    [f] = hits("TNL506", SUMMED_XENT.format(loss=SUM, optimizer="GradientDescentOptimizer(0.01)"))
    assert f.line == 11  # the sum itself, not the minimize call
    assert "0.01 x 200 = 2 times the mean gradient" in f.message
    assert f.severity == "warning"


def test_tnl506_spec():
    src = SUMMED_XENT.format(loss=SUM, optimizer="GradientDescentOptimizer(0.01)")
    probe = probe_of("TNL506", src)
    assert probe["recipe"] == "summed"
    assert (probe["batch"], probe["loss"], probe["feature_count"]) == (200, "softmax_log", 784)
    assert probe["features"]["dist"] == "uniform"


@pytest.mark.parametrize(
    ("loss", "optimizer"),
    [
        (
            "-tf.reduce_mean(tf.reduce_sum(y_ * tf.log(y), axis=1))",
            "GradientDescentOptimizer(0.01)",
        ),
        ("-tf.reduce_sum(y_ * tf.log(y), axis=1)", "GradientDescentOptimizer(0.01)"),
        (SUM, "AdamOptimizer(0.01)"),  # Adam divides the scale out
    ],
)
def test_tnl506_silent(loss, optimizer):
    assert hits("TNL506", SUMMED_XENT.format(loss=loss, optimizer=optimizer)) == []


def test_tnl506_silent_without_a_literal_batch_size():
    src = SUMMED_XENT.format(loss=SUM, optimizer="GradientDescentOptimizer(0.01)")
    src = src.replace("np.random.rand(200, 784)", "load_images()")
    src = src.replace("np.random.randint(0, 10, 200)", "load_labels()")
    assert hits("TNL506", src) == []


def test_tnl506_keras_loss_function_summed_over_the_batch():
    src = """\
        import numpy as np
        import tensorflow as tf


        def summed_mse(y_true, y_pred):
            return tf.reduce_sum(tf.square(y_true - y_pred))


        x = np.random.rand(1000, 20) * 10
        model = tf.keras.Sequential([tf.keras.Input(shape=(20,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.001), loss=summed_mse)
        model.fit(x, x.sum(axis=1), batch_size=128, epochs=3)
        """
    [f] = hits("TNL506", src)
    assert (f.line, f.source_line[f.column - 1 : f.end_column - 1]) == (11, "summed_mse")
    assert "0.001 x 128 = 0.128 times the mean gradient" in f.message
    assert probe_of("TNL506", src)["loss"] == "squared"
    mean = src.replace("tf.reduce_sum(tf.square(", "tf.reduce_mean(tf.square(")
    assert hits("TNL506", mean) == []
    adam = src.replace("SGD(0.001)", "Adam(0.001)")
    assert hits("TNL506", adam) == []


def test_tnl506_gradient_tape_with_the_only_optimizer_sgd():
    src = """\
        import numpy as np
        import tensorflow as tf

        x = np.random.rand(256, 784).astype("float32")
        labels = np.random.randint(0, 10, 256)
        w = tf.Variable(tf.zeros([784, 10]))
        opt = tf.keras.optimizers.SGD(0.05)
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, w)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, [w])
        opt.apply_gradients(zip(grads, [w]))
        """
    [f] = hits("TNL506", src)
    assert f.line == 10  # the sum itself, not the gradient call
    assert "0.05 x 256 = 12.8 times" in f.message
    assert probe_of("TNL506", src)["loss"] == "softmax_xent"


PICKED = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 8)).astype(np.float32)
    Y = rng.standard_normal((1000, 1)).astype(np.float32)
    w = tf.Variable(tf.zeros([8, 1]))
    opt = tf.keras.optimizers.SGD(0.01)


    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((tf.matmul(xb, w) - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))


    for i in range(10):
        print(X[i:i + 3])
        {pick}
    """


@pytest.mark.parametrize(
    "pick",
    [
        "step(X[i * 200:(i + 1) * 200], Y[i * 200:(i + 1) * 200])",
        "idx = rng.choice(1000, 200)\n        xb, yb = X[idx], Y[idx]\n        step(xb, yb)",
    ],
)
def test_tnl506_reads_the_batch_size_from_a_pick_of_the_fed_data(pick):
    """A batch the code picks from its data with a size it fixes (a slice, a sized draw of
    rows) is the batch size; a square written ``** 2`` is a squared error."""
    [f] = hits("TNL506", PICKED.format(pick=pick))
    assert "0.01 x 200 = 2 times the mean gradient" in f.message
    assert probe_of("TNL506", PICKED.format(pick=pick))["loss"] == "squared"
    # the slice the loop prints is not fed to the training: no batch size
    assert hits("TNL506", PICKED.format(pick="step(X, Y)")) == []


RBM = """\
    import numpy as np
    import tensorflow as tf

    W = tf.Variable(tf.random.normal([784, 256], stddev=0.01))
    b_h = tf.Variable(tf.zeros([256]))
    learning_rate = 0.1


    def cd1(v0):
        h0 = tf.sigmoid(tf.matmul(v0, W) + b_h)
        v1 = tf.sigmoid(tf.matmul(h0, tf.transpose(W)))
        h1 = tf.sigmoid(tf.matmul(v1, W) + b_h)
        W.assign_add(learning_rate * {delta_w})
        b_h.assign_add(learning_rate * {delta_b})


    data = np.random.rand(1000, 784).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(100)
    """


def test_tnl506_hand_written_assign_add_summed_over_the_batch():
    src = RBM.format(
        delta_w="(tf.matmul(tf.transpose(v0), h0) - tf.matmul(tf.transpose(v1), h1))",
        delta_b="tf.reduce_sum(h0 - h1, axis=0)",
    )
    found = hits("TNL506", src)
    assert [f.line for f in found] == [13, 14]
    assert all("0.1 x 100 = 10 times the per-example average" in f.message for f in found)
    assert probe_of("TNL506", src.replace("b_h.assign_add", "b_h.assign"))["recipe"] == (
        "summed_update"
    )


def test_tnl506_hand_written_update_divided_by_the_batch_is_silent():
    src = RBM.format(
        delta_w="(tf.matmul(tf.transpose(v0), h0) - tf.matmul(tf.transpose(v1), h1)) / 100.0",
        delta_b="tf.reduce_mean(h0 - h1, axis=0)",
    )
    assert hits("TNL506", src) == []


# -- TNL503 logits-probabilities-mismatch ------------------------------------------------


def test_tnl503_probabilities_passed_as_logits():
    src = """\
        import tensorflow as tf


        def loss(logits, labels):
            probs = tf.nn.softmax(logits)
            return tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=probs)
        """
    [f] = hits("TNL503", src)
    assert (f.line, f.column) == (6, 12)
    assert f.severity == "error"
    assert "probability" in f.message


def test_tnl503_sigmoid_inline_into_sigmoid_xent():
    src = """\
        import tensorflow as tf


        def loss(logits, labels):
            return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=tf.sigmoid(logits))
        """
    assert len(hits("TNL503", src)) == 1


def test_tnl503_from_logits_on_softmax_model():
    src = sequential(SOFTMAX, '"adam"', "tf.keras.losses.CategoricalCrossentropy(from_logits=True)")
    [f] = hits("TNL503", src)
    assert f.line == 7
    assert f.source_line[f.column - 1 :].startswith("tf.keras.losses.CategoricalCrossentropy(")
    assert "softmax" in f.message


def test_tnl503_probability_loss_on_linear_model():
    [f] = hits("TNL503", sequential(LINEAR, '"adam"', '"categorical_crossentropy"'))
    assert "from_logits=True" in f.message


def test_tnl503_functional_model_sigmoid_output():
    src = """\
        import tensorflow as tf

        inputs = tf.keras.Input(shape=(8,))
        h = tf.keras.layers.Dense(16, activation="relu")(inputs)
        outputs = tf.keras.layers.Dense(1, activation="sigmoid")(h)
        model = tf.keras.Model(inputs=inputs, outputs=outputs)
        model.compile(optimizer="adam", loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
        """
    [f] = hits("TNL503", src)
    assert f.line == 7


@pytest.mark.parametrize(
    "src",
    [
        sequential(SOFTMAX, '"adam"', '"categorical_crossentropy"'),
        sequential(SIGMOID, '"adam"', "tf.keras.losses.BinaryCrossentropy()"),
        sequential(LINEAR, '"adam"', "tf.keras.losses.CategoricalCrossentropy(from_logits=True)"),
        sequential(LINEAR, '"adam"', '"mse"'),
        "import tensorflow as tf\n\n\ndef loss(logits, labels):\n"
        "    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)\n",
    ],
)
def test_tnl503_silent(src):
    assert hits("TNL503", src) == []


# -- TNL504 unchecked-input-data (off by default) -----------------------------------------


def test_tnl504_dataset_without_check():
    src = """\
        import tensorflow as tf


        def make_dataset(features, labels):
            return tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
        """
    [f] = hits("TNL504", src)
    assert f.severity == "info"
    assert "check_numerics" in f.message


def test_tnl504_reported_once_per_file():
    src = """\
        import tensorflow as tf

        train = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        test = tf.data.Dataset.from_tensor_slices((x_test, y_test))
        model.fit(train, epochs=3)
        """
    assert len(hits("TNL504", src)) == 1


@pytest.mark.parametrize(
    "check",
    [
        "features = tf.debugging.check_numerics(features, 'features')",
        "tf.debugging.assert_all_finite(features, 'features')",
        "tf.debugging.enable_check_numerics()",
    ],
)
def test_tnl504_silent_with_a_check(check):
    src = (
        "import tensorflow as tf\n\n\ndef make_dataset(features, labels):\n"
        f"    {check}\n"
        "    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)\n"
    )
    assert hits("TNL504", src) == []


def test_tnl504_is_not_in_the_default_selection():
    from tfnumlint.config import Config, resolve_codes

    assert "TNL504" not in resolve_codes(Config(), None, None)


def test_numerically_careful_script_is_clean_under_every_rule():
    src = """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )


        def losses(logits, labels, p, x, a, b, cos, counts, total):
            ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            log_probs = tf.nn.log_softmax(logits)
            bce = tf.math.log(tf.clip_by_value(p, 1e-7, 1 - 1e-7))
            ratio = tf.math.divide_no_nan(x, total)
            dist = tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(a - b), axis=-1), 1e-12))
            shifted = tf.exp(logits - tf.reduce_max(logits, axis=-1, keepdims=True))
            soft = shifted / tf.reduce_sum(shifted, axis=-1, keepdims=True)
            angle = tf.math.acos(tf.clip_by_value(cos, -1 + 1e-7, 1 - 1e-7))
            safe = tf.where(counts > 0, counts, tf.ones_like(counts))
            log_counts = tf.where(counts > 0, tf.math.log(safe), tf.zeros_like(counts))
            lse = tf.reduce_logsumexp(logits, axis=-1)
            return ce, log_probs, bce, ratio, dist, soft, angle, log_counts, lse, tf.math.log1p(x)
        """
    assert lint(src) == []
