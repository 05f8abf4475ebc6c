"""Compare two JSON reports of tfnumlint finding by finding, field by field.

Used to show that a refactoring changes no behaviour: run the same command before and after
(``--output-format json``), then ``python benchmarks/compare_reports.py before.json
after.json``.  A finding's identity is its path, rule and start position (with an occurrence
index for exact repeats); every other field is compared recursively.  Timings
(``verification.seconds``, ``summary.seconds``) are ignored because they never repeat.  Exit
status 0 when the reports match, 1 when they differ, 2 when one cannot be read.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# fields that differ between two runs of the same code (wall-clock times)
VOLATILE_LEAVES = frozenset({("verification", "seconds"), ("summary", "seconds")})

Identity = tuple[str, str, int, int, int]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def by_identity(findings: list[dict[str, Any]]) -> dict[Identity, dict[str, Any]]:
    """Key each finding by (path, rule, line, column, n): n counts exact repeats in order."""
    out: dict[Identity, dict[str, Any]] = {}
    for f in findings:
        n = 0
        while (key := (f["path"], f["rule"], f["line"], f["column"], n)) in out:
            n += 1
        out[key] = f
    return out


def field_differences(a: Any, b: Any, where: tuple[str, ...] = ()) -> Iterator[str]:
    """One line per differing leaf: ``field.path: before -> after``."""
    if where[-2:] in VOLATILE_LEAVES:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            yield from field_differences(a.get(key), b.get(key), (*where, key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from field_differences(x, y, (*where, str(i)))
    elif a != b and not (_nan(a) and _nan(b)):  # a NaN loss in both reports is the same
        yield f"{'.'.join(where) or '<root>'}: {json.dumps(a)} -> {json.dumps(b)}"


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every difference between two reports, as readable lines (empty: identical)."""
    out: list[str] = []
    old = by_identity(before.get("findings", []))
    new = by_identity(after.get("findings", []))
    for key in sorted(old.keys() - new.keys()):
        out.append(f"only before: {_name(key)} {old[key]['message']}")
    for key in sorted(new.keys() - old.keys()):
        out.append(f"only after: {_name(key)} {new[key]['message']}")
    for key in sorted(old.keys() & new.keys()):
        out += [f"{_name(key)} {d}" for d in field_differences(old[key], new[key])]
    out += [f"errors {d}" for d in field_differences(before.get("errors"), after.get("errors"))]
    out += [
        f"summary {d}"
        for d in field_differences(before.get("summary"), after.get("summary"), ("summary",))
    ]
    return out


def _name(key: Identity) -> str:
    path, rule, line, column, n = key
    return f"{path}:{line}:{column} {rule}" + (f" (#{n + 1})" if n else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    try:
        before, after = load(args.before), load(args.after)
    except (OSError, ValueError) as exc:
        print(f"cannot read a report: {exc}", file=sys.stderr)
        return 2
    differences = compare(before, after)
    for line in differences:
        print(line)
    count = len(before.get("findings", []))
    if differences:
        print(f"DIFFERENT: {len(differences)} difference(s)")
        return 1
    print(f"IDENTICAL: {count} finding(s), every field equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
