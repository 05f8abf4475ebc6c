"""Verdicts other than a witness: refuted and inconclusive, refutation by value ranges, and the
checks that compare numbers rather than look for a symptom (an epsilon absorbed among
constants, an epsilon that underflows, a result that diverges from float64).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops as registry
from . import intervals as iv
from . import trace, trace_ops
from .downstream import absorbed_reason, precision_absorbed, witness_row
from .points import point_grid
from .program import Program, build, run
from .symptoms import Witness, extreme_rows, find_symptom, flat
from .trace import UnsupportedProbe, format_number
from .witness import ordinary, unreachable_reasons, witness_parts


def refuted(detail: str, dtype: str) -> dict[str, Any]:
    return {"status": "refuted", "detail": detail, "dtype": dtype}


def inconclusive(detail: str, dtype: str | None = None) -> dict[str, Any]:
    return {"status": "inconclusive", "detail": detail, "dtype": dtype}


def range_refutation(program: Program) -> dict[str, Any] | None:
    """Refute when no unsafe op of the flagged expression can reach its danger zone."""
    path = str(program.probe.get("path") or "<probe>")
    ops = trace.unsafe_ops(program.graph, path, "target/")
    ops = [op for op in ops if op.type not in ("Select", "SelectV2")]
    if not ops:
        return None
    placeholders = {}
    used: list[str] = []
    held = code_ranges(program.probe)
    for spec in program.inputs:
        own = iv.TOP if spec.prob else (spec.lo, spec.hi)
        placeholders[spec.ident] = own
        if spec.name in held:
            low, high, why = held[spec.name]
            if spec.prob:  # the placeholder is the probability's logit: map the range onto it
                low, high = _logit(low), _logit(high)
            narrowed = (max(own[0], low), min(own[1], high))
            if narrowed != own and narrowed[0] <= narrowed[1]:
                placeholders[spec.ident] = narrowed
                used.append(f"`{spec.name}`: {why}")
    ranges = iv.analyse(program.graph, placeholders, program.dtype)
    checked = [(op, iv.danger(op, ranges, program.dtype)) for op in ops]
    if any(hit for _, (hit, _, _) in checked):
        return None
    op, (_, zone, rng) = checked[-1]  # the flagged op: the root of the target, traced last
    lo, hi = format_number(rng[0]), format_number(rng[1])
    never = "never overflows" if zone == "an overflow" else f"never {zone}"
    detail = f"{iv.describe(op.type)} is within [{lo}, {hi}] in {program.dtype}: {never}"
    if len(checked) > 1:
        detail += f" (and {len(checked) - 1} other unsafe op(s) likewise)"
    if used:
        detail += f" ({'; '.join(used)})"
    return {"status": "refuted", "detail": detail, "dtype": program.dtype, "symptom": None}


def _logit(p: float) -> float:
    """The logit of a probability bound (a range beyond [0, 1] says nothing of the logit)."""
    if p <= 0 or math.isnan(p):
        return -math.inf
    if p >= 1:
        return math.inf
    return math.log(p / (1 - p))


def code_ranges(probe: dict[str, Any]) -> dict[str, tuple[float, float, str]]:
    """Input name -> (lo, hi, why) of the probe's code-derived domains (a producer's range, an
    assertion): the interval analysis may start from them; a name-derived one is no proof."""
    out = {}
    for d in probe.get("domains") or []:
        if d.get("strong") and not d.get("integer"):
            out[d["name"]] = (trace.parse_float(d["lo"]), trace.parse_float(d["hi"]), d["why"])
    return out


def _constants(tree: Any) -> list[float]:
    if isinstance(tree, dict):
        if tree.get("k") == "const" and isinstance(tree.get("v"), (int, float)):
            return [float(tree["v"])]
        return [c for v in tree.values() for c in _constants(v)]
    if isinstance(tree, list):
        return [c for v in tree for c in _constants(v)]
    return []


def verify_constant_absorption(probe: dict[str, Any], dtype: str) -> dict[str, Any]:
    """An epsilon among constants alone (`1e-10 + 1`): add them in the dtype, as TF does."""
    eps = probe.get("eps")
    others = [c for c in _constants(probe.get("target")) if c != eps]
    if eps is None or not others:
        return inconclusive("no epsilon and partner constant in the slice", dtype)
    tf_dtype = tf.as_dtype(dtype)
    base = max(others, key=abs)
    total = tf.constant(base, tf_dtype) + tf.constant(eps, tf_dtype)
    stored = tf.constant(base, tf_dtype)
    if bool(tf.reduce_all(tf.equal(total, stored))):
        return {
            "status": "confirmed",
            "symptom": "epsilon-absorbed",
            "dtype": dtype,
            "inputs": {},
            "observed": {"value": format_number(float(total.numpy()))},
            "detail": (
                f"in {dtype}, {format_number(base)} + {format_number(eps)} == "
                f"{format_number(float(total.numpy()))} exactly: the epsilon is rounded away"
            ),
        }
    return refuted(
        f"in {dtype}, {format_number(base)} + {format_number(eps)} != {format_number(base)}", dtype
    )


def verify_underflow(probe: dict[str, Any], dtype: str) -> dict[str, Any]:
    """An epsilon that rounds to 0 in the dtype; show what that does at the boundary."""
    eps = probe.get("eps")
    if eps is None:
        consts = [
            trace.parse_float(n["v"])
            for n in trace.walk(probe.get("target"))
            if n.get("k") == "const" and 0 < trace.parse_float(n["v"]) < 1e-3
        ]
        if not consts:
            return inconclusive("the probe names no epsilon to check", dtype)
        eps = min(consts)
    eps = trace.parse_float(eps)
    stored = float(tf.cast(tf.constant(eps, tf.float64), trace_ops.DTYPES[dtype]).numpy())
    if stored != 0:
        return refuted(f"{format_number(eps)} is representable in {dtype} (= {stored:.4g})", dtype)
    detail = f"{format_number(eps)} rounds to 0 in {dtype} (tf.cast({format_number(eps)}, tf.{dtype}) == 0)"
    observed: dict[str, Any] = {"eps": eps, "eps_in_dtype": 0.0}
    inputs: dict[str, Any] = {}
    try:
        program = build(probe, dtype)
        rows = point_grid(program.inputs, dtype)
        res = run(program, rows)
        found = find_symptom(program, rows, res, math.inf)
    except (UnsupportedProbe, ValueError, TypeError, tf.errors.OpError):
        found = None
    if found is not None and found.symptom in (
        "nan-value",
        "inf-value",
        "nan-gradient",
        "inf-gradient",
    ):
        w = witness_parts(program, found)
        inputs = w["inputs"]
        observed.update(w["observed"])
        detail += f"; at {w['where']}, {w['expr']} = {w['value']}"
    return {
        "status": "confirmed",
        "symptom": "epsilon-underflow",
        "dtype": dtype,
        "inputs": inputs,
        "observed": observed,
        "detail": detail,
    }


def verify_diverges(program: Program, probe: dict[str, Any]) -> dict[str, Any]:
    """A precision loss: compare the dtype result with the same expression in float64."""
    dtype = program.dtype
    exact = build({**probe, "loss": None}, "float64", extras=False)
    rows = point_grid(program.inputs, dtype)
    res, ref = run(program, rows), run(exact, rows)
    t, r = flat(res["t"]), flat(ref["t"])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(t - r) / np.maximum(np.abs(r), 1e-300)
    bad = (
        np.isfinite(t).all(1) & np.isfinite(r).all(1) & (np.abs(r) > 0).all(1) & (rel > 1e-2).any(1)
    )
    bad &= ~extreme_rows(program, rows)
    bad &= (np.abs(r) >= float(iv.finfo(dtype).smallest_normal)).all(1)  # FTZ is not divergence
    hits = np.flatnonzero(bad)
    if not hits.size:
        return refuted(
            f"matches the float64 result within 1% at {len(rows)} boundary points ({dtype})", dtype
        )
    absorbed = precision_absorbed(program, probe, rows[hits])  # the statement hides the loss?
    shown = [int(i) for i, why in zip(hits, absorbed, strict=True) if why is None]
    if not shown:
        why = absorbed_reason(absorbed)
        return refuted(
            f"diverges from float64 at {len(hits)} boundary point(s), but at each the loss does "
            f"not show in its statement: {why}",
            dtype,
        )
    hits = np.array(shown)
    # a point at values the code gives its inputs, if any; else the first, whose inputs at
    # unusual values all count as needed (a divergence is not relaxed input by input)
    row = next(
        (int(i) for i in hits if not unreachable_reasons(program, rows[i], None, small_ok=True)),
        int(hits[0]),
    )
    w = witness_parts(program, Witness("diverges", row, rows, res))
    exact_v = float(r[row][0])
    err = float(rel[row].max())
    w["observed"]["exact"] = exact_v
    w["observed"]["relative_error"] = err
    w["observed"]["needed"] = [
        spec.name
        for j, spec in enumerate(program.inputs)
        if not ordinary(spec, rows[row, j], dtype)
        or unreachable_reasons(program, rows[row], [spec.name], small_ok=True)
    ]
    detail = (
        f"at {w['where']} ({dtype}), {w['expr']} = {w['value']} but the exact value is "
        f"{exact_v:.4g} (float64): relative error {err:.2g}"
    )
    return {
        "status": "confirmed",
        "symptom": "diverges",
        "dtype": dtype,
        "inputs": w["inputs"],
        "observed": w["observed"],
        "detail": detail,
    }


# ---------------------------------------------------------------- a witness, checked again

VALUE_SYMPTOMS = frozenset({"nan-value", "inf-value"})
POINT_GRADIENT_SYMPTOMS = frozenset({"nan-gradient", "inf-gradient"})


def review_witness(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A confirmed witness whose symptom does not start at the flagged op is not a
    confirmation of it, nor a condition to state (its related inputs were reviewed before,
    :func:`review_related`).  The witness stays, for the downstream gate."""
    if out.get("status") != "confirmed" or not isinstance(out.get("inputs"), dict):
        return out
    reason = attribution_reason(probe, out)
    if reason is None:
        return out
    return {**out, "status": "inconclusive", "detail": f"{reason} (seen: {out.get('detail', '')})"}


def flagged_operands(tree: Any) -> tuple[str, list[tuple[str, Any]]] | None:
    """The flagged op at the root of the target and its operands that can hold the symptom's
    start: (the op's name in messages, [(role, subtree)]); None for a root with no danger zone
    of its own (a where, a sum)."""
    if not isinstance(tree, dict):
        return None
    if tree.get("k") == "bin" and tree.get("op") in ("/", "**"):
        name = "division" if tree["op"] == "/" else "power"
        roles = ("numerator", "divisor") if tree["op"] == "/" else ("base", "exponent")
        return name, [(roles[0], tree["l"]), (roles[1], tree["r"])]
    if tree.get("k") != "call":
        return None
    entry = registry.REGISTRY.get(str(tree.get("op")))
    if entry is None or entry.danger is None or entry.danger.test in ("never", "branches"):
        return None
    args = list(tree.get("args") or [])
    args += [v for k, v in (tree.get("kw") or {}).items() if k in (entry.params or ())]
    what = entry.danger.what or "argument"
    return entry.name, [
        (what if i == entry.danger.arg else "operand", a) for i, a in enumerate(args)
    ]


def attribution_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """The flagged op must be where the symptom starts: an operand already inf/NaN at the
    witness carries a symptom from upstream (another finding's op), and a NaN/inf gradient of
    an op whose input is outside its danger zone comes from elsewhere in the slice."""
    symptom = out.get("symptom")
    found = flagged_operands(probe.get("target"))
    if found is None or symptom not in VALUE_SYMPTOMS | POINT_GRADIENT_SYMPTOMS:
        return None
    op_name, operands = found
    values = operand_values(probe, out, [t for _, t in operands], str(out.get("dtype")))
    if values is None:
        return None
    for (role, subtree), value in zip(operands, values, strict=True):
        if value is not None and not math.isfinite(value):
            return (
                f"the {op_name}'s {role} `{trace.render(subtree)}` is already "
                f"{format_number(value)} at the witness: the symptom starts upstream of the "
                "flagged op, where another finding belongs"
            )
    if symptom in POINT_GRADIENT_SYMPTOMS:
        entry = registry.REGISTRY.get(op_name)
        zone = entry.danger if entry is not None else None
        if op_name == "division":
            zone = registry.REGISTRY["divide"].danger
        value = values[zone.arg] if zone is not None and zone.arg < len(values) else None
        if zone is not None and value is not None:
            x = float(value)
            if not near_zone(zone.test, zone.bound, x):
                role, subtree = operands[zone.arg]
                return (
                    f"the {op_name}'s {role} `{trace.render(subtree)}` = {format_number(x)} "
                    f"at the witness, away from its danger zone ({zone.label}): the gradient "
                    "symptom starts elsewhere in the slice"
                )
    return None


NEAR = 1e-3  # how close to its danger zone an op's input must be for a NaN/inf gradient there


def near_zone(test: str, bound: float, x: float) -> bool:
    if test in ("reaches", "pow_base"):
        return x <= bound + NEAR
    if test == "straddles":
        return abs(x - bound) <= NEAR
    if test == "leaves_unit":
        return abs(x) >= 1 - NEAR
    return True  # overflows and the rest: no local test


def operand_values(
    probe: dict[str, Any], out: dict[str, Any], trees: list[Any], dtype: str
) -> list[float | None] | None:
    """Each operand's value at the witness (the worst element: a NaN, else an inf, else the
    one nearest 0), or None when the witness cannot be rebuilt."""
    from .program import TRACE_ERRORS, probe_dtype

    witness = out["inputs"]
    try:
        dtype = dtype if dtype in trace_ops.DTYPES else probe_dtype(probe)
        whole = build(probe, dtype, extras=False, grads=False)
    except TRACE_ERRORS:
        return None
    row = witness_row(whole, witness)
    if row is None:
        return None
    rows = np.array([row], dtype=np.float64)
    values: list[float | None] = []
    for tree in trees:
        if '"k": "input"' not in json.dumps(tree):
            values.append(None)  # a constant operand carries nothing from upstream
            continue
        part = {**probe, "target": tree, "loss": None}
        try:
            program = build(part, dtype, extras=False, grads=False, shape=(whole.k, whole.rank))
            t = flat(run(program, rows)["t"])[0]
        except TRACE_ERRORS:
            values.append(None)
            continue
        values.append(_worst(t))
    return values


def _worst(t: np.ndarray) -> float:
    if np.isnan(t).any():
        return math.nan
    if np.isinf(t).any():
        return float(t[np.isinf(t)][0])
    return float(t[np.argmin(np.abs(t))])
