"""Adding an op is one entry in ``ops.py``, and the rules and gates that read its facts learn it.

The fact sets (``ops.SIGNED_SQUASHING``, ``ops.PRODUCER_RANGES``, ...) are computed when
``ops.py`` is imported, so the end-to-end test works on a copy of the package with one entry
added to its registry, as a contributor would add it: ``tf.nn.softsign`` (not registered) becomes
a saturating op with range (-1, 1), and ``log(softsign(x))`` becomes TNL104 (a squashing op of
either sign under a log), verified where TensorFlow is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

from conftest import ROOT, run_cli

from tfnumlint import ops

HAS_TF = importlib.util.find_spec("tensorflow") is not None

ENTRY = """\
    Op(
        "softsign",
        shape_keeping=True,
        range=Range(-1.0, 1.0, lo_open=True, hi_open=True),
        saturating=True,
        spellings=("tf.nn.softsign", "tf.math.softsign", "keras.ops.soft_sign"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x",),
        trace="nn.softsign",
        float_only=True,
        render=("nn.softsign", None),
    ),
"""

CASE = textwrap.dedent(
    """\
    import tensorflow as tf


    class Score(tf.keras.layers.Layer):
        def call(self, x):
            return tf.math.log(tf.nn.softsign(x))
    """
)

CHECK = textwrap.dedent(
    """\
    from tfnumlint import ops
    from tfnumlint.analysis import project_summary
    from tfnumlint.rules import logs
    assert "softsign" in ops.SIGNED_SQUASHING and "softsign" in ops.SATURATING
    assert ops.PRODUCER_RANGES["softsign"] == (-1.0, False, 1.0)
    assert "softsign" in logs._COMPUTED and "softsign" in project_summary._CARRIED
    """
)


def _run(root, env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )


def _lint(root, env, verify: list[str]) -> list[dict]:
    proc = run_cli(
        "--format", "json", "--exit-zero", "--no-cache", *verify, "case", cwd=root, env=env,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["findings"]


def test_one_entry_teaches_the_fact_sets_and_tnl104(tmp_path):
    assert "softsign" not in ops.REGISTRY and "tf.nn.softsign" not in ops.SPELLINGS
    root = tmp_path / "p"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("tfnumlint", "rules"):  # rules/: the rule docs, which select the rules
        shutil.copytree(ROOT / part, root / part, ignore=ignore)
    (root / "case").mkdir()
    (root / "case" / "softsign_log.py").write_text(CASE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root), "TFNUMLINT_CACHE_DIR": str(tmp_path / "c")}
    verify = [] if HAS_TF else ["--no-verify"]

    assert _lint(root, env, ["--no-verify"]) == []  # an unknown call: nothing to say

    registry = root / "tfnumlint" / "ops.py"
    text = registry.read_text(encoding="utf-8")
    end = "\n):\n    register(_op)\n"
    assert text.count(end) == 1
    registry.write_text(text.replace(end, "\n" + ENTRY.rstrip("\n") + end), encoding="utf-8")

    proc = _run(root, env, "-c", CHECK)
    assert proc.returncode == 0, proc.stderr
    found = _lint(root, env, verify)
    assert [(f["rule"], f["line"]) for f in found] == [("TNL104", 6)], found
    status = found[0]["verification"]["status"]
    assert status == ("confirmed" if HAS_TF else "skipped"), found[0]["verification"]
