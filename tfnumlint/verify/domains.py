"""The verdict side of input domains: which probe points lie inside the domains and relations
the static pass stored (``analysis/probe_annotate.py``), what a witness outside them means, and
whether a witness is reachable at all.

It also asks whether the witness is *reachable* (:func:`reachable`): an input the
symptom needs (the worker relaxes the others) that is computed by an untraced call and sits at
any value its producer is not known to reach (0, 1e38 or an ordinary -1 alike: nothing computed
that value), or a parameter at a subnormal, makes the finding
inconclusive.  The results of :data:`NATURAL_ZERO_CALLS` (products and counts of data, signs,
roundings) may be 0 or an everyday value; a name is never evidence of a value (issue 22).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from .. import ops
from ..analysis.domain_model import (
    Domain,
    Relation,
    fmt_g,
    from_json_float,
)

# ---------------------------------------------------------------- probing & verdict side


def _load(probe: dict[str, Any]) -> tuple[list[Domain], list[Relation]]:
    doms = [
        Domain(**{**d, "lo": from_json_float(d["lo"]), "hi": from_json_float(d["hi"])})
        for d in probe.get("domains") or []
    ]
    rels = [Relation(**r) for r in probe.get("relations") or []]
    return doms, rels


def broken(probe: dict[str, Any], point: dict[str, float]) -> list[Domain | Relation]:
    """The domains and relations a point (input name -> value) lies outside of."""
    doms, rels = _load(probe)
    out: list[Domain | Relation] = []
    for d in doms:
        if d.name in point and not d.holds(point[d.name]):
            out.append(d)
    for r in rels:
        if r.a in point and r.b in point and not r.holds(point[r.a], point[r.b]):
            out.append(r)
    return out


def split_rows(probe: dict[str, Any], names: list[str], rows) -> tuple[Any, Any]:
    """(rows inside every domain, rows outside one): probe the first, explain with the second."""
    if not probe.get("domains") and not probe.get("relations"):
        return rows, rows[:0]
    keep = [not broken(probe, dict(zip(names, map(float, row), strict=True))) for row in rows]
    inside = rows[[i for i, k in enumerate(keep) if k]]
    outside = rows[[i for i, k in enumerate(keep) if not k]]
    return inside, outside


def _reason(
    items: list[Domain | Relation], point: dict[str, float] | None = None
) -> tuple[str, bool]:
    parts = []
    for it in items:
        if isinstance(it, Domain) and it.callers and point and it.name in point:
            parts.append(f"needs `{it.name}` = {fmt_g(point[it.name])}, but {it.why}")
            continue
        negated = _negate(it)
        parts.append(f"{negated}, and {it.why} rules that out")
    return "; ".join(parts), all(it.strong for it in items)


def _negate(it: Domain | Relation) -> str:
    if isinstance(it, Relation):
        if it.op == "sigmoid":
            return f"breaks only if `{it.a}` != sigmoid(`{it.b}`)"
        flip = {">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!="}[it.op]
        return f"breaks only if `{it.a}` {flip} `{it.b}`"
    if it.integer and it.lo == -math.inf and it.hi == math.inf:
        return f"breaks only if `{it.name}` is not a whole number"
    if it.integer:
        return f"breaks only if `{it.name}` is not a whole number in {_span(it)}"
    if it.lo != -math.inf and it.hi != math.inf:
        return f"breaks only if `{it.name}` is outside [{fmt_g(it.lo)}, {fmt_g(it.hi)}]"
    if it.lo != -math.inf:
        return f"breaks only if `{it.name}` {'<=' if it.lo_open else '<'} {fmt_g(it.lo)}"
    return f"breaks only if `{it.name}` > {fmt_g(it.hi)}"


def _span(it: Domain) -> str:
    if it.hi == math.inf:
        return f"({fmt_g(it.lo)}, inf)" if it.lo_open else f"[{fmt_g(it.lo)}, inf)"
    return f"[{fmt_g(it.lo)}, {fmt_g(it.hi)}]"


def outside_verdict(
    probe: dict[str, Any], witness_point: dict[str, float], dtype: str | None
) -> dict[str, Any]:
    """The symptom shows only at a point outside the inputs' domains: not confirmed."""
    items = broken(probe, witness_point)
    reason, strong = _reason(items, witness_point)
    return {"status": "refuted" if strong else "inconclusive", "detail": reason, "dtype": dtype}


# ---------------------------------------------------------------- reachability of a witness
#
# A witness sets every free input of the slice freely.  That is evidence for an input the code
# receives (a parameter, data), not for a value computed by code the slice did not follow: a
# witness `kve = 0` says nothing when `kve = bessel_kve(v, x)` is never 0.  The worker reports
# which inputs the symptom needs (``observed["needed"]``: the others were relaxed to ordinary
# values); a needed input at a value its producer is not known to reach makes the finding
# inconclusive, with the reason.

# Smallest normal magnitude of each float dtype: below it, subnormals.
SMALLEST_NORMAL: dict[str, float] = {
    "float16": 6.103515625e-05,
    "bfloat16": 1.1754943508222875e-38,
    "float32": 1.1754943508222875e-38,
    "float64": 2.2250738585072014e-308,
}
ORDINARY_LO, ORDINARY_HI = 0.1, 10.0  # |v| in this range (and not 1 ± an ulp) is ordinary
# Origins whose values the code receives as they are: a witness may set them freely.
RECEIVED = frozenset({"data", "random", "model", "logits"})
COMPUTED = frozenset({"call", "cut"})  # computed by code the slice did not follow
# Producers that reach subnormal magnitudes in ordinary use (they underflow).
UNDERFLOWING = ops.UNDERFLOWING
# Library methods whose value is a log-density or log-probability (TFP's Distribution API):
# any real value, extreme ones included (a PPO ratio exp(new_log_prob - old_log_prob)
# overflows when the policies diverge).
LOG_DENSITY_METHODS = frozenset(
    {"log_prob", "log_cdf", "log_survival_function", "log_unnormalized_prob", "log_pmf"}
)
# Called functions whose value is 0 for ordinary inputs (a product or count of data, a sign, a
# rounding): an untraced call to one of them may be 0 in a witness.
# (registered ones: ops.NATURAL_ZERO; the rest are names the registry does not hold)
NATURAL_ZERO_CALLS = ops.NATURAL_ZERO | {
    "modal_dot", "dot", "batch_dot", "tensordot", "einsum", "matvec", "rint", "segment_sum",
    "unsorted_segment_sum", "bincount", "confusion_matrix", "histogram_fixed_width"
}  # fmt: skip


# A computed input is set to no value without evidence (its producer's range, a domain from the
# code, a natural-zero call); small ones (1e-8 .. 0.1) are allowed for a
# precision loss, which needs them by nature and where they are common results of computation.


def value_class(v: float, dtype: str | None) -> str:
    """What kind of number a witness value is: ``ordinary`` (0.1 <= |v| <= 10, not 1 ± an
    ulp), or why not: zero, subnormal, smallest-normal, small, near-one, large, nan."""
    if math.isnan(v):
        return "nan"
    a = abs(v)
    normal = SMALLEST_NORMAL.get(dtype or "float32", SMALLEST_NORMAL["float32"])
    if a == 0:
        return "zero"
    if a < normal:
        return "subnormal"
    if a <= normal * (1 + 1e-6):
        return "smallest-normal"
    if a < ORDINARY_LO:
        return "small"
    if a > ORDINARY_HI:
        return "large"
    if a != 1 and abs(a - 1) < 1e-5:
        return "near-one"
    return "ordinary"


def log_density_call(source: str) -> bool:
    """A call of a library log-density method (``policy.distribution(t).log_prob(a)``)."""
    return source.strip().endswith(")") and _callee(source) in LOG_DENSITY_METHODS


def split_call(source: str) -> tuple[str, str] | None:
    """(callee text, argument text) of the outermost call a source ends with:
    `policy.distribution(t).log_prob(a)` -> (`policy.distribution(t).log_prob`, `a`); None when
    the source is not a call."""
    text = source.strip()
    if not text.endswith(")"):
        return None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return (text[:i], text[i + 1 : -1].strip()) if text[:i] else None
    return None


@functools.lru_cache(maxsize=4096)
def _callee(source: str) -> str:
    """`policy.distribution(t).log_prob(a)` -> `log_prob`: the name a call's value is known by
    (asked for each input of each candidate point: cached)."""
    found = split_call(source)
    return re.split(r"[^\w]", found[0])[-1] if found else source.strip()


def _covered(spec: dict[str, Any], v: float, dom: Domain | None) -> bool:
    """What the static pass knows of the producer allows ``v``: its value range (a sigmoid,
    ReLU or exp output, a probability), a domain from the code, a producer that is 0 for
    ordinary inputs (:data:`NATURAL_ZERO_CALLS`).  A name is no evidence that a computed value
    reaches 0 or an extreme (issue 22: names never confirm): `probs = helper(x)` at 0 needs the
    helper's range, which only its code gives."""
    lo, hi = from_json_float(spec.get("lo", "-inf")), from_json_float(spec.get("hi", "inf"))
    slack = 1e-6 * max(abs(v), 1e-300)  # the witness holds the bound rounded to the dtype
    if (math.isfinite(lo) or math.isfinite(hi)) and lo - slack <= v <= hi + slack:
        return True
    fixed = dom is not None and dom.lo == dom.hi  # a value the code fixes (a cast literal)
    if dom is not None and (dom.strong or fixed or "producer" in dom.why) and dom.holds(v):
        return dom.lo != -math.inf or dom.hi != math.inf
    source = str(spec.get("source", ""))
    # counts and products of data: 0 and everyday values alike
    return _callee(source) in NATURAL_ZERO_CALLS and (v == 0 or value_class(v, None) == "ordinary")


def unreachable(
    spec: dict[str, Any],
    v: float,
    dom: Domain | None,
    dtype: str | None,
    small_ok: bool = False,
) -> str | None:
    """Why the witness value ``v`` of a needed input is not one the code gives it, or None.
    ``small_ok``: a small computed value is evidence (a precision loss needs one);
    """
    name, origin = spec.get("name", "x"), spec.get("origin")
    if dom is not None and dom.callers and not dom.holds(v):
        # whatever the origin (a driven parameter too): the code gives it another range
        return f"needs `{name}` = {fmt_g(v)}, but {dom.why}"
    if origin is None or origin in RECEIVED or spec.get("prob"):
        return None
    kind = value_class(v, dtype)
    computed = origin in COMPUTED or (origin == "subscript" and spec.get("of") in COMPUTED)
    underflows = spec.get("producer") in UNDERFLOWING
    if kind in ("subnormal", "smallest-normal") and not underflows and dtype != "float16":
        what = "a subnormal" if kind == "subnormal" else f"the smallest normal {dtype}"
        return f"needs `{name}` = {fmt_g(v)}, {what}" + (_producer(spec) if computed else "")
    if not computed or (kind == "small" and small_ok) or _covered(spec, v, dom):
        return None
    # Any value, ordinary ones too: the review found computed values set to what their code
    # never gives (a softmax output of -1, floor(0.5) = 1, mel weights of -1).
    return f"breaks only if `{name}` = {fmt_g(v)}" + _producer(spec)


def assumed(probe: dict[str, Any], name: str) -> bool:
    """The input's value comes from code the slice did not follow (an untraced call, a cut, an
    element of either): whatever value a witness gives it is an assumption."""
    for spec in probe.get("inputs") or []:
        if spec.get("name") == name:
            origin = spec.get("origin")
            return origin in COMPUTED or (origin == "subscript" and spec.get("of") in COMPUTED)
    return False


def _producer(spec: dict[str, Any]) -> str:
    """`; `kve` is computed by `bessel_kve(v, x)`, which was not traced`: why nothing is known."""
    name, source = spec.get("name", "x"), spec.get("source") or spec.get("name", "x")
    if spec.get("origin") == "cut":
        return ", a value the slice did not follow"
    if source == name:
        return ", a value computed by a call that was not traced"
    element = "an element of a value " if spec.get("origin") == "subscript" else ""
    return f"; `{name}` is {element}computed by `{source}`, which was not traced"


def unreachable_inputs(
    probe: dict[str, Any],
    point: dict[str, Any],
    names: list[str],
    dtype: str | None,
    small_ok: bool = False,
) -> list[str]:
    """For each of ``names`` whose value in ``point`` the code is not known to give it, why."""
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    doms = {d.name: d for d in _load(probe)[0]}
    reasons = []
    for name in names:
        spec, v = specs.get(name), point.get(name)
        if spec is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        reason = unreachable(spec, float(v), doms.get(name), dtype, small_ok)
        if reason:
            reasons.append(reason)
    return reasons


def reachable(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A confirmed witness whose needed inputs the code cannot give those values is not a
    confirmation: inconclusive, saying which value it needs and why that is not known to occur.
    What was seen stays in the verdict (inputs, observed values)."""
    return not_confirmed(out, reach_reasons(probe, out))


def reach_reasons(probe: dict[str, Any], out: dict[str, Any]) -> list[str]:
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return []
    needed, point = observed.get("needed"), out.get("inputs")
    if not isinstance(needed, list) or not isinstance(point, dict):
        return []
    dtype = out.get("dtype") or probe.get("dtype")
    small_ok = out.get("symptom") == "diverges"
    return unreachable_inputs(probe, point, needed, dtype, small_ok)


def not_confirmed(out: dict[str, Any], reasons: list[str]) -> dict[str, Any]:
    if not reasons or out.get("status") != "confirmed":
        return out
    detail = f"{'; '.join(reasons)} (seen: {out.get('detail', '')})"
    return {**out, "status": "inconclusive", "detail": detail}
