"""The documentation stays a short guide whose links resolve and whose example outputs are
what the tool prints today (they are generated: ``python -m tfnumlint.dev readme --write``)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, VERIFICATION_SKIPPED

from tfnumlint.dev.cli import main as dev_main
from tfnumlint.dev.examples import doc_paths, examples_in, regenerate, run_example
from tfnumlint.ruledocs import readme_rule_table

DOCS = doc_paths(ROOT)
README = ROOT / "README.md"
DESIGN_DOCS = ["verification", "evidence", "fixes", "reviews", "performance"]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def test_the_readme_is_a_user_guide_of_at_most_350_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 350


SETUP = [
    'pip install -e ".[tf]" && tfnumlint --exit-zero examples/',
    'pip install -e ".[tf,test]" && python -m pytest -q -n auto',
]


def test_the_set_up_commands_are_the_ones_ci_runs():
    """CI runs the README's second set-up command verbatim (.ci/run): keep both as they are."""
    text = README.read_text(encoding="utf-8")
    set_up = text[text.index("## Set-up\n") : text.index("## Usage\n")]
    commands = [
        line.strip() for line in set_up.splitlines() if line.startswith("   pip install -e")
    ]
    assert commands == SETUP
    assert SETUP[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_readme_and_contributing_link_every_design_doc():
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for doc in DESIGN_DOCS:
            assert f"](docs/{doc}.md" in text, (name, doc)
    assert {p.stem for p in (ROOT / "docs").glob("*.md")} >= set(DESIGN_DOCS)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def _relative_links(path: Path) -> list[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_an_existing_file_and_heading(doc):
    links = _relative_links(doc)
    for target in links:
        file_part, _, anchor = target.partition("#")
        resolved = (doc.parent / file_part).resolve() if file_part else doc
        assert resolved.exists(), f"{doc.name}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(resolved), f"{doc.name}: no heading for #{anchor}"


def test_the_link_check_sees_links_and_catches_a_broken_one(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n[a](missing.md) [b](#top) [c](https://example.com)\n")
    assert _relative_links(page) == ["missing.md", "#top"]
    assert "top" in _anchors(page)
    assert not (tmp_path / "missing.md").exists()


# --- generated examples --------------------------------------------------------------------


def test_every_witness_shown_in_the_docs_is_a_generated_example():
    """A verdict line pasted by hand would go stale as the verifier changes."""
    for doc in DOCS:
        for block in _FENCE.findall(doc.read_text(encoding="utf-8")):
            if re.search(r"^\s*= verified ", block, re.M):
                assert block.startswith("$ tfnumlint "), f"{doc.name}: hand-written witness"


def test_the_readme_shows_a_real_finding_and_a_real_fix():
    commands = [e.command for e in examples_in(README.read_text(encoding="utf-8"))]
    assert any(c.startswith("--diff ") for c in commands)
    assert any(re.search(r"examples/\S+\.py$", c) and "--diff" not in c for c in commands)


def test_regenerate_replaces_only_the_output_of_each_example():
    text = textwrap.dedent(
        """\
        intro
        ```
        $ tfnumlint --select TNL202 a.py
        old output
        line 2
        ```
        middle
        ```
        $ tfnumlint b.py
        ```
        ```
        not an example
        ```
        """
    )
    found = examples_in(text)
    assert [(e.command, e.output) for e in found] == [
        ("--select TNL202 a.py", "old output\nline 2"),
        ("b.py", ""),
    ]
    new = regenerate(text, lambda command: f"ran {command}")
    assert new == text.replace("old output\nline 2\n", "ran --select TNL202 a.py\n").replace(
        "$ tfnumlint b.py\n", "$ tfnumlint b.py\nran b.py\n"
    )
    assert regenerate(new, lambda command: f"ran {command}") == new


def test_dev_readme_check_and_write_round_trip(tmp_path, capsys):
    """`--check` names a stale example and exits 1; `--write` regenerates it by running the tool."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(f"# t\n\n{readme_rule_table()}\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text("```\n$ tfnumlint --version\ntfnumlint 0.0.0-stale\n```\n")
    assert dev_main(["readme", "--check"], root=tmp_path) == 1
    assert "docs/page.md: $ tfnumlint --version" in capsys.readouterr().out
    assert dev_main(["readme", "--write"], root=tmp_path) == 0
    version = run_example("--version", tmp_path)
    assert version.startswith("tfnumlint ") and "stale" not in version
    assert page.read_text() == f"```\n$ tfnumlint --version\n{version}\n```\n"
    assert dev_main(["readme", "--check"], root=tmp_path) == 0


def test_an_example_that_is_a_usage_error_stops_the_generator(tmp_path, capsys):
    (tmp_path / "README.md").write_text(
        f"{readme_rule_table()}\n```\n$ tfnumlint --no-such-flag\n```\n"
    )
    assert dev_main(["readme", "--check"], root=tmp_path) == 2
    assert "--no-such-flag" in capsys.readouterr().err


EXAMPLES = [
    pytest.param(doc, e, id=f"{doc.relative_to(ROOT)}: {e.command}")
    for doc in DOCS
    for e in examples_in(doc.read_text(encoding="utf-8"))
]


@pytest.mark.parametrize(("doc", "example"), EXAMPLES)
def test_every_example_prints_what_the_docs_show(doc, example):
    pytest.importorskip("tensorflow")
    printed = run_example(example.command, ROOT)
    assert printed == example.output, (
        f"{doc.name}: `tfnumlint {example.command}` prints something else today; "
        "run `python -m tfnumlint.dev readme --write` and review the diff"
    )


# --- a run without TensorFlow says so ----------------------------------------------------------

_WITHOUT_TF = "import sys; sys.modules['tensorflow'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"


def _pytest_without_tensorflow(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_TF, "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_run_without_tensorflow_prints_one_line_saying_verification_was_skipped():
    plain = "tests/test_docs.py::test_the_readme_is_a_user_guide_of_at_most_350_lines"
    proc = _pytest_without_tensorflow(
        "tests/verify/test_trace.py", "tests/verify/test_semantics.py", plain
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(VERIFICATION_SKIPPED) == 1, proc.stdout
    clean = _pytest_without_tensorflow(plain)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert VERIFICATION_SKIPPED not in clean.stdout
    # and the README names the command that runs them
    assert "python -m pytest -q tests/verify" in README.read_text(encoding="utf-8")
