"""The command-line contract: exit codes, path defaults, rule selection, parallelism, info flags."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT, run_cli, run_json

from tfnumlint import __version__
from tfnumlint.ruledocs import all_docs

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""

# TNL102 (log + eps) and TNL202 (sqrt of a value that can be 0): two families in one file.
TWO_FAMILIES = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d
"""

CLEAN = """\
import tensorflow as tf


def loss(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
"""


def rules(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"]}


def assert_no_traceback(proc) -> None:
    assert "Traceback" not in proc.stdout
    assert "Traceback" not in proc.stderr


# --- exit codes ------------------------------------------------------------------------------


def test_clean_file_exits_0(tmp_path, write):
    write("clean.py", CLEAN)
    proc = run_cli("--no-verify", "clean.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All clear" in proc.stdout
    assert proc.stderr == ""


def test_findings_exit_1(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "risky.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TNL102" in proc.stdout


def test_exit_zero_turns_findings_into_0_but_still_reports_them(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "--exit-zero", "risky.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert "TNL102" in proc.stdout


def test_file_errors_exit_2(tmp_path, write):
    write("risky.py", RISKY)
    write("broken.py", "import tensorflow as tf\ndef f(:\n")
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "broken.py: error: syntax error at line 2" in proc.stdout


def test_exit_zero_exits_0_on_file_errors_but_still_lists_them(tmp_path, write):
    write("risky.py", RISKY)
    write("broken.py", "import tensorflow as tf\ndef f(:\n")
    proc = run_cli("--no-verify", "--exit-zero", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "broken.py: error: syntax error" in proc.stdout
    assert proc.stdout.splitlines()[-1].endswith("1 file could not be analysed.")
    report = run_json("--no-verify", "--exit-zero", ".", cwd=tmp_path)
    assert [e["path"] for e in report["errors"]] == ["broken.py"]
    assert rules(report) == {"TNL102"}


def test_exit_zero_still_exits_2_on_a_usage_error(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "--exit-zero", "--select", "NOPE1", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown rule code or prefix 'NOPE1'" in proc.stderr


def test_file_error_exits_2_even_with_findings(tmp_path, write):
    write("risky.py", RISKY)
    write("broken.py", "import tensorflow as tf\nx = (\n")
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert [e["path"] for e in report["errors"]] == ["broken.py"]
    assert rules(report) == {"TNL102"}
    proc = run_cli("--no-verify", ".", cwd=tmp_path)
    assert proc.returncode == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--format", "xml"],
        ["--jobs", "0"],
        ["--jobs", "two"],
        ["--no-such-flag"],
        ["--fail-on", "warning"],
        ["--color", "sometimes"],
        ["--add-noqa", "--write-baseline", "b.json"],
        ["--fix", "--add-noqa"],
        ["--add-noqa=TNL999"],
        ["--stdin-filename", "x.py", "--fix"],
        ["--probe-timeout", "0"],
        ["--probe-timeout", "-5"],
        ["--probe-timeout", "nan"],
        ["--probe-timeout", "soon"],
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path, write, args):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", *args, "risky.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tfnumlint: error:")
    assert_no_traceback(proc)


# --- paths -----------------------------------------------------------------------------------


def test_default_path_is_the_current_directory(tmp_path, write):
    write("risky.py", RISKY)
    write("pkg/deeper/also_risky.py", RISKY)
    write("clean.py", CLEAN)
    report = run_json("--no-verify", cwd=tmp_path)
    assert sorted({f["path"] for f in report["findings"]}) == [
        "pkg/deeper/also_risky.py",
        "risky.py",
    ]
    assert report["summary"]["files"] == 3


def test_missing_path_exits_2_naming_it(tmp_path):
    # among other paths: tests/test_cli_truth.py (the others are still linted)
    proc = run_cli("--no-verify", "does/not/exist.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[0] == "does/not/exist.py: error: no such file or directory"
    assert proc.stderr == ""
    assert_no_traceback(proc)


# --- rule selection --------------------------------------------------------------------------


def test_default_selection_reports_both_families(tmp_path, write):
    write("two.py", TWO_FAMILIES)
    assert rules(run_json("--no-verify", "two.py", cwd=tmp_path)) == {"TNL102", "TNL202"}


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--select", "TNL102"], {"TNL102"}),
        (["--select", "TNL202"], {"TNL202"}),
        (["--select", "TNL1"], {"TNL102"}),
        (["--select", "TNL2"], {"TNL202"}),
        (["--select", "tnl102"], {"TNL102"}),  # case-insensitive, like ruff
        (["--select", "TNL102,TNL202"], {"TNL102", "TNL202"}),
        (["--select", "TNL102, TNL202"], {"TNL102", "TNL202"}),
        (["--select", "ALL"], {"TNL102", "TNL202"}),
        (["--ignore", "TNL102"], {"TNL202"}),
        (["--ignore", "TNL2"], {"TNL102"}),
        (["--ignore", "TNL1,TNL2"], set()),
        (["--select", "TNL1", "--ignore", "TNL102"], set()),
        (["--select", "TNL1,TNL2", "--ignore", "TNL20"], {"TNL102"}),
    ],
)
def test_select_and_ignore(tmp_path, write, flags, expected):
    write("two.py", TWO_FAMILIES)
    proc = run_cli("--no-verify", "--format", "json", *flags, "two.py", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert rules(report) == expected
    assert proc.returncode == (1 if expected else 0)


@pytest.mark.parametrize("option", ["--select", "--ignore"])
@pytest.mark.parametrize("value", ["TNL999", "TNL102,XYZ1", "TNL9"])
def test_unknown_code_is_a_usage_error_naming_it(tmp_path, write, option, value):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", option, value, "risky.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    bad = value.split(",")[-1]
    assert f"'{bad}'" in lines[0]
    assert option in lines[0]
    assert_no_traceback(proc)


# --- parallelism -----------------------------------------------------------------------------


def test_jobs_1_and_jobs_2_give_identical_findings(tmp_path):
    tree = tmp_path / "tree"
    for i in range(3):
        shutil.copytree(ROOT / "examples", tree / f"copy{i}")
    (tree / "broken.py").write_text("import tensorflow as tf\ndef f(:\n", encoding="utf-8")
    (tree / "plain.py").write_text("print('no tensorflow here')\n", encoding="utf-8")
    n_files = len(list(tree.rglob("*.py")))
    assert n_files >= 12
    one = run_json("--no-verify", "--no-cache", "--jobs", "1", "tree", cwd=tmp_path)
    two = run_json("--no-verify", "--no-cache", "--jobs", "2", "tree", cwd=tmp_path)
    assert one["findings"] == two["findings"]
    assert one["errors"] == two["errors"]
    assert one["summary"]["by_rule"] == two["summary"]["by_rule"]
    assert one["summary"]["files"] == two["summary"]["files"] == n_files
    # the three copies report the same findings, in path order
    per_copy = {
        i: [
            (f["rule"], f["line"], f["column"])
            for f in one["findings"]
            if f["path"].startswith(f"tree/copy{i}/")
        ]
        for i in range(3)
    }
    assert per_copy[0] and per_copy[0] == per_copy[1] == per_copy[2]
    paths = [f["path"] for f in one["findings"]]
    assert paths == sorted(paths)


# --- --no-verify -----------------------------------------------------------------------------


def test_no_verify_marks_every_finding_skipped(tmp_path):
    report = run_json("--no-verify", "--no-cache", str(ROOT / "examples"), cwd=tmp_path)
    assert report["findings"]
    assert {f["verification"]["status"] for f in report["findings"]} == {"skipped"}


def test_no_verify_text_output_mentions_no_verdicts(tmp_path, write):
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "risky.py", cwd=tmp_path)
    assert "verified" not in proc.stdout
    assert "1 skipped" in proc.stdout


# --- info flags ------------------------------------------------------------------------------


def test_version(tmp_path):
    proc = run_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"tfnumlint {__version__}"


def test_list_rules_lists_every_documented_rule(tmp_path):
    proc = run_cli("--list-rules", cwd=tmp_path)
    assert proc.returncode == 0
    lines = proc.stdout.strip().splitlines()
    docs = all_docs()
    body = lines[1:]
    assert [line.split()[0] for line in body] == sorted(docs)
    for line in body:
        code, name, severity = line.split()[:3]
        assert name == docs[code].name
        assert severity in {"error", "warning", "info"}
    assert any(line.startswith("TNL504") and "off by default" in line for line in body)
    assert {"TNL101", "TNL102", "TNL103", "TNL201", "TNL403", "TNL501", "TNL504"} <= set(docs)


def test_explain_prints_the_rule_doc(tmp_path):
    proc = run_cli("--explain", "TNL102", cwd=tmp_path)
    assert proc.returncode == 0
    assert "log-epsilon-unclipped" in proc.stdout
    assert "## What it does" in proc.stdout
    bad = run_cli("--explain", "TNL999", cwd=tmp_path)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1
    assert "TNL999" in bad.stderr


def test_python_dash_m_and_console_script_agree(tmp_path, write):
    import subprocess

    exe = shutil.which("tfnumlint")
    assert exe, "the console script is not installed"
    write("risky.py", RISKY)
    script = subprocess.run(
        [exe, "--no-verify", "--no-cache", "--format", "json", "risky.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    module = run_cli("--no-verify", "--no-cache", "--format", "json", "risky.py", cwd=tmp_path)
    assert script.returncode == module.returncode == 1
    assert json.loads(script.stdout)["findings"] == json.loads(module.stdout)["findings"]
