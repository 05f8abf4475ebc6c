"""What a fix run reports: how many findings it fixes, and the fix each finding carries.

Counts are in findings as the report shows them: one per hazard group (the findings that
:func:`tfnumlint.grouping.merge_same_hazard` merges into one), so "Would fix 3 findings"
names three findings of the text report.  Every finding of a group carries the group's best
fix in JSON and SARIF (whichever of them the merge keeps), with its proof's result.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..grouping import hazard_groups
from ..model import Finding, Fix
from .ir import Plan
from .splice import overlaps

NOT_RUN = "not run in this invocation: proofs run with --diff or --fix"


def _span(f: Finding) -> tuple[int, int, int, int]:
    """A finding's range with 0-based columns, as a plan's span."""
    return (f.line, f.column - 1, f.end_line, f.end_column - 1)


def fixed_by(plan: Plan, finding: Finding | None, findings: Sequence[Finding]) -> set[int]:
    """Indices of ``findings`` a first-pass plan removes: its own finding, and findings that
    overlap its span, of a rule whose hits it removed (no more per rule than it removed)."""
    out = {i for i, f in enumerate(findings) if f is finding}
    left = dict(plan.removed)
    for i in out:
        left[findings[i].rule] = left.get(findings[i].rule, 0) - 1
    for i, f in enumerate(findings):
        if i not in out and left.get(f.rule, 0) > 0 and overlaps(plan.span, _span(f)):
            out.add(i)
            left[f.rule] -= 1
    return out


def fixed_count(
    findings: Sequence[Finding], applied: Sequence[tuple[Plan, Finding | None]], later: int
) -> int:
    """Findings of the report fixed: the hazard groups a first-pass plan touched, plus one per
    plan applied on a later pass (a hazard that showed only on the rewritten text)."""
    touched: set[int] = set()
    for plan, finding in applied:
        if finding is not None:
            touched |= fixed_by(plan, finding, findings)
    return sum(1 for g in hazard_groups(findings) if touched & set(g)) + later


def offered(plan: Plan) -> bool:
    """Proven, or not yet tried (a suggestion has no proof and is always offered)."""
    if plan.leaves:
        return False
    return plan.proof is None or plan.proof.get("verdict") != "failed"


def best(plans: Sequence[Plan], applied: Sequence[Plan]) -> Plan | None:
    """The fix a group shows: the one applied, else the best offered (safe first, most
    hazards removed), else the first whose proof failed (it says why)."""
    for p in plans:
        if any(p is a for a in applied):
            return p
    ranked = sorted(
        (p for p in plans if offered(p)),
        key=lambda p: (p.applicability != "safe", -sum(p.removed.values())),
    )
    if ranked:
        return ranked[0]
    return plans[0] if plans else None


def proof_record(plan: Plan, proven: bool) -> dict | None:
    """The proof's result as JSON shows it: ``status`` proven / failed / not run."""
    if plan.applicability == "suggestion" and not plan.edits:
        return None
    if plan.proof is not None and plan.proof.get("verdict") == "failed":
        return {"status": "failed", **plan.proof}
    if not proven or plan.proof is None:
        detail = NOT_RUN
        if plan.applicability == "safe":
            detail += "; a safe rewrite whose proof finds values that move becomes unsafe"
        return {"status": "not run", "detail": detail}
    return {"status": "proven", **plan.proof}


def fix_record(plan: Plan, proven: bool) -> Fix:
    line, col, end_line, end_col = plan.span
    return Fix(
        applicability=plan.applicability,
        message=plan.message,
        replacement=plan.replacement or None,
        line=line,
        column=col + 1 if line else 0,
        end_line=end_line,
        end_column=end_col + 1 if end_line else 0,
        proof=proof_record(plan, proven),
        rules=list(plan.hazards),
        edits=[e.to_json() for e in plan.edits_text],
    )


def attach(
    findings: Sequence[Finding],
    plans_first: Sequence[tuple[Finding, Plan]],
    applied: Sequence[Plan],
    proven: bool,
) -> None:
    """Give every finding of a hazard group the group's best fix (``proven``: the proofs ran)."""
    for group in hazard_groups(findings):
        members = [findings[i] for i in group]
        plans = [p for f, p in plans_first if any(f is m for m in members)]
        plan = best(plans, applied)
        if plan is None:
            continue
        record = fix_record(plan, proven)
        for f in members:
            f.fix = record
