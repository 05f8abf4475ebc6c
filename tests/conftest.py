"""Shared test helpers: lint a snippet in-process, or run the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfnumlint.engine import lint_text

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault(
    "TF_CPP_MIN_LOG_LEVEL", "3"
)  # keep TensorFlow's C++ logging out of test output
# Verdict tests check what a probe finds, not how fast: on a loaded CI machine a probe can pass
# the 10 s budget users get and come back "inconclusive". Speed is measured in benchmarks/;
# the budget's own behaviour is tested with an explicit value (tests/verify/test_runner.py).
os.environ.setdefault("TFNUMLINT_PROBE_TIMEOUT", "60")


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="run the long property-based tests")


VERIFICATION_SKIPPED = (
    "verification tests skipped: TensorFlow not installed; run pip install -e '.[tf,test]'"
)


def skipped_for_tensorflow(report) -> bool:
    """A test or module skipped by ``pytest.importorskip("tensorflow")``."""
    return "could not import 'tensorflow'" in str(getattr(report, "longrepr", ""))


def pytest_terminal_summary(terminalreporter):
    """One line, so that a green run without TensorFlow does not pass for a verified one."""
    if any(skipped_for_tensorflow(r) for r in terminalreporter.stats.get("skipped", [])):
        terminalreporter.write_line(VERIFICATION_SKIPPED)


def lint(code: str, select: list[str] | None = None):
    """Findings (static only) for a dedented snippet."""
    result = lint_text(textwrap.dedent(code), codes=select)
    assert not result.errors, result.errors
    return result.findings


def func(body: str, params: str = "x") -> str:
    """A module with one function ``f(params)`` whose body is ``body`` (lines unindented)."""
    indented = textwrap.indent(body, "    ")
    return f"import tensorflow as tf\n\n\ndef f({params}):\n{indented}\n"


# A caller that differentiates ``f``: a gradient-only symptom in a function with no caller in
# the project is conditional (``analysis/roots.py``).  ``*args`` passes no call-site values
# into ``f``'s parameters (no ranges, no producers); being called from differentiated code
# does make them inputs training drives (``analysis/driven.py``).
DIFFERENTIATING_CALLER = """

def train_step(*args):
    with tf.GradientTape() as tape:
        loss = {name}(*args)
    return tape.gradient(loss, args)
"""


def differentiated(src: str, name: str = "f") -> str:
    """``src`` (a module) with a training step that differentiates its function ``name``."""
    return textwrap.dedent(src).rstrip("\n") + "\n" + DIFFERENTIATING_CALLER.format(name=name)


def trained_func(body: str, params: str = "x") -> str:
    """:func:`func`, differentiated by a training step."""
    return differentiated(func(body, params))


def hits(code: str, src: str):
    """Findings of rule ``code`` alone (selected on its own)."""
    findings = lint(src, select=[code])
    assert all(f.rule == code for f in findings)
    return findings


def rules_of(code: str, select: list[str] | None = None) -> set[str]:
    return {f.rule for f in lint(code, select)}


def run_cli(*args: str, cwd: Path | str | None = None, env: dict | None = None, timeout: int = 300):
    """Run ``python -m tfnumlint`` the way users do; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.setdefault("TFNUMLINT_CACHE_DIR", str(Path(cwd or ROOT) / ".tfnumlint-test-cache"))
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "tfnumlint", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


def run_json(*args: str, cwd=None, env=None) -> dict:
    proc = run_cli("--format", "json", *args, cwd=cwd, env=env)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def write(tmp_path):
    """write("a.py", code) -> Path, dedenting the code."""

    def _write(name: str, code: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(code, bytes):
            path.write_bytes(code)
        else:
            path.write_text(textwrap.dedent(code), encoding="utf-8")
        return path

    return _write


# GD on unnormalised features (TNL505): `{lr}` is the SGD learning rate.
GD_LINSPACE = """\
    import numpy as np
    import tensorflow as tf

    x_data = np.linspace(-8, 8, 100)
    y_data = 3 * x_data + 2

    w = tf.Variable(0.0)
    b = tf.Variable(0.0)
    opt = tf.keras.optimizers.SGD(learning_rate={lr})

    for step in range(100):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(w * x_data + b - y_data))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
    """
