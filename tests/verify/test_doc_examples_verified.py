"""Every rule doc's Example, verified end to end through the CLI: the verdict users see.

One run over all 25 Examples (one TensorFlow worker).  Hazards that a probe can show must be
confirmed with a witness, except those whose witness needs a far tail or an empty selection
(inconclusive, as their docs say); TNL502's Example (one hidden layer under Adam at lr 0.01) keeps a calm
gradient norm and stays inconclusive; semantic rules stay skipped.  Nothing is refuted.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from tfnumlint.ruledocs import all_docs

NOT_DISTINGUISHED = {"TNL502"}  # the probe reports what it saw: inconclusive
NOT_PROBED = {"TNL503", "TNL504"}  # no numeric symptom to probe: skipped
# Examples whose symptom needs a precondition (verify/preconditions.py), said in their docs:
# a logit gap past 100 (far tail) or an empty mask.
PRECONDITION = {
    "TNL101": "past the float32 exp range",
    "TNL102": "past the float32 exp range",
    # the underlined `x * log(p_pred + 1e-10)` is itself stuck only once sigmoid underflows
    # (logit < -87): its old "confirmed" witness was the other term's (issue 24)
    "TNL103": "past the float32 exp range",
    "TNL201": "needs an empty selection",
    # a softmax over a -inf fill is NaN only in a row the mask empties (a library layer: the
    # data decide whether such a row occurs)
    "TNL303": "needs an empty selection",
    # `log(reduce_sum(exp(scores)))`: every score of a row at -100 (the scores are exponents)
    "TNL106": "past the float32 exp range",
}
# TNL204's Example was a helper nothing called, conditional on the sign of its own parameter;
# it is now called on a model's output by a training step that differentiates it: confirmed.


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    root = tmp_path_factory.mktemp("doc_examples")
    for code, doc in all_docs().items():
        (root / f"{code.lower()}.py").write_text(doc.code_block("Example"))
    proc = run_cli(
        "--format",
        "json",
        "--no-cache",
        "--show-refuted",
        "--select",
        "ALL",
        ".",
        cwd=root,
        timeout=1500,
    )
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    by_code: dict[str, list[dict]] = {}
    for f in report["findings"]:
        if f["path"] == f"{f['rule'].lower()}.py":  # the Example's own rule
            by_code.setdefault(f["rule"], []).append(f["verification"])
    return by_code


@pytest.mark.parametrize("code", sorted(all_docs()))
def test_doc_example_verdict(verdicts, code):
    results = verdicts.get(code)
    assert results, f"{code}: its own Example produced no finding"
    for v in results:
        if code in NOT_PROBED:
            assert v["status"] == "skipped", v
        elif code in PRECONDITION:
            assert v["status"] == "inconclusive", v
            assert PRECONDITION[code] in v["detail"], v
        elif code in NOT_DISTINGUISHED:
            assert v["status"] == "inconclusive", v
            assert "cannot tell" in v["detail"] or "control" in v["detail"], v
        else:
            assert v["status"] == "confirmed", v
            assert v.get("symptom"), v
            assert v.get("detail"), v
