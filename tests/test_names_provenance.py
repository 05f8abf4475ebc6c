"""Name resolution through every import form, and value provenance across scopes."""

from __future__ import annotations

import pytest
from conftest import lint, rules_of

from tfnumlint.analysis.names import ImportMap, normalise
from tfnumlint.engine import lint_text


def hits(code: str, src: str):
    findings = lint(src, select=[code])
    assert all(f.rule == code for f in findings)
    return findings


# -- import forms -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import tensorflow as tf", "tf.math.log(tf.nn.softmax(logits))"),
        ("import tensorflow as tf", "tf.math.log(tf.math.sigmoid(logits))"),
        ("import tensorflow", "tensorflow.math.log(tensorflow.nn.softmax(logits))"),
        ("import tensorflow as tf", "tf.compat.v1.log(tf.compat.v1.nn.softmax(logits))"),
        ("import tensorflow.compat.v1 as tf", "tf.log(tf.nn.softmax(logits))"),
        ("import tensorflow.compat.v1 as tf", "tf.log(tf.sigmoid(logits))"),
        ("from tensorflow import math as tfm, nn", "tfm.log(nn.softmax(logits))"),
        (
            "from tensorflow.math import log as ln\nimport tensorflow as tf",
            "ln(tf.sigmoid(logits))",
        ),
        ("from tensorflow.math import log, sigmoid", "log(sigmoid(logits))"),
        ("from tensorflow.keras import backend as K", "K.log(K.softmax(logits))"),
        ("import keras", "keras.ops.log(keras.ops.softmax(logits))"),
        ("from keras import ops", "ops.log(ops.sigmoid(logits))"),
        ("import tensorflow as tf", "tf.math.log(tf.keras.activations.softmax(logits))"),
    ],
)
def test_log_of_probability_through_every_import_form(imports, call):
    src = f"{imports}\n\n\ndef loss(logits):\n    return -{call}\n"
    [f] = hits("TNL101", src)
    assert f.line == src.splitlines().index(f"    return -{call}") + 1
    assert f.column == 13


def test_tf1_graph_style():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float32, [None, 784])
        p = tf.sigmoid(tf.layers.dense(x, 784))
        loss = -tf.reduce_sum(x * tf.log(p + 1e-10) + (1 - x) * tf.log(1 - p + 1e-10))
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        ratio = tf.div(x, tf.reduce_sum(tf.nn.relu(x)))
        """
    by_rule = {}
    for f in lint(src):
        by_rule.setdefault(f.rule, []).append(f.line)
    assert by_rule["TNL102"] == [5, 5]
    assert by_rule["TNL103"] == [5]
    assert by_rule["TNL501"] == [6]
    assert by_rule["TNL201"] == [7]


def test_tf1_placeholder_float16_and_train_optimizer():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float16, [None, 10])
        opt = tf.train.RMSPropOptimizer(1e-4)
        """
    [f] = hits("TNL403", src)
    assert "1e-10" in f.message  # the TF1 RMSProp default, not Keras's


def test_tf_compat_v1_spelled_out():
    src = """\
        import tensorflow as tf

        x = tf.compat.v1.placeholder(tf.float32, [None, 10])
        probs = tf.compat.v1.nn.softmax(x)
        opt = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
        loss = -tf.reduce_sum(x * tf.compat.v1.log(probs))
        """
    assert {"TNL101", "TNL103", "TNL501"} <= rules_of(src)


def test_keras3_names():
    src = """\
        import keras
        from keras import layers, losses, ops, optimizers

        model = keras.Sequential([layers.Dense(32, activation="relu"), layers.Dense(1, activation="sigmoid")])
        model.compile(optimizer=optimizers.Adam(learning_rate=0.01), loss=losses.BinaryCrossentropy())


        def entropy_bonus(logits):
            return ops.log(ops.sigmoid(logits))
        """
    found = {(f.rule, f.line) for f in lint(src)}
    assert ("TNL501", 5) in found
    assert ("TNL101", 9) in found


def test_keras3_from_logits_mismatch():
    src = """\
        from keras import Sequential, layers, losses

        model = Sequential([layers.Dense(10, activation="softmax")])
        model.compile(optimizer="adam", loss=losses.CategoricalCrossentropy(from_logits=True))
        """
    assert len(hits("TNL503", src)) == 1


def test_keras_backend_epsilon_and_log():
    src = """\
        from tensorflow.keras import backend as K


        def dice_loss(y_true, y_pred):
            return -K.mean(y_true * K.log(y_pred + K.epsilon()))
        """
    assert rules_of(src) == {"TNL102", "TNL103"}


# -- things that are not TensorFlow ---------------------------------------------------------


def test_local_log_function_is_not_tensorflow():
    src = """\
        import tensorflow as tf


        def log(msg):
            print("[train]", msg)


        def step(logits):
            probs = tf.nn.softmax(logits)
            log(probs)
            log(1.0 + probs)
            return probs
        """
    assert lint(src) == []


def test_numpy_calls_are_not_flagged():
    src = """\
        import numpy as np
        import tensorflow as tf


        def reference(x, p):
            s = np.exp(x) / np.sum(np.exp(x))
            return np.log(p) + np.log(s + 1e-10) + np.sqrt(np.sum(np.square(x - p))) + x / np.linalg.norm(x)
        """
    assert lint(src) == []


@pytest.mark.parametrize(
    "src",
    [
        "import numpy as np\n\n\ndef f(p):\n    return np.log(p + 1e-10)\n",
        "import math\n\n\ndef log(p):\n    return math.log(p)\n\n\ny = log(0.5)\n",
        "from jax import numpy as jnp\n\n\ndef f(p):\n    return jnp.log(jnp.exp(p) / jnp.sum(jnp.exp(p)))\n",
        # mentions tensorflow only in text
        '"""Unlike tensorflow, we use numpy."""\nimport numpy as np\n\nx = np.log(np.float32(0.0))\n',
    ],
)
def test_file_without_tf_or_keras_import_gives_nothing(src):
    result = lint_text(src)
    assert result.findings == []
    assert result.errors == []


def test_import_map_resolution_and_normalisation():
    import libcst as cst

    module = cst.parse_module(
        "import tensorflow.compat.v1 as tf\n"
        "from tensorflow import math as tfm, nn\n"
        "from tensorflow.math import log as ln\n"
        "from tensorflow.keras import backend as K\n"
        "import keras\n"
        "import numpy as np\n"
    )
    imports = ImportMap()
    for stmt in module.body:
        node = stmt.body[0]
        if isinstance(node, cst.Import):
            imports.add_import(node)
        else:
            imports.add_import_from(node)

    def op(expr: str):
        return imports.op(cst.parse_expression(expr))

    assert imports.uses_tensorflow
    assert op("tf.log") == "log"
    assert op("tf.div") == "divide"
    assert op("tf.train.AdamOptimizer") == "optimizer:adam"
    assert op("tf.placeholder") == "placeholder"
    assert op("tfm.log") == "log"
    assert op("nn.softmax") == "softmax"
    assert op("ln") == "log"
    assert op("K.log") == "log"
    assert op("K.epsilon") == "epsilon"
    assert op("keras.ops.log") == "log"
    assert op("keras.optimizers.Adam") == "optimizer:adam"
    assert op("np.log") is None
    assert op("log") is None
    assert normalise("tensorflow.compat.v1.log") == "tf.log"
    assert normalise("tensorflow.keras.layers.Dense") == "keras.layers.Dense"
    assert normalise("keras.src.ops.numpy.log") == "keras.ops.log"


# -- provenance ---------------------------------------------------------------------------


def test_module_level_assignment():
    src = """\
        import tensorflow as tf

        probs = tf.nn.softmax(tf.random.normal([4, 10]))


        def entropy_term():
            return tf.math.log(probs)
        """
    [f] = hits("TNL101", src)
    assert f.line == 7
    assert "probs" in f.message


def test_function_level_assignment_chain():
    src = """\
        import tensorflow as tf


        def loss(logits):
            z = logits * 2.0
            q = tf.sigmoid(z)
            r = q
            return tf.math.log(r)
        """
    [f] = hits("TNL101", src)
    assert f.line == 8


def test_rebinding_to_a_clipped_value_is_safe():
    src = """\
        import tensorflow as tf


        def loss(logits):
            p = tf.sigmoid(logits)
            p = tf.clip_by_value(p, 1e-7, 1 - 1e-7)
            return tf.math.log(p)
        """
    assert lint(src) == []


def test_a_use_sees_the_binding_that_precedes_it():
    src = """\
        import tensorflow as tf


        def loss(logits):
            p = tf.clip_by_value(logits, 1e-7, 1.0)
            p = tf.sigmoid(logits)
            return tf.math.log(p)
        """
    assert len(hits("TNL101", src)) == 1


def test_self_attribute_layer_set_in_init_used_in_call():
    src = """\
        import tensorflow as tf


        class Autoencoder(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.hidden = tf.keras.layers.Dense(64, activation="relu")
                self.out = tf.keras.layers.Dense(784, activation="sigmoid")

            def call(self, x):
                h = self.hidden(x)
                return -tf.reduce_mean(x * tf.math.log(self.out(h)))
        """
    [f] = hits("TNL101", src)
    assert f.line == 12
    assert "sigmoid" in f.message


def test_self_attribute_linear_layer_is_not_a_probability():
    src = """\
        import tensorflow as tf


        class Head(tf.keras.layers.Layer):
            def __init__(self):
                super().__init__()
                self.out = tf.keras.layers.Dense(1)

            def call(self, h):
                return tf.math.log(self.out(h))
        """
    assert hits("TNL101", src) == []
    assert len(hits("TNL104", src)) == 1


def test_self_attribute_probabilities_across_methods():
    src = """\
        import tensorflow as tf


        class Classifier:
            def forward(self, logits):
                self.probs = tf.nn.softmax(logits)
                return self.probs

            def loss(self, labels):
                return -tf.reduce_sum(labels * tf.math.log(self.probs), axis=-1)
        """
    found = {(f.rule, f.line) for f in lint(src)}
    assert found == {("TNL101", 10), ("TNL103", 10)}


def test_self_attribute_clipped_in_another_method_is_safe():
    src = """\
        import tensorflow as tf


        class Classifier:
            def forward(self, logits):
                self.probs = tf.clip_by_value(tf.nn.softmax(logits), 1e-7, 1.0)

            def loss(self, labels):
                return -tf.reduce_sum(labels * tf.math.log(self.probs), axis=-1)
        """
    assert lint(src) == []


def test_parameter_default_learning_rate():
    src = """\
        import tensorflow as tf


        def build(x, learning_rate=0.01):
            p = tf.sigmoid(x)
            loss = -tf.reduce_mean(tf.math.log(tf.clip_by_value(p, 1e-7, 1 - 1e-7)))
            optimizer = tf.keras.optimizers.Adam(learning_rate)
            return loss, optimizer
        """
    [f] = hits("TNL501", src)
    assert f.line == 7
    assert "0.01" in f.message


def test_parameter_default_below_threshold_is_silent():
    src = """\
        import tensorflow as tf


        def build(x, learning_rate=0.001):
            p = tf.sigmoid(x)
            loss = -tf.reduce_mean(tf.math.log(tf.clip_by_value(p, 1e-7, 1 - 1e-7)))
            return loss, tf.keras.optimizers.Adam(learning_rate)
        """
    assert hits("TNL501", src) == []


def test_module_constant_learning_rate():
    src = """\
        import tensorflow as tf

        LR = 0.01
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])
        model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=LR), loss=lambda y, p: -tf.math.log(p + 1e-7))
        """
    assert len(hits("TNL501", src)) == 1


def test_parameter_default_epsilon():
    src = """\
        import tensorflow as tf


        def safe_log(x, eps=1e-10):
            return tf.math.log(x + eps)
        """
    [f] = hits("TNL102", src)
    assert "1e-10" in f.message


def test_tuple_unpacking_of_moments():
    src = """\
        import tensorflow as tf


        def batch_norm(x):
            mean, variance = tf.nn.moments(x, axes=[0])
            return (x - mean) * tf.math.rsqrt(variance)
        """
    [f] = hits("TNL206", src)
    assert "moments" in f.message


def test_tuple_unpacking_picks_the_right_element():
    src = """\
        import tensorflow as tf


        def center(x):
            mean, variance = tf.nn.moments(x, axes=[0])
            return tf.math.rsqrt(mean)
        """
    assert hits("TNL206", src) == []


def test_float16_from_cast():
    src = """\
        import tensorflow as tf


        def normalise(x):
            x = tf.cast(x, tf.float16)
            return x / (tf.reduce_sum(tf.nn.relu(x)) + 1e-8)
        """
    assert {"TNL201", "TNL402"} <= rules_of(src)


def test_float16_from_dtype_keyword():
    src = """\
        import tensorflow as tf

        w = tf.Variable(tf.random.normal([10]), dtype=tf.float16)
        y = tf.maximum(w, 1e-8)
        """
    assert len(hits("TNL402", src)) == 1


def test_float16_from_string_dtype():
    src = """\
        import tensorflow as tf

        w = tf.Variable(tf.random.normal([10]), dtype="float16")
        y = tf.maximum(w, 1e-8)
        """
    assert len(hits("TNL402", src)) == 1


def test_float16_from_mixed_precision_policy():
    src = """\
        from tensorflow import keras

        keras.mixed_precision.set_global_policy("mixed_float16")


        def guard(x):
            return keras.ops.maximum(x, 1e-8)
        """
    assert len(hits("TNL402", src)) == 1


def test_float32_by_default():
    src = """\
        import tensorflow as tf

        w = tf.Variable(tf.random.normal([10]))
        y = tf.maximum(w, 1e-8)
        opt = tf.keras.optimizers.Adam(1e-4)
        """
    assert lint(src) == []


# -- one level of interprocedural provenance -----------------------------------------------


def test_probability_returned_by_a_module_function_reaches_the_log():
    src = """\
        import tensorflow as tf


        def discriminator(x):
            logits = tf.matmul(x, w)
            return tf.nn.sigmoid(logits), logits


        D_real, D_logit_real = discriminator(X)
        D_fake, D_logit_fake = discriminator(Z)
        d_loss = -tf.reduce_mean(tf.math.log(D_real) + tf.math.log(1.0 - D_fake))
        """
    found = lint(src, select=["TNL101"])
    assert [(f.rule, f.line) for f in found] == [("TNL101", 11), ("TNL101", 11)]
    assert all("sigmoid" in f.message and "by its name" not in f.message for f in found)


def test_probability_returned_by_a_keras_model_call_and_a_method():
    src = """\
        import tensorflow as tf


        class Disc(tf.keras.Model):
            def call(self, x):
                return tf.nn.sigmoid(self.dense(x))


        class Net:
            def probs(self, x):
                return tf.nn.softmax(x)

            def loss(self, x, y):
                return -tf.reduce_sum(y * tf.math.log(self.probs(x)))


        disc = Disc()


        def gen_loss(z):
            out = disc(z)
            return -tf.reduce_mean(tf.math.log(out))
        """
    assert {(f.rule, f.line) for f in lint(src, select=["TNL101", "TNL103"])} == {
        ("TNL101", 14),
        ("TNL103", 14),
        ("TNL101", 22),
    }


def test_a_function_returning_logits_is_not_a_probability():
    src = """\
        import tensorflow as tf


        def head(x):
            return tf.matmul(x, w)


        def loss(x):
            return tf.math.log(tf.clip_by_value(head(x), 1e-7, 1.0))
        """
    assert lint(src, select=["TNL101", "TNL103"]) == []
