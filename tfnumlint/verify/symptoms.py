"""What a probe point shows: per-row symptom masks (NaN/Inf values and gradients, exploding
and dead gradients, an absorbed epsilon), the first witness of the recipe's symptom, and whether
points evaluated in one batch can be trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import trace
from .program import Program, recipe, run

GENERIC = ("nan-value", "inf-value", "nan-gradient", "inf-gradient")


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
    out = {
        "nan-value": np.isnan(t).any(1),
        "inf-value": np.isinf(t).any(1),
        "nan-gradient": fin & np.isnan(g).any(1) if g.shape[1] else np.zeros(len(t), bool),
        "inf-gradient": fin & np.isinf(g).any(1) if g.shape[1] else np.zeros(len(t), bool),
        "exploding-gradient": fin & explodes(g, t, thr),
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
    if program.term_in_loss and "gw" in res:
        out &= term_stuck(program, logit_cols, groups, res)
    return out


def term_stuck(
    program: Program, logit_cols: list[int], groups: dict[tuple, list[int]], res: dict
) -> np.ndarray:
    """Per row: the flagged term itself is what kills the loss's gradient.  The loss weighs
    the term there (dloss/dterm != 0), the loss's gradient through the term alone is 0 with
    respect to the dying logits, and the term's part of the loss (linearised at this row's
    weights) is >= 1 above what it is at another point of the group.  A loss stuck because
    of another term of its statement (``log(1 - p)`` where ``log(p)`` saturates) is no
    witness for this one."""
    t = flat(res["t"])
    weight = np.nan_to_num(flat(res["gw"]))
    through = np.concatenate(
        [flat(res[f"gtx_{program.inputs[j].ident}"]) for j in logit_cols], axis=1
    )
    own_dead = (through == 0).all(1) & (weight != 0).any(1) & np.isfinite(t).all(1)
    out = np.zeros(len(t), bool)
    for members in groups.values():
        idx = np.array(members)
        seen = idx[np.isfinite(t[idx]).all(1)]
        if not seen.size:
            continue
        part = weight[idx] @ t[seen].T  # [row, other point]: row's weights, other's term
        mine = (weight[idx] * np.where(np.isfinite(t[idx]), t[idx], 0.0)).sum(1)
        out[idx] = own_dead[idx] & (mine - part.min(1) >= 1.0)
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
        return absorbed(rows, res)
    m = masks(program, rows, res, thr)
    order = tuple(how["symptoms"]) + (() if how["only_listed"] else GENERIC)
    for symptom in order:
        hits = np.flatnonzero(m[symptom])
        if hits.size:
            return Witness(symptom, int(hits[0]), rows, res)
    return None


GRADIENT_SYMPTOMS = frozenset({"nan-gradient", "inf-gradient", "exploding-gradient"})


def felt_rows(program: Program, res: dict[str, np.ndarray], symptom: str, thr: float) -> np.ndarray:
    """Rows where the enclosing statement's own gradient shows a gradient symptom too.
    ``log(1 - p + eps)`` explodes at p = 1 whatever the label, but a label of 1 multiplies that
    term by 0 in ``y*log(p) + (1-y)*log(1-p)``: a witness with label 0 shows what the user's
    loss suffers, so such rows are preferred (all rows when there is no statement)."""
    t = flat(res["t"])
    if symptom not in GRADIENT_SYMPTOMS or not program.has_loss:
        return np.ones(len(t), bool)
    keys = [f"gz_{i.ident}" for i in program.inputs if f"gz_{i.ident}" in res]
    if not keys:
        return np.ones(len(t), bool)
    g = np.concatenate([flat(res[k]) for k in keys], axis=1)
    if symptom != "exploding-gradient":
        return ~np.isfinite(g).all(1)
    return explodes(g, flat(res["l"]), thr)


def explodes(g: np.ndarray, values: np.ndarray, thr: float) -> np.ndarray:
    """Per row: every gradient finite and the largest beyond ``thr`` times the row's value
    scale (its largest finite |value|, at least 1)."""
    if not g.shape[1]:
        return np.zeros(len(g), bool)
    gmax = np.abs(np.nan_to_num(g, nan=0, posinf=0, neginf=0)).max(1)
    scale = np.maximum(1.0, np.abs(np.nan_to_num(values, posinf=0, neginf=0)).max(1))
    return np.isfinite(g).all(1) & (gmax > thr * scale)


def absorbed(rows: np.ndarray, res: dict[str, np.ndarray]) -> Witness | None:
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


INDEPENDENCE_SAMPLE = 4
ALONE_SAMPLE = 16  # points evaluated one by one when the batch cannot be trusted


def points_independent(program: Program, rows: np.ndarray, res: dict[str, np.ndarray]) -> bool:
    """Evaluate a random subset of the points one by one: each must give what it gave in the
    batch.  A difference means the batch mixed points (one point's numerator meeting another
    point's denominator), and any witness from it would be an artifact.  Vectorised kernels
    round differently from scalar ones, so finite values agree to 1e-3 of their scale."""
    if len(rows) < 2:
        return True
    return not _sample_differs(rows, res, lambda i: run(program, rows[i : i + 1]))


def _sample_differs(
    rows: np.ndarray, res: dict[str, np.ndarray], again: Callable[[int], dict[str, np.ndarray]]
) -> bool:
    """Whether some point of a seeded sample (the same sample for the same batch) gives,
    evaluated ``again``, other values or losses than it gave in the batch."""
    rng = np.random.default_rng(len(rows))
    for i in rng.choice(len(rows), size=min(INDEPENDENCE_SAMPLE, len(rows)), replace=False):
        other = again(int(i))
        for key in ("t", "l"):
            if not same_point(flat(other[key])[0], flat(res[key])[i]):
                return True
    return False


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


# Copies of a point that fill whole vector registers at every CPU kernel width (4 float64 to
# 16 float32 lanes): a batch of them runs the same vectorised kernels as the probe's batch.
PACKET = 16
VECTOR_ONLY_SAMPLE = 64  # symptomatic rows re-evaluated alone when the kernels differ
TRACE_RUNS = 16  # eager runs of a program that cost about one trace of its gradient graph


def points_mixed(program: Program, rows: np.ndarray, res: dict[str, np.ndarray]) -> bool:
    """Whether the batch really mixed points: each point, evaluated in a batch of its own
    copies (the same vectorised kernels, but no other point to meet), must give what it gave
    in the batch.  If it does, a point that differs evaluated alone met a scalar kernel that
    rounds differently (a vectorised reciprocal gives 1/0.5 = 1.9999999, and pow(-1, 1.9999999)
    is NaN where pow(-1, 2) = 1), not another point."""
    # the points ``points_independent`` checked
    return _sample_differs(rows, res, lambda i: run(program, np.repeat(rows[i : i + 1], PACKET, 0)))


def vector_only(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> np.ndarray:
    """Per row: a symptom the batch shows that the point evaluated alone does not (only the
    vectorised kernels' rounding reaches it).  Beyond the sample, a symptomatic row is counted
    as one too: unchecked, it cannot witness."""
    m = masks(program, rows, res, thr)
    nominated = np.flatnonzero(np.any(list(m.values()), axis=0)) if m else np.zeros(0, int)
    out = np.zeros(len(rows), bool)
    out[nominated[VECTOR_ONLY_SAMPLE:]] = True
    sample = nominated[:VECTOR_ONLY_SAMPLE]
    # the traced function runs the same kernels as the eager body (the graph optimizer is off
    # in the worker) without eager's per-op dispatch; tracing it costs about as much as
    # TRACE_RUNS eager runs, so it pays for a larger sample, or once it exists
    traced = program.is_traced() or len(sample) > TRACE_RUNS
    for i in sample:
        single = rows[i : i + 1]
        out[i] = find_symptom(program, single, run(program, single, traced), thr) is None
    return out


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
