"""`python -m tfnumlint.dev new-rule` writes a rule as three files, and the rule then runs.

The end-to-end test works on a copy of the package: it scaffolds a rule, checks that exactly its
doc, its family module and its case folder changed (and the generated README table), and lints the
new case folder through verification with the copy on the path.
"""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from tfnumlint.dev.new_rule import scaffold

HAS_TF = importlib.util.find_spec("tensorflow") is not None


def _copy_project(dst):
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".tfnumlint-test-cache")
    for part in ("tfnumlint", "rules", "tests/rules"):
        shutil.copytree(ROOT / part, dst / part, ignore=ignore)
    shutil.copy(ROOT / "README.md", dst / "README.md")
    return dst


def _changed(old, new) -> set[str]:
    """Paths (relative) that differ between two trees, a new folder counted once."""
    out: set[str] = set()

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        out.update(prefix + n for n in cmp.diff_files + cmp.right_only + cmp.left_only)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(old, new, ignore=["__pycache__"]), "")
    return out


def test_new_rule_touches_its_three_files_and_the_generated_table(tmp_path):
    before = _copy_project(tmp_path / "before")
    after = _copy_project(tmp_path / "after")
    scaffold(after, "TNL299", "domain", "rsqrt-of-relu", "rsqrt")
    assert _changed(before, after) == {
        "rules/TNL299.md",
        "tfnumlint/rules/domain.py",
        "tests/rules/TNL299",
        "README.md",  # the rule table, regenerated from the docs by the command
    }


def test_new_rule_refuses_a_bad_code_an_unknown_family_or_op_and_an_existing_rule(tmp_path):
    root = _copy_project(tmp_path / "p")
    for args in (
        ("T299", "domain", "x", "rsqrt"),
        ("TNL299", "nowhere", "x", "rsqrt"),
        ("TNL299", "domain", "x", "no-such-op"),
        ("TNL201", "domain", "x", "rsqrt"),
    ):
        with pytest.raises(ValueError):
            scaffold(root, *args)


def test_a_scaffolded_rule_fires_on_its_case_and_is_verified(tmp_path):
    root = _copy_project(tmp_path / "p")
    scaffold(root, "TNL299", "domain", "rsqrt-of-relu", "rsqrt")
    env = {**os.environ, "PYTHONPATH": str(root), "TFNUMLINT_CACHE_DIR": str(tmp_path / "c")}
    verify = [] if HAS_TF else ["--no-verify"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfnumlint",
            "--format",
            "json",
            "--exit-zero",
            "--select",
            "TNL299",
            *verify,
            "tests/rules/TNL299",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)["findings"]
    assert [(f["path"], f["line"], f["rule"]) for f in found] == [
        ("tests/rules/TNL299/bad_example.py", 7, "TNL299")
    ]
    status = found[0]["verification"]["status"]
    assert status == ("skipped" if not HAS_TF else "confirmed"), found[0]["verification"]
    help_out = subprocess.run(
        [sys.executable, "-m", "tfnumlint", "--explain", "TNL299"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "rsqrt-of-relu" in help_out.stdout
