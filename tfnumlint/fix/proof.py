"""Prove a rewrite: evaluate the original and the rewritten probe trees at the same inputs.

Two halves.  The static half (:func:`build_job`, no TensorFlow) slices the original
expression and the rewritten one into probe trees (the verifier's format, see
``verify/slicer.py``) with a shared set of free inputs.  The TF half (:func:`prove_jobs`,
run in a worker subprocess: ``python -m tfnumlint.fix.proof``) evaluates both trees and their
gradients at the same boundary points and decides:

* ``symptom_gone``: the rewrite's value, its enclosing loss and their gradients are finite at
  every point (boundary points and verifier witnesses), and where the original's gradient
  exploded (|g| >= 1e6) the rewrite's largest gradient is at least 10x smaller;
* ``equal``: wherever the original is finite and not saturated, the rewrite agrees with it
  (rtol 1e-5 in float32, 1e-3 in float16) or is at least as close as the original to the
  float64 value of the original expression (the rewrite may be *more* accurate: log1p).

A point is *saturated* when a probability in the original (a sigmoid/softmax output or a
probability input) is within ``tau`` of 0 or 1, where ``tau`` is ``eps / rtol`` for the
largest tiny epsilon (<= 1e-3) in the original (the region where that epsilon itself moves the
log by more than rtol) and exactly 0/1 when there is none.

The verdict: ``safe`` when both hold, ``unsafe`` when only the symptom check holds (values
change where the original was fine), ``failed`` (the fix is not offered) otherwise.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from typing import Any

import libcst as cst

from ..analysis.module import contains
from ..verify.slicer import Slicer, jfloat
from .rewrites import Bin, Call, Keep, Neg, Num, Plan, Reuse, Src

RTOL = {"float32": 1e-5, "float64": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}
ATOL = {"float32": 1e-6, "float64": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}
EXPLODING = 1e6
# 1/eps for the dtype-sized epsilon a rewrite uses (1e-7 rounds to 1.19e-7 next to 1): a
# gradient up to this bound is the fix working as designed, not an explosion
EPS_GRADIENT_BOUND = {"float32": 2.1e7, "float64": 2.1e7, "float16": 1e6}
# rules whose symptom is a true singularity (x / 0, sqrt'(0)): the rewrite must be finite at
# every point; for the others it may overflow where the exact value is not representable.
SINGULAR = frozenset({"TNL201", "TNL202", "TNL203", "TNL302", "TNL403"})
PROOF_TIMEOUT = 300


# -- static half ---------------------------------------------------------------------------
class _SubSlicer(Slicer):
    """The verifier's slicer, with original nodes substituted by rewrite IR."""

    subs: dict[int, Any]
    cut_logits = False  # the rewrite's operands must be reached through the original tree

    def __init__(self, ctx, positions) -> None:
        super().__init__(ctx, positions)
        self.subs = {}
        self.mark: set[int] = set()  # original operands of the rewrite, marked in the original tree

    def tree(self, node, scope, order, depth: int = 0) -> dict:
        ir = self.subs.get(id(node))
        if ir is not None:
            return self.ir(ir, depth)
        if id(node) in self.mark:
            self.mark.discard(id(node))
            try:
                return {"k": "src", "x": super().tree(node, scope, order, depth)}
            finally:
                self.mark.add(id(node))
        return super().tree(node, scope, order, depth)

    def ir(self, ir, depth: int = 0) -> dict:
        if isinstance(ir, Src):
            own = self.subs.pop(id(ir.node), None)  # the replaced node itself, inside its rewrite
            try:
                return {"k": "src", "x": self.tree(ir.node, ir.scope, ir.order, depth + 1)}
            finally:
                if own is not None:
                    self.subs[id(ir.node)] = own
        if isinstance(ir, Num):
            return {"k": "const", "v": jfloat(ir.value)}
        if isinstance(ir, Neg):
            return {"k": "neg", "x": self.ir(ir.x, depth + 1)}
        if isinstance(ir, Bin):
            return {
                "k": "bin",
                "op": ir.op,
                "l": self.ir(ir.left, depth + 1),
                "r": self.ir(ir.right, depth + 1),
            }
        if isinstance(ir, Call):
            return {
                "k": "call",
                "op": ir.op,
                "args": [self.ir(a, depth + 1) for a in ir.args],
                "kw": {k: self.ir(v, depth + 1) for k, v in ir.kw},
            }
        if isinstance(ir, Reuse):
            own = self.subs.pop(id(ir.node), None)
            arg0 = ir.node.args[0].value
            self.subs[id(arg0)] = ir.arg
            try:
                return self.tree(ir.node, ir.scope, ir.order, depth + 1)
            finally:
                self.subs.pop(id(arg0), None)
                if own is not None:
                    self.subs[id(ir.node)] = own
        raise TypeError(f"no probe for {ir!r}")


def _statement_value(stmt: cst.CSTNode):
    if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr, cst.AugAssign)):
        return stmt.value
    return None


def _small_consts(tree: Any, out: list[float]) -> None:
    if isinstance(tree, dict):
        if tree.get("k") == "const" and isinstance(tree.get("v"), float | int):
            v = float(tree["v"])
            if 0 < v <= 1e-3:
                out.append(v)
        for v in tree.values():
            _small_consts(v, out)
    elif isinstance(tree, list):
        for v in tree:
            _small_consts(v, out)


def _src_nodes(ir) -> list:
    if isinstance(ir, Src):
        return [ir.node]
    if isinstance(ir, Call):
        return [n for a in [*ir.args, *(v for _, v in ir.kw)] for n in _src_nodes(a)]
    if isinstance(ir, Bin):
        return _src_nodes(ir.left) + _src_nodes(ir.right)
    if isinstance(ir, Neg):
        return _src_nodes(ir.x)
    if isinstance(ir, Reuse):
        return _src_nodes(ir.arg)
    return []


def build_job(ctx, positions, hit, plan: Plan, verification=None) -> dict[str, Any] | None:
    """The proof job for ``plan``: original and rewritten trees over the same inputs."""
    if not plan.edits:
        return None
    dtype = ctx.dtype(hit.site)
    if any(isinstance(e.new, Keep) for e in plan.edits):
        return _optimizer_job(plan, dtype, hit.probe_hint.get("epsilon"))
    site = hit.site
    parents: dict[int, cst.CSTNode] = {}
    stack = [site.statement]
    while stack:
        n = stack.pop()
        for c in n.children:
            parents[id(c)] = n
            stack.append(c)
    top: cst.CSTNode | None = hit.node
    while top is not None and not all(contains(top, e.node) for e in plan.edits):
        top = parents.get(id(top))
    if top is None or not isinstance(top, cst.BaseExpression):
        return None
    slicer = _SubSlicer(ctx, positions)
    slicer.mark = {id(n) for e in plan.edits for n in _src_nodes(e.new)}
    orig = slicer.tree(top, site.scope, site.order)
    slicer.mark = set()
    value = _statement_value(site.statement)
    # The enclosing statement is not probed: its other terms have hazards of their own (the
    # other log of a cross-entropy), which are not this rewrite's to remove.
    del value
    orig_loss = new_loss = None
    slicer.subs = {id(e.node): e.new for e in plan.edits}
    new = slicer.tree(top, site.scope, site.order)
    if slicer.truncated:
        return None
    eps: list[float] = []
    _small_consts(orig, eps)
    witness = None
    if verification is not None and isinstance(getattr(verification, "inputs", None), dict):
        witness = verification.inputs
    return {
        "rule": plan.rule,
        "dtype": dtype,
        "inputs": list(slicer.inputs.values()),
        "orig": orig,
        "new": new,
        "orig_loss": orig_loss,
        "new_loss": new_loss,
        "eps": max(eps) if eps else None,
        "witness": witness,
        "symptom": getattr(verification, "symptom", None),
    }


def _optimizer_job(plan: Plan, dtype: str, old_eps: float | None) -> dict[str, Any]:
    """An optimizer epsilon: the Adam-style update g / (sqrt(v) + eps), old eps vs new."""
    keep = plan.edits[0].new
    new_eps = keep.set_kw["epsilon"].value
    old_eps = 0.0 if old_eps is None else old_eps

    def update(eps: float) -> dict:
        return {
            "k": "bin",
            "op": "/",
            "l": {"k": "input", "name": "g"},
            "r": {
                "k": "bin",
                "op": "+",
                "l": {"k": "call", "op": "sqrt", "args": [{"k": "input", "name": "v"}], "kw": {}},
                "r": {"k": "const", "v": eps},
            },
        }

    return {
        "rule": plan.rule,
        "dtype": dtype,
        "inputs": [
            {
                "name": "g",
                "producer": "gradient",
                "lo": -1.0,
                "hi": 1.0,
                "prob": False,
                "role": "value",
            },
            {
                "name": "v",
                "producer": "square",
                "lo": 0.0,
                "hi": 1.0,
                "prob": False,
                "role": "value",
            },
        ],
        "orig": update(old_eps),
        "new": update(new_eps),
        "orig_loss": None,
        "new_loss": None,
        "eps": None,
        "witness": None,
        "no_grad": True,
    }


def tensorflow_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def run_worker(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prove ``jobs`` in one subprocess (TensorFlow is imported there, never here)."""
    if not jobs:
        return []
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("CUDA_VISIBLE_DEVICES", "")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tfnumlint.fix.proof"],
            input=json.dumps(jobs),
            capture_output=True,
            text=True,
            env=env,
            timeout=PROOF_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return [{"verdict": "failed", "detail": "proof timed out"} for _ in jobs]
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        if isinstance(out, list) and len(out) == len(jobs):
            return out
    except (IndexError, json.JSONDecodeError):
        pass
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return [{"verdict": "failed", "detail": f"proof worker failed: {tail[:200]}"} for _ in jobs]


# -- TF half (runs in the worker) ------------------------------------------------------------
GENERIC = [
    -104.0,
    -90.0,
    -30.0,
    -17.0,
    -5.0,
    -1.0,
    -1e-3,
    0.0,
    1e-8,
    1e-3,
    0.3,
    1.0,
    5.0,
    17.0,
    30.0,
    90.0,
    104.0,
]
PROB = [0.0, 1e-30, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.3, 0.5, 0.9, 0.99, 1 - 1e-5, 1 - 1e-7, 1.0]
COLS = 4


def _num(v) -> float:
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return float(v)


def _value_set(inp: dict) -> list[float]:
    lo, hi = _num(inp.get("lo", "-inf")), _num(inp.get("hi", "inf"))
    base = PROB if inp.get("prob") or inp.get("producer") in ("sigmoid", "softmax") else GENERIC
    vals = [v for v in base if lo <= v <= hi]
    if not vals:
        vals = [lo if math.isfinite(lo) else (hi if math.isfinite(hi) else 0.0)]
    return vals


def _points(job: dict, np) -> list[dict[str, Any]]:
    """Boundary points: each input swept over its value set (others at neutral values), plus
    seeded mixtures, plus the verifier's witnesses."""
    rng = np.random.default_rng(20240521)
    inputs = job["inputs"]
    sets = {i["name"]: _value_set(i) for i in inputs}
    neutral = {n: (0.5 if 0.5 in s else (s[len(s) // 2])) for n, s in sets.items()}
    points = []
    for name, values in sets.items():
        for v in values:
            for pattern in ("uniform", "mixed"):
                pt = {}
                for other, s in sets.items():
                    if other != name:
                        pt[other] = np.full((COLS, COLS), neutral[other], dtype=np.float64)
                    elif pattern == "uniform":  # every element at v: reductions see it too
                        pt[other] = np.full((COLS, COLS), v, dtype=np.float64)
                    else:
                        row = [v] * COLS
                        alt = [v, neutral[other], v, -v if -v in s else v]
                        pt[other] = np.array([row, alt, row, alt], dtype=np.float64)
                points.append(pt)
    for _ in range(24):
        points.append(
            {
                n: rng.choice(np.array(s), size=(COLS, COLS)).astype(np.float64)
                for n, s in sets.items()
            }
        )
    for scale in (1.0, 10.0):
        pt = {}
        for inp in inputs:
            n = inp["name"]
            s = sets[n]
            if s == PROB or (s and min(s) >= 0 and max(s) <= 1):
                pt[n] = rng.uniform(0.05, 0.95, size=(COLS, COLS))
            else:
                pt[n] = np.clip(rng.normal(0, scale, size=(COLS, COLS)), min(s), max(s))
        points.append(pt)
    witness = job.get("witness")
    if isinstance(witness, dict):
        pt = {}
        for inp in inputs:
            n = inp["name"]
            w = witness.get(n)
            try:
                arr = np.broadcast_to(
                    np.array(w if w is not None else neutral[n], dtype=np.float64), (COLS, COLS)
                )
            except (TypeError, ValueError):
                pt = None
                break
            pt[n] = np.array(arr)
        if pt:
            points.append(pt)
    return points


class _Eval:
    def __init__(self, tf, env: dict, probs: list | None, srcs: list | None = None) -> None:
        self.tf = tf
        self.env = env
        self.srcs = srcs
        self.tape = None
        self.probs = probs  # collects probability tensors of the original, for saturation

    def __call__(self, t):
        tf = self.tf
        k = t["k"]
        if k == "input":
            v = self.env[t["name"]]
            return v
        if k == "const":
            v = _num(t["v"])
            return int(v) if v.is_integer() and abs(v) < 2**31 else v
        if k == "src":  # an original operand inside the rewrite: note whether it is finite
            v = self(t["x"])
            if self.srcs is not None and not isinstance(v, bool | str | list | int | float):
                if self.tape is not None and v.dtype.is_floating:
                    self.tape.watch(v)
                self.srcs.append(v)
            return v
        if k == "bool":
            return bool(t["v"])
        if k == "str":
            return t["v"]
        if k == "dtype":
            return getattr(tf, t["v"])
        if k == "tuple":
            return [self(i) for i in t["items"]]
        if k == "neg":
            v = self(t["x"])
            return -v if isinstance(v, int | float) else -self._t(v)
        if k == "bin":
            a, b = self(t["l"]), self(t["r"])
            op = t["op"]
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                return a / b
            if op == "**":
                return a**b
            if op == "@":
                return tf.matmul(a, b)
        if k == "cmp":
            a, b = self._t(self(t["l"])), self(t["r"])
            return {
                ">": tf.greater,
                "<": tf.less,
                ">=": tf.greater_equal,
                "<=": tf.less_equal,
                "==": tf.equal,
                "!=": tf.not_equal,
            }[t["op"]](a, tf.cast(b, a.dtype) if not isinstance(b, bool) else b)
        if k == "call":
            args = [self(a) for a in t["args"]]
            kw = {key: self(v) for key, v in t["kw"].items()}
            out = self._call(t["op"], args, kw)
            if self.probs is not None and t["op"] in ("sigmoid", "softmax"):
                self.probs.append(out)
            return out
        raise ValueError(f"unsupported probe node {k}")

    def _t(self, v):
        tf = self.tf
        if isinstance(v, float | int):
            return tf.constant(v, dtype=self.env["__dtype__"])
        return v

    def _call(self, op: str, args: list, kw: dict):
        tf = self.tf
        dtype = self.env["__dtype__"]
        if op in ("ones", "zeros"):
            x = self._t(args[0]) if args else None
            return (tf.ones_like if op == "ones" else tf.zeros_like)(x)
        if op == "constant":
            return tf.constant(args[0], dtype=dtype)
        if op == "cast":
            target = kw.get("dtype", args[1] if len(args) > 1 else dtype)
            return tf.cast(args[0], target if isinstance(target, tf.dtypes.DType) else dtype)
        if op in ("sigmoid_xent", "weighted_xent", "softmax_xent"):
            fn = {
                "sigmoid_xent": tf.nn.sigmoid_cross_entropy_with_logits,
                "weighted_xent": tf.nn.weighted_cross_entropy_with_logits,
                "softmax_xent": tf.nn.softmax_cross_entropy_with_logits,
            }[op]
            names = ["labels", "logits", "pos_weight"]
            for i, a in enumerate(args):
                kw.setdefault(names[i], a)
            for key in ("labels", "logits"):
                kw[key] = self._t(kw[key])
            return fn(**kw)
        fn = _tf_fn(tf, op)
        targs = [self._t(a) if i == 0 else a for i, a in enumerate(args)]
        for key in ("x", "y"):
            if key in kw:
                kw[key] = self._t(kw[key])
        if op in (
            "maximum",
            "minimum",
            "divide",
            "divide_no_nan",
            "multiply",
            "add",
            "subtract",
            "pow",
            "xlogy",
        ):
            targs = [self._t(a) for a in targs]
            if len(targs) == 2:
                targs[1] = tf.cast(targs[1], targs[0].dtype)
        if op == "where" and len(targs) == 3:
            targs = [targs[0], self._t(targs[1]), self._t(targs[2])]
            targs[2] = tf.cast(targs[2], targs[1].dtype)
        if op == "clip_by_value":
            targs = [targs[0], *[tf.cast(a, targs[0].dtype) for a in targs[1:]]]
            for key in ("clip_value_min", "clip_value_max"):
                if key in kw:
                    kw[key] = tf.cast(kw[key], targs[0].dtype)
        return fn(*targs, **kw)


def _tf_fn(tf, op: str):
    table = {
        "log": tf.math.log,
        "log1p": tf.math.log1p,
        "exp": tf.math.exp,
        "expm1": tf.math.expm1,
        "log_softmax": tf.nn.log_softmax,
        "log_sigmoid": tf.math.log_sigmoid,
        "reduce_logsumexp": tf.reduce_logsumexp,
        "xlogy": tf.math.xlogy,
        "sigmoid": tf.sigmoid,
        "softmax": tf.nn.softmax,
        "relu": tf.nn.relu,
        "relu6": tf.nn.relu6,
        "softplus": tf.nn.softplus,
        "tanh": tf.tanh,
        "square": tf.square,
        "sqrt": tf.sqrt,
        "rsqrt": tf.math.rsqrt,
        "reciprocal": tf.math.reciprocal,
        "abs": tf.abs,
        "pow": tf.pow,
        "acos": tf.acos,
        "asin": tf.asin,
        "atanh": tf.atanh,
        "divide": tf.math.divide,
        "divide_no_nan": tf.math.divide_no_nan,
        "multiply": tf.multiply,
        "add": tf.add,
        "subtract": tf.subtract,
        "negative": tf.negative,
        "maximum": tf.maximum,
        "minimum": tf.minimum,
        "clip_by_value": tf.clip_by_value,
        "clip_by_norm": tf.clip_by_norm,
        "where": tf.where,
        "stop_gradient": tf.stop_gradient,
        "identity": tf.identity,
        "reduce_sum": tf.reduce_sum,
        "reduce_mean": tf.reduce_mean,
        "reduce_max": tf.reduce_max,
        "reduce_min": tf.reduce_min,
        "reduce_prod": tf.reduce_prod,
        "reduce_std": tf.math.reduce_std,
        "reduce_variance": tf.math.reduce_variance,
        "count_nonzero": tf.math.count_nonzero,
        "norm": tf.norm,
        "euclidean_norm": tf.math.reduce_euclidean_norm,
        "l2_normalize": tf.math.l2_normalize,
        "matmul": tf.matmul,
        "one_hot": tf.one_hot,
    }
    if op not in table:
        raise ValueError(f"op {op} is not supported by the prover")
    return table[op]


def _evaluate(
    tf, np, job: dict, point: dict, dtype, which: str, probs: list | None, srcs: list | None = None
):
    """(value, loss, grads) of one tree at one point."""
    variables = {n: tf.Variable(v, dtype=dtype) for n, v in point.items()}
    env = dict(variables)
    env["__dtype__"] = dtype
    ev = _Eval(tf, env, probs, srcs)
    with tf.GradientTape(persistent=True) as tape:
        ev.tape = tape
        value = ev._t(ev(job[which]))
        loss_tree = job.get(which + "_loss")
        loss = ev._t(ev(loss_tree)) if loss_tree is not None else value
        total = tf.reduce_sum(tf.cast(loss, tf.float64))
    if job.get("no_grad"):
        grads = []
    else:
        grads = [g for g in tape.gradient(total, list(variables.values())) if g is not None]
        if srcs:  # the local gradient: with respect to the rewrite's own operands
            floating = [
                v for v in srcs if getattr(v, "dtype", None) is not None and v.dtype.is_floating
            ]
            local = [g for g in tape.gradient(total, floating) if g is not None] if floating else []
            srcs[:] = list(srcs)
            srcs.append(("local", [np.asarray(g, dtype=np.float64) for g in local]))
    del tape
    return (
        np.asarray(value, dtype=np.float64),
        np.asarray(loss, dtype=np.float64),
        [np.asarray(g, dtype=np.float64) for g in grads],
    )


def prove(tf, np, job: dict) -> dict[str, Any]:
    result = _prove(tf, np, job)
    if result.get("evaluation_error") and job.get("orig_loss") is not None:
        # the enclosing statement mixes shapes the probe cannot model: prove the expression alone
        result = _prove(tf, np, dict(job, orig_loss=None, new_loss=None))
    result.pop("evaluation_error", None)
    return result


def _prove(tf, np, job: dict) -> dict[str, Any]:
    dtype_name = job.get("dtype", "float32")
    dtype = getattr(
        tf, dtype_name if dtype_name in ("float16", "float32", "float64", "bfloat16") else "float32"
    )
    rtol, atol = RTOL.get(dtype_name, 1e-5), ATOL.get(dtype_name, 1e-6)
    eps = job.get("eps")
    tau = eps / rtol if eps else 0.0
    compared = symptom_points = 0
    max_g_orig = max_g_new = 0.0
    exploded = False
    strict = job.get("rule") in SINGULAR
    # TNL102 is the rule whose symptom is the local 1/eps gradient; other rules' "exploding"
    # witnesses come from upstream factors a local rewrite does not (and need not) change
    explosion = job.get("rule") == "TNL102"
    for point in _points(job, np):
        probs: list = []
        srcs: list = []
        try:
            o_srcs: list = []
            o_val, o_loss, o_grads = _evaluate(tf, np, job, point, dtype, "orig", probs, o_srcs)
            n_val, n_loss, n_grads = _evaluate(tf, np, job, point, dtype, "new", None, srcs)
            r_val, r_loss, r_grads = _evaluate(tf, np, job, point, tf.float64, "orig", None)
        except Exception as exc:  # an op the prover cannot build: no proof
            return {
                "verdict": "failed",
                "detail": f"cannot evaluate: {type(exc).__name__}: {str(exc)[:160]}",
                "evaluation_error": True,
            }
        o_local = _local(o_srcs)
        n_local = _local(srcs)
        if not all(
            np.all(np.isfinite(np.asarray(v, dtype=np.float64)))
            for v in srcs
            if not isinstance(v, tuple)
        ):
            continue  # non-finite before the rewrite even starts: not the rewrite's business
        orig_bad = not (
            _finite(o_val, np) and _finite(o_loss, np) and all(_finite(g, np) for g in o_grads)
        )
        symptom_points += orig_bad
        for new, ref in ((n_val, r_val), (n_loss, r_loss), *zip(n_grads, r_grads, strict=False)):
            bad = ~np.isfinite(new)
            if not strict:  # the exact value is not representable: nothing can be finite there
                with np.errstate(over="ignore", invalid="ignore"):
                    bad &= np.isfinite(ref.astype(_np_dtype(np, dtype_name)))
            if np.any(bad):
                return {
                    "verdict": "failed",
                    "detail": "the rewrite is still non-finite at a boundary point",
                    "point": _show(point),
                }
        # explosion is measured on the local gradient (w.r.t. the rewrite's operands): large
        # upstream factors (a matmul chain at extreme inputs) are the same on both sides
        g_o = max(
            (float(np.max(np.abs(g[np.isfinite(g)]))) for g in o_local if np.any(np.isfinite(g))),
            default=0.0,
        )
        g_n = max(
            (float(np.max(np.abs(g[np.isfinite(g)]))) for g in n_local if np.any(np.isfinite(g))),
            default=0.0,
        )
        max_g_orig, max_g_new = max(max_g_orig, g_o), max(max_g_new, g_n)
        exploded |= explosion and g_o >= EXPLODING
        if o_val.shape != n_val.shape:
            return {"verdict": "failed", "detail": f"shape changed: {o_val.shape} -> {n_val.shape}"}
        if not job.get("compare", True) or _saturated(point, job, probs, tau, np):
            continue
        mask = np.isfinite(o_val)
        close = np.abs(n_val - o_val) <= rtol * np.abs(o_val) + atol
        better = np.abs(n_val - r_val) <= np.abs(o_val - r_val) + rtol * np.abs(r_val) + atol
        if not np.all((close | better)[mask]):
            bad = np.argwhere(mask & ~(close | better))[0]
            return _unsafe(
                job,
                point,
                o_val[tuple(bad)],
                n_val[tuple(bad)],
                symptom_points,
                compared,
                exploded,
                max_g_orig,
                max_g_new,
            )
        compared += int(mask.sum())
    if (
        exploded
        and max_g_new > max_g_orig / 10
        and max_g_new > EPS_GRADIENT_BOUND.get(dtype_name, EXPLODING)
    ):
        return {
            "verdict": "failed",
            "detail": f"the gradient still explodes: max |grad| {max_g_new:.3g} (original {max_g_orig:.3g})",
        }
    return {
        "verdict": "safe",
        "detail": "symptom gone at every point; values equal where the original was fine",
        "points": len(_points(job, np)),
        "symptom_points": symptom_points,
        "compared": compared,
        "max_grad_original": max_g_orig,
        "max_grad_rewrite": max_g_new,
    }


def _local(srcs: list) -> list:
    for item in srcs:
        if isinstance(item, tuple) and item[0] == "local":
            return item[1]
    return []


def _finite(v, np) -> bool:
    return bool(np.all(np.isfinite(v)))


def _np_dtype(np, name: str):
    return {"float16": np.float16, "float64": np.float64}.get(name, np.float32)


def _unsafe(job, point, o, n, symptom_points, compared, exploded, g_o, g_n) -> dict:
    return {
        "verdict": "unsafe",
        "detail": f"changes values where the original was fine ({o:.6g} -> {n:.6g})",
        "point": _show(point),
        "symptom_points": symptom_points,
        "compared": compared,
        "check_symptom": True,
    }


def _show(point: dict) -> dict:
    return {k: [[jfloat(float(x)) for x in row] for row in v.tolist()] for k, v in point.items()}


def _saturated(point, job, probs, tau, np) -> bool:
    tensors = [np.asarray(p, dtype=np.float64) for p in probs]
    for inp in job["inputs"]:
        if inp.get("prob") or inp.get("producer") in ("sigmoid", "softmax"):
            tensors.append(point[inp["name"]])
    return any(np.any(t <= tau) or np.any(t >= 1 - tau) for t in tensors)


def prove_jobs(jobs: list[dict]) -> list[dict]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    out = []
    for job in jobs:
        try:
            result = prove(tf, np, job)
            if result["verdict"] == "unsafe":
                result = _finish_unsafe(tf, np, job, result)
        except Exception as exc:
            result = {"verdict": "failed", "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}
        out.append(result)
    return out


def _finish_unsafe(tf, np, job: dict, first: dict) -> dict:
    """A rewrite that changes values is still offered (as unsafe) when the symptom is gone."""
    check = dict(job, compare=False)  # symptom only
    result = _prove(tf, np, check)
    if result["verdict"] == "failed":
        return result
    first = dict(first)
    first.pop("check_symptom", None)
    return first


def main() -> None:
    jobs = json.loads(sys.stdin.read() or "[]")
    results = prove_jobs(jobs)
    sys.stdout.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
