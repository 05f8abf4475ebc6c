"""Fix proofs, served by the verification worker with the verifier's own evaluator.

A proof job (built statically by ``fix/proof.py``) holds the original expression and its
rewrite as probe trees over the same free inputs.  Both are compiled by :mod:`.trace` (the
same op table, argument binding and batching as every verdict) and evaluated at the same
points, all at once: each point gives every input a realistic value of shape
``[batch, classes(, ...)]`` (batch 4, classes 3, a rank large enough for every axis the
expression names), so a dropped or changed reduction changes a value.

The verdict:

* ``failed`` (the fix is not offered) when the rewrite is non-finite where it should not be,
  its gradient still explodes, its shape differs, or it changes values on ordinary inputs
  (random data well inside every input's range) where the original is finite;
* ``safe`` when, at every point where the original is finite and not saturated, the rewrite
  equals it (rtol 1e-5 in float32) or is closer to the original's float64 value;
* ``unsafe`` otherwise: values change only at boundary points (a zero denominator, a
  probability in the clip band), which is what ``--unsafe-fixes`` accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops
from ..analysis.slicing.signatures import PARAMS
from ..analysis.slicing.tools import jfloat
from . import trace, trace_ops
from .compiled import graph_optimizer

RTOL = {"float32": 1e-5, "float64": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}
ATOL = {"float32": 1e-6, "float64": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}
EXPLODING = 1e6
# 1/eps for the dtype-sized epsilon a rewrite uses (1e-7 rounds to 1.19e-7 next to 1): a
# gradient up to this bound is the fix working as designed, not an explosion
EPS_GRADIENT_BOUND = {"float32": 2.1e7, "float64": 2.1e7, "float16": 1e6}
SIZES = (4, 3, 5, 6)  # batch, classes, ...: distinct, so a wrong axis changes the shape
GENERIC = [-104.0, -90.0, -30.0, -17.0, -5.0, -1.0, -1e-3, 0.0, 1e-8, 1e-3, 0.3, 1.0]
GENERIC += [5.0, 17.0, 30.0, 90.0, 104.0]
PROB = [0.0, 1e-30, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.3, 0.5, 0.9, 0.99, 1 - 1e-5, 1 - 1e-7, 1.0]
ORDINARY_POINTS = 8
RANDOM_POINTS = 24


@dataclass
class Side:
    """One expression evaluated at every point: arrays with the point axis first."""

    value: np.ndarray
    grads: list[np.ndarray]
    local: list[np.ndarray] = field(default_factory=list)  # d/d(the rewrite's own operands)
    srcs: list[np.ndarray] = field(default_factory=list)
    probs: list[np.ndarray] = field(default_factory=list)


def _num(v: Any) -> float:
    return trace.parse_float(v)


def is_prob(inp: dict[str, Any]) -> bool:
    return bool(inp.get("prob")) or inp.get("producer") in ops.PROBABILITY


def value_set(inp: dict[str, Any]) -> list[float]:
    lo, hi = _num(inp.get("lo", "-inf")), _num(inp.get("hi", "inf"))
    vals = [v for v in (PROB if is_prob(inp) else GENERIC) if lo <= v <= hi]
    return vals or [lo if math.isfinite(lo) else (hi if math.isfinite(hi) else 0.0)]


def shape_for(job: dict[str, Any]) -> tuple[int, ...]:
    """Batch 4, classes 3, and one more axis for each axis an expression names beyond."""
    rank = 2
    for tree in (job.get("orig"), job.get("new")):
        for node in trace.walk(tree):
            if node.get("k") != "call":
                continue
            names = PARAMS.get(str(node.get("op")), ())
            given = dict(zip(names, node.get("args") or [], strict=False))
            given.update(node.get("kw") or {})
            for axis in _ints(given.get("axis")):
                rank = max(rank, axis + 1 if axis >= 0 else -axis)
    return SIZES[: min(rank, len(SIZES))]


def _ints(tree: Any) -> list[int]:
    if not isinstance(tree, dict):
        return []
    if tree.get("k") == "const":
        return [int(_num(tree["v"]))]
    if tree.get("k") == "neg":
        return [-i for i in _ints(tree["x"])]
    if tree.get("k") == "src":
        return _ints(tree["x"])
    if tree.get("k") == "tuple":
        return [i for t in tree["items"] for i in _ints(t)]
    return []


def input_shapes(job: dict[str, Any], shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Every input gets ``shape``, except a matmul's right operand: [classes, classes], so that
    ``x @ W + b`` keeps the shape of ``x`` and ``b``."""
    out = {i["name"]: shape for i in job["inputs"]}
    for tree in (job.get("orig"), job.get("new")):
        for node in trace.walk(tree):
            right = None
            if node.get("k") == "call" and node.get("op") == "matmul" and len(node["args"]) > 1:
                right = node["args"][1]
            elif node.get("k") == "bin" and node.get("op") == "@":
                right = node["r"]
            while isinstance(right, dict) and right.get("k") == "src":
                right = right["x"]
            if isinstance(right, dict) and right.get("k") == "input":
                out[right["name"]] = (shape[-1], shape[-1])
    return out


def points(job: dict[str, Any], shape: tuple[int, ...]) -> tuple[dict[str, np.ndarray], int, int]:
    """(input name -> [P, *shape] values, number of points, index of the first ordinary one).

    Each input swept over its boundary values (whole tensor, then every other class), seeded
    random mixtures of those values, ordinary random data, and the verifier's witness."""
    rng = np.random.default_rng(20240521)
    inputs = job["inputs"]
    shapes = input_shapes(job, shape)
    sets = {i["name"]: value_set(i) for i in inputs}
    neutral = {n: (0.5 if 0.5 in s else s[len(s) // 2]) for n, s in sets.items()}
    rows: list[dict[str, np.ndarray]] = []
    for name, values in sets.items():
        alternate = np.arange(shapes[name][-1]) % 2 == 0
        for v in values:
            for pattern in ("uniform", "mixed"):
                pt = {o: np.full(shapes[o], neutral[o]) for o in sets}
                pt[name] = np.full(shapes[name], v)
                if pattern == "mixed":
                    pt[name] = np.where(alternate, v, neutral[name]) * np.ones(shapes[name])
                rows.append(pt)
    for _ in range(RANDOM_POINTS):
        rows.append({n: rng.choice(np.array(s), size=shapes[n]) for n, s in sets.items()})
    witness = job.get("witness")
    if isinstance(witness, dict):
        try:
            pt = {}
            for n in sets:
                w = witness.get(n)
                pt[n] = np.full(shapes[n], _num(w) if w is not None else neutral[n])
            rows.append(pt)
        except (TypeError, ValueError):
            pass
    first_ordinary = len(rows)
    for _ in range(ORDINARY_POINTS):
        rows.append({i["name"]: ordinary(i, shapes[i["name"]], rng) for i in inputs})
    stacked = {n: np.stack([r[n] for r in rows]) for n in sets}
    return stacked, len(rows), first_ordinary


def ordinary(inp: dict[str, Any], shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Everyday data well inside the input's range: what a fix must never change."""
    lo, hi = _num(inp.get("lo", "-inf")), _num(inp.get("hi", "inf"))
    if is_prob(inp) or (lo >= 0 and hi <= 1):
        return rng.uniform(0.05, 0.95, size=shape)
    x = rng.normal(0.0, 1.0, size=shape)
    if lo >= 0:
        x = np.abs(x) + 0.1 + max(lo, 0.0)
    elif hi <= 0:
        x = -np.abs(x) - 0.1 + min(hi, 0.0)
    return np.clip(x, lo, hi)


def evaluate(tree: Any, names: list[str], pts: dict[str, np.ndarray], dtype: tf.DType, n: int,
             grads: bool = True, form: str = "eager") -> Side:  # fmt: skip
    """Evaluate one tree at every point with the verifier's evaluator; the rewrite's own
    operands (``src`` nodes) and the original's probabilities are recorded on the way.  The
    ``compiled`` form runs it in a tf.function with TensorFlow's graph optimizer on, as the
    user's tf.function, Keras fit or Session does (``compiled.py``)."""
    ids = {name: f"in_{i}" for i, name in enumerate(names)}
    code, _ = trace.compile_tree(tree, ids, "<proof>", 1, hooks=True)
    xs = [tf.constant(pts[name], dtype=dtype) for name in names]

    def body(*args: tf.Tensor) -> tuple[Any, ...]:
        return side_tensors(code, dict(zip(ids.values(), args, strict=True)), dtype, n, grads)

    if form == "compiled":
        with graph_optimizer():
            value, g, local, srcs, probs = tf.function(body, autograph=False)(*xs)
    else:
        value, g, local, srcs, probs = body(*xs)
    side = Side(_np(value), [_np(t) for t in g] if grads else [])
    side.local = [_np(t) for t in local] if grads else []
    side.srcs = [_np(t) for t in srcs]
    side.probs = [_np(t) for t in probs]
    return side


def side_tensors(code: Any, xs: dict[str, tf.Tensor], dtype: tf.DType, n: int,
                 grads: bool) -> tuple[Any, ...]:  # fmt: skip
    """(value, d/d inputs, d/d the rewrite's operands, those operands, the probabilities)."""
    srcs: list[tf.Tensor] = []
    probs: list[tf.Tensor] = []
    with tf.GradientTape(persistent=True) as tape:
        for x in xs.values():
            tape.watch(x)

        def hook_src(v: Any) -> Any:
            if isinstance(v, tf.Tensor) and v.dtype.is_floating:
                tape.watch(v)
                srcs.append(v)
            return v

        def hook_prob(v: Any) -> Any:
            probs.append(v)
            return v

        env = {**xs, "dtype_same": dtype, "hook_src": hook_src, "hook_prob": hook_prob}
        value = tf.cast(tf.convert_to_tensor(trace.evaluate(code, env)), dtype)
        if value.shape.rank == 0 or value.shape[0] != n:
            value = tf.broadcast_to(value, [n, *value.shape])
        total = tf.reduce_sum(tf.cast(value, tf.float64))
    if not grads:
        return value, [], [], srcs, [tf.convert_to_tensor(p) for p in probs]
    g = [_zero_if_none(tape.gradient(total, x), x) for x in xs.values()]
    local = [_zero_if_none(tape.gradient(total, s), s) for s in srcs]
    return value, g, local, srcs, [tf.convert_to_tensor(p) for p in probs]


def _zero_if_none(g: Any, like: tf.Tensor) -> tf.Tensor:
    return tf.zeros_like(like) if g is None else g


def _np(t: Any, like: Any = None) -> np.ndarray:
    if t is None:
        return np.zeros(like.shape) if like is not None else np.zeros(())
    return np.asarray(tf.cast(t, tf.float64))


def rows(a: np.ndarray, n: int) -> np.ndarray:
    """[P, ...] -> [P, k]: one row per point."""
    return a.reshape(n, -1) if a.size else np.zeros((n, 0))


def finite_rows(arrays: list[np.ndarray], n: int) -> np.ndarray:
    out = np.ones(n, bool)
    for a in arrays:
        if a.ndim and a.shape[0] == n:
            out &= np.isfinite(rows(a, n)).all(1)
    return out


def max_abs_rows(arrays: list[np.ndarray], n: int) -> np.ndarray:
    out = np.zeros(n)
    for a in arrays:
        if a.ndim and a.shape[0] == n and a.size:
            r = np.where(np.isfinite(rows(a, n)), np.abs(rows(a, n)), 0.0)
            out = np.maximum(out, r.max(1))
    return out


def show(pts: dict[str, np.ndarray], p: int) -> dict[str, Any]:
    """One point's inputs for the JSON proof record (the first 12 elements of each)."""
    return {k: [jfloat(float(x)) for x in np.ravel(v[p])[:12]] for k, v in pts.items()}


def saturated_rows(job: dict[str, Any], pts: dict[str, np.ndarray], orig: Side, tau: float,
                   n: int) -> np.ndarray:  # fmt: skip
    """Points where a probability of the original is within tau of 0 or 1."""
    tensors = [p for p in orig.probs if p.ndim and p.shape[0] == n]
    tensors += [pts[i["name"]] for i in job["inputs"] if is_prob(i)]
    out = np.zeros(n, bool)
    for t in tensors:
        r = rows(t, n)
        out |= ((r <= tau) | (r >= 1 - tau)).any(1)
    return out


def prove(job: dict[str, Any]) -> dict[str, Any]:
    """The proof verdict for one job (see the module docstring)."""
    dtype_name = job.get("dtype") or "float32"
    dtype = trace_ops.DTYPES.get(dtype_name, tf.float32)
    rtol, atol = RTOL.get(dtype_name, 1e-5), ATOL.get(dtype_name, 1e-6)
    names = [i["name"] for i in job["inputs"]]
    shape = shape_for(job)
    pts, n, first_ordinary = points(job, shape)
    grads = not job.get("no_grad")
    try:
        orig = evaluate(job["orig"], names, pts, dtype, n, grads)
        new = evaluate(job["new"], names, pts, dtype, n, grads)
        ref = evaluate(job["orig"], names, pts, tf.float64, n, grads)
    except (trace.UnsupportedProbe, tf.errors.OpError, ValueError, TypeError) as exc:
        return {
            "verdict": "failed",
            "detail": f"cannot evaluate: {type(exc).__name__}: {exc}"[:200],
        }
    if orig.value.shape != new.value.shape:
        return {
            "verdict": "failed",
            "detail": f"shape changed: {orig.value.shape[1:]} -> {new.value.shape[1:]}",
        }
    strict = bool(job.get("strict"))
    npd = {"float16": np.float16, "float64": np.float64}.get(dtype_name, np.float32)
    skip = ~finite_rows(new.srcs, n)  # non-finite before the rewrite starts: not its business
    kept_operand = _merged_hazard_kept(job, new, ref, skip, n, npd)
    if kept_operand is not None:  # ...unless a merged rule's hazard sits in that operand
        return {
            "verdict": "failed",
            "detail": "an operand the rewrite keeps is still non-finite where the exact value "
            f"is finite: the hazard of {', '.join(job['rules'])} is not removed",
            "point": show(pts, kept_operand),
        }
    orig_bad = ~finite_rows([orig.value, *orig.grads], n) & ~skip
    bad_row = first_nonfinite(new, ref, skip, strict, npd, n)
    if bad_row is not None:
        return {
            "verdict": "failed",
            "detail": "the rewrite is still non-finite at a boundary point",
            "point": show(pts, bad_row),
        }
    compiled_bad = still_bad_compiled(job, names, pts, dtype, n, grads, ref, skip, strict, npd)
    if compiled_bad is not None:
        return compiled_bad
    kept = ~skip
    g_orig = float(max_abs_rows(orig.local, n)[kept].max(initial=0.0))
    g_new = float(max_abs_rows(new.local, n)[kept].max(initial=0.0))
    if (
        job.get("explosion")
        and g_orig >= EXPLODING
        and g_new > g_orig / 10
        and g_new > EPS_GRADIENT_BOUND.get(dtype_name, EXPLODING)
    ):
        return {
            "verdict": "failed",
            "detail": f"the gradient still explodes: max |grad| {g_new:.3g} (original {g_orig:.3g})",
        }
    summary = {
        "points": n,
        "symptom_points": int(orig_bad.sum()),
        "shape": list(shape),
        "rules": list(job.get("rules") or [job.get("rule")]),
        "checked": _checked(job),
        "forms": ["eager", "compiled"],
    }
    if not job.get("compare", True):
        return {"verdict": "safe", "detail": "symptom gone at every point", **summary}
    eps = job.get("eps")
    tau = eps / rtol if eps else 0.0
    compared = kept & ~saturated_rows(job, pts, orig, tau, n)
    o, nv, r = rows(orig.value, n), rows(new.value, n), rows(ref.value, n)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(nv - o) <= rtol * np.abs(o) + atol
        better = np.abs(nv - r) <= np.abs(o - r) + rtol * np.abs(r) + atol
    differs = (np.isfinite(o) & ~(close | better)).any(1) & compared
    summary["compared"] = int(compared.sum())
    if not differs.any():
        return {
            "verdict": "safe",
            "detail": "symptom gone at every point; values equal where the original was fine",
            **summary,
        }
    p = int(np.flatnonzero(differs)[0])
    j = int(np.flatnonzero(np.isfinite(o[p]) & ~(close[p] | better[p]))[0])
    change = f"({o[p, j]:.6g} -> {nv[p, j]:.6g})"
    ordinary_change = differs & ~in_band(new.srcs, clip_band(job), n)
    ordinary_change[:first_ordinary] = False
    if ordinary_change.any():
        q = int(np.flatnonzero(ordinary_change)[0])
        k = int(np.flatnonzero(np.isfinite(o[q]) & ~(close[q] | better[q]))[0])
        return {
            "verdict": "failed",
            "detail": f"changes values on ordinary inputs ({o[q, k]:.6g} -> {nv[q, k]:.6g})",
            "point": show(pts, q),
            **summary,
        }
    return {
        "verdict": "unsafe",
        "detail": f"changes values where the original was fine {change}",
        "point": show(pts, p),
        **summary,
    }


def _merged_hazard_kept(job: dict[str, Any], new: Side, ref: Side, skip: np.ndarray, n: int,
                        npd: Any) -> int | None:  # fmt: skip
    """A point where the rewrite's own operand is non-finite although the exact (float64)
    value is finite, for a job that fixes a merged hazard (several rules): the operand holds
    the other rule's hazard (``divide_no_nan(exp(x), ...)`` keeps the overflowing exp)."""
    if len(job.get("rules") or ()) < 2:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        exact = finite_rows([ref.value.astype(npd)], n)
    rows_ = np.flatnonzero(skip & exact)
    return int(rows_[0]) if rows_.size else None


def _checked(job: dict[str, Any]) -> list[str]:
    """The symptoms this proof looked for: non-finite values and gradients always, the
    rules' exploding gradient and singular points when their recipes name them."""
    out = ["inf/NaN value", "inf/NaN gradient"]
    if job.get("explosion"):
        out.append("exploding gradient")
    if job.get("strict"):
        out.append("finite at every point (a true singularity)")
    if len(job.get("rules") or ()) > 1:
        out.append("non-finite operand kept (merged rules)")
    return out


def first_nonfinite(new: Side, ref: Side, skip: np.ndarray, strict: bool, npd: Any,
                    n: int) -> int | None:  # fmt: skip
    """The first point where the rewrite's value or gradient is NaN/Inf (and, unless strict,
    the exact value is representable in the dtype), outside the rows skipped."""
    for got, exact in ((new.value, ref.value), *zip(new.grads, ref.grads, strict=True)):
        bad = ~np.isfinite(got)
        if not strict:  # the exact value is not representable: nothing can be finite there
            with np.errstate(over="ignore", invalid="ignore"):
                bad &= np.isfinite(exact.astype(npd))
        bad_rows = np.flatnonzero(rows(bad, n).any(1) & ~skip)
        if bad_rows.size:
            return int(bad_rows[0])
    return None


def still_bad_compiled(job: dict[str, Any], names: list[str], pts: dict[str, np.ndarray],
                       dtype: tf.DType, n: int, grads: bool, ref: Side, skip: np.ndarray,
                       strict: bool, npd: Any) -> dict[str, Any] | None:  # fmt: skip
    """The rewrite again, compiled with the graph optimizer on: a fix must hold in the form
    the user's program runs in too (``1 - p + 1e-7`` folds to ``1 - p`` there)."""
    try:
        new = evaluate(job["new"], names, pts, dtype, n, grads, form="compiled")
    except (trace.UnsupportedProbe, tf.errors.OpError, ValueError, TypeError) as exc:
        return {"verdict": "failed", "detail": f"cannot evaluate compiled: {type(exc).__name__}"}
    bad_row = first_nonfinite(new, ref, skip, strict, npd, n)
    if bad_row is None:
        return None
    return {
        "verdict": "failed",
        "detail": "compiled (tf.function, graph optimizer on), the rewrite is still non-finite "
        "at a boundary point",
        "point": show(pts, bad_row),
    }


def clip_band(job: dict[str, Any]) -> float:
    """The width of the band a rewrite clips or clamps to: its own small constant (the eps of
    ``maximum(x, eps)`` or ``clip_by_value(p, eps, 1 - eps)``), else 0."""
    small = [
        _num(node["v"])
        for node in trace.walk(job.get("new"))
        if node.get("k") == "const" and 0 < _num(node["v"]) <= 1e-3
    ]
    return max(small, default=0.0)


def in_band(srcs: list[np.ndarray], band: float, n: int) -> np.ndarray:
    """Points where an operand of the rewrite is within the band of 0 or 1."""
    out = np.zeros(n, bool)
    for s in srcs:
        if s.ndim and s.shape[0] == n:
            r = rows(s, n)
            out |= ((np.abs(r) <= band) | (np.abs(1 - r) <= band)).any(1)
    return out


def prove_safely(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point used by the worker: any failure means "not proven"."""
    try:
        return prove(job)
    except (KeyError, IndexError, ZeroDivisionError, trace.UnsupportedProbe) as exc:
        return {"verdict": "failed", "detail": f"{type(exc).__name__}: {str(exc)[:160]}"}
