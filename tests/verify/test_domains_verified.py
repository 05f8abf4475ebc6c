"""Issue #11 end to end in TensorFlow: domains filter the probe points, and gradient-only
symptoms count only where a gradient flows (in-process TF)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402


def verify(probe):
    return probing.verify(probe, 1e6)


def _interval_division(relations=None, domains=None):
    target = binop("/", inp("x"), binop("-", inp("high"), inp("low")))
    probe = expr("TNL201", target, [free("x"), free("high"), free("low")])
    if relations:
        probe["relations"] = relations
    if domains:
        probe["domains"] = domains
    return probe


def test_without_domains_the_degenerate_interval_confirms():
    assert verify(_interval_division())["status"] == "confirmed"


def test_a_named_interval_makes_it_inconclusive_with_the_reason():
    rel = {
        "a": "high",
        "op": ">",
        "b": "low",
        "why": "`high`/`low` by their names",
        "strong": False,
    }
    out = verify(_interval_division(relations=[rel]))
    assert out["status"] == "inconclusive"
    assert out["detail"].startswith("breaks only if `high` <= `low`")
    assert "by their names rules that out" in out["detail"]


def test_an_asserted_interval_refutes():
    rel = {
        "a": "high",
        "op": ">",
        "b": "low",
        "why": "asserted by `assert_greater`",
        "strong": True,
    }
    out = verify(_interval_division(relations=[rel]))
    assert out["status"] == "refuted"
    assert "assert_greater" in out["detail"]


def test_sqrt_of_an_accumulator_of_squares_refutes():
    target = call("sqrt", binop("+", inp("accum"), call("square", inp("g"))))
    probe = expr("TNL202", target, [free("accum"), free("g")])
    assert verify(probe)["status"] == "confirmed"  # accum = -1, g = 1: sqrt(0)
    probe["domains"] = [
        {
            "name": "accum",
            "lo": 0.0,
            "hi": "inf",
            "lo_open": False,
            "why": "its producer `accum + square(g)`",
            "strong": True,
        }
    ]
    out = verify(probe)
    # accum = 0, g = 0 is still inside the domain: sqrt(0) has an infinite gradient there
    assert out["status"] == "confirmed" and out["inputs"]["accum"] >= 0


def test_a_norm_in_an_optimizer_update_is_not_confirmed_for_its_gradient():
    probe = expr("TNL203", call("norm", inp("param")), [free("param")])
    assert verify(probe)["symptom"] == "nan-gradient"
    probe["no_gradient"] = "it is in the optimizer/variable update `_resource_apply_dense`"
    out = verify(probe)
    assert out["status"] == "refuted"
    assert "no gradient flows here" in out["detail"]


def test_a_forward_inf_in_an_optimizer_update_still_confirms():
    probe = expr("TNL201", binop("/", const(1.0), inp("d")), [free("d")])
    probe["no_gradient"] = "it is in the optimizer/variable update `_resource_apply_dense`"
    out = verify(probe)
    assert (out["status"], out["symptom"]) == ("confirmed", "inf-value")
