"""``--emit-repro`` on a saved model: each confirmed witness gets a script that reloads the
model with the linter's safe loader, feeds the witness, and exits 1 on the non-finite value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
import graph_models as gm
from conftest import ROOT, run_cli

# the hazards whose confirmation is a witness input (TNL401's is arithmetic: no input)
WITNESSED = gm.FUNCTIONAL_HAZARDS - {"TNL401"}


def test_the_emitted_reproducers_show_the_non_finite_value(tmp_path):
    gm.functional().save(tmp_path / "model.keras")
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    proc = run_cli(
        "--format", "json", "--emit-repro", "repro", "model.keras", cwd=tmp_path, env=env
    )
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    written = {f["rule"]: Path(f["repro"]) for f in findings if f.get("repro")}
    assert set(written) == WITNESSED
    assert all(f["rung"] == "graph" for f in findings if f.get("repro"))
    script_env = dict(os.environ, PYTHONPATH=str(ROOT))
    for rule, script in sorted(written.items()):
        run = subprocess.run(
            [sys.executable, str(tmp_path / script if not script.is_absolute() else script)],
            capture_output=True, text=True, env=script_env, cwd=tmp_path, timeout=300,
        )  # fmt: skip
        assert run.returncode == 1, (rule, run.stdout, run.stderr)
        assert "non-finite" in run.stdout, (rule, run.stdout)
