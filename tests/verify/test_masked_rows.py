"""TNL303's verdicts: a softmax over a -inf fill is NaN in a row the mask empties.

Whether a row with nothing to keep occurs is a fact of the data, so a witness that needs one
states it ("needs an empty selection"); an additive ``(1 - mask) * -inf`` is NaN wherever the
mask keeps an entry and is confirmed; a fill on either side of the where is found (the mask
holds one value across a row); a value the symptom does not rest on is no related input.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability_gate import one_verdict  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.program import build, run  # noqa: E402
from tfnumlint.verify.related import review_related  # noqa: E402
from tfnumlint.verify.symptoms import flat  # noqa: E402

LAYER = """\
import numpy as np
import tensorflow as tf


class Attend(tf.keras.layers.Layer):
    def call(self, q, k, mask):
        scores = tf.matmul(q, k, transpose_b=True)
        return tf.nn.softmax({masked}, axis=-1)
"""


def test_a_row_the_mask_empties_is_a_stated_precondition():
    out = one_verdict(LAYER.format(masked="tf.where(mask, scores, -np.inf)"), "TNL303")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("needs an empty selection: at `mask` = 0"), out
    assert out["observed"]["masked_row"] == ["mask"]


def test_the_fill_on_the_true_side_is_found_too():
    """`where(padded, -inf, s)`: a fully padded row needs the mask true in every entry, which
    a row [v, 0] could never be."""
    out = one_verdict(LAYER.format(masked="tf.where(mask, -np.inf, scores)"), "TNL303")
    assert out["status"] == "inconclusive", out
    assert "needs an empty selection: at `mask` = " in out["detail"], out


def test_an_additive_minus_inf_mask_is_nan_at_any_kept_entry():
    out = one_verdict(LAYER.format(masked="scores + (1.0 - mask) * -np.inf"), "TNL303")
    assert (out["status"], out["symptom"]) == ("confirmed", "nan-value"), out
    assert "masked_row" not in out["observed"]


def test_only_a_nan_the_mask_decides_is_an_empty_selection():
    """Moving the mask inputs (every other input as in the witness) must make the value
    finite somewhere: a NaN of the scores themselves (log of a negative) is no empty row."""
    where = call("where", inp("m"), call("log", inp("s")), const("-inf"))
    probe = expr("TNL303", call("softmax", where), [free("m"), free("s")])
    program = build(probe, "float32")
    seen = {"status": "confirmed", "symptom": "nan-value", "observed": {}}
    empty = probing.masked_row(program, {**seen, "inputs": {"m": 0.0, "s": 1.0}})
    assert empty["observed"]["masked_row"] == ["m"]
    negative = probing.masked_row(program, {**seen, "inputs": {"m": 1.0, "s": -1.0}})
    assert "masked_row" not in negative["observed"]


def test_a_cut_input_the_symptom_ignores_is_no_related_input():
    """`tf.einsum(..., keys)` computed from `h`, set apart from `h = 0` by the witness: at
    h = 0 the row is empty whatever the scores are, so the relation decides nothing."""
    cut = {**free("scores(h)"), "origin": "call", "source": "scores(h)", "reads": ["h"]}
    target = call(
        "softmax",
        call("where", {"k": "cmp", "op": ">", "l": inp("h"), "r": const(0.0)}, inp("scores(h)"),
             const("-inf")),
    )  # fmt: skip
    probe = expr("TNL303", target, [free("h"), cut])
    witness = {"status": "confirmed", "symptom": "nan-value", "dtype": "float32",
               "inputs": {"h": 0.0, "scores(h)": 1.0}, "detail": "seen"}  # fmt: skip
    assert review_related(probe, witness)["status"] == "confirmed"
    tied = call("softmax", call("where", {"k": "cmp", "op": ">", "l": inp("h"), "r": const(0.0)},
                                inp("scores(h)"), call("log", inp("scores(h)"))))  # fmt: skip
    witness = {**witness, "inputs": {"h": 0.0, "scores(h)": 0.0}}
    out = review_related(expr("TNL303", tied, [free("h"), cut]), witness)
    assert out["status"] == "inconclusive" and "independently" in out["detail"], out


def test_logical_ops_read_a_numeric_mask_as_where_does():
    """An opaque mask input is a float in the probe: non-zero is true, as tf.where reads it."""
    target = call("where", call("logical_and", inp("a"), inp("b")), inp("s"), const("-inf"))
    program = build(expr("TNL303", target, [free("a"), free("b"), free("s")]), "float32")
    values = flat(run(program, np.array([[1.0, 0.0, 2.0], [2.0, -1.0, 2.0]]))["t"])
    assert values[0][0] == float("-inf") and values[1][0] == 2.0


def test_a_source_the_symptom_ignores_still_ties_the_value_computed_from_it():
    """`ratio(x)` = -1 breaks the division whatever `x` is, but that says nothing of whether
    any `x` makes `ratio(x)` -1: the relation stands (a Bessel-function ratio is never -1)."""
    cut = {**free("ratio(x)"), "origin": "call", "source": "ratio(x)", "reads": ["x"]}
    target = call(
        "reciprocal", binop("*", call("abs", inp("x")), binop("+", inp("ratio(x)"), const(1.0)))
    )
    probe = expr("TNL206", target, [free("x"), cut])
    witness = {"status": "confirmed", "symptom": "inf-value", "dtype": "float32",
               "inputs": {"x": -1.0, "ratio(x)": -1.0}, "detail": "seen"}  # fmt: skip
    out = review_related(probe, witness)
    assert out["status"] == "inconclusive" and "independently" in out["detail"], out
