"""Which findings a run shows, and why the others are not: merged into another finding on the
same hazard, of a rule shown only when its simulation confirms it, or refuted.  One pipeline,
so that the report and the baseline's counts agree."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

from .grouping import fold_upstream, merge_same_hazard
from .model import Finding
from .ruledocs import all_docs


@dataclass
class Shown:
    findings: list[Finding]  # what the report shows (merged: one per hazard)
    merged: int = 0  # per-rule findings merged or folded into another finding
    gated: list[Finding] = field(default_factory=list)  # unconfirmed, rule shown only if confirmed
    refuted: list[Finding] = field(default_factory=list)  # hidden without --show-refuted


def evidence_gate(
    findings: list[Finding], named: frozenset[str]
) -> tuple[list[Finding], list[Finding]]:
    """Hide unconfirmed findings of ``default: confirmed`` rules not selected by name:
    (kept, hidden)."""
    docs = all_docs()
    kept: list[Finding] = []
    hidden: list[Finding] = []
    for f in findings:
        visible = (
            f.verification.status == "confirmed"
            or f.rule in named
            or not (f.rule in docs and docs[f.rule].evidence)
        )
        (kept if visible else hidden).append(f)
    return kept, hidden


def show(findings: list[Finding], named: frozenset[str], show_refuted: bool) -> Shown:
    """Merge same-hazard findings (their rules stay in related_rules), fold symptoms carried
    in from another finding, then hide gated and refuted ones.  Merging edits the kept
    findings' messages in place."""
    merged = fold_upstream(merge_same_hazard(findings))
    kept, gated = evidence_gate(merged, named)
    refuted = [f for f in kept if f.verification.status == "refuted"]
    if show_refuted:
        return Shown(kept, len(findings) - len(merged), gated, [])
    shown = [f for f in kept if f.verification.status != "refuted"]
    return Shown(shown, len(findings) - len(merged), gated, refuted)


def shown_ids(findings: list[Finding], named: frozenset[str], show_refuted: bool):
    """The ids of the findings a run would show (each merged finding counts once, as its kept
    finding), and the counts of the others; ``findings`` themselves are left unchanged."""
    copies = [
        replace(f, related_rules=list(f.related_rules), related=copy.deepcopy(f.related))
        for f in findings
    ]
    result = show(copies, named, show_refuted)
    kept = {id(c) for c in result.findings}
    return {id(f) for f, c in zip(findings, copies, strict=True) if id(c) in kept}, result
