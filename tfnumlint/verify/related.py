"""The related-inputs gate: a witness must not set a cut input (an untraced call, an element)
apart from the values it is computed from, nor two values computed together or by one function
each at a value of its own.  Inputs the symptom does not rest on are left out of the review.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops as registry
from . import domains, trace
from .downstream import witness_row
from .program import build, run
from .symptoms import flat
from .trace import format_number
from .verdicts import VALUE_SYMPTOMS


def review_related(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A witness that sets values the code computes from one source independently is no state
    of the program's sources: neither a confirmation nor a condition to state (the reachability
    gate after it would state ``breaks only if`` its values), so it is inconclusive with that
    reason.  The witness stays, so that the downstream gate can still find the value handled
    (only compared, say), which needs no witness the program reaches."""
    if out.get("status") != "confirmed" or not isinstance(out.get("inputs"), dict):
        return out
    witness = out["inputs"]
    observed = out.get("observed")
    needed = observed.get("needed") if isinstance(observed, dict) else None
    needed = needed if isinstance(needed, list) else None
    reason = related_inputs_reason(probe, witness, needed)
    if reason is not None:  # only inputs the symptom rests on can break a relation
        # a computed value the symptom ignores decides nothing; a source it ignores still
        # has to produce the computed values the witness needs (`ratio(x)` = -1 at any `x`),
        # and so does a computed value that another value of the witness is computed from
        # (`lbeta(n - k, k)` = -100 beside the `n` = 1 it reads, whatever `n` the symptom takes)
        specs = probe.get("inputs") or []
        computed = {s.get("name") for s in specs if s.get("reads")}
        loose = symptom_ignores(probe, out) & computed
        kept_specs = [s for s in specs if s.get("name") in witness and s.get("name") not in loose]
        loose -= {r for s in kept_specs for r in s.get("reads") or ()}
        kept = {k: v for k, v in witness.items() if k not in loose}
        reason = related_inputs_reason(probe, kept, needed)
    if reason is None:
        return out
    return {**out, "status": "inconclusive", "detail": f"{reason} (seen: {out.get('detail', '')})"}


# Values a cut input is moved to, to see whether a value symptom rests on it: ordinary ones, and
# 0, which a computed value takes where the code masks or zeroes what it is computed from
# (`solve(where(missing, 0, obs))`); a division's inf at any non-zero numerator is 0/0 there.
MOVED_TO = (-3.0, -0.5, 0.0, 0.5, 2.0, 7.0)


def symptom_ignores(probe: dict[str, Any], out: dict[str, Any]) -> set[str]:
    """Inputs whose value a NaN/inf value witness does not rest on: moved to each ordinary
    value inside its domain, the target stays non-finite (``softmax(where(h > 0, s, -inf))`` at
    ``h`` = 0 is NaN whatever ``s`` is), so what the witness set it to, related or not to the
    other inputs, decides nothing."""
    from .program import TRACE_ERRORS

    symptom = out.get("symptom")
    if symptom not in VALUE_SYMPTOMS:
        return set()
    try:
        program = build(probe, str(out.get("dtype")), extras=False, grads=False)
    except TRACE_ERRORS:
        return set()
    row = witness_row(program, out["inputs"])
    if row is None:
        return set()
    names = [spec.name for spec in program.inputs]
    ignored = set()
    for j, spec in enumerate(program.inputs):
        if spec.prob:
            continue
        rows = np.array([row] * len(MOVED_TO), dtype=np.float64)
        rows[:, j] = MOVED_TO
        rows, _ = domains.split_rows(probe, names, rows)
        if len(rows) < 2:
            continue
        try:
            t = flat(run(program, rows)["t"])
        except TRACE_ERRORS:
            continue
        bad = np.isnan(t) if symptom == "nan-value" else np.isinf(t)
        if bad.any(1).all():
            ignored.add(spec.name)
    return ignored


Pair = Callable[[str, str], bool]


def related_inputs_reason(
    probe: dict[str, Any], witness: dict[str, Any], needed: list[str] | None = None
) -> str | None:
    """A cut input (an untraced call, an element) is a function of the inputs it reads: a
    witness that sets it and one of them to values of its choosing may break that relation
    (``floor(y)`` = 1 at ``y`` = 0.5); two cut inputs that read one value are set jointly by
    it; two calls of one function on different arguments (``cdf(lower)``, ``cdf(upper)``) are
    tied by that function; two items of one call's result (``a, fa = pick(c, ...)``) are
    computed together by it.  Only inputs whose values the probe computes with count: a gather
    index only picks elements.  ``needed``: the inputs the symptom needs at their values (the
    minimised witness's); when there are any, a pair counts only if it holds one of them, so
    an incidental pair does not hide the condition the witness rests on (``z`` = 0 beside
    ``g(v)`` and ``v`` both at 1)."""
    valued = valued_inputs(probe.get("target"))
    witness = {k: v for k, v in witness.items() if k in valued}
    keep: Pair = (lambda a, b: a in needed or b in needed) if needed else (lambda a, b: True)
    return (
        _one_call_reason(probe, witness, keep)
        or _read_input_reason(probe, witness, keep)
        or _common_read_reason(probe, witness, keep)
        or _one_function_reason(probe, witness, keep)
    )


def _one_call_reason(
    probe: dict[str, Any], witness: dict[str, Any], keep: Pair = lambda a, b: True
) -> str | None:
    """Two items of one cut call's result (``a, b, fa, fb = select(...)`` in a loop body, which
    keeps ``fa`` and ``fb`` of opposite signs): the call computes them together, so a witness
    that gives each a value of its own may pick a pair the call never returns.  Items the
    slicer read item by item (``cast([w, h], dt)``) are tied only by a value both read."""
    items = [
        s
        for s in probe.get("inputs") or []
        if s.get("origin") in ("call", "subscript")
        and s.get("source")
        and isinstance(s.get("element"), int)
        and s.get("name") in witness
    ]
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if a["source"] != b["source"] or a["element"] == b["element"]:
                continue
            if not keep(a["name"], b["name"]):
                continue
            if a.get("reads") == b.get("reads") or _common_reads(a, b):
                return (
                    f"sets `{a['name']}` = {_shown(witness[a['name']])} and `{b['name']}` = "
                    f"{_shown(witness[b['name']])} independently, though both are returned by "
                    f"one call `{a['source']}`"
                )
    return None


def _common_read_reason(
    probe: dict[str, Any], witness: dict[str, Any], keep: Pair = lambda a, b: True
) -> str | None:
    """Two untraced calls computed from one value (``dot(x, y)`` and ``norm(x)``) are set
    jointly by it: a witness that gives each a value of its own may pick a pair no value of
    it yields (a cosine of 2)."""
    cut = [
        s
        for s in probe.get("inputs") or []
        if s.get("origin") == "call" and s.get("reads") and s.get("name") in witness
    ]
    for i, a in enumerate(cut):
        for b in cut[i + 1 :]:
            common = _common_reads(a, b)
            if common and keep(a["name"], b["name"]):
                return (
                    f"sets `{a['name']}` = {_shown(witness[a['name']])} and `{b['name']}` = "
                    f"{_shown(witness[b['name']])} independently, though both are computed "
                    f"from `{common[0]}`"
                )
    return None


def _common_reads(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The plain values two cut inputs both read (an attribute read is its own value)."""
    both = set(a.get("reads") or ()) & set(b.get("reads") or ())
    return sorted(r for r in both if "." not in r and r != "self")


def valued_inputs(tree: Any) -> set[str]:
    """Inputs whose values reach the result: not those read only as a gather/tile index or
    for a shape (``ones_like(x)``), which the probe's ops ignore."""
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if node.get("k") == "input":
            names.add(str(node.get("name")))
            continue
        if node.get("k") == "call":
            entry = registry.REGISTRY.get(str(node.get("op")))
            if entry is not None and entry.trace == "_values_kept":
                stack.extend((node.get("args") or [])[:1])
                stack.append((node.get("kw") or {}).get("x"))
                continue
            if entry is not None and str(entry.trace).startswith("like("):
                continue  # ones_like(x): only x's shape
        stack.extend(v for k, v in node.items() if k not in ("as", "line", "col"))
    return names


def _one_function_reason(
    probe: dict[str, Any], witness: dict[str, Any], keep: Pair = lambda a, b: True
) -> str | None:
    """Two inputs the slicer cut at calls of one function on different arguments (``cdf(hi)``
    and ``cdf(lo)``): the function ties them (a CDF is monotone, a norm is the same map), but the
    witness sets each as a free value, so it is not a state the program shows."""
    cut = [
        s
        for s in probe.get("inputs") or []
        if s.get("origin") == "call" and s.get("source") and s.get("name") in witness
    ]
    calls = [(s, _callee_and_args(str(s["source"]))) for s in cut]
    for i, (a, (fa, args_a)) in enumerate(calls):
        for b, (fb, args_b) in calls[i + 1 :]:
            if fa is not None and fa == fb and args_a != args_b and keep(a["name"], b["name"]):
                return (
                    f"sets `{a['name']}` = {_shown(witness[a['name']])} and "
                    f"`{b['name']}` = {_shown(witness[b['name']])} independently, "
                    f"though both are values of one function `{fa}`"
                )
    return None


def _callee_and_args(source: str) -> tuple[str | None, str]:
    """(callee, argument text) of a call of a plain dotted name (`tfp.math.ndtr(hi)`), or
    (None, source): `f(a).g(b)` is not one call of `f`."""
    found = domains.split_call(source)
    if found is None or not re.fullmatch(r"[A-Za-z_][\w.]*", found[0].strip()):
        return None, source
    return found[0].strip(), found[1]


def _read_input_reason(
    probe: dict[str, Any], witness: dict[str, Any], keep: Pair = lambda a, b: True
) -> str | None:
    for spec in probe.get("inputs") or []:
        name = spec.get("name")
        if name not in witness:
            continue
        for other in spec.get("reads") or ():
            if other != name and other in witness and keep(name, other):
                return (
                    f"sets `{name}` = {_shown(witness[name])} and `{other}` = "
                    f"{_shown(witness[other])} independently, though the first is computed "
                    "from the second"
                )
    return None


def _shown(v: Any) -> str:
    return format_number(trace.parse_float(v)) if isinstance(v, (int, float, str)) else str(v)
