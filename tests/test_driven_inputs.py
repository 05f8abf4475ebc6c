"""Issue #11, "confirmed needs inputs the code really receives": each probe input is labelled
with whether training drives it (analysis/driven.py), statically and without TensorFlow."""

from __future__ import annotations

from test_caller_ranges import probes
from test_reachability import probed


def drives(src: str, rule: str, path: str = "model.py") -> dict[str, str]:
    """input name -> its ``drive`` label, for the one finding of ``rule`` in the snippet."""
    [finding] = [f for f in probed(src, path, select=[rule]) if f.rule == rule and f.probe]
    return {spec["name"]: spec["drive"] for spec in finding.probe["inputs"]}


def project_drives(root, path: str, rule: str) -> dict[str, str]:
    """Input name -> drive label of the one probed finding of ``rule`` in ``path``, linted as
    one project (so callers and base classes in other modules count)."""
    [probe] = probes(root, path, rule)
    return {s["name"]: s["drive"] for s in probe["inputs"]}


def test_a_library_parameter_is_free_and_names_its_function():
    src = """\
        import tensorflow as tf


        def _stdtrit(df, numpy_dtype):
            half = numpy_dtype(0.5)
            return tf.math.reciprocal(df - half)
        """
    [finding] = [f for f in probed(src, select=["TNL206"]) if f.probe]
    df = next(s for s in finding.probe["inputs"] if s["name"] == "df")
    assert (df["drive"], df["owner"]) == ("free", "_stdtrit")


def test_parameters_of_a_keras_loss_call_are_driven():
    src = """\
        import tensorflow as tf


        class MyLoss(tf.keras.losses.Loss):
            def call(self, a, b):
                return tf.math.log(a - b)
        """
    assert drives(src, "TNL104") == {"a": "driven", "b": "driven"}


def test_the_same_names_outside_a_training_context_are_api_parameters():
    src = """\
        import tensorflow as tf


        def helper(y_pred, shift):
            return tf.math.log(y_pred - shift)
        """
    assert drives(src, "TNL104", path="mathutil.py") == {"y_pred": "free", "shift": "free"}


def test_a_distribution_method_reads_probs_as_a_parameter_of_its_class():
    src = """\
        import tensorflow as tf


        class Coin(tf.Module):
            def _log_prob(self, x, probs):
                return x * tf.math.log(probs) + tf.math.log(self.probs - x)
        """
    [finding] = [f for f in probed(src, "coin.py", ["TNL104"]) if f.probe]
    owners = {s["name"]: (s["drive"], s.get("owner")) for s in finding.probe["inputs"]}
    assert owners == {
        "probs": ("free", "_log_prob"),
        "self.probs": ("free", "Coin"),
        "x": ("free", "_log_prob"),
    }


def test_a_value_the_object_computes_from_its_parameters_is_free_outside_training():
    src = """\
        import tensorflow as tf


        class Coin(tf.Module):
            def _probs_parameter(self):
                return tf.sigmoid(self._logits)

            def _mean_ratio(self, x):
                probs = self._probs_parameter()
                return x / probs
        """
    [finding] = [f for f in probed(src, "coin.py", ["TNL201"]) if f.probe]
    # the method is inlined (its own class's, straight-line): the value is computed from
    # the object's attribute, which nothing drives outside training
    inputs = {s["name"]: s for s in finding.probe["inputs"]}
    assert "probs" not in inputs and inputs["self._logits"]["drive"] == "free"


def test_a_function_returning_a_batch_mean_is_a_training_objective():
    src = """\
        import tensorflow as tf


        def log_weight(probs, weights):
            {body}
        """
    mean = "objective = tf.reduce_mean(tf.math.log(probs - weights))\n            return objective"
    assert drives(src.format(body=mean), "TNL104", "rein.py")["probs"] == "driven"
    total = "return tf.reduce_sum(tf.math.log(probs - weights))"
    assert drives(src.format(body=total), "TNL104", "rein.py")["probs"] == "free"
    weighted = "total = tf.reduce_sum(tf.math.log(probs - weights))\n            return total / tf.reduce_sum(weights)"
    assert drives(src.format(body=weighted), "TNL104", "rein.py")["probs"] == "driven"
    negated = "return -tf.reduce_mean(tf.math.log(probs - weights))"
    assert drives(src.format(body=negated), "TNL104", "rein.py")["probs"] == "driven"
    negated_total = "return -tf.reduce_sum(tf.math.log(probs - weights))"
    assert drives(src.format(body=negated_total), "TNL104", "rein.py")["probs"] == "free"


def test_a_base_class_from_another_project_module_makes_a_training_class(tmp_path):
    from test_project import project

    root = project(
        tmp_path,
        {
            "base.py": """\
                import tensorflow as tf


                class Pool(tf.keras.layers.Layer):
                    pass
                """,
            "lapool.py": """\
                import tensorflow as tf
                from base import Pool


                class LaPool(Pool):
                    def scores(self, features, other):
                        return tf.math.log(features - other)
                """,
        },
    )
    labels = project_drives(root, "lapool.py", "TNL104")
    # training runs a layer's methods: both parameters are driven, whatever their names
    assert labels == {"features": "driven", "other": "driven"}


def test_a_size_named_like_data_is_not_driven():
    src = """\
        import tensorflow as tf


        def helper(x, batch_size, pad):
            return x / (batch_size - pad)
        """
    assert drives(src, "TNL201")["batch_size"] == "free"


def test_an_attribute_is_driven_only_when_it_is_a_trainable_weight():
    src = """\
        import tensorflow as tf


        class Scaled(tf.keras.layers.Layer):
            def build(self, shape):
                self.gain = self.add_weight(shape=(1,))

            def apply(self, h):
                return h / (self.gain - self.temperature)
        """
    labels = drives(src, "TNL201")
    assert labels["self.gain"] == "driven"  # a weight, named by its attribute
    assert labels["self.temperature"] == "free"


def test_a_helper_parameter_is_driven_when_its_callers_pass_a_model_output(tmp_path):
    from test_project import project

    root = project(
        tmp_path,
        {
            "helpers.py": """\
                import tensorflow as tf


                def _centered(a, b):
                    return tf.math.log(a - b)
                """,
            "train.py": """\
                import tensorflow as tf
                from helpers import _centered


                def step(x, w, m):
                    return _centered(tf.sigmoid(x @ w), m)
                """,
        },
    )
    labels = project_drives(root, "helpers.py", "TNL104")
    assert labels == {"a": "driven", "b": "free"}


def test_a_model_output_passed_from_another_module_through_a_helper_drives_the_parameter(
    tmp_path,
):
    """A Keras model whose last layer has no known range (a unit normalisation) gives an
    output whose one fact is that training drives it: that fact must cross the module
    boundary and a forwarding helper (a triplet loss's distance)."""
    from test_project import project

    root = project(
        tmp_path,
        {
            "losses.py": """\
                import tensorflow as tf


                def distance(a, b):
                    return tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))


                def margin_loss(anchor, positive, negative):
                    return tf.maximum(distance(anchor, positive) - distance(anchor, negative), 0.0)
                """,
            "train.py": """\
                import tensorflow as tf
                from losses import margin_loss

                net = tf.keras.Sequential(
                    [tf.keras.layers.Dense(4), tf.keras.layers.UnitNormalization()]
                )


                def step(xa, xp, xn):
                    return margin_loss(net(xa), net(xp), net(xn))
                """,
        },
    )
    labels = project_drives(root, "losses.py", "TNL202")
    assert labels == {"a": "driven", "b": "driven"}


def test_call_of_a_plain_python_class_is_not_a_training_forward_pass():
    plain = """\
        import tensorflow as tf


        class Sampler:
            def __call__(self, a, b):
                return tf.math.log(a - b)
        """
    assert drives(plain, "TNL104") == {"a": "free", "b": "free"}
    child = plain.replace(
        "class Sampler:", "class Base:\n            pass\n\n\n        class Sampler(Base):"
    )
    assert drives(child, "TNL104") == {"a": "free", "b": "free"}  # a plain module base
    layer = plain.replace("class Sampler:", "class Sampler(tf.keras.layers.Layer):")
    assert drives(layer, "TNL104") == {"a": "driven", "b": "driven"}
    imported = plain.replace(
        "import tensorflow as tf", "import tensorflow as tf\n        from m import Base"
    )
    imported = imported.replace("class Sampler:", "class Sampler(Base):")
    assert drives(imported, "TNL104") == {"a": "driven", "b": "driven"}  # may be a layer
