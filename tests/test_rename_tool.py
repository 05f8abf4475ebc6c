"""benchmarks/rename.py: the alpha-renaming keeps the framework's names and moves the user's
(static: no linting, no TensorFlow)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

from conftest import ROOT


def rename_module():
    spec = importlib.util.spec_from_file_location("rename", ROOT / "benchmarks" / "rename.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rename"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SOURCE = """\
    import tensorflow as tf
    from helpers.layers import mlp


    class Critic(tf.keras.layers.Layer):
        def build(self, shape):
            self.dense = tf.keras.layers.Dense(1, activation="sigmoid")

        def call(self, inputs, training=None):
            return self.score(self.dense(inputs))

        def score(self, probs):
            return tf.math.log(probs)


    def feature_loss(real, fake, scale=1.0):
        return scale * tf.reduce_mean(tf.square(real - fake))


    discriminator = mlp(units=8, out_activation="sigmoid")
    value = feature_loss(real=tf.ones([2]), fake=discriminator(tf.ones([2, 2])))
    """

HELPER = """\
    import tensorflow as tf


    def mlp(units, out_activation=None):
        return tf.keras.layers.Dense(units, activation=out_activation)
    """


def _tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "helpers").mkdir(parents=True)
    (src / "helpers" / "__init__.py").write_text("")
    (src / "helpers" / "layers.py").write_text(textwrap.dedent(HELPER))
    (src / "tests").mkdir()
    (src / "tests" / "train_gan.py").write_text(textwrap.dedent(SOURCE))
    return src


def test_user_names_files_and_folders_move_and_framework_names_stay(tmp_path):
    rn = rename_module()
    src = _tree(tmp_path)
    # Keras attribute names the benchmark reads from TensorFlow; here a stand-in, no import
    back = rn.rename_tree(src, tmp_path / "out", rn.plan(src, frozenset({"dense"})))
    assert sorted(back.values()) == [
        "helpers/__init__.py", "helpers/layers.py", "tests/train_gan.py"
    ]  # fmt: skip
    new_gan = next(k for k, v in back.items() if v == "tests/train_gan.py")
    new_helper = next(k for k, v in back.items() if v == "helpers/layers.py")
    assert "tests" not in new_gan and "train_gan" not in new_gan and "helpers" not in new_helper
    text = (tmp_path / "out" / new_gan).read_text()
    for kept in ("tf.keras.layers.Layer", "def build(self, ", "def call(self, ",
                 "training=None", 'activation="sigmoid"', "tf.math.log", "tf.reduce_mean",
                 "self.dense = tf.keras.layers.Dense"):  # fmt: skip
        # `dense` is a framework attribute name (as given to plan): left as it is
        assert kept in text, (kept, text)
    for moved in ("Critic", "score", "probs", "feature_loss", "real", "fake", "scale",
                  "discriminator", "value", "mlp", "helpers", "out_activation"):  # fmt: skip
        assert moved not in text, (moved, text)
    helper = (tmp_path / "out" / new_helper).read_text()
    assert "def mlp" not in helper and "out_activation=None" not in helper
    # the keyword of a project function moves with its parameter, a framework keyword stays
    renamed_param = helper.split("(")[1].split(",")[1].split("=")[0].strip()
    assert f"{renamed_param}=" in text and "activation=" in helper


def test_comparison_keys_by_original_location():
    rn = rename_module()
    before = rn.statuses([{"path": "a.py", "line": 3, "rule": "TNL101",
                           "verification": {"status": "confirmed"}}])  # fmt: skip
    after = rn.statuses([{"path": "./qzb.py", "line": 3, "rule": "TNL101",
                          "verification": {"status": "inconclusive"}}], {"qzb.py": "a.py"})  # fmt: skip
    result = rn.compare(before, after)
    assert result.changed == [(("a.py", 3, "TNL101"), ["confirmed"], ["inconclusive"])]
    assert not result.passed
    assert rn.compare(before, before).passed


def test_an_api_attribute_and_its_keywords_stay_when_the_project_binds_the_same_names(tmp_path):
    """Found in the wild sample: a project method `norm` and an attribute `self.norm` renamed
    `tf.linalg.norm(x, axis=-1)` to a call TensorFlow does not have."""
    rn = rename_module()
    src = tmp_path / "src"
    src.mkdir()
    (src / "layer.py").write_text(
        textwrap.dedent(
            """\
            import tensorflow as tf


            class Normed:
                def __init__(self, axis):
                    self.norm = None
                    self.axis = axis

                def norm(self, x, axis=0):
                    return tf.linalg.norm(x, axis=axis) + self.norm(x, axis=self.axis)
            """
        )
    )
    back = rn.rename_tree(src, tmp_path / "out", rn.plan(src, frozenset()))
    text = (tmp_path / "out" / next(iter(back))).read_text()
    assert "tf.linalg.norm(x_" not in text  # x is the project's: moved
    call = text.split("return ")[1]
    assert call.startswith("tf.linalg.norm(") and ", axis=" in call, call
    assert "self.norm(" not in call and "def norm" not in text


def test_a_folder_named_like_an_installed_package_does_not_capture_its_imports(tmp_path):
    """Found in the wild sample: tensorflow_ranking's `python/keras/` folder made `from keras
    import ops` a project import, so keras-hub's `ops.exp` was renamed away."""
    rn = rename_module()
    src = tmp_path / "src"
    (src / "lib" / "python" / "numpy").mkdir(parents=True)
    (src / "lib" / "python" / "numpy" / "helpers.py").write_text("def shift(v):\n    return v\n")
    (src / "model.py").write_text("import numpy as np\n\n\ndef f(z):\n    return np.exp(z)\n")
    back = rn.rename_tree(src, tmp_path / "out", rn.plan(src, frozenset()))
    model = next(k for k, v in back.items() if v == "model.py")
    text = (tmp_path / "out" / model).read_text()
    assert "import numpy as np" in text and "np.exp(" in text and "def f(" not in text
