"""One hazard, one finding: findings of several rules on the same expression become one.

``log(p)`` inside ``y * log(p)`` is one hazard seen by TNL101 and TNL103; ``x / d`` inside
``tf.where(c, x / d, 0)`` is one hazard seen by TNL201 and TNL302.  Reporting each separately
makes one problem look like three.  Findings are merged when their ranges are equal, or when one
contains the other and both rules look at the same kind of operation (the families below,
TNL302 with anything inside its ``tf.where``, and a division with the root or norm inside
it).  The kept finding lists the others in ``related_rules``; each merged rule code stays in
the JSON, so ``--select``/``--ignore``/``noqa`` (applied before merging) still work per rule.
``fold_upstream`` (below) does the same for a finding that only carries another finding's
inf/NaN through its own op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .model import Finding


class Spanned(Protocol):
    """What :func:`same_hazard` reads: a finding, or a rule hit placed in a file."""

    rule: str
    path: str
    cell: int | None
    line: int
    column: int
    end_line: int
    end_column: int


# Preferred primary first; rules in one family describe the same hazard on nested ranges.
RANK = (
    "TNL302",
    "TNL103",
    "TNL101",
    "TNL106",
    "TNL102",
    "TNL104",
    "TNL201",
    "TNL206",
    "TNL202",
    "TNL203",
    "TNL205",
    "TNL204",
    "TNL301",
    "TNL404",
)
FAMILIES = (
    frozenset({"TNL101", "TNL102", "TNL103", "TNL104", "TNL106"}),
    frozenset({"TNL201", "TNL206"}),
    frozenset({"TNL202", "TNL203", "TNL206"}),
    frozenset({"TNL301", "TNL404"}),
)
# Rules about the numerics of one expression; the training-configuration rules (TNL403,
# TNL501, TNL502, ...) report separate concerns on one optimizer call and are never merged.
EXPRESSION_RULES = frozenset(RANK) | {"TNL105", "TNL401", "TNL402"}
DIVISIONS = frozenset({"TNL201", "TNL206"})
ROOTS = frozenset({"TNL202", "TNL203"})  # a root or norm inside a division's range
STATUS_RANK = {"confirmed": 0, "inconclusive": 1, "skipped": 2, "refuted": 3}


def _span(f: Spanned) -> tuple[tuple[int, int], tuple[int, int]]:
    return (f.line, f.column), (f.end_line, f.end_column)


def _contains(outer: Spanned, inner: Spanned) -> bool:
    (a0, a1), (b0, b1) = _span(outer), _span(inner)
    return a0 <= b0 and b1 <= a1


def same_hazard(a: Spanned, b: Spanned) -> bool:
    """Two findings of different rules that describe one hazard."""
    if a.rule == b.rule or a.path != b.path or a.cell != b.cell:
        return False
    if a.rule not in EXPRESSION_RULES or b.rule not in EXPRESSION_RULES:
        return False  # configuration rules (a learning rate, clipping) are separate concerns
    if _span(a) == _span(b):
        return True
    if not (_contains(a, b) or _contains(b, a)):
        return False
    outer, inner = (a, b) if _contains(a, b) else (b, a)
    if outer.rule == "TNL302":
        return True
    if outer.rule in DIVISIONS and inner.rule in ROOTS:
        return True  # x / sqrt(v), x / norm(v): one hazard, v = 0
    return any(a.rule in fam and b.rule in fam for fam in FAMILIES)


def _priority(f: Finding) -> tuple[int, int]:
    rank = RANK.index(f.rule) if f.rule in RANK else len(RANK)
    return STATUS_RANK.get(f.verification.status, 2), rank


def hazard_groups(items: Sequence[Spanned]) -> list[list[int]]:
    """Indices of ``items`` grouped by hazard (:func:`same_hazard`, transitively), in order.
    The fixer reads the same groups: a fix must remove every rule of its group."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_path: dict[tuple[str, int | None], list[int]] = {}
    for i, f in enumerate(items):
        by_path.setdefault((f.path, f.cell), []).append(i)
    for members in by_path.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if same_hazard(items[i], items[j]):
                    parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def merge_same_hazard(findings: list[Finding]) -> list[Finding]:
    """Merge each group of same-hazard findings into its best finding (verdict, then rank)."""
    groups = [[findings[i] for i in g] for g in hazard_groups(findings)]
    out = []
    for group in groups:
        group.sort(key=_priority)
        primary = group[0]
        related = sorted({m.rule for m in group[1:]} | set(primary.related_rules))
        related = [r for r in related if r != primary.rule]
        if related and related != primary.related_rules:
            primary.related_rules = related
            primary.message = f"{primary.message} (same hazard: {', '.join(related)})"
        out.append(primary)
    kept = {id(f) for f in out}
    # a finding merged into another is left out, unless it equals a kept one (as ``in`` tests)
    return [f for f in findings if id(f) in kept or f in out]


# ---------------------------------------------------------------- a symptom from upstream
#
# ``a / (b - c) * d / e`` holds two divisions; a witness of the outer one with ``b == c``
# shows the inner one's inf passing through.  The verifier records such a witness
# (``observed["upstream"]``, verify/upstream.py) only when the outer op has no witness of its
# own; the finding is folded into the finding flagged inside that operand: the inner division
# on the same statement, or the division on an earlier statement whose result the operand
# reads (the slice inlines it, keeping where each node was written).

SHOWN = frozenset({"confirmed", "inconclusive"})


def _operand_tree(tree: Any, index: int) -> Any:
    """The ``index``-th operand of the flagged op at the root of a probe's target (the order
    of ``verify.verdicts.flagged_operands``: left/right, then positional and named args)."""
    if not isinstance(tree, dict):
        return None
    if tree.get("k") == "bin":
        parts = [tree.get("l"), tree.get("r")]
    elif tree.get("k") == "call":
        parts = list(tree.get("args") or []) + list((tree.get("kw") or {}).values())
    else:
        return None
    return parts[index] if 0 <= index < len(parts) else None


def _places(tree: Any) -> set[tuple[int, int, str]]:
    """Where each operation of a probe tree was written (line, column, op): the slicer keeps
    the place of every node, also of an expression it inlined for a name the tree reads."""
    out: set[tuple[int, int, str]] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("line"), int) and isinstance(node.get("col"), int):
                out.add((node["line"], node["col"], str(node.get("op"))))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _target(f: Finding) -> Any:
    return f.probe.get("target") if isinstance(f.probe, dict) else None


def upstream_of(finding: Finding, others: list[Finding]) -> Finding | None:
    """The shown finding whose flagged expression carries ``finding``'s symptom in: it lies
    inside the operand the witness found already inf/NaN, written there or assigned to a name
    the operand reads (the nearest such, the latest in the source), in the same file."""
    mark = (finding.verification.observed or {}).get("upstream")
    if not isinstance(mark, dict) or finding.verification.status not in SHOWN:
        return None
    operand = _operand_tree(_target(finding), int(mark.get("index", -1)))
    if operand is None:
        return None
    inside = _places(operand)
    best: Finding | None = None
    for other in others:
        if other is finding or (other.path, other.cell) != (finding.path, finding.cell):
            continue
        target = _target(other)
        if other.verification.status not in SHOWN or not isinstance(target, dict):
            continue
        if _contains(other, finding):
            continue  # downstream of it, or it: a nested op may start at the same column
        place = (target.get("line", other.line), target.get("col", other.column))
        if (*place, str(target.get("op"))) not in inside:
            continue
        if best is None or (other.end_line, other.end_column) > (best.end_line, best.end_column):
            best = other
    return best


def fold_upstream(findings: list[Finding]) -> list[Finding]:
    """Fold each finding whose symptom starts in another shown finding into that one; the
    folded finding's place and rule stay on it (``related``, ``related_rules``).  A finding
    whose upstream one is refuted or filtered out stays as it is."""
    parent: dict[int, Finding] = {}
    for f in findings:
        up = upstream_of(f, findings)
        if up is not None:
            parent[id(f)] = up
    if not parent:
        return findings

    def root(f: Finding) -> Finding:
        seen = {id(f)}
        while id(f) in parent and id(parent[id(f)]) not in seen:
            f = parent[id(f)]
            seen.add(id(f))
        return f

    for f in findings:
        if id(f) not in parent:
            continue
        keep = root(f)
        mark = (f.verification.observed or {})["upstream"]
        where = f"line {f.line}" if f.line != keep.line else f"column {f.column}"
        keep.related = [
            *(keep.related or []),
            {
                "path": f.path,
                "line": f.line,
                "column": f.column,
                "rule": f.rule,
                "message": (
                    f"{f.rule} at {where}: the same hazard downstream (its {mark.get('op')}'s "
                    f"{mark.get('operand')} `{mark.get('expr')}` is already {mark.get('value')} "
                    "at its witness)"
                ),
            },
        ]
        keep.related += f.related or []
        rules = ({f.rule} | set(f.related_rules) | set(keep.related_rules)) - {keep.rule}
        keep.related_rules = sorted(rules)
        keep.message = f"{keep.message} (the symptom carries on to {f.rule} at {where})"
    return [f for f in findings if id(f) not in parent]
