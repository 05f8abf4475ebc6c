"""What the user reads is true (issue 24): one word per status in every output, notes that name
the rules and flags behind hidden findings, and bad input that is reported, never passed."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, run_cli, run_json

from tfnumlint.model import STATUSES, FileError, Finding, Report, Verification
from tfnumlint.report import FORMATS, render, statistics
from tfnumlint.ruledocs import all_docs

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""

# TNL502 (rules/TNL502.md's example): on by default, shown only when its simulation confirms it
NO_CLIPPING = """\
import tensorflow as tf

model = tf.keras.Sequential([
    tf.keras.Input(shape=(20,)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(1),
])
model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=0.01),
    loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
)
"""

# Other words a report could use for a status; none of them may appear in any output.
SYNONYMS = re.compile(r"not verified|unverified|unconfirmed|undecided", re.I)


def _finding(status: str, line: int) -> Finding:
    return Finding(
        path="m.py",
        line=line,
        column=5,
        end_line=line,
        end_column=20,
        rule="TNL102",
        name="log-epsilon-unclipped",
        severity="warning",
        message="log(x + eps) guards only the forward value",
        source_line="    tf.math.log(x + eps)",
        verification=Verification(status, "at x = 0, the gradient is 1e10")
        if status != "skipped"
        else Verification(),
    )


def _every_status_report() -> Report:
    findings = [_finding(s, i + 1) for i, s in enumerate(STATUSES)]
    return Report(findings, [FileError("bad.py", "syntax error at line 1")], 2, 0.1)


def _outputs(report: Report) -> dict[str, str]:
    out = {fmt: render(fmt, report) for fmt in FORMATS}
    out["statistics"] = statistics.render_text(report)
    out["statistics-json"] = statistics.render_json(report)
    return out


@pytest.mark.parametrize("fmt", [*FORMATS, "statistics", "statistics-json"])
def test_no_output_names_a_status_by_another_word(fmt):
    text = _outputs(_every_status_report())[fmt]
    assert not SYNONYMS.search(text), text


@pytest.mark.parametrize("fmt", ["text", "concise", "statistics"])
def test_the_text_summaries_count_every_status_by_its_json_word(fmt):
    report = _every_status_report()
    text = _outputs(report)[fmt]
    counts = json.loads(render("json", report))["summary"]["by_status"]
    assert counts == dict.fromkeys(STATUSES, 1)
    last = text.strip().splitlines()[-1]
    assert ", ".join(f"1 {s}" for s in STATUSES) in last, last


def test_no_verify_summary_says_skipped(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "risky.py", cwd=tmp_path)
    assert proc.stdout.splitlines()[-1].startswith("Found 1 finding (1 skipped) in 1 file.")
    stats = run_cli("--no-verify", "--statistics", "risky.py", cwd=tmp_path).stdout
    assert stats.splitlines()[-1].split("total")[1].strip() == "1 skipped"


# --- notes about hidden findings -------------------------------------------------------------


def test_a_gated_rule_note_names_the_rule_and_the_flag(tmp_path, write):
    write("train.py", NO_CLIPPING)
    proc = run_cli("--no-verify", "train.py", cwd=tmp_path)
    assert (
        "note: 1 TNL502 finding hidden: TNL502 is shown only when its simulation confirms it; "
        "`--select TNL502` shows it"
    ) in proc.stdout
    shown = run_json("--no-verify", "--select", "TNL502", "train.py", cwd=tmp_path)
    assert [f["rule"] for f in shown["findings"]] == ["TNL502"]  # the flag does what it says


def test_a_refuted_note_names_the_rule_and_the_flag(tmp_path, write):
    pytest.importorskip("tensorflow")
    write(  # tests/verify/test_downstream.py: a ratio only compared in a where is refuted
        "ratio.py",
        """\
        import tensorflow as tf


        def propose(a, b, c, t):
            xi = (a - b) / (c - b)
            return tf.where(tf.math.sqrt(xi) > 0.5, t, 0.5)
        """,
    )
    proc = run_cli("ratio.py", cwd=tmp_path)
    assert "note: 1 refuted finding hidden (TNL201); `--show-refuted` shows it" in proc.stdout
    shown = run_json("--show-refuted", "ratio.py", cwd=tmp_path)
    assert [(f["rule"], f["verification"]["status"]) for f in shown["findings"]] == [
        ("TNL201", "refuted")
    ]


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('print "hello"\n', "bad.py: error: Python 2 syntax at line 1"),
        ("def f(:\n", "bad.py: error: syntax error at line 1"),
    ],
)
def test_a_syntax_error_without_tensorflow_is_an_error(tmp_path, write, content, message):
    write("bad.py", content)
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stdout
    assert "All clear" not in proc.stdout
    assert "TNL102" in proc.stdout  # the other file is still linted
    report = run_json("--no-verify", "bad.py", cwd=tmp_path)
    assert [e["path"] for e in report["errors"]] == ["bad.py"]


def test_a_valid_file_without_tensorflow_is_still_clear(tmp_path, write):
    write("util.py", "def f(x):\n    return x + 1\n")
    proc = run_cli("--no-verify", "util.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All clear" in proc.stdout


def test_a_bad_cell_of_a_notebook_without_tensorflow_is_an_error(tmp_path, write):
    cells = [
        {"cell_type": "code", "source": ["x = 1\n"], "metadata": {}, "outputs": []},
        {"cell_type": "code", "source": ["def f(:\n"], "metadata": {}, "outputs": []},
    ]
    write("nb.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    proc = run_cli("--no-verify", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nb.ipynb: error: cell 2: syntax error" in proc.stdout
    assert "the other cells were analysed" not in proc.stdout  # they were read, not analysed


def test_a_missing_path_among_several_is_an_error_for_that_path(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "risky.py", "gone.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "gone.py: error: no such file or directory" in proc.stdout
    assert "TNL102" in proc.stdout  # the rest is still linted and reported
    assert proc.stdout.splitlines()[-1].endswith("1 path named on the command line does not exist.")
    report = run_json("--no-verify", "risky.py", "gone.py", cwd=tmp_path)
    assert report["errors"] == [{"path": "gone.py", "message": "no such file or directory"}]
    assert [f["rule"] for f in report["findings"]] == ["TNL102"]
    assert report["summary"]["files"] == 1


# --- advice on unsettled findings ------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(all_docs()))
def test_every_rule_has_one_short_line_of_advice_taken_from_its_doc(code):
    doc = all_docs()[code]
    assert doc.advice and "\n" not in doc.advice and len(doc.advice) <= 130, doc.advice
    body = doc.text.split("---\n", 2)[-1]
    for op in re.findall(r"tf(?:\.\w+)+", doc.advice):  # the ops it names are the doc's own
        assert op in body, (code, op)


def test_an_inconclusive_finding_ends_with_its_rules_advice_in_every_format():
    report = _every_status_report()
    advice = all_docs()["TNL102"].advice
    lines = render("text", report).splitlines()
    verdicts = [i for i, line in enumerate(lines) if line.lstrip().startswith("= verified")]
    helps = [i for i, line in enumerate(lines) if "= help: " in line]
    inconclusive = next(i for i in verdicts if "verified inconclusive" in lines[i])
    assert helps == [inconclusive + 1]  # under its verdict; not under confirmed nor refuted
    assert lines[inconclusive + 1].endswith(f"= help: {advice}")
    data = json.loads(render("json", report))
    assert [f["advice"] for f in data["findings"]] == [advice] * len(STATUSES)
    sarif_results = json.loads(render("sarif", report))["runs"][0]["results"]
    assert [r["properties"]["advice"] for r in sarif_results] == [advice] * len(STATUSES)
    assert [("help: " + advice) in r["message"]["text"] for r in sarif_results] == [
        s == "inconclusive" for s in STATUSES
    ]
    github_lines = render("github", report).splitlines()
    assert sum(f"help: {advice}" in line for line in github_lines) == 1


def test_the_cli_prints_the_advice_under_an_inconclusive_verdict(tmp_path, write):
    pytest.importorskip("tensorflow")
    write(  # examples/metric_learning.py: nothing shows what the callers pass
        "masked.py",
        """\
        import tensorflow as tf


        def masked_log(x):
            return tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))
        """,
    )
    report = run_json("masked.py", cwd=tmp_path)
    [f] = report["findings"]
    assert (f["rule"], f["verification"]["status"]) == ("TNL302", "inconclusive")
    assert f["advice"] == all_docs()["TNL302"].advice
    lines = run_cli("masked.py", cwd=tmp_path).stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if "= verified inconclusive" in line)
    assert lines[verdict + 1] == f"  = help: {f['advice']}"


# --- baseline counts -------------------------------------------------------------------------


def _wrote(stderr: str) -> re.Match:
    m = re.search(r"wrote (\d+) findings in \d+ files? to \S+ \((.*)\)\n", stderr)
    assert m, stderr
    return m


def test_a_baseline_counts_what_it_records_and_what_a_run_shows(tmp_path):
    for example in ("autoencoder_keras.py", "autoencoder_tf1.py", "metric_learning.py"):
        (tmp_path / example).write_text((ROOT / "examples" / example).read_text())
    plain = run_json("--no-verify", ".", cwd=tmp_path)["findings"]
    merged = sum(len(f.get("related_rules", [])) for f in plain)
    gated = run_json("--no-verify", "--select", "TNL502", ".", cwd=tmp_path)["findings"]
    assert merged and gated  # the examples merge hazards and hold TNL502 findings

    wrote = run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=tmp_path)
    entries = json.loads((tmp_path / "b.json").read_text())["findings"]
    m = _wrote(wrote.stderr)
    assert int(m.group(1)) == len(entries) == len(plain) + merged + len(gated)
    assert m.group(2) == (
        f"a --no-verify run shows {len(plain)}; {merged} merged into another rule's finding "
        f"on the same hazard, {len(gated)} of TNL502, shown only when its simulation confirms it"
    )
    assert sum(e["shown"] for e in entries) == len(plain)

    gate = run_cli("--no-verify", "--baseline", "b.json", ".", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout
    assert gate.stdout.splitlines()[-1] == (
        f"All clear: no findings in 3 files. {len(entries)} hidden by the baseline, "
        f"{len(plain)} of them would be shown."
    )
    summary = run_json("--no-verify", "--baseline", "b.json", ".", cwd=tmp_path)["summary"]
    assert summary["hidden"] == {"baseline": len(entries)}
    assert summary["hidden_would_show"] == {"baseline": len(plain)}


def test_a_baseline_written_unverified_says_so_to_a_verifying_gate(tmp_path, write):
    write("risky.py", RISKY)
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=tmp_path).returncode == 0
    gate = run_cli("--baseline", "b.json", ".", cwd=tmp_path)  # verifies: nothing is shown
    assert gate.stdout.splitlines()[-1].endswith(
        "1 hidden by the baseline, 1 of them would be shown by a --no-verify run."
    )


def test_an_older_baseline_without_shown_flags_only_counts_what_it_hides(tmp_path, write):
    write("risky.py", RISKY)
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=tmp_path).returncode == 0
    data = json.loads((tmp_path / "b.json").read_text())
    for entry in data["findings"]:
        del entry["shown"]
    (tmp_path / "b.json").write_text(json.dumps(data))
    gate = run_cli("--no-verify", "--baseline", "b.json", ".", cwd=tmp_path)
    assert gate.stdout.splitlines()[-1].endswith(" 1 hidden by the baseline.")


def test_a_verified_baseline_counts_refuted_findings_as_not_shown(tmp_path, write):
    pytest.importorskip("tensorflow")
    write("risky.py", RISKY)
    write(
        "ratio.py",
        """\
        import tensorflow as tf


        def propose(a, b, c, t):
            xi = (a - b) / (c - b)
            return tf.where(tf.math.sqrt(xi) > 0.5, t, 0.5)
        """,
    )
    shown = run_json(".", cwd=tmp_path)["findings"]
    assert [f["rule"] for f in shown] == ["TNL102"]  # the TNL201 finding is refuted
    wrote = run_cli("--write-baseline", "b.json", ".", cwd=tmp_path)
    assert (
        _wrote(wrote.stderr)
        .group(0)
        .startswith("wrote 2 findings in 2 files to b.json (1 shown now; 1 refuted)")
    )
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["verified"] is True
    gate = run_cli("--baseline", "b.json", ".", cwd=tmp_path)
    assert gate.stdout.splitlines()[-1].endswith(
        "2 hidden by the baseline, 1 of them would be shown."
    )
