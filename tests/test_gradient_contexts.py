"""Issue #11 item 4, round 5: more places where no gradient flows.

Each context gets a snippet written for it, in the shape of a reviewed real-world finding: the
gradient-only symptom there is not confirmed, the same code in a training function keeps its
gradient, and a value symptom (a NaN or inf forward) still confirms in the context.  Contexts
the code itself decides (an integer cast, a comparison) refute; a function mapped over a
dataset only makes the finding inconclusive.  Names and paths (evaluation folders, parser-like
or loss-like names) never decide.  A function with no caller in the project is conditional
(``roots.py``), so a fixture that checks another mechanism gets a caller that differentiates it
(``conftest.differentiated``).  Static side only: no TensorFlow.
"""

from __future__ import annotations

import pytest
from conftest import differentiated
from test_reachability import one_probe, probed

from tfnumlint.verify import gradient_gate

SQRT_OF_VARIANCES = """\
    import tensorflow as tf


    def {name}(a, b):
        _, var = tf.nn.moments(a, axes=[0])
        _, var_w = tf.nn.moments(b, axes=[0])
        return tf.reduce_sum(var + var_w - 2.0 * tf.sqrt(var * var_w))
    """


def sqrt_probe(name: str = "distance", path: str = "model.py", trained: bool = False) -> dict:
    """The sqrt's probe; ``trained``: a training step differentiates the function."""
    src = SQRT_OF_VARIANCES.format(name=name)
    return one_probe(differentiated(src, name) if trained else src, "TNL202", path=path)


def confirmed(symptom: str) -> dict:
    return {"status": "confirmed", "symptom": symptom, "detail": "at var = 0", "inputs": {}}


def judged(probe: dict, symptom: str) -> dict:
    return gradient_gate.apply(probe, confirmed(symptom))


# ---------------------------------------------------------------- evaluation code


def test_a_value_symptom_in_evaluation_code_still_confirms():
    probe = sqrt_probe(path="gan/eval/fid.py")
    assert judged(probe, "nan-value")["status"] == "confirmed"
    assert judged(probe, "inf-value")["status"] == "confirmed"


def test_a_loss_in_a_metrics_module_keeps_its_gradient():
    """`dice_loss` in `metrics.py`, differentiated by a training step: the path does not
    decide."""
    probe = sqrt_probe(name="dice_loss", path="seg/metrics.py", trained=True)
    assert "no_gradient" not in probe


def test_the_evaluation_word_must_be_a_word_of_the_path():
    """`metric_learning.py` (a triplet loss) and `medieval/` hold no evaluation word."""
    assert "no_gradient" not in sqrt_probe(path="losses/metric_learning.py", trained=True)
    assert "no_gradient" not in sqrt_probe(path="medieval/model.py", trained=True)


def test_only_the_last_folders_of_the_path_count():
    """A checkout under `~/eval/` does not make every file evaluation code."""
    probe = sqrt_probe(path="/home/me/eval/proj/src/pkg/model.py", trained=True)
    assert "no_gradient" not in probe


TRAIN_STEP = """\
    import tensorflow as tf


    def train_step(a, b):
        with tf.GradientTape() as tape:
            _, var = tf.nn.moments(a, axes=[0])
            _, var_w = tf.nn.moments(b, axes=[0])
            loss = tf.reduce_sum(var + var_w - 2.0 * tf.sqrt(var * var_w))
        return tape.gradient(loss, [a, b])
    """


def test_a_train_step_in_an_evaluation_folder_keeps_its_gradient():
    """A step that differentiates the sqrt itself, in `evaluation/`: the folder does not
    decide."""
    assert "no_gradient" not in one_probe(TRAIN_STEP, "TNL202", path="pkg/evaluation/loop.py")


# ---------------------------------------------------------------- input pipelines


def test_a_sparse_function_is_not_a_parser():
    """Words, not substrings: `sparse_distance` holds no `parse`."""
    assert "no_gradient" not in sqrt_probe(name="sparse_distance", trained=True)


DATASET_MAP = """\
    import tensorflow as tf


    def _scale(image):
        mean, var = tf.nn.moments(image, axes=[0, 1])
        return (image - mean) / tf.sqrt(var)


    def _decode(record):
        return _scale(tf.cast(tf.io.decode_png(record), tf.float32))


    def build(files):
        return tf.data.TFRecordDataset(files).map(_decode)
    """


def test_a_dataset_map_function_and_its_private_helpers_carry_no_gradient():
    probe = one_probe(DATASET_MAP, "TNL202")
    assert "`_scale` is only called from a dataset map function" in probe["no_gradient"]
    assert judged(probe, "inf-gradient")["status"] == "inconclusive"


def test_a_helper_also_called_by_a_model_keeps_its_gradient():
    """`_scale` is also called by `model_fn`, which a training step differentiates: it is not
    a pipeline-only helper.  With `model_fn` left without a caller, `_scale` is still called
    from `_decode`, a callback whose caller (tf.data) is not in view: no condition either."""
    src = DATASET_MAP + "\n\n    def model_fn(x):\n        return _scale(x)\n"
    assert "no_gradient" not in one_probe(differentiated(src, "model_fn"), "TNL202")
    assert "no_gradient" not in one_probe(src, "TNL202")


def test_tf_map_fn_is_not_an_input_pipeline():
    src = """\
        import tensorflow as tf


        def _norm(v):
            _, var = tf.nn.moments(v, axes=[0])
            return tf.sqrt(var)


        def layer(x):
            return tf.map_fn(_norm, x)
        """
    assert "no_gradient" not in one_probe(src, "TNL202")


# ---------------------------------------------------------------- integer and boolean results

RANDOM_ERASING = """\
    import tensorflow as tf


    def erase(image, patch):
        _, var = tf.nn.moments(patch, axes=[0])
        half = tf.cast(tf.math.round(tf.math.sqrt(var) / 2), dtype=tf.int32)
        return image[half:]
    """


def test_a_value_rounded_to_an_integer_carries_no_gradient():
    probe = one_probe(RANDOM_ERASING, "TNL202")
    assert "integer or a boolean" in probe["no_gradient"]
    assert "no_gradient_likely" not in probe  # the code decides: refuted
    assert judged(probe, "nan-gradient")["status"] == "refuted"
    assert judged(probe, "nan-value")["status"] == "confirmed"


def test_an_integer_cast_alone_carries_no_gradient():
    src = RANDOM_ERASING.replace("tf.math.round(tf.math.sqrt(var) / 2)", "tf.sqrt(var)")
    assert "integer or a boolean" in one_probe(src, "TNL202")["no_gradient"]


def test_a_float_cast_keeps_the_gradient():
    src = RANDOM_ERASING.replace(
        "tf.cast(tf.math.round(tf.math.sqrt(var) / 2), dtype=tf.int32)",
        "tf.cast(tf.math.sqrt(var), dtype=tf.float16)",
    ).replace("image[half:]", "image * half")
    assert "no_gradient" not in one_probe(differentiated(src, "erase"), "TNL202")


def test_a_value_only_compared_carries_no_gradient():
    src = """\
        import tensorflow as tf


        def keep(x, v):
            _, var = tf.nn.moments(v, axes=[0])
            return tf.where(tf.sqrt(var) > 0.5, x, 0.0)
        """
    assert "comparison" in one_probe(src, "TNL202")["no_gradient"]


# ---------------------------------------------------------------- returns and rewards

NORMALIZE = """\
    import tensorflow as tf


    def _standard_normalize(values, axes=(0,)):
        mean, var = tf.nn.moments(values, axes=axes, keepdims=True)
        return (values - mean) / (tf.sqrt(var) + 1e-8)


    def loss(self, returns, value_preds):
        advantages = returns - value_preds
        advantages = _standard_normalize(advantages, axes=(0, 1))
        return -tf.reduce_mean(advantages)
    """


def test_the_same_function_also_called_with_logits_keeps_its_gradient():
    src = NORMALIZE + "\n\n    def head(logits):\n        return _standard_normalize(logits)\n"
    assert "no_gradient" not in one_probe(differentiated(src, "head"), "TNL202")


# ---------------------------------------------------------------- values that are only logged

LOGGED_ENTROPY = """\
    import tensorflow as tf


    def build_losses(labels, outputs):
        all_losses = {}
        entropy = -tf.reduce_sum(outputs * tf.math.log(outputs + 1e-8), -1)
        total_loss = tf.keras.losses.binary_crossentropy(labels, outputs)
        all_losses.update({"class_loss": total_loss, "entropy": entropy})
        return all_losses
    """


def test_a_value_added_to_the_loss_keeps_its_gradient():
    src = LOGGED_ENTROPY.replace(
        "binary_crossentropy(labels, outputs)", "binary_crossentropy(labels, outputs) + entropy"
    )
    assert "no_gradient" not in one_probe(differentiated(src, "build_losses"), "TNL102")


def test_a_dict_entry_named_as_a_loss_keeps_its_gradient():
    src = LOGGED_ENTROPY.replace('"entropy": entropy', '"entropy_loss": entropy')
    assert "no_gradient" not in one_probe(differentiated(src, "build_losses"), "TNL102")


# ---------------------------------------------------------------- random sampling helpers


# ---------------------------------------------------------------- one decision


# ---------------------------------------------------------------- values nothing reads

OVERWRITTEN = """\
    import tensorflow as tf


    def mixture(weights):
        unnormalized = tf.exp(weights)
        probabilities = unnormalized / tf.norm(unnormalized, 1)
        normalizer = tf.reduce_sum(unnormalized)
        probabilities = unnormalized / normalizer
        return probabilities
    """


def overwritten_probes(src: str) -> list[dict]:
    probes = [f.probe for f in probed(src, select=["TNL201"]) if f.probe is not None]
    assert len(probes) == 2  # both divisions are probed
    return probes


def test_a_value_assigned_again_before_any_use_confirms_nothing():
    first, second = sorted(overwritten_probes(OVERWRITTEN), key=lambda p: p.get("unused") is None)
    assert "`probabilities` is assigned again before any use" in first["unused"]
    assert gradient_gate.apply(first, confirmed("nan-value"))["status"] == "refuted"
    # the second assignment is the one returned: its NaN value stays a confirmed hazard
    assert "unused" not in second
    assert gradient_gate.apply(second, confirmed("nan-value"))["status"] == "confirmed"


def test_a_value_read_before_it_is_reassigned_is_used():
    src = OVERWRITTEN.replace(
        "normalizer = tf.reduce_sum(unnormalized)",
        "normalizer = tf.reduce_sum(unnormalized) + tf.reduce_sum(probabilities)",
    )
    assert all("unused" not in p for p in overwritten_probes(src))


def test_a_value_reassigned_only_inside_a_branch_is_used():
    src = OVERWRITTEN.replace(
        "    probabilities = unnormalized / normalizer\n",
        "    if normalizer > 1.0:\n            probabilities = unnormalized / normalizer\n",
    )
    assert all("unused" not in p for p in overwritten_probes(src))


@pytest.mark.parametrize("call", ["weights.assign", "weights.keep", "record", "summary.scalar"])
def test_an_assignment_through_a_call_that_may_act_is_never_dead(call):
    """Any callee but a known TF op may act (an update, a log line), whatever its name."""
    src = OVERWRITTEN.replace(
        "probabilities = unnormalized / tf.norm(unnormalized, 1)",
        f"probabilities = {call}(unnormalized / tf.norm(unnormalized, 1))",
    )
    assert all("unused" not in p for p in overwritten_probes(src))


LEADER_SCORE = """\
    import tensorflow as tf


    def leaders(x, lap, row, col):
        v = tf.matmul(lap, x)
        v = tf.norm(v, axis=-1, keepdims=True)
        check = tf.cast(tf.gather(v, row) >= tf.gather(v, col), tf.int32)
        return check
    """


def test_a_value_whose_every_use_is_a_comparison_carries_no_gradient():
    probe = one_probe(LEADER_SCORE, "TNL203")
    assert "every use of `v` is gradient-free" in probe["no_gradient"]
    assert judged(probe, "nan-gradient")["status"] == "refuted"
    assert judged(probe, "nan-value")["status"] == "confirmed"


def test_one_differentiable_use_keeps_the_gradient():
    src = LEADER_SCORE.replace("return check", "return check, tf.reduce_sum(v)")
    assert "no_gradient" not in one_probe(differentiated(src, "leaders"), "TNL203")


def test_uses_after_a_reassignment_read_another_value():
    src = LEADER_SCORE.replace(
        "        return check\n", "        v = tf.ones_like(x)\n        return check, v\n"
    )
    assert "every use of `v`" in one_probe(src, "TNL203")["no_gradient"]


def test_a_pyramid_level_from_a_floor_division_carries_no_gradient():
    """sqrt(box area) only picks a feature level: floordiv then an int cast."""
    src = """\
        import tensorflow as tf


        def pick_levels(boxes, patch):
            _, var = tf.nn.moments(patch, axes=[0])
            area_sqrt = tf.sqrt(var)
            levels = tf.math.floordiv(tf.math.log(area_sqrt + 1.0), tf.math.log(2.0))
            return tf.gather(boxes, levels + 4)
        """
    assert "every use of `area_sqrt`" in one_probe(src, "TNL202")["no_gradient"]
    python_floordiv = src.replace(
        "tf.math.floordiv(tf.math.log(area_sqrt + 1.0), tf.math.log(2.0))",
        "tf.math.log(area_sqrt + 1.0) // tf.math.log(2.0)",
    )
    assert "floor division" in one_probe(python_floordiv, "TNL202")["no_gradient"]


# ---------------------------------------------------------------- the statement's own value


def with_statement_value(symptom: str, value: object) -> dict:
    out = confirmed(symptom)
    out["observed"] = {"value": 0.0, "gradient": {"variance": "inf"}, "loss": value}
    return out


def test_a_gradient_witness_whose_statement_is_nan_is_a_value_symptom_in_an_input_pipeline():
    """(image - mean) / sqrt(var) in a dataset map function: at the witness of sqrt's inf
    gradient the statement itself is 0/0, a NaN the pipeline returns; it stays confirmed as a
    value symptom.  (It was read from an `eval/` path; a dataset map is the structural fact.)"""
    probe = one_probe(DATASET_MAP, "TNL202")
    out = gradient_gate.apply(probe, with_statement_value("inf-gradient", "nan"))
    assert out["status"] == "confirmed"
    assert out["symptom"] == "nan-value"
    assert "the enclosing statement's value is nan" in out["detail"]
    infinite = gradient_gate.apply(probe, with_statement_value("inf-gradient", "-inf"))
    assert infinite["symptom"] == "inf-value"


def test_a_finite_statement_value_leaves_the_gradient_witness_unconfirmed():
    probe = one_probe(DATASET_MAP, "TNL202")
    out = gradient_gate.apply(probe, with_statement_value("inf-gradient", 1.0))
    assert out["status"] == "inconclusive"
    assert out["symptom"] == "inf-gradient"


def test_a_free_function_is_conditional_whatever_its_path():
    """No caller in the project: the gradient witness is conditional on one that differentiates
    the function, the same under an `eval/` path as in `model.py` (paths never decide); a
    training step that differentiates it makes the witness confirm, under either path."""
    outs = []
    for path in ("gan/eval/swd.py", "model.py"):
        out = gradient_gate.apply(sqrt_probe(path=path), with_statement_value("inf-gradient", 1.0))
        assert out["status"] == "inconclusive" and out["symptom"] == "inf-gradient"
        assert "conditional: `distance` has no caller in the project" in out["detail"]
        outs.append(out)
        trained = sqrt_probe(path=path, trained=True)
        out = gradient_gate.apply(trained, with_statement_value("inf-gradient", 1.0))
        assert out["status"] == "confirmed" and out["symptom"] == "inf-gradient"
    assert outs[0] == outs[1]


# ---------------------------------------------------------------- variable stores

# A layer's data-dependent init: the norm of its kernel only feeds the variable `g` it stores
# into (round 17 review #15).  `{use}` is what `init_norm` does with `norm` after the store.
DATA_INIT = """\
    import tensorflow as tf


    class Normed(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.v = self.add_weight(shape=(input_shape[-1], 4))
            self.g = self.add_weight(shape=(4,))

        def init_norm(self):
            norm = tf.sqrt(tf.reduce_sum(tf.square(self.v), axis=0))
            self.g.assign(norm)
            {use}

        def call(self, x):
            self.init_norm()
            return tf.matmul(x, tf.nn.l2_normalize(self.v, axis=0)) * self.g
    """


def test_a_value_only_stored_into_a_variable_passes_no_gradient():
    """`call` differentiates `init_norm`, but the norm only reaches `self.g.assign(...)`: an
    assignment passes no gradient back to the value it stores.  Its NaN or inf value would be
    stored in the variable: that still confirms."""
    probe = one_probe(DATA_INIT.format(use="return None"), "TNL202")
    out = judged(probe, "nan-gradient")
    assert out["status"] == "refuted", out
    assert (
        "its value only reaches `self.g.assign(...)` at line 11, which passes no gradient"
        in out["detail"]
    ), out
    assert judged(probe, "nan-value")["status"] == "confirmed"
    assert judged(probe, "inf-value")["status"] == "confirmed"


def test_a_stored_value_that_also_reaches_the_output_keeps_its_gradient():
    probe = one_probe(DATA_INIT.format(use="return norm"), "TNL202")
    assert "no_gradient" not in probe, probe.get("no_gradient")


STORE = """\
    import tensorflow as tf

    scale = tf.Variable(tf.ones([3]))


    def rescale(var):
        {store}
        return var
    """


@pytest.mark.parametrize(
    ("store", "shown"),
    [
        ("scale.assign(1.0 / tf.sqrt(tf.reduce_sum(tf.square(var))))", "scale.assign"),
        ("scale.assign_sub(value=tf.sqrt(tf.reduce_sum(tf.square(var))))", "scale.assign_sub"),
        (
            "tf.compat.v1.assign(scale, tf.sqrt(tf.reduce_sum(tf.square(var))))",
            "tf.compat.v1.assign",
        ),
        (
            "tf.compat.v1.assign_add(scale, tf.sqrt(tf.reduce_sum(tf.square(var))))",
            "tf.compat.v1.assign_add",
        ),
    ],
)
def test_a_value_stored_in_its_own_statement_passes_no_gradient(store, shown):
    """The store in the hazard's own statement, as a method of the variable or TensorFlow's
    function of it; a training step differentiates `rescale`."""
    probe = one_probe(differentiated(STORE.format(store=store), "rescale"), "TNL202")
    out = judged(probe, "nan-gradient")
    assert out["status"] == "refuted", out
    fact = f"its value only reaches `{shown}(...)` at line 7, which passes no gradient"
    assert fact in out["detail"], out
    assert judged(probe, "inf-value")["status"] == "confirmed"


@pytest.mark.parametrize(
    "call",
    [
        # a project object's `assign` taking two values: not tf.Variable's `assign(value)`
        "helper.assign(var, tf.sqrt(tf.reduce_sum(tf.square(var))))",
        # the stored variable itself is not what is flagged: `scale` here is read, not written
        "tf.sqrt(tf.reduce_sum(tf.square(scale.assign(var))))",
    ],
)
def test_only_the_value_a_variable_stores_is_a_store(call):
    src = differentiated(STORE.format(store=f"return {call}"), "rescale")
    probe = one_probe(src.replace("def rescale(var):", "def rescale(var, helper=None):"), "TNL202")
    assert "no_gradient" not in probe, probe.get("no_gradient")
