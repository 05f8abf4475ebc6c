"""TNL401-TNL404: epsilons the dtype cannot hold, optimizer epsilons, the float16 range."""

from __future__ import annotations

import pytest
from conftest import func, hits

F16 = "x = tf.cast(x, tf.float16)\n"


# -- TNL401 epsilon-absorbed ------------------------------------------------------------


def test_tnl401_eps_added_to_one_first():
    src = """\
        import tensorflow as tf


        def loss(y, p):
            return -tf.reduce_sum((1 - y) * tf.math.log(1e-10 + 1 - p))
        """
    [f] = hits("TNL401", src)
    assert f.line == 5
    assert f.source_line[f.column - 1 : f.end_column - 1] == "1e-10 + 1"
    assert "1e-10" in f.message
    assert "float32" in f.message
    assert "1.19e-07" in f.message  # the float32 spacing at 1


@pytest.mark.parametrize("expr", ["1.0 + 1e-10 - p", "1 + 1e-9"])
def test_tnl401_float32(expr):
    assert len(hits("TNL401", func(f"return tf.math.log({expr})", "p"))) == 1


def test_tnl401_float16_one_plus_1e4():
    [f] = hits("TNL401", func(F16 + "return x * (1 + 1e-4)"))
    assert "float16" in f.message
    assert "0.0001" in f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(1 - p + 1e-10)",  # eps added to something that can reach 0
        "tf.math.log(p + 1e-7)",
        "x * (1 + 1e-4)",  # representable in float32
        "x + 1e-8",
    ],
)
def test_tnl401_silent(expr):
    assert hits("TNL401", func(f"return {expr}", "x, p")) == []


# -- TNL402 epsilon-underflow -----------------------------------------------------------


@pytest.mark.parametrize(
    "expr, eps",
    [
        ("x + 1e-8", "1e-08"),
        ("tf.maximum(x, 1e-8)", "1e-08"),
        ("tf.clip_by_value(x, 1e-9, 1.0)", "1e-09"),
        ("tf.add(x, 1e-8)", "1e-08"),
        ("x / (tf.reduce_sum(tf.nn.relu(x)) + 1e-9)", "1e-09"),
    ],
)
def test_tnl402_cast_to_float16(expr, eps):
    [f] = hits("TNL402", func(F16 + f"return {expr}"))
    assert eps in f.message
    assert "0 in float16" in f.message
    assert f.severity == "error"


def test_tnl402_float16_variable_context():
    src = """\
        import tensorflow as tf

        w = tf.Variable(tf.zeros([10]), dtype=tf.float16)


        def normalised():
            return w / (tf.reduce_sum(tf.abs(w)) + 1e-8)
        """
    [f] = hits("TNL402", src)
    assert f.line == 7


def test_tnl402_mixed_precision_policy():
    src = """\
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")


        def safe_log(x):
            return tf.math.log(tf.maximum(x, 1e-8))
        """
    [f] = hits("TNL402", src)
    assert (f.line, f.column) == (7, 24)


def test_tnl402_placeholder_dtype():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float16, [None, 10])
        y = tf.sqrt(x + 1e-9)
        """
    assert len(hits("TNL402", src)) == 1


@pytest.mark.parametrize(
    "src",
    [
        func(F16 + "return tf.maximum(x, 1e-4)"),
        func(F16 + "return x + 1e-3"),
        func("return tf.maximum(x, 1e-8) + (x + 1e-9)"),  # float32
        func("x = tf.cast(x, tf.bfloat16)\nreturn x + 1e-8"),  # bfloat16 has float32's range
    ],
)
def test_tnl402_silent(src):
    assert hits("TNL402", src) == []


# -- TNL403 optimizer-epsilon-too-small --------------------------------------------------

F16_VAR = "w = tf.Variable(tf.zeros([4, 4], dtype=tf.float16))\n"


def test_tnl403_keras_default_in_float16():
    src = """\
        import tensorflow as tf

        w = tf.Variable(tf.zeros([4, 4], dtype=tf.float16))
        opt = tf.keras.optimizers.Adam(1e-4)
        """
    [f] = hits("TNL403", src)
    assert (f.line, f.column, f.end_column) == (4, 7, 37)
    assert "1e-07" in f.message
    assert "default" in f.message
    assert "epsilon=0.0001" in f.message


@pytest.mark.parametrize(
    "ctor, eps",
    [
        ("tf.compat.v1.train.AdamOptimizer(1e-4)", "1e-08"),
        ("tf.compat.v1.train.RMSPropOptimizer(1e-4)", "1e-10"),
        ("tf.keras.optimizers.Adam(1e-4, epsilon=1e-6)", "1e-06"),
        ("tf.keras.optimizers.RMSprop(1e-4)", "1e-07"),
        ("tf.keras.optimizers.Adagrad(0.01)", "1e-07"),
        ("tf.keras.optimizers.Nadam(1e-4)", "1e-07"),
        ("tf.keras.optimizers.AdamW(1e-4)", "1e-07"),
    ],
)
def test_tnl403_float16_optimizers(ctor, eps):
    src = f"import tensorflow as tf\n\n{F16_VAR}opt = {ctor}\n"
    [f] = hits("TNL403", src)
    assert eps in f.message


def test_tnl403_tf1_default_is_zero_in_float16():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float16, [None, 784])
        train_op = tf.train.AdamOptimizer(1e-4)
        """
    [f] = hits("TNL403", src)
    assert "1e-08 is 0 in float16" in f.message


@pytest.mark.parametrize("eps", ["0", "0.0"])
def test_tnl403_zero_epsilon_anywhere(eps):
    src = f"import tensorflow as tf\n\nopt = tf.keras.optimizers.RMSprop(1e-3, epsilon={eps})\n"
    [f] = hits("TNL403", src)
    assert "epsilon is 0" in f.message


@pytest.mark.parametrize(
    "src",
    [
        f"import tensorflow as tf\n\n{F16_VAR}opt = tf.keras.optimizers.Adam(1e-4, epsilon=1e-4)\n",
        f"import tensorflow as tf\n\n{F16_VAR}opt = tf.keras.optimizers.Adam(1e-4, epsilon=1e-3)\n",
        f"import tensorflow as tf\n\n{F16_VAR}opt = tf.keras.optimizers.SGD(0.01)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-3)\n",
        "import tensorflow.compat.v1 as tf\n\nopt = tf.train.AdamOptimizer(1e-3)\n",
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-3, epsilon=1e-8)\n",
    ],
)
def test_tnl403_silent(src):
    assert hits("TNL403", src) == []


# -- TNL404 float16-overflow ------------------------------------------------------------


def test_tnl404_mask_constant_in_float16():
    src = """\
        import tensorflow as tf


        def masked_scores(scores, mask):
            scores = tf.cast(scores, tf.float16)
            return scores + (1.0 - mask) * -1e9
        """
    [f] = hits("TNL404", src)
    assert f.line == 6
    assert "-1e+09" in f.message
    assert "65504" in f.message
    assert "-inf" in f.message


@pytest.mark.parametrize("op, bound", [("tf.exp", "11.09"), ("tf.square", "255.9")])
def test_tnl404_exp_and_square_of_unbounded_in_float16(op, bound):
    [f] = hits("TNL404", func(F16 + f"return {op}(tf.matmul(x, w))", "x, w"))
    assert bound in f.message


def test_tnl404_power_of_two_is_a_square():
    [f] = hits("TNL404", func(F16 + "return tf.matmul(x, w) ** 2", "x, w"))
    assert "square" in f.message and "255.9" in f.message
    assert hits("TNL404", func(F16 + "return tf.matmul(x, w) ** 0.5", "x, w")) == []


def test_tnl404_mixed_precision_custom_loop_without_loss_scaling():
    src = """\
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.Adam(1e-3)


        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.abs(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    [f] = hits("TNL404", src)
    assert (f.line, f.column) == (3, 1)
    assert "LossScaleOptimizer" in f.message


def test_tnl404_silent_with_loss_scale_optimizer():
    src = """\
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam(1e-3))


        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.abs(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    assert hits("TNL404", src) == []


def test_tnl404_silent_with_fit_instead_of_custom_loop():
    src = """\
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mae")
        """
    assert hits("TNL404", src) == []


@pytest.mark.parametrize(
    "body",
    [
        "return x + (1.0 - m) * -1e9",  # float32
        "return tf.exp(tf.matmul(x, m)) + tf.square(tf.matmul(x, m))",  # float32
        F16 + "return x + (1.0 - m) * -1e4",  # within the float16 range
        F16 + "return tf.exp(tf.clip_by_value(x, -10.0, 10.0))",
        F16 + "return tf.clip_by_value(x, -10.0, 10.0) ** 2",
    ],
)
def test_tnl404_silent(body):
    assert hits("TNL404", func(body, "x, m")) == []
