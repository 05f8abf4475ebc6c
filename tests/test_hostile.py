"""Hostile inputs (issue 6): bad files become error entries, everything else is still reported,
nothing ever prints a traceback, and usage/config errors are one clear line with exit 2."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from conftest import run_cli

from tfnumlint.engine import lint_text
from tfnumlint.rules import CHECKS, load_all

RISKY = """\
import tensorflow as tf


def loss(p):
    return tf.math.log(p + 1e-10)
"""
# (line, column) of the TNL102 finding in RISKY
RISKY_AT = (5, 12)


def build_corpus(root) -> dict[str, object]:
    """Write the corpus; returns what each bad file's error must mention (None: must be analysed)."""
    expect: dict[str, object] = {}

    def put(name: str, data: str | bytes, reason=None) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
        expect[name] = reason

    put("good.py", RISKY)
    put(
        "syntax.py",
        "import tensorflow as tf\n\ndef f(:\n    return tf.math.log(1e-10)\n",
        "syntax error",
    )
    put("nul.py", b"import tensorflow as tf\nx = tf.math.log(\x00 + 1e-10)\n", "NUL")
    put("undecodable.py", b"import tensorflow as tf\nname = '\xff\xfe\xfa'\n", "decode")
    put("bad_coding.py", b"# -*- coding: no-such-codec -*-\nimport tensorflow as tf\n", "coding")
    latin1 = "# -*- coding: latin-1 -*-\n# d\xe9j\xe0 vu: caf\xe9\n" + RISKY.replace(
        "return", "return  # \xe9t\xe9\n    return", 1
    )
    put("latin1.py", latin1.encode("latin-1"))
    put("bom.py", b"\xef\xbb\xbf" + RISKY.encode())
    put("crlf.py", RISKY.replace("\n", "\r\n"))
    put("empty.py", "")
    put("only_comment.py", "# nothing here\n")
    filler = "# a generated line of filler\n" * 30000 + "\n" * 29998
    put("big.py", "import tensorflow as tf\n" + filler + RISKY.split("\n", 1)[1])
    assert (root / "big.py").read_text().count("\n") > 60000
    put(
        "deep.py",
        "import tensorflow as tf\nx = "
        + "(" * 3000
        + "1"
        + ")" * 3000
        + "\n"
        + RISKY.split("\n", 1)[1],
    )
    terms = " + ".join(["a"] * 2999 + ["tf.math.log(p + 1e-10)"])
    put("wide.py", f"import tensorflow as tf\n\n\ndef f(p, a):\n    return {terms}\n")
    put("broken.ipynb", '{"cells": [{"cell_type": "code", "source": ', "notebook")
    put(
        "truncated.ipynb",
        '{"cells": [{"cell_type": "code", "source": 42}], "nbformat": 4}',
        "cell 1",
    )
    (root / "x.py").mkdir()  # a directory with a Python suffix: walked, not read
    put("x.py/inside.py", RISKY)
    (root / "loop.py").symlink_to("loop.py")
    expect["loop.py"] = "symbolic links"
    (root / "pkg").mkdir()
    (root / "pkg" / "up").symlink_to("..")  # a directory loop
    put("pkg/mod.py", RISKY)
    (root / "dangling.py").symlink_to("nowhere/missing.py")
    expect["dangling.py"] = "no such file"
    os.mkfifo(root / "fifo.py")  # reading it would block forever
    expect["fifo.py"] = "not a regular file"
    put("unreadable.py", RISKY)
    os.chmod(root / "unreadable.py", 0)
    return expect


def can_read(path) -> bool:
    try:
        with open(path, "rb"):
            return True
    except PermissionError:
        return False


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    expect = build_corpus(root)
    readable = can_read(root / "unreadable.py")  # root (as in CI) reads a chmod 000 file
    if not readable:
        expect["unreadable.py"] = "permission denied"
    runs = {}
    for jobs in ("1", "2"):
        proc = run_cli(
            "--no-verify", "--no-cache", "--format", "json", "--jobs", jobs, ".", cwd=root
        )
        runs[jobs] = proc
    yield root, expect, runs, readable
    os.chmod(root / "unreadable.py", 0o644)


def test_no_traceback_and_exit_2(corpus):
    _, _, runs, _ = corpus
    for proc in runs.values():
        assert "Traceback" not in proc.stdout
        assert "Traceback" not in proc.stderr
        assert proc.stderr == ""
        assert proc.returncode == 2


def test_each_bad_file_is_an_error_entry_with_a_plain_reason(corpus):
    _, expect, runs, _ = corpus
    report = json.loads(runs["1"].stdout)
    errors = {e["path"]: e["message"] for e in report["errors"]}
    bad = {name: reason for name, reason in expect.items() if reason is not None}
    assert set(errors) == set(bad), errors
    for name, reason in bad.items():
        assert reason in errors[name], (name, errors[name])
        assert "Traceback" not in errors[name] and "\n" not in errors[name]


def test_every_other_file_is_analysed_and_flagged(corpus):
    _, expect, runs, readable = corpus
    report = json.loads(runs["1"].stdout)
    flagged = {f["path"] for f in report["findings"] if f["rule"] == "TNL102"}
    must_flag = {
        "good.py",
        "latin1.py",
        "bom.py",
        "crlf.py",
        "big.py",
        "deep.py",
        "wide.py",
        "x.py/inside.py",
        "pkg/mod.py",
    }
    if readable:
        must_flag.add("unreadable.py")
    assert flagged == must_flag
    analysed_quietly = {"empty.py", "only_comment.py"}
    assert not ({f["path"] for f in report["findings"]} & analysed_quietly)
    assert report["summary"]["files"] == len(expect) - 1 + 1  # x.py/inside.py replaces the x.py dir


def test_positions_in_odd_files(corpus):
    _, _, runs, _ = corpus
    report = json.loads(runs["1"].stdout)
    at = {f["path"]: (f["line"], f["column"]) for f in report["findings"] if f["rule"] == "TNL102"}
    assert at["good.py"] == RISKY_AT
    assert at["bom.py"] == RISKY_AT
    assert at["crlf.py"] == RISKY_AT
    assert at["latin1.py"] == (RISKY_AT[0] + 3, RISKY_AT[1])  # 2 header lines + the split line
    assert at["big.py"] == (1 + 59998 + RISKY_AT[0] - 1, RISKY_AT[1])  # import + filler + RISKY[1:]
    assert at["deep.py"] == (RISKY_AT[0] + 1, RISKY_AT[1])
    assert at["wide.py"][0] == 5 and at["wide.py"][1] == len("    return ") + len("a + ") * 2999 + 1


def test_latin1_source_line_is_decoded(corpus):
    root, _, _, _ = corpus
    proc = run_cli("--no-verify", "--no-cache", "latin1.py", cwd=root)
    assert proc.returncode == 1
    assert "return  # \xe9t\xe9" not in proc.stdout  # the finding is on the next line
    assert "tf.math.log(p + 1e-10)" in proc.stdout
    assert "TNL102" in proc.stdout


def test_jobs_do_not_change_the_result(corpus):
    _, _, runs, _ = corpus
    one, two = (json.loads(runs[j].stdout) for j in ("1", "2"))
    assert one["findings"] == two["findings"]
    assert one["errors"] == two["errors"]


def test_unreadable_file(corpus):
    _, _, runs, readable = corpus
    report = json.loads(runs["1"].stdout)
    if readable:
        # running as root: permission bits do not stop reads, so the file is simply analysed
        assert os.geteuid() == 0
        assert "unreadable.py" in {f["path"] for f in report["findings"]}
    else:
        assert {"path": "unreadable.py", "message": "permission denied"} in report["errors"]


def test_unreadable_file_error_reporting_in_process(tmp_path, monkeypatch):
    """Whoever runs the suite, the permission-denied branch itself is exercised."""
    from pathlib import Path

    from tfnumlint.discovery import Candidate
    from tfnumlint.engine import LintOptions
    from tfnumlint.runner import Job, analyse_file

    target = tmp_path / "secret.py"
    target.write_text(RISKY, encoding="utf-8")

    def deny(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)
    job = Job(LintOptions(codes=frozenset({"TNL102"})), "fp", None)
    result = analyse_file(Candidate(target, "secret.py"), job)
    assert [(e.path, e.message) for e in result.errors] == [("secret.py", "permission denied")]


def test_bad_files_named_explicitly(corpus):
    root, _, _, _ = corpus
    proc = run_cli(
        "--no-verify",
        "--no-cache",
        "--format",
        "json",
        "fifo.py",
        "loop.py",
        "dangling.py",
        "nul.py",
        "good.py",
        cwd=root,
        timeout=60,
    )
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert [e["path"] for e in report["errors"]] == ["dangling.py", "fifo.py", "loop.py", "nul.py"]
    assert [f["path"] for f in report["findings"]] == ["good.py"]


@pytest.mark.parametrize("fmt", ["text", "sarif", "github"])
def test_other_formats_survive_the_corpus(corpus, fmt):
    root, expect, _, _ = corpus
    proc = run_cli("--no-verify", "--format", fmt, ".", cwd=root)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    for name, reason in expect.items():
        if reason is not None:
            assert name in proc.stdout


# --- usage and config errors: one line, exit 2 -----------------------------------------------


def one_line(proc) -> str:
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_missing_cli_path(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    proc = run_cli("--no-verify", "good.py", "no/such/dir", cwd=tmp_path)
    assert proc.returncode == 2  # an error for that path; good.py is still linted
    assert "no/such/dir: error: no such file or directory" in proc.stdout
    assert "good.py:5:" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_bad_pyproject(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.tfnumlint\nselect = [\x00]\n")
    line = one_line(run_cli("--no-verify", "good.py", cwd=tmp_path))
    assert "pyproject.toml" in line and "TOML" in line


def test_unknown_config_key(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.tfnumlint]\nselecct = ['TNL1']\n", encoding="utf-8"
    )
    assert "'selecct'" in one_line(run_cli("--no-verify", "good.py", cwd=tmp_path))


def test_unknown_select_code(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    assert "'TNL777'" in one_line(
        run_cli("--no-verify", "--select", "TNL102,TNL777", "good.py", cwd=tmp_path)
    )


def test_undecodable_config(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.tfnumlint]\nselect = ['\xff']\n")
    assert "pyproject.toml" in one_line(run_cli("--no-verify", "good.py", cwd=tmp_path))


def test_config_that_is_a_directory(tmp_path):
    (tmp_path / "good.py").write_text(RISKY, encoding="utf-8")
    (tmp_path / "cfgdir").mkdir()
    assert "cfgdir" in one_line(
        run_cli("--no-verify", "--config", "cfgdir", "good.py", cwd=tmp_path)
    )


# --- an internal error in one rule -----------------------------------------------------------

TWO_RULES = textwrap.dedent(
    """\
    import tensorflow as tf


    def loss(p, a, b):
        d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
        return tf.math.log(p + 1e-10) + d
    """
)


def test_a_crashing_rule_is_an_error_entry_and_other_rules_survive(monkeypatch):
    load_all()
    baseline = lint_text(TWO_RULES, path="model.py", codes=["TNL102", "TNL202"])
    assert sorted(f.rule for f in baseline.findings) == ["TNL102", "TNL202"]

    def boom(*args, **kwargs):
        raise ZeroDivisionError("injected failure")

    crashing = [c for c in CHECKS if c.code == "TNL202"]
    assert crashing
    for check in crashing:
        monkeypatch.setattr(check, "fn", boom)
    result = lint_text(TWO_RULES, path="model.py", codes=["TNL102", "TNL202"])
    assert [f.rule for f in result.findings] == ["TNL102"]
    assert len(result.errors) == 1
    (err,) = result.errors
    assert err.path == "model.py"
    assert "TNL202" in err.message
    assert "ZeroDivisionError" in err.message and "injected failure" in err.message


def test_a_rule_that_recurses_forever_is_an_error_entry(monkeypatch):
    load_all()

    def forever(*args, **kwargs):
        return forever(*args, **kwargs)

    for check in [c for c in CHECKS if c.code == "TNL202"]:
        monkeypatch.setattr(check, "fn", forever)
    result = lint_text(TWO_RULES, path="model.py", codes=["TNL102", "TNL202"])
    assert [f.rule for f in result.findings] == ["TNL102"]
    (err,) = result.errors
    assert "TNL202" in err.message and err.path == "model.py"
