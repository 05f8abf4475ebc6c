"""Structural arguments the probe bound to a stand-in, and what the verdict says about them.

The slicer binds a non-literal ``axis=self.axis`` to -1, ``depth=self.num_classes`` to 4,
``keepdims=keepdims`` to False and a reshape's ``shape=`` to ``[-1]``
(``slicing.contract.STAND_INS``), and marks each such node ``assumed``.  The probe fills every input with one value per point, so
a reduction over any valid axis gives the same per-entry values; a class count or a flag is
different: it changes what a one-hot row holds or a result's shape, so a confirmation or
refutation must hold for the other values tried too (a depth's others, a flag's other way).
Every verdict names its stand-ins; a probe that does not trace with them is the old "cannot
verify".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .program import TRACE_ERRORS, build_with_fallback
from .trace import format_number
from .verdicts import inconclusive

WHY = {
    "axis": "for a uniformly filled input every axis gives the same value",
    "axes": "for a uniformly filled input every axis gives the same value",
    "depth": "a class count the probe chose",
    "shape": "each point's value flattened; no op above it depends on its rank",
    "keepdims": "a flag the probe chose; the verdict must hold both ways that trace",
    "transpose_a": "a flag the probe chose; the verdict must hold both ways that trace",
    "transpose_b": "a flag the probe chose; the verdict must hold both ways that trace",
}


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value)
    return format_number(float(value))


def note(assumed: list[dict[str, Any]]) -> str:
    """``with `axis` = -1 (`axis=self.axis` of tf.reduce_sum is not a literal; ...)``: one
    part per stand-in value, naming every argument it stands in for."""
    groups: dict[tuple[str, str], list[str]] = {}
    for a in assumed:
        groups.setdefault((a["param"], _shown(a["value"])), []).append(a["what"])
    parts = []
    for (param, value), whats in groups.items():
        verb = "is not a literal" if len(whats) == 1 else "are not literals"
        why = WHY.get(param, "a stand-in value")
        parts.append(f"`{param}` = {value} ({', '.join(whats)} {verb}; {why})")
    return "with " + " and ".join(parts)


def with_note(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The verdict, saying which stand-ins it was reached with."""
    assumed = probe.get("assumed")
    if not assumed or str(out.get("detail", "")).startswith("cannot verify"):
        return out
    return {**out, "detail": f"{out.get('detail', '')}; {note(assumed)}"}


def untraceable(probe: dict[str, Any], error: str) -> dict[str, Any]:
    """A probe that does not trace with its stand-ins: verified no better than before."""
    first = probe["assumed"][0]
    value = _shown(first["value"])
    return inconclusive(
        f"cannot verify: the slice has {first['what']}, not a literal, and with "
        f"`{first['param']}` = {value} it does not trace ({error})",
        probe.get("dtype"),
    )


def _remarked(tree: Any, mark: dict[str, Any], new: dict[str, Any]) -> Any:
    """A copy of the tree with the stand-in ``mark`` replaced by ``new`` (and its value)."""
    if isinstance(tree, list):
        return [_remarked(t, mark, new) for t in tree]
    if not isinstance(tree, dict):
        return tree
    if tree.get("assumed") == mark and tree.get("k") in ("const", "bool"):
        return {**tree, "v": new["value"], "assumed": new}
    return {k: _remarked(v, mark, new) for k, v in tree.items()}


def _with_mark(probe: dict[str, Any], mark: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {
        **probe,
        "target": _remarked(probe.get("target"), mark, new),
        "loss": _remarked(probe.get("loss"), mark, new),
        "assumed": [new if a == mark else a for a in probe.get("assumed") or []],
    }


def _traces(probe: dict[str, Any], dtype: str) -> bool:
    try:
        build_with_fallback(probe, dtype)
    except (*TRACE_ERRORS, KeyError, IndexError):
        return False
    return True


def traceable(probe: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The probe with each stand-in that has others (a depth) set to the first of its values
    the probe's shapes take (a one-hot row meets a softmax row of the probe's width); the
    others that trace are kept to be tried before a confirmation."""
    for mark in list(probe.get("assumed") or []):
        values = [mark["value"], *(mark.get("others") or ())]
        if len(values) == 1:
            continue
        ok = [v for v in values if _traces(_with_mark(probe, mark, {**mark, "value": v}), dtype)]
        if ok:
            probe = _with_mark(probe, mark, {**mark, "value": ok[0], "others": ok[1:]})
    return probe


def holds_for_others(
    probe: dict[str, Any],
    out: dict[str, Any],
    verify_expr: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """A confirmation or refutation reached with a stand-in whose value may matter (a depth)
    stands only if the probe reaches it (the same symptom, for a confirmation) with every
    other value tried; else it is inconclusive."""
    status = out.get("status")
    if status not in ("confirmed", "refuted"):
        return out
    for mark in probe.get("assumed") or []:
        for other in mark.get("others") or ():
            try:
                again = verify_expr(_with_mark(probe, mark, {**mark, "value": other}))
            except (*TRACE_ERRORS, KeyError, IndexError) as exc:  # not shown to hold
                again = {"status": "inconclusive", "detail": type(exc).__name__}
            if again.get("status") != status or again.get("symptom") != out.get("symptom"):
                what = out.get("symptom") if status == "confirmed" else "no symptom"
                return inconclusive(
                    f"the verdict depends on `{mark['param']}` ({mark['what']} is not a "
                    f"literal): {what} with `{mark['param']}` = {_shown(mark['value'])}, "
                    f"not with {_shown(other)} (seen: {out.get('detail', '')})",
                    out.get("dtype"),
                )
    return out
