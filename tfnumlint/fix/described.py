"""The fix descriptions of JSON and SARIF reports, cached per file like its findings.

Describing a file's fixes parses it again, runs the checks of its findings and lints every
rewrite once more (:func:`.apply.describe_fixes`): on a warm cache that was most of a JSON
run.  The result depends on the file's text, on its findings (rule, span, whether verification
refuted it), on the rules and settings (``fingerprint``, the one the static cache keys on) and on
the project facts the analyses asked for; the entry keeps those facts' digests and is used
only while the index still gives each of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ..cache import Cache, key
from ..engine import ProjectUnit
from ..model import Finding, Fix

NAMESPACE = "fixes"


def entry_key(
    fingerprint: str,
    unit: ProjectUnit | None,
    raw: bytes,
    codes: frozenset[str],
    findings: Sequence[Finding],
) -> str:
    state = [
        (f.path, f.cell, f.rule, f.line, f.column, f.end_line, f.end_column, f.verification.status)
        for f in findings
    ]
    module = unit.module if unit is not None else ""
    return key(NAMESPACE, fingerprint, module, json.dumps(sorted(codes)), json.dumps(state), raw)


def load(cache: Cache, k: str, unit: ProjectUnit | None, findings: Sequence[Finding]) -> bool:
    """Give ``findings`` their cached fixes; False (nothing changed) on a miss or a stale fact."""
    entry = cache.get(k)
    if not isinstance(entry, dict):
        return False
    try:
        deps: Mapping[str, str] = entry["deps"]
        index = unit.index if unit is not None else None
        if deps and (index is None or any(index.digest(d) != v for d, v in deps.items())):
            return False
        fixes = [Fix(**data) for data in entry["fixes"]]
        which: list[int] = entry["of"]
        if len(which) != len(findings):
            return False
        chosen = [fixes[i] if i >= 0 else None for i in which]
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return False  # a malformed entry is a miss
    for f, fix in zip(findings, chosen, strict=True):
        if fix is not None:
            f.fix = fix
    return True


def store(cache: Cache, k: str, findings: Sequence[Finding], deps: Mapping[str, str]) -> None:
    """The fixes ``findings`` carry (one record per fix object: a hazard group shares one)."""
    fixes: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    which = []
    for f in findings:
        if f.fix is None:
            which.append(-1)
            continue
        if id(f.fix) not in index:
            index[id(f.fix)] = len(fixes)
            fixes.append(asdict(f.fix))
        which.append(index[id(f.fix)])
    cache.put(k, {"deps": dict(deps), "fixes": fixes, "of": which})
