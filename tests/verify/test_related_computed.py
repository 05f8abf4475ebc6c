"""A witness must not set a cut value apart from another cut value it is computed from, even
when the symptom does not rest on the second (round 18 review, mechanism 3): ``g(n)`` = -100 at
``n`` = 1 is no state of the program whatever ``n`` the symptom takes.  A cut value whose
arguments the witness does not set still gives its condition."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from probe_helpers import expr
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
