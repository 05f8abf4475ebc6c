"""Verdicts other than a witness: refuted and inconclusive, refutation by value ranges, and the
checks that compare numbers rather than look for a symptom (an epsilon absorbed among
constants, an epsilon that underflows, a result that diverges from float64).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import tensorflow as tf

from . import intervals as iv
from . import trace
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
    for spec in program.inputs:
        placeholders[spec.ident] = iv.TOP if spec.prob else (spec.lo, spec.hi)
    ranges = iv.analyse(program.graph, placeholders, program.dtype)
    checked = [(op, iv.danger(op, ranges, program.dtype)) for op in ops]
    if any(hit for _, (hit, _, _) in checked):
        return None
    op, (_, zone, rng) = checked[0]
    lo, hi = format_number(rng[0]), format_number(rng[1])
    never = "never overflows" if zone == "an overflow" else f"never {zone}"
    detail = f"{iv.describe(op.type)} is within [{lo}, {hi}] in {program.dtype}: {never}"
    if len(checked) > 1:
        detail += f" (and {len(checked) - 1} other unsafe op(s) likewise)"
    return {"status": "refuted", "detail": detail, "dtype": program.dtype, "symptom": None}


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
    stored = float(tf.cast(tf.constant(eps, tf.float64), trace.DTYPES[dtype]).numpy())
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
