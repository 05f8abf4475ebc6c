"""A witness must not set a cut value apart from another cut value it is computed from, even
when the symptom does not rest on the second (round 18 review, mechanism 3): ``g(n)`` = -100 at
``n`` = 1 is no state of the program whatever ``n`` the symptom takes; nor a value computed from
a masked input apart from the mask (``b`` = 0.5 where the mask zeroes what ``b`` is solved
from).  A cut value whose arguments the witness does not set still gives its condition."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from probe_helpers import expr
from test_reachability import probed
from test_related_inputs import HEADER, sliced

from tfnumlint.verify import probing
from tfnumlint.verify.related import review_related

RECIPROCAL = (
    "def f(c, m, a, mystery):\n"
    "    n = tf.repeat(c, m)\n"
    "    g = mystery.lbeta({args})\n"
    "    return tf.identity(1. / ((n + 1.) * tf.math.exp(g)))\n"
)


def probe_of(body: str) -> dict:
    sl, target = sliced(HEADER + body)
    return {**expr("TNL206", target, list(sl.inputs.values())), "unsupported": sl.unsupported}


def names(probe: dict) -> dict[str, dict]:
    return {s["name"]: s for s in probe["inputs"]}


def witness(inputs: dict, needed: list[str]) -> dict:
    return {"status": "confirmed", "symptom": "inf-value", "dtype": "float32", "inputs": inputs,
            "observed": {"needed": needed}, "detail": "seen"}  # fmt: skip


def test_a_cut_value_set_apart_from_the_cut_value_it_reads_is_no_state():
    """`lbeta(n + 1, 2)` = -100 beside `n` = 1: at any `n` the reciprocal overflows once the
    lbeta is -100 (so the symptom ignores `n`), but `n` = 1 gives lbeta = -1.8."""
    probe = probe_of(RECIPROCAL.format(args="n + 1., 2."))
    specs = names(probe)
    assert "n" in specs["g"]["reads"] and specs["n"]["reads"]  # both cut, one reads the other
    out = review_related(probe, witness({"n": 1.0, "g": -100.0}, ["g"]))
    assert out["status"] == "inconclusive", out
    assert "`g` = -100 and `n` = 1 independently" in out["detail"]


def test_a_cut_value_the_symptom_ignores_and_nothing_reads_is_still_left_out():
    """The guard: `n` is ignored by the symptom and `lbeta(a, 2)` does not read it, so the
    witness may set both, and the condition on the lbeta stands."""
    probe = probe_of(RECIPROCAL.format(args="a, 2."))
    assert "n" not in names(probe)["g"]["reads"]
    out = review_related(probe, witness({"n": 1.0, "g": -100.0}, ["g"]))
    assert out["status"] == "confirmed", out


def test_a_cut_value_of_unrelated_arguments_still_states_its_condition():
    """End to end: the verdict on `1/((n+1) exp(lbeta(a, 2)))` names the lbeta's value as the
    condition, not a relation the witness broke."""
    verdict = probing.verify(probe_of(RECIPROCAL.format(args="a, 2.")), 1e6)
    assert "independently" not in verdict["detail"], verdict["detail"]


def test_the_verdict_on_a_cut_value_of_a_cut_value_names_the_relation():
    verdict = probing.verify(probe_of(RECIPROCAL.format(args="n + 1., 2.")), 1e6)
    assert verdict["status"] == "inconclusive"
    assert "independently, though the first is computed from the second" in verdict["detail"]


SCALING = """import tensorflow as tf


def scaling(df, obs, is_missing, solver):
    df = tf.convert_to_tensor(df)
    obs = {masked}
    b = solver.solvevec(obs)
    b = tf.reduce_sum(b ** 2, axis=-1)
    n = tf.cast(tf.shape(obs)[-1], b.dtype)
    den = df - 2. + n - tf.cast(tf.math.count_nonzero(is_missing, axis=-1), b.dtype)
    return (df - 2. + b) / den
"""


def scaling_verdict(masked: str) -> dict:
    [finding] = [f for f in probed(SCALING.format(masked=masked), select=["TNL201"])]
    return probing.verify(finding.probe, 1e6)


def test_a_value_computed_from_a_masked_input_is_not_set_apart_from_the_mask():
    """`b` = solve(where(missing, 0, obs)) is 0 where every observation is missing: the
    witness's `b` = 0.5 beside `is_missing` = 1 is no state (the division's inf there rests
    on `b` != 0: at `b` = 0 it is 0/0)."""
    verdict = scaling_verdict("tf.where(is_missing, tf.zeros([], df.dtype), obs)")
    assert verdict["status"] == "inconclusive"
    assert verdict["detail"].startswith("sets `b` = "), verdict["detail"]
    assert "and `is_missing` = 1 independently" in verdict["detail"]


def test_without_the_mask_the_free_value_that_decides_is_named():
    """The guard: `b` computed from `obs` alone is no relation the witness breaks, and of the
    free inputs the condition names `df` = 2 (the denominator's zero), not `is_missing`, which
    only shares its value 1 with the count and keeps the symptom when moved alone."""
    detail = scaling_verdict("obs * 2.")["detail"].split(" (seen: ")[0]
    assert "independently" not in detail
    assert detail.startswith("needs `df` = 2;"), detail
