"""Every rule doc is complete, and its code blocks behave as the doc claims.

The Example block must make its own rule fire and the Use-instead block must leave it
silent; ``--list-rules`` and ``--explain`` print the same docs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import lint, run_cli

from tfnumlint.config import Config, resolve_codes
from tfnumlint.ruledocs import SECTIONS, all_docs
from tfnumlint.rules import load_all

DOCS = all_docs()
CODES = sorted(DOCS)
# The catalogue is the docs: each rule is one rules/TNLxxx.md, never a list kept by hand here.
EXPECTED_CODES = set(DOCS)


def test_every_doc_has_a_registered_check_and_every_check_a_doc():
    registered = {check.code for check in load_all()}
    assert registered == EXPECTED_CODES
    assert all(re.fullmatch(r"TNL[1-9]\d\d", code) for code in EXPECTED_CODES)


def test_rule_names_are_unique():
    names = [d.name for d in DOCS.values()]
    assert len(names) == len(set(names))


def test_only_tnl504_is_off_by_default():
    # TNL502 is on, but shown only when a simulation confirms it (``default: confirmed``)
    assert {code for code, d in DOCS.items() if not d.default} == {"TNL504"}


@pytest.mark.parametrize("code", CODES)
def test_front_matter_is_complete(code):
    doc = DOCS[code]
    assert doc.code == code
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", doc.name), doc.name
    assert doc.severity in {"error", "warning", "info"}
    assert doc.fix in {"safe", "unsafe", "suggestion", "none"}
    assert len(doc.summary) > 20
    front = doc.text.split("---\n")[1]
    for key in ("code", "name", "severity", "default", "fix", "summary"):
        assert re.search(rf"^{key}:\s*\S", front, re.M), f"{code}: front matter lacks {key}"
    assert f"# {code} · {doc.name}" in doc.text


@pytest.mark.parametrize("code", CODES)
def test_sections_exist_in_order(code):
    doc = DOCS[code]
    headings = re.findall(r"^## (.+)$", doc.text, re.M)
    assert headings == list(SECTIONS)
    for title in SECTIONS:
        assert doc.sections[title].strip(), f"{code}: section {title!r} is empty"


@pytest.mark.parametrize("code", CODES)
def test_code_blocks_are_valid_python_with_imports(code):
    doc = DOCS[code]
    for section in ("Example", "Use instead"):
        block = doc.code_block(section)
        assert block, f"{code}: no python block under {section}"
        tree = ast.parse(block)
        assert any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body), (code, section)


@pytest.mark.parametrize("code", CODES)
def test_example_fires_its_rule(code):
    block = DOCS[code].code_block("Example")
    findings = lint(block, select=[code])
    assert findings, f"{code}: the Example does not trigger {code}"
    assert {f.rule for f in findings} == {code}
    assert all(f.name == DOCS[code].name for f in findings)


@pytest.mark.parametrize("code", CODES)
def test_use_instead_is_silent_for_its_rule(code):
    block = DOCS[code].code_block("Use instead")
    assert lint(block, select=[code]) == []


def test_default_selection_leaves_out_tnl504_only():
    assert resolve_codes(Config(), None, None) == EXPECTED_CODES - {"TNL504"}


# -- the CLI prints the same docs ------------------------------------------------------


def test_list_rules_lists_every_code_and_name():
    proc = run_cli("--list-rules")
    assert proc.returncode == 0, proc.stderr
    for code, doc in DOCS.items():
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(code)), None)
        assert line is not None, f"{code} missing from --list-rules"
        assert doc.name in line
        assert doc.severity in line
    assert "off by default" in next(
        ln for ln in proc.stdout.splitlines() if ln.startswith("TNL504")
    )


def test_explain_prints_the_doc():
    proc = run_cli("--explain", "TNL102")
    assert proc.returncode == 0, proc.stderr
    doc = DOCS["TNL102"]
    assert "log-epsilon-unclipped" in proc.stdout
    assert doc.sections["Why is this bad"].strip() in proc.stdout
    assert doc.code_block("Example").strip() in proc.stdout


def test_explain_is_case_insensitive():
    proc = run_cli("--explain", "tnl301")
    assert proc.returncode == 0, proc.stderr
    assert DOCS["TNL301"].sections["What it does"].strip() in proc.stdout


def test_explain_unknown_code_is_a_usage_error():
    proc = run_cli("--explain", "TNL999")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "TNL999" in lines[0]
    assert "Traceback" not in proc.stderr


def test_readme_rule_table_matches_the_docs():
    """The README's rule table lists every rule with its doc's name, severity and fix."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code, doc in all_docs().items():
        row = f"| [{code}](rules/{code}.md) | {doc.name} | {doc.severity} | {doc.fix} |"
        assert row in readme, row
