"""Boundary probing, GRIST-style gradient climbing, symptom detection and verdicts.

A probe is traced once into a ``tf.function`` over batched inputs (``[N, 1, K]``: one row per
probe point) that returns the flagged expression's value, the loss, and their gradients with
respect to every free input.  One call evaluates every boundary point; when none shows a
symptom, the inputs climb the gradient of the unsafe ops' inputs toward their danger zone.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from ..rules.recipes import recipe_for
from . import domains, generic, trace
from . import intervals as iv
from .trace import UnsupportedProbe, format_number

CLIMB_STEPS = 30
MAX_POINTS = 4096
LOGIT_POINTS: tuple[float, ...] = (0.0, -100.0, 100.0, -17.0, 17.0, -30.0, 30.0, -90.0, 90.0)
LOGIT_POINTS += (-104.0, 104.0, -1e4, 1e4, -5.0, 5.0, -1.0, 1.0)
SMALL_POINTS = (1e-8, -1e-8, 1e-6, 1e-4, 1e-3)
GENERIC = ("nan-value", "inf-value", "nan-gradient", "inf-gradient")


def recipe(probe: dict[str, Any]) -> dict[str, Any]:
    """How to check this probe: carried in it; older probes name their rule instead."""
    return probe.get("recipe") or recipe_for(probe.get("rule")).as_probe()


# ---------------------------------------------------------------- program


@dataclass
class Input:
    name: str
    ident: str
    lo: float
    hi: float
    prob: bool  # modelled as sigmoid(free logit)
    candidates: list[float] = field(default_factory=list)


@dataclass
class Program:
    """A probe traced into one concrete function over batched inputs."""

    probe: dict[str, Any]
    dtype: str
    inputs: list[Input]
    k: int
    fn: Any
    graph: tf.Graph
    logits: set[str]
    has_loss: bool
    ops: set[str]
    make_traced: Any = None  # builds the traced function with the climb objective, on demand
    rank: int = 2  # user rank of every input: [1, ..., 1, K]
    _traced: Any = None

    def traced(self) -> Any:
        if self._traced is None:
            self._traced = self.make_traced() if self.make_traced else self.fn
        return self._traced


def probe_dtype(probe: dict[str, Any]) -> str:
    dtype = probe.get("dtype") or "float32"
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise UnsupportedProbe(f"unsupported dtype {dtype!r}")
    return dtype


def declared_inputs(probe: dict[str, Any]) -> list[Input]:
    """The probe's free inputs; probabilities over the full [0, 1] become sigmoid(logit)."""
    out = []
    for i, spec in enumerate(probe.get("inputs") or []):
        lo, hi = trace.parse_float(spec.get("lo", "-inf")), trace.parse_float(spec.get("hi", "inf"))
        is_prob = bool(spec.get("prob")) or spec.get("producer") in ("sigmoid", "softmax")
        prob = is_prob and lo <= 0 and hi >= 1
        out.append(Input(str(spec["name"]), f"in_{i}", lo, hi, prob))
    return out


def without_eps(tree: Any, eps: float) -> Any:
    """A copy of the tree with the epsilon constant replaced by 0: what the eps changes."""
    if isinstance(tree, dict):
        if tree.get("k") == "const" and trace.parse_float(tree["v"]) == eps:
            return {"k": "const", "v": 0.0}
        return {k: without_eps(v, eps) for k, v in tree.items()}
    if isinstance(tree, list):
        return [without_eps(v, eps) for v in tree]
    return tree


def build(probe: dict[str, Any], dtype: str | None = None, extras: bool = True,
          grads: bool = True) -> Program:  # fmt: skip
    """Trace the probe: target, loss and gradients, one row per probe point."""
    dtype = dtype or probe_dtype(probe)
    tf_dtype = trace.DTYPES[dtype]
    inputs = declared_inputs(probe)
    ids = {i.name: i.ident for i in inputs}
    path, line = str(probe.get("path") or "<probe>"), int(probe.get("line") or 1)
    target_tree, loss_tree = probe.get("target"), probe.get("loss")
    target_code, ops = trace.compile_tree(target_tree, ids, path, line)
    loss_code = None
    if loss_tree is not None:
        loss_code, loss_ops = trace.compile_tree(loss_tree, ids, path, line)
        ops |= loss_ops
    eps = probe.get("eps")
    noeps_code = None
    if extras and recipe(probe)["check"] == "absorption" and eps is not None:
        noeps_code, _ = trace.compile_tree(
            without_eps(target_tree, trace.parse_float(eps)), ids, path, line
        )
    k = 2 if ops & trace.SOFTMAX_OPS else 1
    rank = user_rank(target_tree, loss_tree)
    logits = trace.logit_inputs(target_tree) | trace.logit_inputs(loss_tree)
    logits |= {i.name for i in inputs if i.prob}

    batched: dict[str, bool] = {}  # per output: does it carry the point axis (set while tracing)

    def make_body(grads: bool):
        def body(*xs: tf.Tensor) -> dict[str, tf.Tensor]:
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(xs)
                values: dict[str, Any] = {"dtype_same": tf_dtype}
                for spec, x in zip(inputs, xs, strict=True):
                    values[spec.ident] = tf.math.sigmoid(x) if spec.prob else x
                with tf.name_scope("target"):
                    target = trace.evaluate(target_code, values)
                target = per_point(
                    tf.cast(tf.convert_to_tensor(target), tf_dtype), xs, batched, "t"
                )
                objective = climb_objective(path)
                if loss_code is not None:
                    with tf.name_scope("loss"):
                        loss = tf.cast(
                            tf.convert_to_tensor(trace.evaluate(loss_code, values)), tf_dtype
                        )
                    loss = per_point(loss, xs, batched, "l")
                else:
                    loss = target
                t_sum, l_sum = tf.reduce_sum(target), tf.reduce_sum(loss)
            if xs:  # with no input at all, the one point is the whole batch
                check_batched(target, loss)
            out = {"t": target, "l": per_row(loss)}
            if not grads:
                return out
            if noeps_code is not None:
                out["t0"] = tf.cast(
                    tf.convert_to_tensor(trace.evaluate(noeps_code, values)), tf_dtype
                )
            if objective is not None:
                out["obj"] = objective
            for spec, x in zip(inputs, xs, strict=True):
                v = values[spec.ident]
                out[f"gt_{spec.ident}"] = zero_if_none(tape.gradient(t_sum, v), v)
                out[f"gz_{spec.ident}"] = zero_if_none(tape.gradient(l_sum, x), x)
                if objective is not None:
                    out[f"go_{spec.ident}"] = zero_if_none(
                        tape.gradient(tf.reduce_sum(objective), x), x
                    )
            return out

        return body

    specs = [tf.TensorSpec([None, *[1] * (rank - 1), k], tf_dtype, name=i.ident) for i in inputs]
    # The forward graph alone is cheap to trace (~9 ms) and is all the interval analysis and
    # the source mapping need; values and gradients at the points run eagerly.  Tracing the
    # gradient graph too costs ~45 ms, so that is done only if the gradient climb needs it.
    forward = tf.function(make_body(False), autograph=False).get_concrete_function(*specs)
    if not grads:
        return Program(
            probe,
            dtype,
            inputs,
            k,
            forward,
            forward.graph,
            logits,
            loss_code is not None,
            ops,
            rank=rank,
        )
    full = make_body(True)

    def traced():
        return tf.function(full, autograph=False).get_concrete_function(*specs)

    return Program(probe, dtype, inputs, k, full, forward.graph, logits, loss_code is not None, ops,
                   make_traced=traced, rank=rank)  # fmt: skip


def per_point(t: tf.Tensor, xs: tuple, batched: dict[str, bool], key: str) -> tf.Tensor:
    """An output that does not depend on any input (``exp(1.0) - 1``) has no point axis:
    give it one, the same value at every point.  Decided while tracing, where the point axis
    is the only unknown dimension; the eager run repeats the decision."""
    if not tf.executing_eagerly():
        batched[key] = t.shape.rank is not None and t.shape.rank >= 1 and t.shape[0] is None
    if batched.get(key, True):
        return t
    n = tf.shape(xs[0])[:1] if xs else tf.constant([1])
    return tf.broadcast_to(t, tf.concat([n, tf.shape(t)], 0))


def user_rank(*trees: Any) -> int:
    """The rank each input gets: 2 ([1, K]), or more when an axis the code names needs it."""
    rank = 2
    for node in trace.walk(list(trees)):
        if node.get("k") != "call":
            continue
        names = trace.PARAM_NAMES.get(str(node.get("op")), ())
        given = dict(zip(names, node.get("args") or [], strict=False))
        given.update(node.get("kw") or {})
        for axis in _literal_ints(given.get("axis")):
            rank = max(rank, axis + 1 if axis >= 0 else -axis)
    return min(rank, 6)


def _literal_ints(tree: Any) -> list[int]:
    if not isinstance(tree, dict):
        return []
    if tree.get("k") == "const":
        return [int(trace.parse_float(tree["v"]))]
    if tree.get("k") == "neg":
        return [-i for i in _literal_ints(tree["x"])]
    if tree.get("k") == "tuple":
        return [i for t in tree["items"] for i in _literal_ints(t)]
    return []


def zero_if_none(g: tf.Tensor | None, like: tf.Tensor) -> tf.Tensor:
    return tf.zeros_like(like) if g is None else g


def per_row(x: tf.Tensor) -> tf.Tensor:
    """Sum every axis but the batch axis."""
    rank = x.shape.rank or 0
    return tf.reduce_sum(x, axis=list(range(1, rank))) if rank > 1 else x


def check_batched(*tensors: tf.Tensor) -> None:
    """Every output must keep the point axis; otherwise rows would mix.  Checked while
    tracing (the batch axis is unknown there); the eager run repeats the traced computation."""
    if tf.executing_eagerly():
        return
    for t in tensors:
        if t.shape.rank is None or t.shape.rank < 1 or t.shape[0] is not None:
            raise UnsupportedProbe(f"a dynamic shape it could not bind (output shape {t.shape})")


def climb_objective(path: str) -> tf.Tensor | None:
    """Per-row distance of the target's unsafe ops' inputs to their danger zone (GRIST)."""
    if tf.executing_eagerly():
        return None  # the objective reads graph ops: only the traced function has them
    graph = tf.compat.v1.get_default_graph()
    terms = []
    for op in trace.unsafe_ops(graph, path, "target/"):
        u = _danger_distance(op)
        # an unsafe op on constants (exp(1.0)) has no point axis and nothing to climb
        if u is not None and u.shape.rank and u.shape[0] is None:
            terms.append(per_row(tf.cast(u, tf.float32)))
    if not terms:
        return None
    return tf.add_n(terms)


def _danger_distance(op: tf.Operation) -> tf.Tensor | None:
    t = op.type
    if t in ("Log", "Sqrt", "Rsqrt", "Reciprocal", "Inv"):
        return tf.abs(op.inputs[0])
    if t == "Log1p":
        return tf.abs(op.inputs[0] + 1)
    if t in ("RealDiv", "Div", "Xlogy", "Pow"):
        return tf.abs(op.inputs[1] if t != "Pow" else op.inputs[0])
    if t in ("Exp", "Expm1"):
        return -op.inputs[0]
    if t in ("Acos", "Asin", "Atanh"):
        return 1 - tf.abs(op.inputs[0])
    return None


# ---------------------------------------------------------------- points


def dtype_points(dtype: str) -> list[float]:
    """Boundary values of the dtype: 0, subnormals, normals, 1 ± ulp, exp overflow, max."""
    info = iv.finfo(dtype)
    npd = iv.np_dtype(dtype)
    one = np.asarray(1.0, npd)
    up = float(np.nextafter(one, np.asarray(2.0, npd)))
    down = float(np.nextafter(one, np.asarray(0.0, npd)))
    sub, normal = float(info.smallest_subnormal), float(info.smallest_normal)
    over = math.ceil(iv.overflow_point(dtype) * 10) / 10
    return [
        0.0, 1.0, -1.0, 0.5, -0.5, 2.0,
        *LOGIT_POINTS[1:11],
        over, -over, sub, -sub, normal, -normal, up, down, -up, -down,
        *SMALL_POINTS, 1e4, -1e4, float(info.max), -float(info.max),
    ]  # fmt: skip


def candidates(spec: Input, dtype: str) -> list[float]:
    """Candidate values of one input, nice ones first so witnesses read well."""
    if spec.prob:
        return list(LOGIT_POINTS)
    npd = iv.np_dtype(dtype)
    base = [v for v in dtype_points(dtype) if spec.lo <= v <= spec.hi]
    for end, toward in ((spec.lo, spec.hi), (spec.hi, spec.lo)):
        if math.isfinite(end):
            base.append(end)
            inside = np.nextafter(np.asarray(end, npd), np.asarray(toward, npd))
            base.append(float(inside))
    seen: list[float] = []
    for v in base:
        v = float(np.asarray(v, npd))
        if v not in seen and not math.isnan(v):
            seen.append(v)
    return seen or [0.0]


def point_grid(inputs: list[Input], dtype: str) -> np.ndarray:
    """Rows of candidate values: the full product when small, else a structured sample."""
    cands = [candidates(i, dtype) for i in inputs]
    for spec, c in zip(inputs, cands, strict=True):
        spec.candidates = c
    if not inputs:
        return np.zeros((1, 0))
    total = math.prod(len(c) for c in cands)
    if total <= MAX_POINTS:
        return np.array(list(itertools.product(*cands)), dtype=np.float64)
    rows = []
    longest = max(len(c) for c in cands)
    for j in range(longest):  # every input the same value (a == b)
        rows.append([c[min(j, len(c) - 1)] for c in cands])
    for i, c in enumerate(cands):  # one input varies, the others at their first candidates
        for anchor in range(min(4, longest)):
            for v in c:
                row = [cc[min(anchor, len(cc) - 1)] for cc in cands]
                row[i] = v
                rows.append(row)
    rng = np.random.default_rng(0)
    while len(rows) < MAX_POINTS:
        rows.append([c[rng.integers(len(c))] for c in cands])
    return np.array(rows[:MAX_POINTS], dtype=np.float64)


def to_batch(program: Program, rows: np.ndarray) -> list[tf.Tensor]:
    """Turn point rows into the function's [N, 1, K] input tensors."""
    tensors = []
    n = rows.shape[0]
    for j, spec in enumerate(program.inputs):
        col = rows[:, j]
        arr = np.zeros((n, program.k), dtype=np.float64)
        arr[:, 0] = col
        if program.k > 1 and not spec.prob:
            arr[:, 1:] = 0.0  # softmax-family probes: [v, 0] against a reference logit
        elif program.k > 1:
            arr[:, 1:] = col[:, None]
        arr = arr.reshape((n, *[1] * (program.rank - 1), program.k))
        tensors.append(tf.constant(arr.astype(iv.np_dtype(program.dtype))))
    return tensors


def run(program: Program, rows: np.ndarray, traced: bool = False) -> dict[str, np.ndarray]:
    """One call over every row (eager, or the traced function with the climb objective);
    results as float64 numpy arrays."""
    fn = program.traced() if traced else program.fn
    out = fn(*to_batch(program, rows))
    return {k: np.asarray(tf.cast(v, tf.float64)) for k, v in out.items()}


# ---------------------------------------------------------------- symptoms


@dataclass
class Witness:
    symptom: str
    row: int
    rows: np.ndarray
    res: dict[str, np.ndarray]
    note: str = ""


def flat(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(-1, 1)


def masks(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> dict[str, np.ndarray]:
    """Per-row boolean masks, one per generic symptom."""
    t = flat(res["t"])
    fin = np.isfinite(t).all(1)
    grads = [flat(res[f"gt_{i.ident}"]) for i in program.inputs]
    g = np.concatenate(grads, axis=1) if grads else np.zeros((t.shape[0], 0))
    gmax = (
        np.abs(np.nan_to_num(g, nan=0, posinf=0, neginf=0)).max(1)
        if g.shape[1]
        else np.zeros(len(t))
    )
    scale = np.maximum(1.0, np.abs(np.nan_to_num(t, posinf=0, neginf=0)).max(1))
    out = {
        "nan-value": np.isnan(t).any(1),
        "inf-value": np.isinf(t).any(1),
        "nan-gradient": fin & np.isnan(g).any(1) if g.shape[1] else np.zeros(len(t), bool),
        "inf-gradient": fin & np.isinf(g).any(1) if g.shape[1] else np.zeros(len(t), bool),
        "exploding-gradient": fin & np.isfinite(g).all(1) & (gmax > thr * scale),
        "dead-gradient": dead_mask(program, rows, res),
    }
    normal = ~extreme_rows(program, rows)
    if not recipe(program.probe)["extreme_ok"]:
        out = {k: v & normal for k, v in out.items()}
    return out


def extreme_rows(program: Program, rows: np.ndarray) -> np.ndarray:
    """Rows where a plain input is beyond 1e4: overflow there proves little."""
    cols = [j for j, i in enumerate(program.inputs) if not i.prob]
    if not cols:
        return np.zeros(len(rows), bool)
    return (np.abs(rows[:, cols]) > 1e4).any(1)


def dead_mask(program: Program, rows: np.ndarray, res: dict[str, np.ndarray]) -> np.ndarray:
    """Zero gradient w.r.t. every logit while the loss is >= 1 above what the logits can reach.

    "What the logits can reach" is the best loss among rows that share this row's other
    (non-logit) inputs, so an impossible label value cannot make a minimum look far away.
    When the flagged expression reads only some of the logits (the student's in a KL against
    a teacher softmax), those are the ones whose gradient must die; the others are held like
    labels, since their live gradient does not revive the flagged term.
    """
    logit_cols = [j for j, i in enumerate(program.inputs) if i.name in hazard_logits(program)]
    loss = flat(res["l"]).sum(1)
    n = len(loss)
    if not logit_cols:
        return np.zeros(n, bool)
    gz = np.concatenate([flat(res[f"gz_{program.inputs[j].ident}"]) for j in logit_cols], axis=1)
    zero = (gz == 0).all(1)
    live = np.isfinite(gz).all(1) & ~zero
    finite = np.isfinite(loss)
    other = [j for j in range(len(program.inputs)) if j not in logit_cols]
    keys = [tuple(r) for r in rows[:, other]] if other else [()] * n
    groups: dict[tuple, list[int]] = {}
    for r, key in enumerate(keys):
        groups.setdefault(key, []).append(r)
    out = np.zeros(n, bool)
    for members in groups.values():
        idx = np.array(members)
        ok = idx[finite[idx]]
        if not ok.size or not live[idx].any():
            continue
        best, worst = loss[ok].min(), loss[ok].max()
        far = loss[idx] - best >= 1.0
        if not program.has_loss:
            far |= worst - loss[idx] >= 1.0
        out[idx] = zero[idx] & finite[idx] & far
    return out


def hazard_logits(program: Program) -> set[str]:
    """The logits under the flagged expression, or every logit when it reads none itself."""
    own = trace.logit_inputs(program.probe.get("target")) & program.logits
    own |= {i.name for i in program.inputs if i.prob and i.name in _input_names(program)}
    return own or program.logits


def _input_names(program: Program) -> set[str]:
    return {n["name"] for n in trace.walk(program.probe.get("target")) if n.get("k") == "input"}


def find_symptom(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> Witness | None:
    """The first row (in candidate order) showing the rule's preferred symptom."""
    how = recipe(program.probe)
    if how["check"] == "absorption":
        return absorbed(program, rows, res)
    m = masks(program, rows, res, thr)
    order = tuple(how["symptoms"]) + (() if how["only_listed"] else GENERIC)
    for symptom in order:
        hits = np.flatnonzero(m[symptom])
        if hits.size:
            return Witness(symptom, int(hits[0]), rows, res)
    return None


def absorbed(program: Program, rows: np.ndarray, res: dict[str, np.ndarray]) -> Witness | None:
    """x + eps == x: the eps changes nothing where it should keep the value off 0."""
    if "t0" not in res:
        return None
    t, t0 = flat(res["t"]), flat(res["t0"])
    same = (t == t0).all(1) & np.isfinite(t).all(1)
    at_zero = same & (t == 0).any(1)
    hits = np.flatnonzero(at_zero)
    if not hits.size and same.all():
        hits = np.arange(len(t))
    return Witness("epsilon-absorbed", int(hits[0]), rows, res) if hits.size else None


# ---------------------------------------------------------------- minimal witnesses

# Ordinary values an input may take instead of its witness value, nicest first; probability
# inputs are probed through their logit, where 0 (p = 0.5) is the ordinary value.
PLAIN_REPLACEMENTS = (1.0, 0.5, 2.0, -1.0, -0.5, 0.25)  # 0.25: inside an eps-like [0, 0.5]
LOGIT_REPLACEMENTS = (0.0, 1.0, -1.0)
RELAXABLE = frozenset(GENERIC) | {"exploding-gradient"}  # symptoms a single row decides


def ordinary(spec: Input, v: float, dtype: str) -> bool:
    if spec.prob:
        return abs(v) <= 2.0  # a logit: p in [0.12, 0.88]
    return domains.value_class(v, dtype) == "ordinary"


MILDER = (17.0, 30.0)  # a large value may need only a milder one (a sigmoid saturates at 17)


def replacements(program: Program, j: int, v: float) -> list[float]:
    """Values to try instead of ``v``: ordinary ones in the input's range, then milder ones of
    the same sign for a large value (the witness then shows where the symptom starts)."""
    spec = program.inputs[j]
    milder = [math.copysign(m, v) for m in MILDER if abs(v) > m]
    if spec.prob:
        return [r for r in (*LOGIT_REPLACEMENTS, *milder) if r != v]
    return [r for r in (*PLAIN_REPLACEMENTS, *milder) if spec.lo <= r <= spec.hi and r != v]


def minimise(program: Program, w: Witness, thr: float) -> tuple[Witness, list[str] | None]:
    """The witness with every input the symptom does not need moved to an ordinary value, and
    the names of the inputs it needs (None when the symptom is not one a single row decides).

    An input is tried when its value is not ordinary, or is one the code is not known to give it
    (a count of -1).  One batched run tries each replacement of each such input alone (and all at
    a shared value, for `a - b` at a == b); a second run combines the replacements that kept
    the same symptom; the chosen point is then evaluated alone, where nothing can mix."""
    if w.symptom not in RELAXABLE:
        return w, None
    row = w.rows[w.row]
    dtype = program.dtype
    loose = [
        j
        for j, spec in enumerate(program.inputs)
        if not ordinary(spec, row[j], dtype) or _unreachable(program, row, [spec.name])
    ]
    if not loose:
        return w, []
    trials: list[dict[int, float]] = []
    for j in loose:
        trials += [{j: r} for r in replacements(program, j, row[j])]
    shared = set.intersection(*(set(replacements(program, j, row[j])) for j in loose))
    trials += [dict.fromkeys(loose, r) for r in PLAIN_REPLACEMENTS if r in shared]
    inside = _inside(program, row, trials)
    kept = _keeping(program, row, inside, w.symptom, thr)
    pinned = _mattering_assumptions(program, loose, inside, kept)
    kept = [t for t in kept if not pinned & t.keys()]
    best: dict[int, float] = {}
    for trial in kept:
        if len(trial) == 1:
            best.setdefault(*next(iter(trial.items())))
    if len(best) > 1:
        combined = [best] + [{k: v for k, v in best.items() if k != j} for j in best]
        kept = _keeping(program, row, _inside(program, row, combined), w.symptom, thr) + kept
    if not kept:
        return w, [program.inputs[j].name for j in loose]
    choice = max(kept, key=len)  # the most inputs relaxed (stable: the first such trial)
    point = _with(row, choice)[None, :]
    res = run(program, point)
    if not masks(program, point, res, thr)[w.symptom][0]:
        return w, [program.inputs[j].name for j in loose]
    needed = [program.inputs[j].name for j in loose if j not in choice]
    return Witness(w.symptom, 0, point, res, w.note), needed


def _mattering_assumptions(
    program: Program, loose: list[int], inside: list[dict[int, float]], kept: list[dict]
) -> set[int]:
    """Inputs computed by code the slice did not follow whose value the symptom depends on
    (some replacement inside the domains loses it).  Moving such an input to another value that
    also shows the symptom proves nothing: any value of it is an assumption, so it stays needed
    as seen.  A replacement outside the domains (not in ``inside``) says nothing either way."""
    out = set()
    for j in loose:
        if not domains.assumed(program.probe, program.inputs[j].name):
            continue
        if any(t not in kept for t in inside if t.keys() == {j}):
            out.add(j)
    return out


MAX_MINIMISED = 3  # witnesses minimised while looking for one the code can reach


def choose(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> tuple[Witness, list[str] | None] | None:
    """The witness to report, with the inputs it needs.  In the recipe's symptom order, the
    first point whose every input is at a value the code can give it (see
    :func:`domains.unreachable`); else the first point whose needed inputs are, once the others
    are relaxed; else the first witness found, which the verdict will not count as confirmed."""
    if recipe(program.probe)["check"] == "absorption":
        found = absorbed(program, rows, res)
        return (found, None) if found is not None else None
    how = recipe(program.probe)
    m = masks(program, rows, res, thr)
    first: tuple[Witness, list[str] | None] | None = None
    budget = MAX_MINIMISED
    for symptom in tuple(how["symptoms"]) + (() if how["only_listed"] else GENERIC):
        hits = [int(i) for i in np.flatnonzero(m[symptom])]
        clean = next((i for i in hits if not _unreachable(program, rows[i], None)), None)
        if clean is not None:
            return minimise(program, Witness(symptom, clean, rows, res), thr)
        for i in hits[:2]:
            if budget == 0:
                break
            budget -= 1
            w, needed = minimise(program, Witness(symptom, i, rows, res), thr)
            first = first or (w, needed)
            if needed is not None and not _unreachable(program, w.rows[w.row], needed):
                return w, needed
    return first


def _unreachable(
    program: Program, row: np.ndarray, needed: list[str] | None, small_ok: bool = False
) -> list[str]:
    """Why inputs of a point (the ``needed`` ones, or all) are not at values the code gives."""
    point = {i.name: float(v) for i, v in zip(program.inputs, row, strict=True) if not i.prob}
    names = list(point) if needed is None else needed
    return domains.unreachable_inputs(program.probe, point, names, program.dtype, small_ok)


def _with(row: np.ndarray, trial: dict[int, float]) -> np.ndarray:
    out = row.copy()
    for j, v in trial.items():
        out[j] = v
    return out


def _inside(
    program: Program, row: np.ndarray, trials: list[dict[int, float]]
) -> list[dict[int, float]]:
    """The trials (input index -> value) whose point lies inside the inputs' domains."""
    names = [i.name if not i.prob else "" for i in program.inputs]
    return [
        t
        for t in trials
        if not domains.broken(
            program.probe, dict(zip(names, map(float, _with(row, t)), strict=True))
        )
    ]


def _keeping(
    program: Program, row: np.ndarray, inside: list[dict[int, float]], symptom: str, thr: float
) -> list[dict[int, float]]:
    """The trials (already inside the domains: :func:`_inside`) whose point still shows
    ``symptom``: one batched run."""
    if not inside:
        return []
    rows = np.array([_with(row, t) for t in inside])
    hit = masks(program, rows, run(program, rows), thr)[symptom]
    return [t for t, h in zip(inside, hit, strict=True) if h]


# ---------------------------------------------------------------- verdict


def verify_expr(probe: dict[str, Any], threshold: float) -> dict[str, Any]:
    """Verify one expression probe; returns a Verification-shaped dict."""
    dtype = probe_dtype(probe)
    how = recipe(probe)
    if probe.get("truncated"):
        return inconclusive("slice too large to verify", dtype)
    if how["check"] == "underflow":
        return verify_underflow(probe, dtype)
    if how["check"] == "absorption" and '"k": "input"' not in json.dumps(probe.get("target")):
        return verify_constant_absorption(probe, dtype)
    if probe.get("unsupported"):
        return inconclusive(f"cannot verify: the slice has {probe['unsupported'][0]}", dtype)
    # One trace serves both: the interval analysis reads the forward ops of the same graph
    # the probes run on (tracing is most of a probe's cost; most findings go on to be probed).
    program = build_with_fallback(probe, dtype)
    if how["range_refutes"]:
        by_range = range_refutation(program)
        if by_range is not None:
            return by_range
    if how["check"] == "divergence":
        return verify_diverges(program, probe)
    rows = point_grid(program.inputs, dtype)
    names = [i.name if not i.prob else "" for i in program.inputs]
    rows, outside = domains.split_rows(probe, names, rows)  # input domains: witnesses stay inside
    if len(rows):
        res = run(program, rows)
        if not points_independent(program, rows, res):
            alone = witness_alone(program, rows, res, threshold)
            if alone is not None:
                return confirmed_generic(
                    program, *minimise(program, alone, threshold), thr=threshold
                )
            return inconclusive(
                "no verdict: the probe points evaluated in one batch and one by one disagree "
                "(points mixed, or TensorFlow's vectorised and scalar kernels differ there), "
                "and no symptom reproduces on a point evaluated alone",
                dtype,
            )
        chosen = choose(program, rows, res, threshold)
        if chosen is not None:
            return confirmed_generic(program, *chosen, thr=threshold)
        climbed = climb(program, rows, res, threshold)
        if climbed is not None:
            note = f"after a gradient climb toward the danger zone, {climbed.note}"
            climbed.note = note.rstrip(", ")
            return confirmed_generic(program, *minimise(program, climbed, threshold), thr=threshold)
    if len(outside):
        beyond = find_symptom(program, outside, run(program, outside), threshold)
        if beyond is not None:
            point = dict(zip(names, map(float, outside[beyond.row]), strict=True))
            return domains.outside_verdict(probe, point, dtype)
    return refuted(
        f"no symptom at {len(rows)} boundary points nor after a {CLIMB_STEPS}-step gradient "
        f"climb toward the danger zone ({dtype})",
        dtype,
    )


TRACE_ERRORS = (UnsupportedProbe, tf.errors.OpError, ValueError, TypeError)


def build_with_fallback(probe: dict[str, Any], dtype: str) -> Program:
    """The probe with its enclosing statement, or the target alone when the statement does not
    trace (it mixes shapes or ops the probe cannot model; the target's hazard is the same)."""
    try:
        return build(probe, dtype)
    except TRACE_ERRORS:
        if probe.get("loss") is None:
            raise
    return build({**probe, "loss": None}, dtype)


INDEPENDENCE_SAMPLE = 4
ALONE_SAMPLE = 16  # points evaluated one by one when the batch cannot be trusted


def points_independent(program: Program, rows: np.ndarray, res: dict[str, np.ndarray]) -> bool:
    """Evaluate a random subset of the points one by one: each must give what it gave in the
    batch.  A difference means the batch mixed points (one point's numerator meeting another
    point's denominator), and any witness from it would be an artifact.  Vectorised kernels
    round differently from scalar ones, so finite values agree to 1e-3 of their scale."""
    if len(rows) < 2:
        return True
    rng = np.random.default_rng(len(rows))
    for i in rng.choice(len(rows), size=min(INDEPENDENCE_SAMPLE, len(rows)), replace=False):
        alone = run(program, rows[i : i + 1])
        for key in ("t", "l"):
            if not same_point(flat(alone[key])[0], flat(res[key])[i]):
                return False
    return True


def witness_alone(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> Witness | None:
    """When the batch cannot be trusted, a witness still counts if its point, evaluated on its
    own (where nothing can mix), shows a symptom.  The batch's symptomatic rows are tried
    first, then the first boundary points in candidate order."""
    m = masks(program, rows, res, thr)
    nominated = [int(i) for i in np.flatnonzero(np.any(list(m.values()), axis=0))] if m else []
    order = list(dict.fromkeys([*nominated, *range(len(rows))]))[:ALONE_SAMPLE]
    for i in order:
        single = rows[i : i + 1]
        found = find_symptom(program, single, run(program, single), thr)
        if found is not None:
            return found
    return None


def same_point(a: np.ndarray, b: np.ndarray) -> bool:
    """Same NaN/Inf pattern (with signs), finite values within 1e-3 of their scale."""
    if a.shape != b.shape:
        return False
    inf = np.isinf(a)
    if not (np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(inf, np.isinf(b))):
        return False
    if not np.array_equal(a[inf], b[inf]):
        return False
    fin = np.isfinite(a)
    scale = np.maximum(1.0, np.maximum(np.abs(a[fin]), np.abs(b[fin])))
    return bool(np.all(np.abs(a[fin] - b[fin]) <= 1e-3 * scale))


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


def climb(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> Witness | None:
    """GRIST: sign-gradient steps on the inputs toward the unsafe ops' danger zone."""
    if not program.inputs:
        return None
    start = rows[np.isfinite(flat(res["t"])).all(1)][:64].copy()
    if not len(start):
        return None
    npd = iv.np_dtype(program.dtype)
    x = start
    out = run(program, x, traced=True)
    if "obj" not in out:
        return None
    for _ in range(CLIMB_STEPS):
        step = np.zeros_like(x)
        for j, spec in enumerate(program.inputs):
            g = np.nan_to_num(flat(out[f"go_{spec.ident}"]).sum(1), nan=0.0)
            step[:, j] = -np.sign(g) * np.maximum(np.abs(x[:, j]), 1e-3)
        if not step.any():
            return None
        x = np.asarray((x + step).astype(npd), dtype=np.float64)
        x = np.nan_to_num(x, nan=0.0, posinf=float(iv.finfo(program.dtype).max))
        out = run(program, x, traced=True)
        found = find_symptom(program, x, out, thr)
        if found is not None:
            return found
    return None


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
        w = witness(program, found)
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
        (int(i) for i in hits if not _unreachable(program, rows[i], None, small_ok=True)),
        int(hits[0]),
    )
    w = witness(program, Witness("diverges", row, rows, res))
    exact_v = float(r[row][0])
    err = float(rel[row].max())
    w["observed"]["exact"] = exact_v
    w["observed"]["relative_error"] = err
    w["observed"]["needed"] = [
        spec.name
        for j, spec in enumerate(program.inputs)
        if not ordinary(spec, rows[row, j], dtype)
        or _unreachable(program, rows[row], [spec.name], small_ok=True)
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


# ---------------------------------------------------------------- witnesses and text


def jsonable(v: float) -> float | str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def pick(a: np.ndarray, row: int, prefer: str = "") -> float:
    """One representative element of a row: the offending one when there is one."""
    r = flat(a)[row]
    if prefer == "nan" and np.isnan(r).any():
        return float(r[np.isnan(r)][0])
    if prefer == "inf" and np.isinf(r).any():
        return float(r[np.isinf(r)][0])
    if prefer == "big":
        return float(r[np.argmax(np.abs(np.nan_to_num(r)))])
    return float(r[0])


def witness(program: Program, w: Witness) -> dict[str, Any]:
    """Inputs, observed numbers and the pieces of the witness sentence."""
    row = w.row
    inputs: dict[str, Any] = {}
    where = []
    for j, spec in enumerate(program.inputs):
        v = float(w.rows[row, j])
        if spec.prob:
            p = float(tf.math.sigmoid(tf.constant(v, trace.DTYPES[program.dtype])).numpy())
            inputs[spec.name] = jsonable(p)
            inputs[f"logit({spec.name})"] = jsonable(v)
            where.append(f"{spec.name} = sigmoid({format_number(v)}) = {format_number(p)}")
        else:
            inputs[spec.name] = jsonable(v)
            shown = format_number(v) if program.k == 1 else f"[{format_number(v)}, 0]"
            where.append(f"{spec.name} = {shown}")
    kind = {"nan-value": "nan", "inf-value": "inf"}.get(w.symptom, "")
    value = pick(w.res["t"], row, kind)
    gkind = {"nan-gradient": "nan", "inf-gradient": "inf", "exploding-gradient": "big"}.get(
        w.symptom, ""
    )
    grads = {
        spec.name: jsonable(pick(w.res[f"gt_{spec.ident}"], row, gkind)) for spec in program.inputs
    }
    observed: dict[str, Any] = {"value": jsonable(value), "gradient": grads}
    if program.has_loss:
        observed["loss"] = jsonable(float(flat(w.res["l"])[row].sum()))
        observed["loss_gradient"] = {
            spec.name: jsonable(pick(w.res[f"gz_{spec.ident}"], row)) for spec in program.inputs
        }
    return {
        "inputs": inputs,
        "observed": observed,
        "where": ", ".join(where) or "any input",
        "expr": trace.render(program.probe.get("target")),
        "value": format_number(value),
    }


def sentence(program: Program, w: Witness, parts: dict[str, Any]) -> str:
    """The one-line witness a person understands."""
    dtype, expr, where = program.dtype, parts["expr"], parts["where"]
    head = f"at {where} ({dtype})"
    grads = parts["observed"]["gradient"]
    gname, gval = _worst(grads, w.symptom)
    if w.symptom in ("nan-value", "inf-value"):
        return f"{head}, {expr} = {parts['value']}"
    if w.symptom in ("nan-gradient", "inf-gradient"):
        return f"{head}, {expr} = {parts['value']} but its gradient d/d{gname} = {gval}"
    if w.symptom == "exploding-gradient":
        return f"{head}, {expr} = {parts['value']} and d/d{gname} = {gval}: the gradient explodes"
    if w.symptom == "dead-gradient":
        obs = parts["observed"]
        loss = obs.get("loss", obs["value"])
        logit = next((i for i in program.inputs if i.name in program.logits), program.inputs[0])
        lname = f"logit({logit.name})" if logit.prob else logit.name
        lname = f"({lname})" if " " in lname and not logit.prob else lname
        label = "loss" if program.has_loss else expr
        text = f"{head}, {label} = {format_number(float(loss) if not isinstance(loss, str) else math.nan)}"
        squash = "softmax" if program.ops & trace.SOFTMAX_OPS else "sigmoid"
        text += f" and d{label if program.has_loss else ''}/d{lname} = 0: {squash} saturated"
        eps = program.probe.get("eps")
        if eps is not None:
            text += f", the {format_number(trace.parse_float(eps))} floor blocks the gradient"
        return text
    if w.symptom == "epsilon-absorbed":
        eps = trace.parse_float(program.probe.get("eps"))
        return (
            f"{head}, {expr} = {parts['value']}: the {format_number(eps)} is absorbed "
            + absorbed_note(program, eps)
        )
    return f"{head}, {expr} = {parts['value']}"


def absorbed_note(program: Program, eps: float) -> str:
    """'(1 + 1e-10 == 1 in float32)' when a constant in the expression shows it directly."""
    npd = iv.np_dtype(program.dtype)
    consts = [
        abs(trace.parse_float(n["v"]))
        for n in trace.walk(program.probe.get("target"))
        if n.get("k") == "const" and trace.parse_float(n["v"]) != eps
    ]
    for m in sorted(consts, reverse=True):
        if m and float(np.asarray(m, npd) + np.asarray(eps, npd)) == float(np.asarray(m, npd)):
            return f"({format_number(m)} + {format_number(eps)} == {format_number(m)} in {program.dtype})"
    return f"(the value is the same without it in {program.dtype})"


def _worst(grads: dict[str, Any], symptom: str) -> tuple[str, str]:
    def badness(v: Any) -> float:
        if isinstance(v, str):
            return math.inf
        return abs(v)

    if not grads:
        return "x", "?"
    name = max(grads, key=lambda n: badness(grads[n]))
    v = grads[name]
    return name, v if isinstance(v, str) else f"{v:.4g}"


def confirmed(program: Program, w: Witness, needed: list[str] | None = None) -> dict[str, Any]:
    """The verdict for a witness; ``needed`` (the inputs the symptom needs at their witness
    values, see :func:`minimise`) goes with the observed values for the reachability gate."""
    parts = witness(program, w)
    if needed is not None:
        parts["observed"]["needed"] = needed
    detail = sentence(program, w, parts)
    if w.note:
        detail = f"{w.note}: {detail}" if not w.note.endswith(":") else f"{w.note} {detail}"
    return {
        "status": "confirmed",
        "symptom": w.symptom,
        "dtype": program.dtype,
        "inputs": parts["inputs"],
        "observed": parts["observed"],
        "detail": detail,
    }


def confirmed_generic(
    program: Program, w: Witness, needed: list[str] | None, thr: float
) -> dict[str, Any]:
    """:func:`confirmed`, after the genericity test (``verify/generic.py``): the symptom is
    re-evaluated with every free input (a parameter or attribute nothing drives) at generic
    values; the outcome goes in ``observed["generic"]`` for the verdict side.  When the symptom
    survives and the witness had a free input at an unusual value, the generic point, evaluated
    alone, becomes the witness."""
    if w.symptom not in RELAXABLE:
        return confirmed(program, w, needed)
    row = w.rows[w.row]
    point = {i.name: float(v) for i, v in zip(program.inputs, row, strict=True)}
    points = generic.generic_points(program.probe, point)
    if not points:
        return confirmed(program, w, needed)
    names = [i.name for i in program.inputs]
    rows = np.array([[p[n] for n in names] for p in points], dtype=np.float64)
    hit = masks(program, rows, run(program, rows), thr)[w.symptom]
    kept = [k for k, h in enumerate(hit) if h]
    free = [n for n in generic.free_inputs(program.probe) if n in point]
    outcome = generic.summary(free, points, kept)
    unusual = any(
        not ordinary(spec, row[j], program.dtype)
        for j, spec in enumerate(program.inputs)
        if spec.name in free
    )
    if kept and unusual:
        alone = rows[kept[0]][None, :]
        res = run(program, alone)
        if masks(program, alone, res, thr)[w.symptom][0]:
            w = Witness(w.symptom, 0, alone, res, w.note)
            needed = [n for n in needed or [] if n not in free] if needed is not None else None
    out = confirmed(program, w, needed)
    out["observed"]["generic"] = outcome
    return out


def refuted(detail: str, dtype: str) -> dict[str, Any]:
    return {"status": "refuted", "detail": detail, "dtype": dtype}


def inconclusive(detail: str, dtype: str | None = None) -> dict[str, Any]:
    return {"status": "inconclusive", "detail": detail, "dtype": dtype}


def verify(probe: dict[str, Any], threshold: float) -> dict[str, Any]:
    """Entry point used by the worker: any failure becomes an honest inconclusive."""
    start = time.perf_counter()
    try:
        if probe.get("kind") == "train":
            from .training import verify_training

            out = verify_training(probe)
        elif probe.get("kind", "expr") == "expr":
            out = verify_expr(probe, threshold)
        else:
            out = inconclusive(f"unknown probe kind {probe.get('kind')!r}")
    except UnsupportedProbe as exc:
        out = inconclusive(f"cannot verify: {exc}", probe.get("dtype"))
    except (
        tf.errors.OpError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        ZeroDivisionError,
    ) as exc:
        msg = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        out = inconclusive(
            f"could not trace the slice: {type(exc).__name__}: {msg}", probe.get("dtype")
        )
    if probe.get("kind", "expr") == "expr":
        out = domains.judge(probe, out)  # issue #11: domains and where gradients flow
    out["seconds"] = round(time.perf_counter() - start, 4)
    return {k: v for k, v in out.items() if v is not None}
