"""One hazard, one finding: findings of several rules on the same expression become one.

``log(p)`` inside ``y * log(p)`` is one hazard seen by TNL101 and TNL103; ``x / d`` inside
``tf.where(c, x / d, 0)`` is one hazard seen by TNL201 and TNL302.  Reporting each separately
makes one problem look like three.  Findings are merged when their ranges are equal, or when one
contains the other and both rules look at the same kind of operation (the families below,
TNL302 with anything inside its ``tf.where``, and a division with the root or norm inside it).  The kept finding lists the others in
``related_rules``; each merged rule code stays in the JSON, so ``--select``/``--ignore``/``noqa``
(applied before merging) still work per rule.
"""

from __future__ import annotations

from .model import Finding

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


def _span(f: Finding) -> tuple[tuple[int, int], tuple[int, int]]:
    return (f.line, f.column), (f.end_line, f.end_column)


def _contains(outer: Finding, inner: Finding) -> bool:
    (a0, a1), (b0, b1) = _span(outer), _span(inner)
    return a0 <= b0 and b1 <= a1


def same_hazard(a: Finding, b: Finding) -> bool:
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


def merge_same_hazard(findings: list[Finding]) -> list[Finding]:
    """Merge each group of same-hazard findings into its best finding (verdict, then rank)."""
    parent = list(range(len(findings)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_path: dict[tuple[str, int | None], list[int]] = {}
    for i, f in enumerate(findings):
        by_path.setdefault((f.path, f.cell), []).append(i)
    for members in by_path.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if same_hazard(findings[i], findings[j]):
                    parent[find(i)] = find(j)
    groups: dict[int, list[Finding]] = {}
    for i, f in enumerate(findings):
        groups.setdefault(find(i), []).append(f)
    out = []
    for group in groups.values():
        group.sort(key=_priority)
        primary = group[0]
        related = sorted({m.rule for m in group[1:]} | set(primary.related_rules))
        related = [r for r in related if r != primary.rule]
        if related and related != primary.related_rules:
            primary.related_rules = related
            primary.message = f"{primary.message} (same hazard: {', '.join(related)})"
        out.append(primary)
    return [f for f in findings if f in out]
