"""Adopting the gate on an existing codebase: baseline, --diff-base, --fail-on, end to end in git."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from conftest import run_cli, run_json

from tfnumlint.cli import main

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]


def git(cwd, *args):
    return subprocess.run(
        ["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def legacy_function(i: int) -> str:
    """Two findings: TNL202 (sqrt of a sum of squares) and TNL102 (log of p + eps)."""
    return textwrap.dedent(
        f"""\
        def loss_{i}(p_pred, a, b):
            d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
            return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d
        """
    )


def module(functions: list[str]) -> str:
    return "import tensorflow as tf\n\n\n" + "\n\n".join(functions)


NEW_HAZARD = textwrap.dedent(
    """\
    def fresh(q):
        return tf.math.log(q + 1e-10)
    """
)


@pytest.fixture
def legacy_repo(tmp_path):
    """A git repository with 20 legacy findings in two files, committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "legacy.py").write_text(module([legacy_function(i) for i in range(7)]))
    (repo / "metrics.py").write_text(module([legacy_function(i) for i in range(10, 13)]))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "legacy")
    return repo


def shown(repo, *args) -> list[dict]:
    return run_json("--no-verify", *args, cwd=repo)["findings"]


def test_adopting_the_gate_end_to_end(legacy_repo):
    repo = legacy_repo
    before = run_json("--no-verify", ".", cwd=repo)
    assert len(before["findings"]) == 20
    assert {f["rule"] for f in before["findings"]} == {"TNL102", "TNL202"}

    # 1. record the legacy findings; the gate then passes
    wrote = run_cli("--no-verify", "--write-baseline", "tfnumlint-baseline.json", ".", cwd=repo)
    assert wrote.returncode == 0, wrote.stderr
    assert "wrote 20 findings in 2 files to tfnumlint-baseline.json" in wrote.stderr
    gate = run_cli("--no-verify", "--baseline", "tfnumlint-baseline.json", ".", cwd=repo)
    assert gate.returncode == 0, gate.stdout
    assert "20 hidden by the baseline, 20 of them would be shown." in gate.stdout
    git(repo, "add", "tfnumlint-baseline.json")
    git(repo, "commit", "-q", "-m", "baseline")

    # 2. a new commit adds one hazard (the same expression as 7 legacy ones, in a new function)
    functions = [legacy_function(i) for i in range(7)]
    functions.insert(3, NEW_HAZARD)
    (repo / "legacy.py").write_text(module(functions))
    git(repo, "commit", "-q", "-am", "new hazard")
    new_line = module(functions).splitlines().index("    return tf.math.log(q + 1e-10)") + 1
    gate = run_cli("--no-verify", "--baseline", "tfnumlint-baseline.json", ".", cwd=repo)
    assert gate.returncode == 1
    findings = shown(repo, "--baseline", "tfnumlint-baseline.json", ".")
    assert [(f["path"], f["line"], f["rule"]) for f in findings] == [
        ("legacy.py", new_line, "TNL102")
    ]

    # 3. --diff-base HEAD~1 shows only the new line, with or without the baseline
    for extra in ([], ["--baseline", "tfnumlint-baseline.json"]):
        findings = shown(repo, "--diff-base", "HEAD~1", *extra, ".")
        assert [(f["path"], f["line"]) for f in findings] == [("legacy.py", new_line)]

    # 4. moving an old function down by 30+ lines does not resurface its findings
    moved = [legacy_function(i) for i in range(1, 7)]
    moved.insert(3, NEW_HAZARD)
    moved.append("\n" * 30 + legacy_function(0))
    (repo / "legacy.py").write_text(module(moved))
    lines = module(moved).splitlines()
    old_line = lines.index("def loss_0(p_pred, a, b):") + 1
    assert old_line > 30 + 4
    fresh_line = lines.index("    return tf.math.log(q + 1e-10)") + 1
    findings = shown(repo, "--baseline", "tfnumlint-baseline.json", ".")
    assert [(f["path"], f["line"], f["rule"]) for f in findings] == [
        ("legacy.py", fresh_line, "TNL102")
    ]


def test_baseline_counts_stale_entries_and_ignores_files_not_analysed(legacy_repo):
    repo = legacy_repo
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=repo).returncode == 0
    (repo / "legacy.py").write_text(module([legacy_function(i) for i in range(5)]))  # 2 fixed
    report = run_json("--no-verify", "--baseline", "b.json", ".", cwd=repo)
    assert report["findings"] == []
    assert report["summary"]["hidden"] == {"baseline": 16}
    assert report["summary"]["baseline_stale"] == 4
    text = run_cli("--no-verify", "--baseline", "b.json", ".", cwd=repo).stdout
    assert "4 baseline entries match no finding any more" in text
    # linting one file does not call the other file's entries stale
    only = run_json("--no-verify", "--baseline", "b.json", "metrics.py", cwd=repo)
    assert only["summary"]["baseline_stale"] == 0
    # a deleted file's entries are stale whatever is linted
    (repo / "legacy.py").unlink()
    only = run_json("--no-verify", "--baseline", "b.json", "metrics.py", cwd=repo)
    assert only["summary"]["baseline_stale"] == 14


def test_baseline_from_config_is_relative_to_the_config(legacy_repo):
    repo = legacy_repo
    (repo / "pyproject.toml").write_text('[tool.tfnumlint]\nbaseline = "ci/baseline.json"\n')
    assert (
        run_cli("--no-verify", "--write-baseline", "ci/baseline.json", ".", cwd=repo).returncode
        == 0
    )
    assert json.loads((repo / "ci/baseline.json").read_text())["version"] == 1
    sub = repo / "sub"
    sub.mkdir()
    proc = run_cli("--no-verify", "..", cwd=sub)  # config found upwards, baseline beside it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "20 hidden by the baseline, 20 of them would be shown." in proc.stdout


def test_fingerprints_ignore_layout_and_comments(tmp_path):
    from tfnumlint.fingerprint import normalise

    assert normalise("tf.math.log(p +  1e-10)") == normalise("tf.math.log(\n  p + 1e-10  # eps\n)")
    assert normalise("tf.math.log(p + 1e-10)") != normalise("tf.math.log(q + 1e-10)")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "baseline file not found"),
        ("{not json", "is not valid JSON"),
        ('{"version": 99, "findings": []}', "is not a tfnumlint baseline"),
    ],
)
def test_a_bad_baseline_is_a_usage_error(tmp_path, content, message):
    (tmp_path / "a.py").write_text(module([legacy_function(0)]))
    if content is not None:
        (tmp_path / "b.json").write_text(content)
    proc = run_cli("--no-verify", "--baseline", "b.json", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_diff_base_includes_uncommitted_and_untracked_changes(legacy_repo):
    repo = legacy_repo
    text = (repo / "legacy.py").read_text() + "\n\n" + NEW_HAZARD
    (repo / "legacy.py").write_text(text)  # uncommitted edit
    (repo / "untracked.py").write_text(module([legacy_function(99)]))
    findings = shown(repo, "--diff-base", "HEAD", ".")
    got = sorted((f["path"], f["rule"]) for f in findings)
    assert got == [("legacy.py", "TNL102"), ("untracked.py", "TNL102"), ("untracked.py", "TNL202")]
    report = run_json("--no-verify", "--diff-base", "HEAD", ".", cwd=repo)
    assert report["summary"]["hidden"] == {"diff_base": 20}


def test_diff_base_outside_git_or_with_a_bad_revision_is_a_usage_error(tmp_path, legacy_repo):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text(module([legacy_function(0)]))
    proc = run_cli("--no-verify", "--diff-base", "HEAD", ".", cwd=plain)
    assert proc.returncode == 2
    assert "--diff-base needs a git repository" in proc.stderr
    proc = run_cli("--no-verify", "--diff-base", "no-such-rev", ".", cwd=legacy_repo)
    assert proc.returncode == 2
    assert "unknown git revision 'no-such-rev'" in proc.stderr


# --- --fail-on and --exit-zero ----------------------------------------------------------------

WARNING_ONLY = module(["def f(p):\n    return tf.math.log(p + 1e-10)\n"])  # TNL102: warning
WITH_ERROR = module([legacy_function(0)])  # + TNL202: error


def test_fail_on_error_ignores_warnings(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.py").write_text(WARNING_ONLY)
    assert main(["--no-verify", "--no-cache", "--fail-on", "error", "w.py"]) == 0
    assert main(["--no-verify", "--no-cache", "--fail-on", "any", "w.py"]) == 1
    assert main(["--no-verify", "--no-cache", "w.py"]) == 1  # any is the default
    (tmp_path / "e.py").write_text(WITH_ERROR)
    assert main(["--no-verify", "--no-cache", "--fail-on", "error", "e.py"]) == 1
    out = capsys.readouterr().out
    assert "TNL102" in out  # warnings are still shown


def test_fail_on_confirmed_needs_verification(tmp_path):
    (tmp_path / "w.py").write_text(WARNING_ONLY)
    proc = run_cli("--no-verify", "--fail-on", "confirmed", "w.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--fail-on confirmed needs verification" in proc.stderr


# A hazard on a training path: a training step differentiates `gap` (a function with no
# caller in the project would be conditional, an inconclusive finding that never fails the run).
CONFIRMED = """\
import tensorflow as tf

embed = tf.keras.Sequential([tf.keras.layers.Dense(8)])


def gap(a, b):
    return tf.reduce_mean(tf.norm(a - b, axis=-1))


def train_step(x, y):
    with tf.GradientTape() as tape:
        value = gap(embed(x), embed(y))
    return tape.gradient(value, embed.trainable_variables)
"""


def test_fail_on_confirmed_with_real_verification(tmp_path):
    """Verification runs here: --fail-on confirmed depends on its verdicts (the norm of two
    embeddings of a training step: its NaN gradient at a == b confirms)."""
    (tmp_path / "a.py").write_text(CONFIRMED)
    proc = run_cli("--select", "TNL203", "--fail-on", "confirmed", "a.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "= verified confirmed" in proc.stdout


@pytest.mark.parametrize(
    ("statuses", "fail_on", "code"),
    [
        (["inconclusive", "inconclusive"], "confirmed", 0),
        (["inconclusive", "confirmed"], "confirmed", 1),
        (["inconclusive", "inconclusive"], "any", 1),
        (["refuted", "refuted"], "any", 0),  # refuted findings are hidden, so they never fail
    ],
)
def test_fail_on_decides_by_verdict(tmp_path, monkeypatch, capsys, statuses, fail_on, code):
    """The exit policy alone, with the verifier's verdicts stubbed."""
    import importlib.util

    from tfnumlint.model import Verification
    from tfnumlint.verify import runner

    def fake_verify(findings, settings, cache_dir, workers=1):
        for f, status in zip(sorted(findings, key=lambda f: f.sort_key), statuses, strict=True):
            f.verification = Verification(status, "stubbed")
        return []

    monkeypatch.setattr(runner, "verify_findings", fake_verify)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "tensorflow" else real_find_spec(name, *a),
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.py").write_text(WITH_ERROR)
    assert main(["--no-cache", "--fail-on", fail_on, "e.py"]) == code
    out = capsys.readouterr().out
    assert ("stubbed" in out) == (statuses[0] != "refuted")


def test_reformatting_a_legacy_expression_does_not_resurface_it(legacy_repo):
    repo = legacy_repo
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=repo).returncode == 0
    text = (repo / "metrics.py").read_text()
    wrapped = text.replace(
        "    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d\n",
        "    return -tf.reduce_mean(\n        tf.math.log(\n            p_pred  # predictions\n"
        "            + 1e-10\n        )\n    ) + d\n",
        1,
    )
    assert wrapped != text
    (repo / "metrics.py").write_text("# a new header comment\n\n" + wrapped)
    report = run_json("--no-verify", "--baseline", "b.json", ".", cwd=repo)
    assert report["findings"] == []
    assert report["summary"]["hidden"] == {"baseline": 20}
    assert report["summary"]["baseline_stale"] == 0


def test_editors_see_the_baseline_through_stdin(legacy_repo):
    """An editor piping the buffer in gets the same answer as the gate."""
    import os
    import sys

    repo = legacy_repo
    (repo / "pyproject.toml").write_text('[tool.tfnumlint]\nbaseline = "b.json"\n')
    assert run_cli("--no-verify", "--write-baseline", "b.json", ".", cwd=repo).returncode == 0
    buffer = (repo / "legacy.py").read_text() + "\n\n" + NEW_HAZARD
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "tfnumlint", "--no-verify", "--format", "json", "-"),
            *("--stdin-filename", str(repo / "legacy.py")),  # editors pass the full path
        ],
        input=buffer,
        cwd=repo / "..",  # the editor's working directory need not be the project
        capture_output=True,
        text=True,
        env=dict(os.environ, TFNUMLINT_CACHE_DIR=str(repo / ".cache")),
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [f["line"] for f in report["findings"]] == [len(buffer.splitlines())]
    assert report["summary"]["hidden"] == {"baseline": 14}
