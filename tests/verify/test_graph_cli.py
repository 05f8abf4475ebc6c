"""A saved model through the real CLI: selection, graph-ignore, every report format, the
baseline, and a warm run served from the cache."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tensorflow")
import graph_models as gm
from conftest import run_cli


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    gm.functional().save(root / "model.keras")
    (root / "pyproject.toml").write_text(
        '[tool.tfnumlint]\ngraph-ignore = ["hazards_1/truediv*"]\n'
    )
    return root


def _json(proc) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_json_report_with_select_and_graph_ignore(project):
    env = {"TFNUMLINT_CACHE_DIR": str(project / "cache")}
    proc = run_cli("--format", "json", "model.keras", cwd=project, env=env)
    assert proc.returncode == 1, proc.stderr
    rules = sorted(f["rule"] for f in _json(proc)["findings"])
    assert rules == sorted(gm.FUNCTIONAL_HAZARDS - {"TNL201"})  # the division is ignored
    selected = run_cli(
        "--format", "json", "--select", "TNL101", "model.keras", cwd=project, env=env
    )
    [log] = _json(selected)["findings"]
    assert log["rule"] == "TNL101" and log["path"] == "model.keras"
    assert log["verification"]["status"] == "confirmed"
    assert log["verification"]["inputs"]["x"] and log["fingerprint"]


@pytest.mark.parametrize("fmt", ["text", "concise", "sarif", "github"])
def test_every_format_reports_the_op(project, fmt):
    env = {"TFNUMLINT_CACHE_DIR": str(project / "cache")}
    proc = run_cli("--format", fmt, "--select", "TNL101", "model.keras", cwd=project, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "TNL101" in proc.stdout and "/Log" in proc.stdout


def test_a_baseline_hides_the_graph_findings(project):
    env = {"TFNUMLINT_CACHE_DIR": str(project / "cache")}
    wrote = run_cli("--write-baseline", "base.json", "model.keras", cwd=project, env=env)
    assert wrote.returncode == 0, wrote.stderr
    proc = run_cli(
        "--format", "json", "--baseline", "base.json", "model.keras", cwd=project, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert _json(proc)["findings"] == []


def test_the_saved_model_worker_imports_no_source_analysis():
    """The worker lint_models starts (``--graphs``) loads only the graph modules: neither
    libcst nor the probe machinery (they cost it about a second before its first model)."""
    import subprocess
    import sys

    from conftest import ROOT

    script = (
        "import sys, runpy\n"
        "sys.argv = ['worker', '--graphs']\n"
        "try:\n"
        "    runpy.run_module('tfnumlint.verify.worker', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "seen = [m for m in sys.modules if m == 'libcst' or m == 'tfnumlint.verify.probing']\n"
        "sys.stderr.write('IMPORTED ' + ','.join(sorted(seen)) + '\\n')\n"
    )
    request = json.dumps({"id": 0, "graph": {"path": str(ROOT / "missing.keras")}})
    proc = subprocess.run(
        [sys.executable, "-c", script], input=request + "\n", capture_output=True, text=True,
        cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert '"id": 0' in proc.stdout and "not" in proc.stdout, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("IMPORTED")]
    assert line == "IMPORTED ", line
