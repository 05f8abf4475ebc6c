"""The reference entry of a softmax probe row belongs to values, not to divisors (issue 11).

A probe with a row-coupled op (softmax, log_softmax, logsumexp) gives each value a row
``[v, 0]``: the 0 is a reference logit against which ``v`` stands out.  An input read only as a
divisor (``sigma`` in ``softmax(-x / (2 * sigma**2))``) is a scale: given that 0 it divides by
zero at every probe point, a value of ``sigma`` the code never chose.  It holds its probe value
in every entry instead, and a division by it is confirmed only where ``sigma = 0`` itself is.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability import one_probe  # noqa: E402
from test_reachability_gate import one_verdict  # noqa: E402

from tfnumlint.analysis.slicing.tools import scale_inputs  # noqa: E402
from tfnumlint.verify.program import build, one_hot_width, to_batch  # noqa: E402

GAUSSIAN = """\
    import tensorflow as tf


    def _gaussian_kernel(sigma, size):
        sigma = tf.convert_to_tensor(sigma)
        x = tf.range(-size // 2 + 1, size // 2 + 1)
        x = tf.cast(x**2, sigma.dtype)
        return tf.nn.softmax(-x / (2.0 * sigma**2))
    """


def gaussian_arg() -> dict:
    """softmax(-x / (2 * sigma**2)), traced whole."""
    scale = binop("*", const(2.0), binop("**", inp("sigma"), const(2.0)))
    return call("softmax", {"k": "neg", "x": binop("/", inp("x"), scale)})


# ---------------------------------------------------------------- which inputs are scales


def test_a_divisor_under_a_softmax_is_a_scale_and_its_numerator_is_not():
    assert scale_inputs(gaussian_arg()) == {"sigma"}


def test_an_input_read_as_a_value_anywhere_is_not_a_scale():
    tree = call("softmax", binop("/", inp("x"), inp("t")))
    assert scale_inputs(tree, binop("*", inp("t"), inp("x"))) == set()


def test_a_logit_inside_a_divisor_is_still_a_value():
    # x / reduce_sum(softmax(z)): z is the softmax's own argument, it keeps its reference entry
    tree = binop("/", inp("x"), call("reduce_sum", call("softmax", inp("z"))))
    assert scale_inputs(tree) == set()


def test_denominator_ops_make_scales_too():
    tree = call("log_softmax", binop("*", inp("z"), call("reciprocal", inp("t"))))
    assert scale_inputs(tree, call("divide", inp("x"), inp("d"))) == {"t", "d"}


def test_without_a_row_coupled_op_nothing_is_marked():
    assert scale_inputs(binop("/", inp("x"), inp("sigma"))) == set()


def test_the_slicer_marks_the_scale_and_leaves_the_logits_alone():
    probe = one_probe(GAUSSIAN, "TNL201")
    rows = {s["name"]: s.get("row") for s in probe["inputs"]}
    assert rows["sigma"] == "scale"
    assert all(row is None for name, row in rows.items() if name != "sigma"), rows


# ---------------------------------------------------------------- the rows the probe builds


def test_a_scale_holds_its_value_in_every_entry_and_a_logit_gets_the_reference_0():
    probe = expr(
        "TNL201",
        gaussian_arg(),
        [free("x"), {**free("sigma"), "row": "scale"}],
    )
    program = build(probe)
    assert program.k == 2
    x, sigma = (np.asarray(t) for t in to_batch(program, np.array([[0.5, 1.5]])))
    assert x.reshape(-1).tolist() == [0.5, 0.0]
    assert sigma.reshape(-1).tolist() == [1.5, 1.5]


# ---------------------------------------------------------------- verdicts


def test_a_gaussian_width_is_not_confirmed_at_zero_through_the_softmax_row():
    out = one_verdict(GAUSSIAN, "TNL201")
    assert out["status"] != "confirmed", out
    assert "sigma = [" not in out["detail"], out  # never the [v, 0] row on the divisor
    assert "`sigma` is a parameter of `_gaussian_kernel`" in out["detail"], out


def test_a_hazard_on_the_logits_keeps_its_contrast():
    # log(1 - p) needs one entry of the softmax to round to 1: a logit standing out from the
    # reference entry 0, which the logits keep (rows of equal logits would never saturate)
    src = """\
        import tensorflow as tf


        class ConfidencePenalty(tf.keras.layers.Layer):
            def call(self, logits):  # a layer's input: the model drives it, it is not free
                p = tf.nn.softmax(logits, axis=-1)
                return -tf.math.log(1.0 - p)
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "confirmed", out
    assert "logits = [" in out["detail"] and ", 0]" in out["detail"], out


# ---------------------------------------------------------------- one_hot rows


def picked_log_probability() -> dict:
    """log(reduce_sum(softmax(logits) * one_hot(act, 6), 1)): a REINFORCE log-probability."""
    picked = binop("*", call("softmax", inp("logits")), call("one_hot", inp("act"), const(6.0)))
    return call("log", call("reduce_sum", picked, const(1.0)))


def test_a_softmax_row_meets_a_one_hot_row_of_its_literal_depth():
    probe = expr("TNL101", picked_log_probability(), [free("logits"), free("act", 0.0)])
    program = build(probe)
    assert program.k == 6  # not the generic 2, which a [?, 6] one_hot cannot multiply
    rows = np.array([[-120.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    out = program.fn(*to_batch(program, rows))
    value = np.asarray(out["t"]).reshape(-1)
    # logits [-120, 0, ...] picking class 0: exp(-120) underflows, log(0) = -inf; class 0 of
    # equal logits: log(1/6); index 1 picks a 0 logit of the row [0, 0, ...]: log(1/6) too
    assert value[0] == -np.inf
    assert value[1] == pytest.approx(np.log(1 / 6), rel=1e-5)
    assert value[2] == pytest.approx(np.log(1 / 6), rel=1e-5)


def test_one_hot_rows_of_different_or_huge_depths_keep_the_generic_width():
    assert one_hot_width({"a": 3, "b": 5}, 2) == 2
    assert one_hot_width({"a": 30000}, 2) == 2
    assert one_hot_width({"a": 4, "b": 4}, 1) == 4
