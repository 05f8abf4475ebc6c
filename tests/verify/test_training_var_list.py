"""The training rung updates only the weights the program's optimizer updates
(``minimize(loss, var_list=...)``, a tape's sources): a GAN's discriminator step trains the
discriminator, a fine-tuning step its head.  The rest keep their starting values, as in the
program's run (``analysis/slicing/program_objectives.trained_weights``)."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import CLASSIFIER, by_training, on_line, verified

MINIMIZE = ".minimize(cross_entropy)"


def _logs(program: str) -> list[tuple[list | None, dict]]:
    """Each TNL101 finding on the log: the weights its rung spec trains, and its verdict."""
    found = on_line(verified(program), "tf.math.log(y)", program)
    return [((f.probe or {})["program"]["trained"], v) for f, v in found if f.rule == "TNL101"]


def test_an_optimizer_that_updates_only_the_output_bias_trains_only_it() -> None:
    """Summed over 100 rows, the whole net saturates its softmax within a few steps (the
    textbook test); the output bias alone moves every row's logits alike and cannot."""
    head = CLASSIFIER.replace(MINIMIZE, ".minimize(cross_entropy, var_list=[b2])")
    logs = _logs(head)
    assert logs and logs[0][0] == ["b2"]
    assert not by_training(logs[0][1]), logs[0][1].get("detail")


def test_a_listed_variable_list_names_the_slices_weights() -> None:
    listed = CLASSIFIER.replace(MINIMIZE, ".minimize(cross_entropy, var_list=theta)").replace(
        "hidden = tf.nn.relu", "theta = [W1, b1] + [W2, b2]\n    hidden = tf.nn.relu"
    )
    logs = _logs(listed)
    assert logs and sorted(logs[0][0] or []) == ["W1", "W2", "b1", "b2"]
    assert by_training(logs[0][1]), logs[0][1].get("detail")  # every weight: as before


def test_a_variable_list_the_slice_cannot_read_is_said_and_confirms_nothing() -> None:
    unread = CLASSIFIER.replace(MINIMIZE, ".minimize(cross_entropy, var_list=pick())")
    logs = _logs(unread)
    assert logs and logs[0][0] is None
    # training every weight is an assumption, said, and what it reaches is not the program's
    assert "the optimizer's variable list is unread" in logs[0][1]["detail"]
    assert not by_training(logs[0][1]), logs[0][1].get("detail")


def _trained(program: str) -> list:
    """What each objective of ``program`` trains, with every variable read as its name."""
    import textwrap

    import libcst as cst

    from tfnumlint.analysis.context import Context
    from tfnumlint.analysis.module import build
    from tfnumlint.analysis.slicing.program_objectives import Unread, objectives, trained_weights
    from tfnumlint.config import Settings

    ctx = Context(build(cst.parse_module(textwrap.dedent(program))), Settings())

    def tree(node, scope, order):
        return {"k": "input", "name": ctx.code(node)} if isinstance(node, cst.Name) else None

    out: list = []
    for obj in objectives(ctx, {}):
        try:
            out.append(trained_weights(ctx, obj, tree))
        except Unread:
            out.append("unread")
    return out


def test_where_the_variable_list_sits_and_what_a_models_own_list_means() -> None:
    program = """\
        import tensorflow as tf
        d_opt = tf.compat.v1.train.AdamOptimizer(1e-3)
        g_opt = tf.keras.optimizers.Adam(1e-3)
        step_d = d_opt.minimize(d_loss, None, [w1, b1])
        step_g = g_opt.minimize(g_loss, [w2])
        theta = [w1] + [w2, b2]

        def tape_step():
            with tf.GradientTape() as tape:
                loss = f()
            grads = tape.gradient(loss, enc.trainable_variables + dec.trainable_variables)
            g_opt.apply_gradients(zip(grads, theta))
            with tf.GradientTape() as t2:
                l2 = f()
            g2 = t2.gradient(l2, theta)
            d_opt.apply_gradients(zip(g2, theta))
            with tf.GradientTape() as t3:
                l3 = f()
            g3 = t3.gradient(l3, params_of(model))
            d_opt.apply_gradients(zip(g3, theta))
    """
    # TF1's third place, Keras's second; a model's own list: the weights the slice keys by that
    # model's name (``enc.layers[0].kernel``...); a list made by a call the slice cannot read:
    # unread
    assert _trained(program) == [
        ["w1", "b1"],
        ["w2"],
        ["enc.", "dec."],
        ["w1", "w2", "b2"],
        "unread",
    ]


def test_an_optimizer_that_updates_no_weight_of_the_slice_gives_it_no_run() -> None:
    """``var_list=[other]``, a variable the loss does not read: this objective's training
    never moves the flagged term, so the rung has no run of it to watch."""
    frozen = CLASSIFIER.replace(MINIMIZE, ".minimize(cross_entropy, var_list=[other])").replace(
        "hidden = tf.nn.relu", "other = tf.Variable(tf.zeros([3]))\n    hidden = tf.nn.relu"
    )
    found = on_line(verified(frozen), "tf.math.log(y)", frozen)
    logs = [(f, v) for f, v in found if f.rule == "TNL101"]
    assert logs and not (logs[0][0].probe or {}).get("program"), logs[0][0].probe
    assert not by_training(logs[0][1])


def test_a_tape_gradient_of_one_variable_trains_that_variable() -> None:
    """``tape.gradient(loss, w)`` with ``w = tf.Variable(...)``: ``w`` alone trains (it was an
    unread list, and the rung trained every weight as an assumption)."""
    program = """\
        import numpy as np
        import tensorflow as tf

        x = (np.random.rand(200, 3) * 100).astype(np.float32)
        y = x @ np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
        w = tf.Variable(tf.zeros([3, 1]))
        b = tf.Variable(tf.zeros([1]))
        opt = tf.keras.optimizers.SGD(learning_rate=0.01)

        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            opt.apply_gradients([(tape.gradient(loss, w), w)])
    """
    from test_training_rates import _programs

    spec = _programs(program)["TNL505"]
    assert spec["trained"] == ["w"]
    assert not [a for a in spec["assumed"] if "variable list" in a]


KERAS_GAN = """\
    import numpy as np
    import tensorflow as tf

    real_data = np.random.rand(1024, 16).astype("float32")
    generator = tf.keras.Sequential([
        tf.keras.layers.Dense(32, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(16, activation="sigmoid"),
    ])
    discriminator = tf.keras.Sequential([
        tf.keras.layers.Dense(32, activation="relu", input_shape=(16,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    g_opt = tf.keras.optimizers.Adam(2e-4)
    d_opt = tf.keras.optimizers.Adam(2e-4)


    @tf.function
    def train_step(real):
        z = tf.random.normal([tf.shape(real)[0], 8])
        with tf.GradientTape() as gt, tf.GradientTape() as dt:
            p_real = discriminator(real, training=True)
            p_fake = discriminator(generator(z, training=True), training=True)
            d_loss = -tf.reduce_mean(tf.math.log(p_real) + tf.math.log(1.0 - p_fake))
            g_loss = -tf.reduce_mean(tf.math.log(p_fake))
        d_grads = dt.gradient(d_loss, discriminator.trainable_variables)
        g_grads = gt.gradient(g_loss, generator.trainable_variables)
        d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
        g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))


    for i in range(0, 1024, 64):
        train_step(real_data[i:i + 64])
"""


def test_a_keras_models_trainable_variables_are_its_own_weights_and_the_others_are_held() -> None:
    """``discriminator.trainable_variables`` trains the discriminator's layers only (it trained
    every weight, the generator's too, against the discriminator's loss); the generator's
    weights, which the program's other step trains, are an assumption of the run, so a run
    that holds them still says nothing for or against a witness."""
    from test_training_conv import program_of

    spec = program_of(KERAS_GAN)
    assert spec["trained"] and all(w.startswith("discriminator.") for w in spec["trained"])
    assert len(spec["trained"]) == 4
    [held] = spec["assumed"]
    assert "`generator.layers[0]" in held and "another objective trains them" in held


def test_a_run_that_holds_another_objectives_weights_says_so() -> None:
    """The discriminator's run holds the generator at its start: its finite run says so, and
    the witness of log(1 - D(G(z))) (a logit of 17, inside what training reaches) stands."""
    found = on_line(verified(KERAS_GAN), "tf.math.log(p_real)", KERAS_GAN)
    real = [v for f, v in found if f.rule == "TNL101" and "p_real" in v.get("detail", "")[:80]]
    assert (
        real and "held at their start, though another objective trains them" in (real[0]["detail"])
    ), [v.get("detail") for _, v in found]
    fake = [v for f, v in found if "log(1 - p_fake)" in v.get("detail", "")]
    assert fake and fake[0]["status"] == "confirmed", [v.get("detail") for _, v in found]
