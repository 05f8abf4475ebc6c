"""Baselines: record today's findings once, then show only new ones.

The file is JSON, one entry per finding sorted by place, so that it reads and diffs well in
review.  Matching uses the entry's group and scope (see ``fingerprint.py``); the rule, path,
line and message are there for people reading it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .config import ConfigError
from .fingerprint import Identity
from .model import Finding

FORMAT_VERSION = 1


@dataclass
class Baseline:
    path: Path
    entries: list[dict] = field(default_factory=list)  # {fingerprint, group, scope, rule, ...}
    verified: bool | None = None  # whether its findings were verified when it was written


@dataclass
class Applied:
    shown: list[Finding]
    hidden: int  # findings the baseline holds
    stale: int  # baseline entries for analysed files that no finding matches any more
    # how many of the hidden findings a run without the baseline shows (as counted when the
    # baseline was written); None for a baseline written before it recorded that
    would_show: int | None = None


def load(path: Path) -> Baseline:
    """Read a baseline; a missing or malformed file is a usage error that names it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"baseline file not found: {path} (create it with --write-baseline)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"baseline {path} is not valid JSON: {exc}") from None
    entries = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(entries, list) or data.get("version") != FORMAT_VERSION:
        raise ConfigError(
            f"baseline {path} is not a tfnumlint baseline (version {FORMAT_VERSION}); "
            "write a new one with --write-baseline"
        )
    valid = [e for e in entries if isinstance(e, dict) and isinstance(e.get("group"), str)]
    verified = data.get("verified")
    return Baseline(path, valid, verified if isinstance(verified, bool) else None)


def match(
    entries: list[dict], findings: list[Finding], identities: dict[str, Identity]
) -> tuple[set[int], set[int]]:
    """Pair findings with baseline entries: (indices of matched findings, of matched entries).

    Within one group (same rule, path and expression), entries pair first with findings in the
    same function, then with the rest in file order: a renamed function keeps its findings
    hidden, and one more copy of a common expression in a new function is the one shown."""
    by_group: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        by_group.setdefault(e["group"], []).append(i)
    current: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        ident = identities.get(f.fingerprint or "")
        if ident is not None:
            current.setdefault(ident.group, []).append(i)
    matched_f: set[int] = set()
    matched_e: set[int] = set()
    for group, fs in current.items():
        es = by_group.get(group, [])
        for same_scope in (True, False):
            for fi in fs:
                if fi in matched_f:
                    continue
                scope = identities[findings[fi].fingerprint or ""].scope
                for ei in es:
                    if ei not in matched_e and (
                        not same_scope or entries[ei].get("scope", "") == scope
                    ):
                        matched_f.add(fi)
                        matched_e.add(ei)
                        break
    return matched_f, matched_e


def apply(
    baseline: Baseline,
    findings: list[Finding],
    identities: dict[str, Identity],
    analysed: set[str],
    root: Path,
) -> Applied:
    """Hide the findings the baseline holds; count its entries that no longer match.

    Only entries for files analysed in this run, or deleted since, can be stale: linting one
    file must not call the rest of the baseline stale."""
    matched_f, matched_e = match(baseline.entries, findings, identities)
    shown = [f for i, f in enumerate(findings) if i not in matched_f]
    stale = sum(
        1
        for i, e in enumerate(baseline.entries)
        if i not in matched_e
        and (e.get("path") in analysed or not (root / str(e.get("path", ""))).exists())
    )
    flags = [baseline.entries[i].get("shown") for i in matched_e]
    recorded = all(isinstance(x, bool) for x in flags)  # older baselines did not record it
    would_show = sum(1 for x in flags if x is True) if recorded else None
    return Applied(shown, len(findings) - len(shown), stale, would_show)


@dataclass
class Written:
    count: int  # entries written: every finding, per rule
    shown: int  # of them, how many a run shows (a merged finding counts once)


def write(
    path: Path,
    findings: list[Finding],
    identities: dict[str, Identity],
    project_paths: dict[str, str],
    shown: set[int] | None = None,
    verified: bool = False,
) -> Written:
    """Write every finding to ``path`` atomically, sorted by place.  ``shown`` holds the ids
    of the findings a run shows: each entry records whether it is one, so that a later run can
    say how many of the findings it hides it would show."""
    entries = []
    for f in sorted(findings, key=lambda f: f.sort_key):
        ident = identities.get(f.fingerprint or "")
        if ident is None:
            continue
        entry = {
            "fingerprint": ident.fingerprint,
            "group": ident.group,
            "scope": ident.scope,
            "rule": f.rule,
            "path": project_paths.get(f.path, f.path),
            "line": f.line,
            "message": f.message,
            "status": f.verification.status,
        }
        if shown is not None:
            entry["shown"] = id(f) in shown
        entries.append(entry)
    data = {
        "version": FORMAT_VERSION,
        "tool": {"name": "tfnumlint", "version": __version__},
        "verified": verified,
        "findings": entries,
    }
    text = json.dumps(data, indent=2) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tfnumlint-baseline-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return Written(len(entries), sum(1 for e in entries if e.get("shown")))
