"""The static gates a confirmed witness passes, in order: its domains, where gradients flow,
whether the code can reach it, and whether it rests on special values.

The orchestration sits here, above :mod:`.domains` and :mod:`.generic`, so neither imports the
other's caller (they formed an import circle when :func:`received` lived in ``domains``).
"""

from __future__ import annotations

from typing import Any

from . import domains
from .generic import special_value_reason
from .gradient_gate import apply


def judge(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A confirmed witness must lie in its domains; then the gradient-flow context applies.
    A malformed domain never costs the verdict: the probe's own result stands."""
    try:
        return _judge(probe, out)
    except (KeyError, TypeError, ValueError):
        return out


def _judge(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    if out.get("status") == "confirmed" and isinstance(out.get("inputs"), dict):
        point = {k: v for k, v in out["inputs"].items() if isinstance(v, (int, float))}
        if domains.broken(probe, point):
            verdict = domains.outside_verdict(probe, point, out.get("dtype"))
            verdict["detail"] = f"{out.get('detail', '')}: {verdict['detail']}"
            return verdict
    out = apply(probe, out)
    return received(probe, out)


def received(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Confirmed only for inputs the code really receives: the witness's needed inputs are
    reachable (:func:`.domains.reachable`) and the symptom does not rest on a special value of a
    parameter nothing drives (``generic.special_value_reason``).  One finding, one reason: the
    gates' reasons are joined, and what was seen stays in the detail."""
    reasons = domains.reach_reasons(probe, out)
    special = special_value_reason(probe, out, say_values=not reasons)
    if special:
        reasons.append(special)
    return domains.not_confirmed(out, reasons)
