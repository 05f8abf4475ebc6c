"""Each rule's cases, beside the rule: its folder's programs and its doc's examples.

Every rule has a folder ``tests/rules/TNLxxx/``; its marked lines must be flagged, its other
lines must not, and the whole record of what the tool says about the folder (span, status,
message, witness, fix and rewrite) must equal the reviewed ``snapshot.snap`` (see README.md).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from tfnumlint.ruledocs import all_docs

CASES = Path(__file__).resolve().parent
DOCS = all_docs()
CODES = sorted(DOCS)
MARK = re.compile(r"#\s*error:\s*((?:TNL\d{3}[,\s]*)+)")
HAS_TF = importlib.util.find_spec("tensorflow") is not None


def case_files(code: str) -> dict[str, str]:
    """The folder's programs and the doc's two code blocks, by file name."""
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted((CASES / code).glob("*.py"))}
    doc = DOCS[code]
    for name, section in (("doc_example.py", "Example"), ("doc_use_instead.py", "Use instead")):
        block = doc.code_block(section)
        if block:
            files[name] = block
    return files


def marked_lines(text: str, code: str) -> set[int]:
    return {i for i, line in enumerate(text.splitlines(), 1) if code in _marks(line)}


def _marks(line: str) -> set[str]:
    m = MARK.search(line)
    return set(re.findall(r"TNL\d{3}", m.group(1))) if m else set()


def _lay_out(tmp: Path) -> Path:
    """Every folder's cases copied under one tree (the doc blocks written out as files)."""
    root = tmp / "cases"
    for code in CODES:
        folder = root / code
        folder.mkdir(parents=True)
        for name, text in case_files(code).items():
            (folder / name).write_text(text, encoding="utf-8")
    return root


def _run(root: Path, *args: str) -> str:
    every = ",".join(CODES)  # default-off rules too: each folder's rule must be on
    proc = run_cli("--exit-zero", "--color", "never", "--select", every, *args, ".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, object]:
    """One verified run over all folders (the JSON report), then the rewrite diff, which reads
    the first run's verdicts from its cache."""
    root = _lay_out(tmp_path_factory.mktemp("rule-cases"))
    verify = () if HAS_TF else ("--no-verify",)
    report = json.loads(_run(root, *verify, "--format", "json", "--show-refuted"))
    diff = _run(root, *verify, "--diff", "--unsafe-fixes")
    shutil.rmtree(root / ".tfnumlint-test-cache", ignore_errors=True)
    return {"findings": report["findings"], "errors": report["errors"], "diff": diff}


def test_every_rule_has_a_case_folder_with_a_flagged_and_a_clean_case():
    for code in CODES:
        files = case_files(code)
        assert (CASES / code).is_dir(), f"{code}: no tests/rules/{code}/"
        flagged = [n for n, t in files.items() if n == "doc_example.py" or marked_lines(t, code)]
        clean = [n for n, t in files.items() if n != "doc_example.py" and not marked_lines(t, code)]
        assert flagged and clean, (code, sorted(files))


@pytest.mark.parametrize("code", CODES)
def test_marked_lines_are_flagged_and_no_other(code, reports):
    assert not reports["errors"], reports["errors"]
    for name, text in case_files(code).items():
        shown = {
            f["line"]
            for f in _findings(reports, code, name)
            if f["rule"] == code or code in f.get("related_rules", [])
            if (f.get("verification") or {}).get("status") != "refuted"
        }
        if name == "doc_example.py":  # the doc shows no markers: flagged somewhere
            assert shown, f"{code}: its doc's Example is not flagged"
        else:
            want = marked_lines(text, code)
            assert shown == want, (code, name, sorted(shown), sorted(want))


@pytest.mark.skipif(not HAS_TF, reason="snapshots record verified statuses: needs TensorFlow")
@pytest.mark.parametrize("code", CODES)
def test_snapshot(code, reports):
    record = snapshot_text(code, reports)
    path = CASES / code / "snapshot.snap"
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if record != old:
        path.with_suffix(".snap.new").write_text(record, encoding="utf-8")
        changes = "".join(
            difflib.unified_diff(old.splitlines(True), record.splitlines(True), "old", "new")
        )
        pytest.fail(
            f"{code}: the record differs from snapshot.snap (review, then rename "
            f"snapshot.snap.new over it):\n{changes}"
        )


def _findings(reports: dict, code: str, name: str) -> list[dict]:
    return [f for f in reports["findings"] if f["path"] == f"{code}/{name}"]


def snapshot_text(code: str, reports: dict) -> str:
    """What the tool said about each of the folder's cases, in a stable, readable form."""
    out = [f"# {code}: {DOCS[code].name} (reviewed record; see tests/rules/README.md)\n"]
    for name in sorted(case_files(code)):
        out.append(f"\n## {name}\n")
        found = sorted(_findings(reports, code, name), key=lambda f: (f["line"], f["column"]))
        if not found:
            out.append("no findings\n")
        for f in found:
            v = f.get("verification") or {}
            span = f"{f['line']}:{f['column']}-{f['end_line']}:{f['end_column']}"
            related = ",".join(f.get("related_rules") or [])
            out.append(
                f"{span} {f['rule']}{'+' + related if related else ''} {v.get('status', 'none')}\n"
            )
            out.append(f"  message: {f['message']}\n")
            if v.get("detail"):
                out.append(f"  detail: {v['detail']}\n")
            if f.get("fix"):
                out.append(f"  fix: {json.dumps(f['fix'], sort_keys=True)}\n")
        rewrite = _file_diff(reports["diff"], f"{code}/{name}")
        if rewrite:
            out.append("rewrite (--diff --unsafe-fixes):\n" + rewrite)
    return "".join(out)


def _file_diff(diff: str, path: str) -> str:
    """The hunk(s) of one file in a multi-file unified diff."""
    parts = re.split(r"(?m)^(?=--- a/)", diff)
    for part in parts:
        if part.startswith(f"--- a/{path}\n"):
            return part if part.endswith("\n") else part + "\n"
    return ""
