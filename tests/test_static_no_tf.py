"""The static pass never imports TensorFlow or Keras (proved with ``python -X importtime``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|(?P<indent>\s*)(?P<module>\S+)\s*$")
FORBIDDEN = ("tensorflow", "keras", "tf_keras", "tensorboard", "jax", "torch")


def imported_modules(*args: str, cwd, cache) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(cache))
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    modules = {m["module"] for m in map(_LINE.match, proc.stderr.splitlines()) if m}
    assert modules, proc.stderr[-2000:]
    return proc, modules


def forbidden(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in FORBIDDEN}


@pytest.mark.parametrize(
    "args",
    [
        ["--no-verify", "examples/"],
        ["--no-verify", "--format", "json", "examples/"],
        ["--no-verify", "--format", "sarif", "--jobs", "1", "examples/"],
        ["--no-verify", "--format", "github", "--no-cache", "examples/"],
        ["--list-rules"],
        ["--explain", "TNL102"],
    ],
)
def test_cli_static_run_imports_no_tensorflow(args, tmp_path):
    proc, modules = imported_modules("-m", "tfnumlint", *args, cwd=ROOT, cache=tmp_path / "cache")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "tfnumlint.cli" in modules  # the parse saw the tool's own imports
    assert "libcst" in modules or args[0] != "--no-verify"
    assert forbidden(modules) == set()
    if "examples/" in args:
        assert "TNL102" in proc.stdout


def test_static_run_over_the_examples_in_process_imports_no_tensorflow(tmp_path):
    """The library path (discover + analyse + render) with verification disabled, then sys.modules."""
    script = f"""
import sys
from pathlib import Path
from tfnumlint.discovery import discover
from tfnumlint.engine import LintOptions
from tfnumlint.model import Report
from tfnumlint.report import render
from tfnumlint.ruledocs import all_docs
from tfnumlint.runner import Job, analyse

root = Path({str(ROOT)!r})
cands = discover(["examples"], root)
job = Job(LintOptions(codes=frozenset(all_docs())), "fp", None)
results = analyse(cands, job, 1)
findings = [f for r in results for f in r.findings]
assert findings, "the examples have hazards"
for fmt in ("text", "json", "sarif", "github"):
    render(fmt, Report(findings, [], len(cands), 0.0))
bad = sorted(m for m in sys.modules if m.split(".")[0] in {set(FORBIDDEN)!r})
print("FORBIDDEN:", bad)
"""
    proc, modules = imported_modules("-c", script, cwd=tmp_path, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FORBIDDEN: []" in proc.stdout
    assert forbidden(modules) == set()
