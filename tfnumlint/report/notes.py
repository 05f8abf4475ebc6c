"""Notes about findings a run hides: each names the rules and the flag that shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import Finding

if TYPE_CHECKING:
    from ..baseline import Written
    from ..shown import Shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _by_rule(findings: list[Finding]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    return dict(sorted(counts.items()))


def gated_notes(hidden: list[Finding]) -> list[str]:
    """One note per ``default: confirmed`` rule whose unconfirmed findings were hidden."""
    return [
        f"{n} {rule} finding{'s' if n != 1 else ''} hidden: {rule} is shown only when its "
        f"simulation confirms it; `--select {rule}` shows {'them' if n != 1 else 'it'}"
        for rule, n in _by_rule(hidden).items()
    ]


def refuted_notes(refuted: list[Finding]) -> list[str]:
    """The refuted findings hidden, per rule, and the flag that shows them."""
    if not refuted:
        return []
    rules = ", ".join(rule if n == 1 else f"{rule} ({n})" for rule, n in _by_rule(refuted).items())
    them = "them" if len(refuted) != 1 else "it"
    return [
        f"{_plural(len(refuted), 'refuted finding')} hidden ({rules}); "
        f"`--show-refuted` shows {them}"
    ]


def baseline_breakdown(written: Written, visible: Shown, no_verify: bool) -> str:
    """How many of the findings a baseline records a run shows, and why the others are not."""
    run = "a --no-verify run shows" if no_verify else "shown now"
    parts = []
    if visible.merged:
        parts.append(f"{visible.merged} merged into another rule's finding on the same hazard")
    if visible.refuted:
        parts.append(f"{len(visible.refuted)} refuted")
    for rule, n in _by_rule(visible.gated).items():
        parts.append(f"{n} of {rule}, shown only when its simulation confirms it")
    head = f"{written.shown} {run}" if not no_verify else f"{run} {written.shown}"
    return head + (f"; {', '.join(parts)}" if parts else "")
