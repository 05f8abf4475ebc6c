"""The static gates a confirmed witness passes, in order: its domains, where gradients flow,
whether the code can reach it (names never confirm), and whether it rests on special values.
:class:`Gate` and :func:`run_gates` make the whole ordered list (``probing.EXPR_GATES``) and the
trail of steps JSON shows (``verification.trail``).

The orchestration sits here, above :mod:`.domains` and :mod:`.generic`, so neither imports the
other's caller (they formed an import circle when :func:`received` lived in ``domains``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.domain_model import fmt_g
from . import domains, kinds
from .generic import all_free_reason, free_value_reason, special_value_reason
from .gradient_gate import conditional, settle

Verdict = dict[str, Any]


@dataclass(frozen=True)
class Gate:
    """One step a witness's verdict passes: ``name`` (what the trail calls it) and the
    function that may keep or change the verdict (``(probe, verdict) -> verdict``)."""

    name: str
    apply: Callable[[dict[str, Any], Verdict], Verdict]


def run_gates(gates: tuple[Gate, ...], probe: dict[str, Any], out: Verdict) -> Verdict:
    """Pass the verdict through ``gates`` in order; each appends its step to ``trail`` (what
    JSON shows): the status after it, and its reason when it changed the status."""
    trail: list[dict[str, str]] = list(out.get("trail") or [])
    for gate in gates:
        before = out.get("status")
        out = gate.apply(probe, out)
        step = {"gate": gate.name, "status": str(out.get("status"))}
        if out.get("status") != before:
            step["why"] = str(out.get("detail", "")).split(" (seen: ")[0]
        trail.append(step)
    return {**out, "trail": trail}


def in_domains(probe: dict[str, Any], out: Verdict) -> Verdict:
    """A confirmed witness must lie in the domains the code gives its inputs.  A malformed
    domain never costs the verdict: the probe's own result stands."""
    try:
        return _in_domains(probe, out)
    except (KeyError, TypeError, ValueError):
        return out


def _in_domains(probe: dict[str, Any], out: Verdict) -> Verdict:
    if out.get("status") == "confirmed" and isinstance(out.get("inputs"), dict):
        point = {k: v for k, v in out["inputs"].items() if isinstance(v, (int, float))}
        if domains.broken(probe, point):
            verdict = domains.outside_verdict(probe, point, out.get("dtype"))
            verdict["detail"] = f"{out.get('detail', '')}: {verdict['detail']}"
            return verdict
    return out


def gradient_flow(probe: dict[str, Any], out: Verdict) -> Verdict:
    """Where gradients flow (``gradient_gate.settle``; its condition is a later gate, see
    :data:`probing.EXPR_GATES`); a malformed probe keeps the verdict."""
    try:
        return settle(probe, out)
    except (KeyError, TypeError, ValueError):
        return out


def reachability(probe: dict[str, Any], out: Verdict) -> Verdict:
    """:func:`received`; a malformed probe keeps the verdict."""
    try:
        return received(probe, out)
    except (KeyError, TypeError, ValueError):
        return out


def judge(probe: dict[str, Any], out: Verdict) -> Verdict:
    """The first three gates at once: the domains, where gradients flow, what the code
    receives, and a gradient symptom's condition (for callers that judge a verdict outside
    :data:`probing.EXPR_GATES`)."""
    return conditional(probe, reachability(probe, gradient_flow(probe, in_domains(probe, out))))


def received(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Confirmed only for inputs the code really receives: the witness's needed inputs are
    reachable (:func:`.domains.reachable`) and the symptom does not rest on a special value of a
    parameter nothing drives (``generic.special_value_reason``).  One finding, one reason: the
    gates' reasons are joined, and what was seen stays in the detail."""
    reasons = domains.reach_reasons(probe, out)
    observed, point = out.get("observed"), out.get("inputs")
    if out.get("status") == "confirmed" and isinstance(observed, dict) and isinstance(point, dict):
        reasons += kinds.past_depth(probe, point, list(observed.get("needed") or []))
    named = use_only_reason(probe, out)
    if named:
        reasons.insert(0, named)
    special = special_value_reason(probe, out, say_values=not reasons)
    if special:
        reasons.append(special)
    return domains.not_confirmed(out, reasons)


def free_signs(probe: dict[str, Any], out: Verdict) -> Verdict:
    """A witness resting on the sign of a parameter nothing drives states that sign as its
    condition (``generic.free_value_reason``); one made only of free and fixed values states
    them (``generic.all_free_reason``).  After the preconditions gate, whose reasons
    (a far tail, identical examples, an empty selection) say more where they apply."""
    try:
        reason = free_value_reason(probe, out) or all_free_reason(probe, out)
    except (KeyError, TypeError, ValueError):
        return out
    return domains.not_confirmed(out, [reason] if reason else [])


def use_only_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """A use never confirms: a witness that needs an input to be a saturated probability, when
    only the way its function uses it says it is one (``analysis/roles``: no producer, no
    caller passing one), shows what happens *if* it is one.  The finding is conditional on
    that, and says so."""
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return None
    raw_needed, raw_point = observed.get("needed"), out.get("inputs")
    needed: list[Any] = raw_needed if isinstance(raw_needed, list) else []
    point: dict[str, Any] = raw_point if isinstance(raw_point, dict) else {}
    named = [
        str(s.get("name"))
        for s in probe.get("inputs") or []
        if s.get("prob_by_use") and (s.get("name") in needed or point.get(s.get("name")) in (0, 1))
    ]  # needed, or saturated (a logit inside the band counts as ordinary, so is not "needed")
    if not named:
        return None
    values = " and ".join(
        f"`{n}` = {fmt_g(float(point[n]))}" if isinstance(point.get(n), (int, float)) else f"`{n}`"
        for n in named
    )
    if len(named) == 1:
        head = f"only its use says `{named[0]}` is a probability"
    else:
        head = f"only their use says {', '.join(f'`{n}`' for n in named)} are probabilities"
    return (
        f"conditional: {head} (no producer in view, and nothing in the project passes one); "
        f"the symptom needs {values}"
    )
