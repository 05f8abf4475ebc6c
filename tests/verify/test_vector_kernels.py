"""Points that differ evaluated in one batch and one by one: mixed points, or TensorFlow's
vectorised and scalar kernels rounding differently.

A vectorised reciprocal gives 1/0.5 = 1.9999999 where the scalar one gives 2, so
pow(-1, 1/0.5) is NaN in a batch and 1 alone.  That is no mixing: a batch of the point's own
copies gives what the batch gave.  The batch then stands where it agrees with the points
evaluated alone, and a symptom only the vectorised kernels show is no witness.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from test_reachability import probed  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.program import build_with_fallback  # noqa: E402
from tfnumlint.verify.symptoms import points_mixed, run, vector_only  # noqa: E402

# the shape of a rejection sampler's fix-up: u ** (1 / c), selected where c < 1
FIX = """\
import tensorflow as tf


class Fix(tf.keras.layers.Layer):
    def call(self, concentration, unif):
        safe = tf.where(concentration >= 0., concentration, 100.)
        return tf.where(
            safe < 1., tf.math.pow(unif, tf.math.reciprocal(safe)), tf.ones(()))
"""


def _kernels_differ() -> bool:
    """This CPU's vectorised reciprocal rounds 1/0.5 differently from its scalar one."""
    batch = tf.math.reciprocal(tf.fill([16], 0.5)).numpy()[0]
    alone = tf.math.reciprocal(tf.fill([1], 0.5)).numpy()[0]
    return bool(batch != alone)


def _probe() -> dict:
    [finding] = [f for f in probed(FIX, select=["TNL302"]) if f.rule == "TNL302"]
    assert finding.probe is not None
    return finding.probe


def _gradient_at(c: float, u: float) -> np.ndarray:
    """What TensorFlow gives for the gradient of the snippet at one point."""
    conc, unif = tf.constant([c]), tf.constant([u])
    with tf.GradientTape() as tape:
        tape.watch([conc, unif])
        safe = tf.where(conc >= 0.0, conc, 100.0)
        y = tf.where(safe < 1.0, tf.math.pow(unif, tf.math.reciprocal(safe)), tf.ones(()))
    return np.array([g.numpy()[0] for g in tape.gradient(y, [conc, unif])])


def test_a_kernel_difference_is_not_taken_for_mixed_points():
    if not _kernels_differ():
        pytest.skip("this CPU's vectorised and scalar reciprocal agree")
    program = build_with_fallback(_probe(), "float32")
    names = [i.name for i in program.inputs]
    point = [0.5 if n == "concentration" else -1.0 for n in names]
    # in a batch pow(-1, 1.9999999) is NaN, alone pow(-1, 2) = 1
    rows = np.array([point, [2.0] * len(names)] * 8)
    res = run(program, rows)
    assert np.isnan(res["t"][0]).all()
    alone = run(program, rows[:1])
    assert not np.isnan(alone["t"]).any()
    # vector_only evaluates a point alone through the traced function: the same kernels
    traced = run(program, rows[:1], traced=True)
    assert alone.keys() <= traced.keys()
    for key, value in alone.items():
        np.testing.assert_array_equal(traced[key], value)
    assert not points_mixed(program, rows, res)
    assert vector_only(program, rows, res, 1e6)[0]


def test_the_real_where_trap_is_confirmed_not_lost_to_the_kernel_difference():
    if not _kernels_differ():
        pytest.skip("this CPU's vectorised and scalar reciprocal agree")
    out = probing.verify(_probe(), 1e6)
    assert out["status"] == "confirmed", out
    assert out["symptom"] == "nan-gradient", out
    witness = out["inputs"]
    # the unselected branch pow(u, 1/safe) where safe >= 1 (c >= 1, or c < 0 and safe = 100):
    # its NaN/inf reaches the gradient
    assert witness["concentration"] >= 1.0 or witness["concentration"] < 0.0, out
    assert np.isnan(_gradient_at(witness["concentration"], witness["unif"])).any(), out
