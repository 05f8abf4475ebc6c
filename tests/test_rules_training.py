"""TNL501-TNL504: learning rate, gradient clipping, logits vs probabilities, input checks."""

from __future__ import annotations

import pytest
from conftest import hits, lint, rules_of


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


def test_tnl501_sigmoid_autoencoder_adam_001():
    src = sequential(
        SIGMOID, "tf.keras.optimizers.Adam(learning_rate=0.01)", '"binary_crossentropy"'
    )
    [f] = hits("TNL501", src)
    assert (f.line, f.column) == (7, 25)  # the optimizer constructor
    assert (
        f.source_line[f.column - 1 : f.end_column - 1]
        == "tf.keras.optimizers.Adam(learning_rate=0.01)"
    )
    assert "0.01" in f.message
    assert "0.003" in f.message
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
    assert {"TNL102", "TNL103", "TNL501", "TNL502"} <= rules_of(src)


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
    assert len(hits("TNL501", sequential(SOFTMAX, optimizer, '"categorical_crossentropy"'))) == 1


def test_tnl501_probability_loss_object():
    src = sequential(
        SIGMOID, "tf.keras.optimizers.Adam(0.01)", "tf.keras.losses.BinaryCrossentropy()"
    )
    assert len(hits("TNL501", src)) == 1


@pytest.mark.parametrize(
    "src",
    [
        sequential(SIGMOID, "tf.keras.optimizers.Adam(1e-3)", '"binary_crossentropy"'),
        sequential(SIGMOID, "tf.keras.optimizers.Adam()", '"binary_crossentropy"'),
        sequential(SOFTMAX, "tf.keras.optimizers.SGD(0.5)", '"categorical_crossentropy"'),
        sequential(
            LINEAR,
            "tf.keras.optimizers.Adam(1e-2)",
            "tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)",
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
