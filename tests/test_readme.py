"""The README tells the truth: its flag table is the parser's, and its CI recipe runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest
import yaml
from conftest import ROOT, run_cli

from tfnumlint.cli import build_parser
from tfnumlint.cli import main as cli_main
from tfnumlint.ruledocs import all_docs

README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def flag_table() -> dict[str, str]:
    """First cell of each row of the Usage table -> its description."""
    rows = {}
    for line in section("Usage").splitlines():
        m = re.fullmatch(r"\| (`.+?`(?:, `.+?`)*) \| (.+) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def _options():
    return [a for a in build_parser()._actions if a.option_strings != ["-h", "--help"]]


def test_readme_flag_table_matches_the_parser():
    rows = flag_table()
    by_first_name: dict[str, tuple[str, str]] = {}
    for cell, text in rows.items():
        names = re.findall(r"`([^`]+)`", cell)
        by_first_name[names[0].split()[0]] = (cell, text)
    seen = set()
    for action in _options():
        first = action.option_strings[0] if action.option_strings else "PATH"
        assert first in by_first_name, f"README flag table has no row for {first}"
        cell, text = by_first_name[first]
        seen.add(first)
        for name in action.option_strings:
            assert f"`{name}" in cell, f"{name} missing from the README row {cell}"
        if action.choices:
            assert "{" + ",".join(action.choices) + "}" in cell
        elif action.nargs != 0 and action.option_strings:
            assert (action.metavar or action.dest.upper()) in cell
        assert text == action.help, f"README and --help disagree on {first}"
    assert seen == set(by_first_name), (
        f"README rows for unknown options: {set(by_first_name) - seen}"
    )


def test_help_lists_every_option_and_points_at_explain():
    out = run_cli("--help").stdout
    for action in _options():
        for name in action.option_strings:
            assert name in out
    assert "--explain CODE" in out and "--list-rules" in out


def test_readme_rule_rows_agree_with_explain(capsys):
    """Each row against ``--explain``: the first through the real process, the others through
    the same ``main`` in-process (one interpreter start-up instead of 24)."""
    docs = all_docs()
    rows = re.findall(r"^\| \[(TNL\d{3})\]\(rules/TNL\d{3}\.md\) \| ([\w-]+) \|", README, re.M)
    assert {code for code, _ in rows} == set(docs)
    (code, name), *rest = rows
    proc = run_cli("--explain", code)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == f"# {code} · {name}"
    for code, name in rest:
        assert cli_main(["--explain", code]) == 0
        assert capsys.readouterr().out.splitlines()[0] == f"# {code} · {name}"


def test_readme_names_no_nonexistent_release():
    assert "rev: v0.1.0" not in README
    # a bare `pip install tfnumlint` would name a package index entry that does not exist
    assert not re.search(r"pip install [\"']?tfnumlint(\[tf\])?[\"']?\s(?!@)", README)
    installs = re.findall(r"pip install \"tfnumlint\[tf\] @ (git\+\S+)\"", README)
    assert installs and all(re.fullmatch(r"git\+https://\S+@COMMIT", i) for i in installs)
    assert "rev: COMMIT" in README and "git ls-remote" in README


# --- the GitHub Actions recipe, run as a script ------------------------------------------------

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]

LEGACY = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d
"""

NEW = """\
import tensorflow as tf


class Ratio(tf.keras.layers.Layer):
    def call(self, x, y):
        return x / tf.reduce_sum(tf.nn.relu(y))
"""


def git(cwd, *args):
    subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True)


def workflow_steps() -> list[str]:
    block = re.search(r"```yaml\n(# \.github/workflows/tfnumlint\.yml\n.*?)```", README, re.S)
    assert block, "README has no GitHub Actions recipe"
    steps = yaml.safe_load(block.group(1))["jobs"]["tfnumlint"]["steps"]
    return [s["run"] for s in steps if "run" in s]


@pytest.fixture
def pull_request(tmp_path):
    """A clone of a repository whose main branch has legacy findings and a baseline, on a
    branch that adds one new hazard."""
    origin = tmp_path / "origin.git"
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "legacy.py").write_text(LEGACY)
    (work / "py2_tool.py").write_text("import tensorflow as tf\nprint 'old'\n")
    (work / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [tool.tfnumlint]
            baseline = ".tfnumlint-baseline.json"
            extend-exclude = ["py2_tool.py"]
            """
        )
    )
    proc = run_cli("--no-verify", "--write-baseline", ".tfnumlint-baseline.json", ".", cwd=work)
    assert proc.returncode == 0, proc.stderr
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "legacy")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    git(work, "checkout", "-q", "-b", "feature")
    (work / "new.py").write_text(NEW)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "new hazard")
    return work


def run_step(command: str, cwd, tmp_path) -> subprocess.CompletedProcess:
    """One `run:` step as GitHub runs it (bash -e), with `tfnumlint` on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "tfnumlint"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tfnumlint "$@"\n')
    shim.chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(ROOT),
        GITHUB_BASE_REF="main",
        TFNUMLINT_CACHE_DIR=str(tmp_path / "cache"),
    )
    return subprocess.run(
        ["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_github_actions_recipe_runs_as_a_script(pull_request, tmp_path):
    pytest.importorskip("tensorflow")  # the gate fails on confirmed findings: it verifies
    install, gate, sarif = workflow_steps()
    assert install.startswith('pip install "tfnumlint[tf] @ git+https://')

    proc = run_step(gate, pull_request, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 1, proc.stdout
    assert annotations[0].startswith("::error file=new.py,line=6,")
    assert "TNL201" in annotations[0]

    # a pull request that touches nothing risky passes
    git(pull_request, "checkout", "-q", "main")
    git(pull_request, "checkout", "-q", "-b", "harmless")
    (pull_request / "notes.py").write_text("import tensorflow as tf\n\nSCALE = 2.0\n")
    git(pull_request, "add", "-A")
    git(pull_request, "commit", "-q", "-m", "harmless")
    proc = run_step(gate, pull_request, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # the report step exits 0 and writes SARIF even when a file cannot be analysed
    (pull_request / "broken.py").write_text("import tensorflow as tf\ndef f(:\n")
    proc = run_step(sarif, pull_request, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = json.loads((pull_request / "tfnumlint.sarif").read_text())
    (run,) = log["runs"]
    assert run["results"] == []  # the legacy findings are in the baseline
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes] == [
        "broken.py"
    ]


# --- the gate's exit code: --fail-on confirmed ---------------------------------------------------

ONLY_INCONCLUSIVE = """\
import tensorflow as tf


def masked_log(x):
    return tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))
"""

CLEAN = """\
import tensorflow as tf


def loss(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
"""


def gate_arguments() -> list[str]:
    """The recipe's gate as tfnumlint arguments, without its --diff-base and its path."""
    _, gate, _ = workflow_steps()
    words = shlex.split(gate)
    assert words[0] == "tfnumlint" and words[-1] == "."
    args = words[1:-1]
    at = args.index("--diff-base")
    del args[at : at + 2]
    return args


def test_the_github_gate_fails_on_confirmed_findings_only(tmp_path):
    pytest.importorskip("tensorflow")
    args = gate_arguments()
    assert args[args.index("--fail-on") + 1] == "confirmed"

    examples = run_cli(*args, "examples/")
    assert examples.returncode == 1, examples.stdout + examples.stderr
    assert "::error file=examples/" in examples.stdout

    (tmp_path / "clean.py").write_text(CLEAN)
    clean = run_cli(*args, "clean.py", cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    # an inconclusive finding is shown as an annotation but does not fail the gate...
    (tmp_path / "cond.py").write_text(ONLY_INCONCLUSIVE)
    cond = run_cli(*args, "cond.py", cwd=tmp_path)
    assert cond.returncode == 0, cond.stdout + cond.stderr
    assert "TNL302" in cond.stdout and "inconclusive" in cond.stdout
    # ...which is what the flag is for: without it the same file fails
    any_shown = [a for a in args if a not in ("--fail-on", "confirmed")]
    assert run_cli(*any_shown, "cond.py", cwd=tmp_path).returncode == 1
