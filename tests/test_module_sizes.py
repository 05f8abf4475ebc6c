"""One job per module: no module of the package is over 600 lines, except the pure data
tables CONTRIBUTING.md names (issue 26).  The exempt list is read from CONTRIBUTING.md, so the
document and the rule cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 600


def exempt_tables() -> set[str]:
    """The paths on CONTRIBUTING.md's "Data tables over 600 lines" line."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("- Data tables over 600 lines:"))
    return set(re.findall(r"`(tfnumlint/[\w/]+\.py)`", line))


def test_no_module_is_over_the_limit_but_the_named_data_tables():
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in (ROOT / "tfnumlint").rglob("*.py")
    }
    assert len(sizes) > 100, "the walk saw the package"
    exempt = exempt_tables()
    too_long = {path: n for path, n in sizes.items() if n > LIMIT and path not in exempt}
    assert not too_long, f"modules over {LIMIT} lines (split them along a seam): {too_long}"


def test_the_exempt_tables_exist_and_are_over_the_limit():
    """An exemption that no longer needs to be one is taken off the list."""
    exempt = exempt_tables()
    assert "tfnumlint/ops.py" in exempt  # the line was read
    for path in exempt:
        assert len((ROOT / path).read_text(encoding="utf-8").splitlines()) > LIMIT, path
