"""Which hazards a rewrite removes: the hits of one hazard group, before and after.

One hazard is often seen by several rules (``exp(x) / reduce_sum(exp(x))`` is a division by
a sum that underflows *and* an exp that overflows; :mod:`tfnumlint.grouping` merges them into
one finding).  A fix of that finding must remove all of them: ``divide_no_nan`` silences the
division but keeps the overflowing exp, ``softmax`` removes both.  So every rendered plan is
spliced alone into the module, the module is linted again with the same checks, and the plan
records, per rule, how many hits it removed and which of its group's rules it leaves (or
introduces).  A plan that leaves one is never offered; among the others, the one removing the
most hazards is preferred (:mod:`.apply`).  Static only: no TensorFlow.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from libcst.metadata import CodeRange

from ..grouping import hazard_groups
from .ir import Plan


@dataclass
class HitSpan:
    """A placed rule hit, as :func:`tfnumlint.grouping.same_hazard` reads a finding."""

    rule: str
    path: str
    cell: int | None
    line: int
    column: int
    end_line: int
    end_column: int


def hit_spans(placed: Sequence[tuple[str, CodeRange]]) -> list[HitSpan]:
    """``(rule, range)`` pairs as spans (columns 1-based, like a finding's)."""
    return [
        HitSpan(code, "", None, p.start.line, p.start.column + 1, p.end.line, p.end.column + 1)
        for code, p in placed
    ]


def groups_by_hit(spans: Sequence[HitSpan]) -> list[list[int]]:
    """For each hit, the indices of the hits of its hazard group (itself included)."""
    out: list[list[int]] = [[] for _ in spans]
    for group in hazard_groups(spans):
        for i in group:
            out[i] = group
    return out


def counts(spans: Iterable[HitSpan]) -> Counter[str]:
    """Hits per rule, one per (rule, range): a hit dispatched from two sites counts once."""
    unique = {(s.rule, s.line, s.column, s.end_line, s.end_column) for s in spans}
    return Counter(u[0] for u in unique)


def judge(plan: Plan, group: Sequence[HitSpan], before: Counter[str], after: Counter[str]) -> None:
    """Record on ``plan`` what it removes, and the rules of its group it leaves or adds."""
    need = counts(group)
    plan.hazards = sorted(need)
    removed = before - after
    plan.removed = dict(removed)
    left = [r for r in sorted(need) if removed[r] < need[r]]
    added = sorted((after - before).keys())
    plan.leaves = sorted({*left, *added})


def leaves_detail(plan: Plan) -> str:
    """Why a plan that leaves a hazard is not offered, for the proof record."""
    return (
        f"the rewritten code still has {', '.join(plan.leaves)}: the fix must remove every "
        f"hazard of the finding ({', '.join(plan.hazards)})"
    )


@dataclass
class TextEdit:
    """One change of the file's text: replace ``length`` characters at ``offset`` (lines
    ``line`` to ``end_line`` inclusive; ``end_line < line`` for a pure insertion)."""

    offset: int
    length: int
    line: int
    end_line: int
    text: str

    def to_json(self) -> dict[str, int | str]:
        return {
            "offset": self.offset,
            "length": self.length,
            "line": self.line,
            "end_line": self.end_line,
            "text": self.text,
        }


def text_edits(old: str, new: str) -> list[TextEdit]:
    """The whole-line edits that turn ``old`` into ``new``: the replacement, the assignments
    it made dead and an added import, exactly as ``--fix`` would write them."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    lo = 0  # the common head and tail are never edited: match only what lies between
    while lo < min(len(a), len(b)) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < min(len(a), len(b)) - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    mid_a, mid_b = a[lo : len(a) - hi], b[lo : len(b) - hi]
    # exact matching is quadratic on many equal lines (a long run of comments); the popular-line
    # heuristic still yields edits that turn ``old`` into ``new``, only less minimal ones
    exact = len(mid_a) + len(mid_b) <= 4000
    matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=not exact)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = i1 + lo, i2 + lo, j1 + lo, j2 + lo
        out.append(TextEdit(starts[i1], starts[i2] - starts[i1], i1 + 1, i2, "".join(b[j1:j2])))
    return out
