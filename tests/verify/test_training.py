"""Training probes: the user's optimizer replayed on the spec the rules read from the source.

End-to-end tests run the CLI once over small programs written for them (one TensorFlow
worker); unit tests call the recipes directly with hand-written specs.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import GD_LINSPACE, run_cli

tf = pytest.importorskip("tensorflow")

from tfnumlint.engine import LintOptions, lint_source  # noqa: E402
from tfnumlint.rules.recipes import recipe_for  # noqa: E402
from tfnumlint.source import Source  # noqa: E402
from tfnumlint.verify import probing, training_base, training_saturation, training_steps  # noqa: E402

PROGRAMS = {
    "gd_lr01.py": GD_LINSPACE,
    "summed_xent.py": """\
        import numpy as np
        import tensorflow.compat.v1 as tf

        tf.disable_eager_execution()
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        W = tf.Variable(tf.zeros([784, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.nn.softmax(tf.matmul(x, W) + b)
        cross_entropy = -tf.reduce_sum(y_ * tf.log(y))
        train_step = tf.train.GradientDescentOptimizer(0.01).minimize(cross_entropy)
        batch_x = np.random.rand(200, 784)
        batch_y = np.eye(10)[np.random.randint(0, 10, 200)]
        with tf.Session() as sess:
            sess.run(train_step, feed_dict={x: batch_x, y_: batch_y})
        """,
    "keras_summed_mse.py": """\
        import numpy as np
        import tensorflow as tf


        def summed_mse(y_true, y_pred):
            return tf.reduce_sum(tf.square(y_true - y_pred))


        x = np.random.rand(1000, 20) * 10
        model = tf.keras.Sequential([tf.keras.Input(shape=(20,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.001), loss=summed_mse)
        model.fit(x, x.sum(axis=1), batch_size=128, epochs=3)
        """,
    "tape_summed_fused.py": """\
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
        """,
    "rbm.py": """\
        import numpy as np
        import tensorflow as tf

        W = tf.Variable(tf.random.normal([784, 256], stddev=0.01))
        learning_rate = 0.1


        def cd1(v0):
            h0 = tf.sigmoid(tf.matmul(v0, W))
            v1 = tf.sigmoid(tf.matmul(h0, tf.transpose(W)))
            h1 = tf.sigmoid(tf.matmul(v1, W))
            W.assign_add(learning_rate * (tf.matmul(tf.transpose(v0), h0) - tf.matmul(tf.transpose(v1), h1)))


        data = np.random.rand(1000, 784).astype("float32")
        dataset = tf.data.Dataset.from_tensor_slices(data).batch(100)
        """,
    "ae_tf1.py": """\
        import numpy as np
        import tensorflow.compat.v1 as tf

        tf.disable_eager_execution()
        n_items = 512
        P = tf.placeholder(tf.float32, shape=[None, n_items])
        W1 = tf.Variable(tf.random_normal([n_items, 64], stddev=0.1))
        W2 = tf.Variable(tf.random_normal([64, n_items], stddev=0.1))
        hidden = tf.nn.relu(tf.matmul(P, W1))
        P_pred = tf.sigmoid(tf.matmul(hidden, W2))
        loss = -tf.reduce_sum(P * tf.log(P_pred + 1e-10) + (1 - P) * tf.log(1 - P_pred + 1e-10), axis=1)
        train_op = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_mean(loss))
        """,
    "ae_keras3.py": """\
        import keras
        from keras import layers, ops

        inputs = keras.Input(shape=(512,))
        hidden = layers.Dense(64, activation="relu")(inputs)
        outputs = layers.Dense(512, activation="sigmoid")(hidden)
        model = keras.Model(inputs, outputs)


        def weighted_bce(p, p_pred):
            return -ops.sum(p * ops.log(p_pred + 1e-10) + 0.55 * (1 - p) * ops.log(1 - p_pred + 1e-10), axis=1)


        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss=weighted_bce)
        """,
    "ae_from_logits.py": """\
        import keras
        from keras import layers

        inputs = keras.Input(shape=(512,))
        hidden = layers.Dense(64, activation="relu")(inputs)
        logits = layers.Dense(512)(hidden)
        model = keras.Model(inputs, logits)
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=0.01),
            loss=keras.losses.BinaryCrossentropy(from_logits=True),
        )
        """,
    "ae_builtin_bce.py": """\
        import keras
        from keras import layers

        inputs = keras.Input(shape=(512,))
        hidden = layers.Dense(64, activation="relu")(inputs)
        outputs = layers.Dense(512, activation="sigmoid")(hidden)
        model = keras.Model(inputs, outputs)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="binary_crossentropy")
        """,
    "deep_adam.py": """\
        import tensorflow as tf

        model = tf.keras.Sequential(
            [tf.keras.Input(shape=(16,))]
            + [tf.keras.layers.Dense(64, activation="relu") for _ in range(10)]
            + [tf.keras.layers.Dense(1)]
        )
        model.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
        """,
    "deep_adam_listed.py": """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(16,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
        """,
    "adam_mse.py": """\
        import numpy as np
        import tensorflow as tf

        x = np.random.rand(500, 8).astype("float32")
        y = x.sum(axis=1, keepdims=True)
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(8,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        model.fit(x, y, epochs=5, batch_size=32)
        """,
}


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """Findings shown by a default verified run (refuted ones hidden), by file."""
    root = tmp_path_factory.mktemp("training_programs")
    for name, code in PROGRAMS.items():
        text = code.format(lr="0.1") if name == "gd_lr01.py" else code
        (root / name).write_text(textwrap.dedent(text))
    (root / "gd_lr0001.py").write_text(textwrap.dedent(PROGRAMS["gd_lr01.py"].format(lr="0.001")))
    # the default per-probe budget: the autoencoder simulations (about 900 steps of a 512-wide
    # model) fit in it on a loaded machine (benchmarks/training_probes.py measures their cost)
    proc = run_cli("--format", "json", "--no-cache", "--exit-zero", ".", cwd=root, timeout=1500)
    assert proc.stdout, proc.stderr
    by_file: dict[str, list[dict]] = {}
    for f in json.loads(proc.stdout)["findings"]:
        by_file.setdefault(f["path"], []).append(f)
    return by_file


def only(shown, path: str, rule: str) -> list[dict]:
    return [f for f in shown.get(path, []) if f["rule"] == rule]


def test_gd_on_linspace_features_at_lr_01_is_confirmed(shown):
    """The program's own training (its w * x + b, its data, its SGD) confirms it, at the step
    the arithmetic gives: |1 - 0.1 * 43.5| = 3.35 per step on the error, 11.2 on the squared
    error, from 199.9 to past 3.4e38 in about 34 steps."""
    [f] = only(shown, "gd_lr01.py", "TNL505")
    v = f["verification"]
    assert (v["status"], v["symptom"], f["rung"]) == ("confirmed", "diverges", "training-program")
    assert 30 <= v["observed"]["step"] <= 36, v["detail"]
    assert "at lr / 10 it stays finite" in v["detail"]


def test_gd_on_linspace_features_at_lr_0001_shows_nothing(shown):
    assert shown.get("gd_lr0001.py", []) == []


def test_summed_cross_entropy_with_sgd_is_confirmed_with_the_effective_step(shown):
    [f] = only(shown, "summed_xent.py", "TNL506")
    assert "0.01 x 200 = 2 times the mean gradient" in f["message"]
    v = f["verification"]
    assert (v["status"], v["symptom"]) == ("confirmed", "diverges")
    # the program's own objective, trained on its own batch of 200: it breaks at the program's
    # rate and not at the batch mean's (lr / 200)
    assert isinstance(v["observed"]["step"], int)
    assert "at lr / 200 (the step of the batch mean) it stays finite" in v["detail"]


def test_keras_loss_summed_over_the_batch_is_confirmed(shown):
    [f] = only(shown, "keras_summed_mse.py", "TNL506")
    v = f["verification"]
    assert (v["status"], v["symptom"]) == ("confirmed", "diverges")
    assert "0.001 x 128 = 0.128 times the mean gradient" in v["detail"]


def test_fused_cross_entropy_summed_over_the_batch_that_still_trains_is_refuted(shown):
    # a fused softmax cross-entropy has a bounded gradient: 12.8 x the mean step still trains
    # this batch, so the verifier hides the finding
    assert only(shown, "tape_summed_fused.py", "TNL506") == []
    text = textwrap.dedent(PROGRAMS["tape_summed_fused.py"])
    options = LintOptions(codes=frozenset({"TNL506"}), slice_probes=True)
    [f] = lint_source(Source("t.py", text, text.encode()), options).findings
    out = probing.verify(f.probe, 1e6)
    assert out["status"] == "refuted"
    assert "with reduce_mean it falls" in out["detail"]


def test_hand_written_assign_add_summed_over_the_batch(shown):
    [f] = only(shown, "rbm.py", "TNL506")
    assert "0.1 x 100 = 10 times the per-example average" in f["message"]
    v = f["verification"]
    assert v["status"] == "inconclusive"  # a hand-written update is not simulated
    assert "not simulated" in v["detail"]


@pytest.mark.parametrize("path", ["ae_tf1.py", "ae_keras3.py"])
def test_autoencoder_with_log_p_eps_and_adam_001_is_confirmed_with_step_counts(shown, path):
    [f] = only(shown, path, "TNL501")
    v = f["verification"]
    # The sliced 512 -> relu 64 -> sigmoid 512 autoencoder on sparse binary targets: under Adam
    # at lr 0.01 a logit passes 16.6, where sigmoid is 1 in float32 and the compiled
    # log(1 - p + 1e-10) is log(0); at lr 0.001 the same takes several times as many steps.
    assert (v["status"], v["symptom"]) == ("confirmed", "nan-value")
    step, control = v["observed"]["step"], v["observed"]["control_step"]
    assert step <= training_base.HORIZON
    assert control is None or control >= training_base.CONTROL_FACTOR * step
    assert v["observed"]["logit"] > 16.6 and v["observed"]["control_lr"] == 0.001
    assert "512 units, 64 inputs" in v["detail"] and "relu hidden layer (512 inputs" in v["detail"]
    assert f"after {step} adam steps at lr 0.01 a logit reaches" in v["detail"]
    assert "1 + 1e-10 == 1 in float32" in v["detail"]
    assert f"(lr 0.001: {control} steps)" in v["detail"] or "(lr 0.001: not within" in v["detail"]


@pytest.mark.parametrize("path", ["ae_from_logits.py", "ae_builtin_bce.py", "adam_mse.py"])
def test_fused_or_builtin_losses_and_adam_on_mse_show_nothing(shown, path):
    assert [f["rule"] for f in shown.get(path, []) if f["rule"].startswith("TNL5")] == []


def test_deep_stack_whose_gradient_norm_explodes_under_adam_01_shows_tnl502(shown):
    [f] = only(shown, "deep_adam_listed.py", "TNL502")
    v = f["verification"]
    assert (v["status"], v["symptom"]) == ("confirmed", "exploding-gradient")
    assert v["observed"]["growth"] >= training_steps.EXPLODES
    assert v["observed"]["control_growth"] < training_steps.CALM
    assert "10 Dense(64, relu) layers" in v["detail"]
    assert "with adam at lr 0.1 the global gradient norm goes from" in v["detail"]
    assert "at lr 0.01 its largest is" in v["detail"]


def test_tnl502_without_a_confirmed_simulation_is_hidden_by_default(shown):
    # a list built by a comprehension is no literal stack: nothing is simulated, nothing shown;
    # Adam(0.01) on an MSE regression trains calmly: nothing shown either
    assert only(shown, "deep_adam.py", "TNL502") == []
    assert only(shown, "adam_mse.py", "TNL502") == []


def test_tnl502_selected_by_its_code_shows_the_unconfirmed_simulation(tmp_path):
    (tmp_path / "adam_mse.py").write_text(textwrap.dedent(PROGRAMS["adam_mse.py"]))
    proc = run_cli("--format", "json", "--no-cache", "--exit-zero", "--select", "TNL502", ".",
                   cwd=tmp_path, timeout=600)  # fmt: skip
    [f] = json.loads(proc.stdout)["findings"]
    v = f["verification"]
    assert v["status"] == "inconclusive"
    assert "Dense(32, relu)" in v["detail"] and "cannot tell" in v["detail"]
    assert v["observed"]["growth"] < training_steps.EXPLODES


def test_tnl502_with_no_verification_is_hidden_unless_selected_by_code(tmp_path):
    (tmp_path / "m.py").write_text(
        "import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(1e-2)\n"
    )
    default = run_cli("--no-verify", "--format", "json", ".", cwd=tmp_path)
    assert json.loads(default.stdout)["findings"] == [] and default.returncode == 0
    named = run_cli("--no-verify", "--format", "json", "--select", "TNL502", ".", cwd=tmp_path)
    assert [f["rule"] for f in json.loads(named.stdout)["findings"]] == ["TNL502"]


# -- recipes called directly -----------------------------------------------------------------


def spec(recipe: str, **kw) -> dict:
    base = {"kind": "train", "recipe": recipe, "rule": "TNL5xx", "dtype": "float32",
            "optimizer": "sgd", "tf1": False, "learning_rate": 0.1, "momentum": 0.0,
            "clipnorm": None}  # fmt: skip
    return {**base, **kw}


LINSPACE = {"dist": "linspace", "params": [-8.0, 8.0, 100.0], "rows": 100, "cols": 1,
            "text": "np.linspace(-8, 8, 100)"}  # fmt: skip


def test_divergence_is_refuted_below_the_stability_limit():
    out = probing.verify(spec("divergence", learning_rate=0.04, features=LINSPACE), 1e6)
    assert out["status"] == "refuted"
    assert "falls" in out["detail"]


def test_divergence_with_momentum_and_tf1_optimizer():
    # 2 (1 + 0.9) / 43.5 = 0.087: lr 0.1 with momentum 0.9 is still past the limit
    probe = spec("divergence", learning_rate=0.1, momentum=0.9, tf1=True, features=LINSPACE)
    out = probing.verify(probe, 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "diverges")
    assert "momentum 0.9" in out["detail"]


def test_divergence_with_unknown_scale_states_the_condition():
    out = probing.verify(spec("divergence", learning_rate=0.5, features=None, rms_limit=1.414,
                              data="x_data"), 1e6)  # fmt: skip
    assert out["status"] == "inconclusive"
    assert "RMS exceeds 1.41" in out["detail"] and "`x_data`" in out["detail"]


def test_summed_loss_is_refuted_when_the_sum_trains_too():
    uniform = {"dist": "uniform", "params": [0.0, 1.0], "rows": 4, "cols": 8, "text": "u"}
    probe = spec("summed", learning_rate=0.001, batch=4, loss="softmax_xent",
                 features=uniform, feature_count=8)  # fmt: skip
    assert probing.verify(probe, 1e6)["status"] == "refuted"


def test_saturation_confirms_when_the_logits_reach_the_dead_zone():
    # Adam at lr 1 on a 64-input sigmoid layer: the logits cross log(p + 1e-10)'s floor
    probe = spec("saturation", optimizer="adam", learning_rate=1.0, output="sigmoid",
                 units=16, fan_in=64, loss={"form": "log_eps", "eps": 1e-10})  # fmt: skip
    out = probing.verify(probe, 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "dead-gradient")
    assert out["observed"]["step"] <= training_base.HORIZON
    assert abs(out["observed"]["logit"]) > 23 and out["observed"]["loss"] > 1.0
    assert "lr 0.1:" in out["detail"]


AUTOENCODER = {"units": 512, "fan_in": 64, "bias": True,
               "below": {"fan_in": 512, "activation": "relu"}}  # fmt: skip


def test_saturation_at_a_tenth_of_the_learning_rate_is_not_confirmed():
    # the seed autoencoder at lr 0.001: no logit reaches the NaN zone within the horizon
    probe = spec("saturation", optimizer="adam", learning_rate=0.001, output="sigmoid",
                 loss={"form": "log_eps", "eps": 1e-10}, **AUTOENCODER)  # fmt: skip
    out = probing.verify(probe, 1e6)
    assert out["status"] == "inconclusive"
    assert out["observed"]["steps"] == training_base.HORIZON
    assert out["observed"]["largest_logit"] < 16.6
    assert "cannot tell this learning rate from a safe one" in out["detail"]


def test_compiled_log_one_minus_p_loses_its_epsilon_but_a_clip_keeps_it():
    # TensorFlow's constant folding computes 1 - p + 1e-10 as (1 + 1e-10) - p = 1 - p in
    # float32: at p == 1 the compiled loss is inf; a clip to [1e-7, 1 - 1e-7] stays finite
    eps = training_saturation.model_501({"loss": {"form": "log_eps", "eps": 1e-10}, **AUTOENCODER})
    clip = training_saturation.model_501({"loss": {"form": "clip", "eps": 1e-7}, **AUTOENCODER})
    assert training_saturation.compiled_floor(eps, tf.float32) == float("inf")
    assert abs(training_saturation.compiled_floor(clip, tf.float32) - 15.94) < 0.01


def test_the_simulated_model_follows_the_spec():
    m = training_saturation.model_501({"output": "sigmoid", "loss": {"form": "log_eps", "eps": 1e-10},
                            **AUTOENCODER})  # fmt: skip
    assert (m.units, m.fan_in, m.below, m.bias, m.autoencoder) == (
        512,
        64,
        (512, "relu"),
        True,
        True,
    )
    single = training_saturation.model_501(
        {"output": "softmax", "units": 10, "fan_in": None, "below": None}
    )
    assert (single.fan_in, single.below, single.autoencoder) == (
        training_base.DEFAULT_FAN_IN,
        None,
        False,
    )


def test_rebuilt_features_match_the_literal_constructor():
    x = training_base.rebuild_features(LINSPACE, None, None)
    assert x.shape == (100, 1)
    assert x[0, 0] == -8.0 and x[-1, 0] == 8.0


# -- the optimizer-epsilon and clipping probes ---------------------------------------------


def train_probe(rule, **kw):
    base = {"kind": "train", "rule": rule, "dtype": "float32", "path": "m.py", "line": 1,
            "optimizer": "adam", "tf1": False, "learning_rate": 1e-3, "epsilon": None,
            "clipnorm": None, "output": "sigmoid", "loss_eps": None,
            "control": recipe_for(rule).control}  # fmt: skip
    return {**base, **kw}


def test_float16_adam_with_tiny_epsilon_goes_nan():
    out = probing.verify(train_probe("TNL403", dtype="float16", epsilon=1e-8), 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "nan-value")
    assert "float16" in out["detail"] and "epsilon 1e-4 they stay finite" in out["detail"]


def test_tf1_adam_default_epsilon_in_float16_goes_nan():
    out = probing.verify(train_probe("TNL403", dtype="float16", tf1=True), 1e6)
    assert out["status"] == "confirmed"


def test_float16_adam_with_safe_epsilon_is_refuted():
    out = probing.verify(train_probe("TNL403", dtype="float16", epsilon=1e-4), 1e6)
    assert out["status"] == "refuted"


def test_clipping_probe_without_a_stack_simulates_nothing():
    probe = spec("clipping", optimizer="adam", learning_rate=0.01, output="sigmoid",
                 loss={"form": "log_eps", "eps": 1e-10}, stack=None)  # fmt: skip
    out = probing.verify(probe, 1e6)
    assert out["status"] == "inconclusive"
    assert "not simulated" in out["detail"] and "cannot tell" in out["detail"]


def test_clipping_probe_confirms_only_when_lr_over_10_stays_calm():
    # four relu layers: Adam at lr 0.1 grows the gradient norm about 1,000-fold at step 2;
    # at lr 0.01 it stays calm.  At lr 1 the lr 0.1 control explodes too: no verdict.
    stack = {"inputs": 16, "layers": [[64, "relu"]] * 4 + [[1, "linear"]]}
    hot = probing.verify(spec("clipping", optimizer="adam", learning_rate=1.0, stack=stack), 1e6)
    assert hot["status"] == "inconclusive"
    assert hot["observed"]["control_growth"] >= training_steps.CALM


def test_compare_confirms_only_when_the_control_is_healthy():
    cfg = training_base.Config("adam", False, 0.01, None, None)
    safe = training_base.Config("adam", False, 0.001, None, None)
    dead = training_base.Outcome(dead=3, dead_loss=23.03, dead_logit=20.0)
    fine = training_base.Outcome()
    probe = train_probe("TNL502")
    assert training_base.compare(probe, cfg, safe, dead, fine, "sigmoid", "float32")["status"] == (
        "confirmed"
    )
    assert training_base.compare(probe, cfg, safe, dead, dead, "sigmoid", "float32")["status"] == (
        "inconclusive"
    )
    assert training_base.compare(probe, cfg, safe, fine, fine, "sigmoid", "float32")["status"] == (
        "inconclusive"
    )
