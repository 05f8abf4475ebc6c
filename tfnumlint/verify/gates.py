"""The static gates a confirmed witness passes, in order: its domains, where gradients flow,
whether the code can reach it, and whether it rests on special values.

The orchestration sits here, above :mod:`.domains` and :mod:`.generic`, so neither imports the
other's caller (they formed an import circle when :func:`received` lived in ``domains``).
"""

from __future__ import annotations

from typing import Any

from ..analysis.domain_model import fmt_g
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
    named = name_only_reason(probe, out)
    if named:
        reasons.insert(0, named)
    special = special_value_reason(probe, out, say_values=not reasons)
    if special:
        reasons.append(special)
    return domains.not_confirmed(out, reasons)


def name_only_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Names never confirm: a witness that needs an input to be a saturated probability, when
    only the input's name says it is one (no producer, no caller passing one), shows what
    happens *if* it is one.  The finding is conditional on that, and says so."""
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return None
    raw_needed, raw_point = observed.get("needed"), out.get("inputs")
    needed: list[Any] = raw_needed if isinstance(raw_needed, list) else []
    point: dict[str, Any] = raw_point if isinstance(raw_point, dict) else {}
    named = [
        str(s.get("name"))
        for s in probe.get("inputs") or []
        if s.get("prob_by_name") and (s.get("name") in needed or point.get(s.get("name")) in (0, 1))
    ]  # needed, or saturated (a logit inside the band counts as ordinary, so is not "needed")
    if not named:
        return None
    values = " and ".join(
        f"`{n}` = {fmt_g(float(point[n]))}" if isinstance(point.get(n), (int, float)) else f"`{n}`"
        for n in named
    )
    if len(named) == 1:
        head = f"only its name says `{named[0]}` is a probability"
    else:
        head = f"only their names say {', '.join(f'`{n}`' for n in named)} are probabilities"
    return (
        f"conditional: {head} (no producer in view, and nothing in the project passes one); "
        f"the symptom needs {values}"
    )
