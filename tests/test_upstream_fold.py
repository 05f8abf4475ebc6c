"""One hazard, one finding across nested expressions: a finding whose witness shows its
flagged op's operand already inf/NaN, coming from another finding, is folded into that one
(grouping.fold_upstream, on the mark the verifier leaves: verify/upstream.py)."""

from __future__ import annotations

import pytest
from conftest import run_json

from tfnumlint.grouping import fold_upstream
from tfnumlint.model import Finding, Verification

SNIPPETS = """\
import tensorflow as tf


def nested(x, a):
    x = tf.convert_to_tensor(x)
    inv = tf.math.log(tf.reduce_mean(x)) - tf.reduce_mean(tf.math.log(x))
    return (tf.math.log(a / inv) - 1.0) / (inv * (1.0 + tf.square(a / inv)))


def independent(a, b, c, d):
    a = tf.convert_to_tensor(a)
    return (a - b) / (c - d) + (a - c) / (b - d)


def interpolate(fa, fb, fc):
    fa = tf.convert_to_tensor(fa)
    return fa / (fb - fa) * fc / (fb - fc)


def newton_step(x):
    x = tf.convert_to_tensor(x)
    log_mean = tf.math.log(tf.reduce_mean(x))
    mean_log = tf.reduce_mean(tf.math.log(x))
    inv = 2.0 * (log_mean - mean_log)
    shape = 1.0 / inv
    return (tf.math.log(shape) - tf.math.digamma(shape)) / (inv * (1.0 + tf.square(shape)))
"""
LINE = {"nested": 7, "independent": 12, "interpolate": 17, "shape": 25, "step": 26}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("fold")
    (root / "m.py").write_text(SNIPPETS)
    env = {"TFNUMLINT_CACHE_DIR": str(root / "cache")}
    return run_json("--exit-zero", str(root / "m.py"), env=env)["findings"]


def on(findings, line):
    return [f for f in findings if f["line"] == line]


def test_nested_divisions_on_one_statement_are_one_finding(report):
    """The outer division's divisor is 0 only where `a / inv` is already inf: one hazard,
    reported at the inner division with the outer one listed as related."""
    shown = [(f["column"], f["rule"]) for f in on(report, LINE["nested"])]
    assert (12, "TNL201") not in shown  # the outer division, folded
    inner = next(f for f in on(report, LINE["nested"]) if f["column"] == 25)
    assert [(r["line"], r["column"], r["rule"]) for r in inner["related"]] == [
        (LINE["nested"], 12, "TNL201")
    ]
    assert "carries on to TNL201" in inner["message"]


def test_two_independent_divisions_stay_two(report):
    assert len(on(report, LINE["independent"])) == 2


def test_an_outer_division_with_a_witness_of_its_own_stays(report):
    """`fb == fc` with `fa != fb` breaks the outer division alone: a separate hazard."""
    assert len(on(report, LINE["interpolate"])) == 2


def test_a_symptom_from_an_earlier_statement_joins_its_finding(report):
    """`shape = 1.0 / inv` is inf when inv = 0; the next line's division only carries it."""
    assert on(report, LINE["step"]) == []
    (upstream,) = on(report, LINE["shape"])
    assert upstream["rule"] == "TNL206"
    assert upstream["related_rules"] == ["TNL201"]  # --select/--ignore/noqa codes stay
    assert [(r["line"], r["rule"]) for r in upstream["related"]] == [(LINE["step"], "TNL201")]


def test_selecting_the_folded_rule_alone_still_reports_it(tmp_path):
    """With TNL206 not selected there is no upstream finding to fold into."""
    (tmp_path / "m.py").write_text(SNIPPETS)
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    found = run_json("--exit-zero", "--select", "TNL201", str(tmp_path / "m.py"), env=env)
    assert [f["rule"] for f in on(found["findings"], LINE["step"])] == ["TNL201"]


# ---------------------------------------------------------------- the fold on plain findings


def finding(line, column, end, status="confirmed", rule="TNL201", mark=None, probe_at=None):
    observed = {"upstream": mark} if mark else None
    target = {"k": "bin", "op": "/", "line": line, "col": column}
    if probe_at is not None:  # the operand the mark names, holding the inner expression
        target["l"] = {"k": "bin", "op": "*", "l": probe_at, "line": line, "col": column}
        target["r"] = {"k": "input", "name": "d"}
    return Finding(
        "m.py", line, column, line, end, rule, "n", "error", "msg",
        verification=Verification(status=status, observed=observed),
        probe={"target": target},
    )  # fmt: skip


MARK = {"op": "division", "operand": "numerator", "index": 0, "expr": "q * c", "value": "inf"}
INNER = {"k": "bin", "op": "/", "line": 3, "col": 5}


def test_fold_keeps_the_upstream_finding_and_drops_the_carrier():
    inner = finding(3, 5, 12)
    outer = finding(3, 5, 20, status="inconclusive", mark=MARK, probe_at=INNER)
    assert fold_upstream([inner, outer]) == [inner]
    assert inner.related and inner.related[0]["column"] == 5


def test_a_refuted_upstream_finding_leaves_the_carrier_shown():
    """Hiding the carrier with a refuted upstream one would hide the symptom silently."""
    inner = finding(3, 5, 12, status="refuted")
    outer = finding(3, 5, 20, status="inconclusive", mark=MARK, probe_at=INNER)
    assert fold_upstream([inner, outer]) == [inner, outer]


def test_no_mark_no_fold():
    inner = finding(3, 5, 12)
    outer = finding(3, 5, 20, probe_at=INNER)
    assert fold_upstream([inner, outer]) == [inner, outer]


def test_a_finding_outside_the_marked_operand_is_not_upstream():
    inner = finding(3, 5, 12)
    elsewhere = {"k": "bin", "op": "/", "line": 3, "col": 30}
    outer = finding(3, 5, 20, status="inconclusive", mark=MARK, probe_at=elsewhere)
    assert fold_upstream([inner, outer]) == [inner, outer]


def test_a_chain_folds_into_its_first_finding():
    """`a / b / c / d`: every division starts at one column; each folds into the nearest one
    inside it, never into the one that contains it."""
    first = finding(3, 5, 12)
    second = finding(3, 5, 20, mark=MARK, probe_at=INNER)
    third = finding(3, 5, 30, mark=MARK, probe_at=INNER)
    assert fold_upstream([first, second, third]) == [first]
    assert [r["column"] for r in first.related or []] == [5, 5]
