"""Issue 22's rename test: a project helper that returns a shape is known by its body, in
whichever package, module and function names it has.  Linting TFP's own source,
``prefer_static.shape`` is a function of the project: its package's name
(``tensorflow_probability``, a numerics library when another project imports it) does not make
it the library's API, and its function's name (``shape``) does not make it a shape.

The program is round 17's covariance of a directional distribution: the untaken branch of its
``tf.where`` divides an identity by the event size, an item of what the helper returns.  When
the helper returns a shape, no gradient reaches the size (the slicer marks the input
``constant``, and the gradient gate refutes a NaN gradient resting on it alone)."""

from __future__ import annotations

import pytest
from test_caller_ranges import probes
from test_project import project

HELPER = """\
    import tensorflow as tf


    def {fn}(x):
        return {body}
    """

DIST = """\
    import tensorflow as tf
    from {root}.internal import {module} as ps


    class Spread(tf.keras.layers.Layer):
        def _event_size(self, x):
            return ps.{fn}(x)[-1:]

        def call(self, mean, concentration, cov):
            d = tf.cast(self._event_size(mean)[0], mean.dtype)
            return tf.where(
                concentration > 0.0, cov, tf.eye(3, batch_shape=tf.shape(concentration)) / d
            )
    """

SIZE = "self._event_size(mean)[0]"
# the original spelling (TFP's), and the same program alpha-renamed as benchmarks/rename.py does
SPELLINGS = [
    {"root": "tensorflow_probability", "module": "prefer_static", "fn": "shape"},
    {"root": "qzb", "module": "qzd", "fn": "qzmc"},
]


def size_input(tmp_path, names: dict, body: str, packages: bool = True) -> dict:
    """The probe input of the event size, the project linted as a whole: ``packages``
    with ``__init__.py`` files, or as namespace packages (a copied subset of a tree)."""
    root = names["root"]
    files = {
        f"{root}/internal/{names['module']}.py": HELPER.format(fn=names["fn"], body=body),
        f"{root}/dist.py": DIST.format(**names),
    }
    if packages:
        files |= {f"{root}/__init__.py": "", f"{root}/internal/__init__.py": ""}
    project(tmp_path, files)
    [probe] = probes(tmp_path, f"{root}/dist.py", "TNL302")
    return {s["name"]: s for s in probe["inputs"]}[SIZE]


@pytest.mark.parametrize("packages", [True, False])
@pytest.mark.parametrize("names", SPELLINGS, ids=["tfp", "renamed"])
def test_a_helper_returning_a_shape_makes_a_constant_under_any_name(tmp_path, names, packages):
    spec = size_input(tmp_path, names, "tf.shape(x)", packages)
    if packages:  # the index reads the helper's body across the modules
        assert spec.get("constant") == f"`ps.{names['fn']}`", spec
    else:  # the same package, no index of it: what the helper returns is unknown either way
        assert not spec.get("constant"), spec


@pytest.mark.parametrize("names", SPELLINGS, ids=["tfp", "renamed"])
def test_a_helper_returning_a_float_is_no_shape_under_any_name(tmp_path, names):
    """Named `shape` in a package named `tensorflow_probability`, it sums its input: the body
    decides, so a gradient may reach the size."""
    spec = size_input(tmp_path, names, "tf.reduce_sum(x, axis=-1)")
    assert not spec.get("constant"), spec
