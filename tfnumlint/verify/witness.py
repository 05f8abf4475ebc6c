"""The witness to report: minimised (inputs the symptom does not need moved to ordinary values,
inside the inputs' domains), re-tried at generic values of the free inputs, and put in words.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops
from . import domains, generic, kinds, preconditions, trace, trace_ops
from . import intervals as iv
from .program import Input, Program, recipe, run
from .signs import needed_signs
from .symptoms import GENERIC, Witness, absorbed, felt_rows, flat, hazard_logits, masks
from .trace import format_number

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
    kind = kinds.input_kinds(program.probe).get(spec.name)
    if kind is not None and not spec.prob:  # a label stays 0 or 1, an index or a count whole
        return [r for r in kinds.values_of(kind) if spec.lo <= r <= spec.hi and r != v]
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
        if not ordinary(spec, row[j], dtype) or unreachable_reasons(program, row, [spec.name])
    ]
    if not loose:
        return w, []
    trials: list[dict[int, float]] = []
    for j in loose:
        trials += [{j: r} for r in replacements(program, j, row[j])]
    shared = set.intersection(*(set(replacements(program, j, row[j])) for j in loose))
    trials += [dict.fromkeys(loose, r) for r in PLAIN_REPLACEMENTS if r in shared]
    inside = _inside(program, row, trials)
    felt = bool(felt_rows(program, w.res, w.symptom, thr)[w.row])  # and stays so
    kept = _keeping(program, row, inside, w.symptom, thr, felt)
    pinned = _mattering_assumptions(program, loose, inside, kept)
    kept = [t for t in kept if not pinned & t.keys()]
    best: dict[int, float] = {}
    for trial in kept:
        if len(trial) == 1:
            best.setdefault(*next(iter(trial.items())))
    if len(best) > 1:
        combined = [best] + [{k: v for k, v in best.items() if k != j} for j in best]
        kept = _keeping(program, row, _inside(program, row, combined), w.symptom, thr, felt) + kept
    if not kept:
        return w, [program.inputs[j].name for j in loose]
    choice = max(kept, key=len)  # the most inputs relaxed (stable: the first such trial)
    point = _with(row, choice)[None, :]
    res = run(program, point)
    if not masks(program, point, res, thr)[w.symptom][0] or (
        felt and not felt_rows(program, res, w.symptom, thr)[0]
    ):
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
    :func:`domains.unreachable`), points inside the far-tail band (``preconditions``) first,
    and a NaN/Inf value there before a far witness of another symptom; else the first point
    whose needed inputs are, once the others are relaxed; else the first witness found, which
    the verdict will not count as confirmed."""
    if recipe(program.probe)["check"] == "absorption":
        found = absorbed(rows, res)
        return (found, None) if found is not None else None
    how = recipe(program.probe)
    m = masks(program, rows, res, thr)
    first: tuple[Witness, list[str] | None] | None = None
    budget = MAX_MINIMISED
    order = tuple(how["symptoms"]) + (() if how["only_listed"] else GENERIC)
    hits_of = {s: [int(i) for i in np.flatnonzero(m[s])] for s in order}
    far = {i for s in order for i in hits_of[s] if far_inputs(program, rows[i])}
    for symptom in order:
        felt = felt_rows(program, res, symptom, thr)
        # in-band points first; among them, those where the statement's gradient suffers too
        hits = sorted(hits_of[symptom], key=lambda i: (i in far, not felt[i]))
        clean = next((i for i in hits if _reachable(program, rows[i])), None)
        if clean is not None:
            if clean in far:  # a NaN/Inf value at values models give, if there is one
                symptom, clean = _value_in_band(program, rows, hits_of, far) or (symptom, clean)
            return minimise(program, Witness(symptom, clean, rows, res), thr)
        for i in hits[:2]:
            if budget == 0:
                break
            budget -= 1
            w, needed = minimise(program, Witness(symptom, i, rows, res), thr)
            first = first or (w, needed)
            if needed is not None and not unreachable_reasons(program, w.rows[w.row], needed):
                return w, needed
    return first


# A NaN or Inf value inside the far-tail band is the strongest evidence there is: it is
# preferred to a far witness of an earlier symptom (an eps absorbed at a logit of 17 beats a
# dead gradient at -100).  Other symptoms keep the recipe's order.
VALUE_SYMPTOMS = ("inf-value", "nan-value")  # in this order


def _value_in_band(
    program: Program, rows: np.ndarray, found: dict[str, list[int]], far: set[int]
) -> tuple[str, int] | None:
    for symptom in [s for s in VALUE_SYMPTOMS if s in found]:
        for i in found[symptom]:
            if i not in far and _reachable(program, rows[i]):
                return symptom, i
    return None


def _reachable(program: Program, row: np.ndarray) -> bool:
    return not unreachable_reasons(program, row, None)


def unreachable_reasons(
    program: Program, row: np.ndarray, needed: list[str] | None, small_ok: bool = False
) -> list[str]:
    """Why inputs of a point (the ``needed`` ones, or all) are not at values the code gives."""
    point = {i.name: float(v) for i, v in zip(program.inputs, row, strict=True) if not i.prob}
    names = list(point) if needed is None else needed
    return kinds.wrong_kind(program.probe, point, names) + domains.unreachable_inputs(
        program.probe, point, names, program.dtype, small_ok
    )


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
    program: Program,
    row: np.ndarray,
    inside: list[dict[int, float]],
    symptom: str,
    thr: float,
    felt: bool = False,
) -> list[dict[int, float]]:
    """The trials (already inside the domains: :func:`_inside`) whose point still shows
    ``symptom`` (and, when ``felt``, whose statement's gradient still shows it): one batched
    run."""
    if not inside:
        return []
    rows = np.array([_with(row, t) for t in inside])
    res = run(program, rows)
    hit = masks(program, rows, res, thr)[symptom]
    if felt:
        hit = hit & felt_rows(program, res, symptom, thr)
    return [t for t, h in zip(inside, hit, strict=True) if h]


# ---------------------------------------------------------------- generic values


def confirmed_generic(
    program: Program, w: Witness, needed: list[str] | None, thr: float
) -> dict[str, Any]:
    """:func:`confirmed`, after the genericity test (``verify/generic.py``): the symptom is
    re-evaluated with every free input (a parameter or attribute nothing drives) at generic
    values; the outcome goes in ``observed["generic"]`` for the verdict side.  When the symptom
    survives and the witness had a free input at an unusual value, the generic point, evaluated
    alone, becomes the witness."""
    w, tail = clamp_far_tail(program, w, thr)
    if tail is not None or w.symptom not in RELAXABLE:
        return _with_tail(program, w, needed, tail)
    row = w.rows[w.row]
    point = {i.name: float(v) for i, v in zip(program.inputs, row, strict=True)}
    points = generic.generic_points(program.probe, point)
    if not points:
        return confirmed(program, w, needed)
    free = [n for n in generic.free_inputs(program.probe) if n in point]
    either = generic.generic_points(program.probe, point, seed=1, any_sign=True)
    shared, moves = _coincidence_moves(point, free)
    hit = _hits(program, [*points, *either, *moves], w.symptom, thr)  # one batched run
    ends = len(points), len(points) + len(either)
    generic_hit, either_hit, moved_hit = hit[: ends[0]], hit[ends[0] : ends[1]], hit[ends[1] :]
    kept = [k for k, h in enumerate(generic_hit) if h]
    rows = _rows(program, points)
    outcome = generic.summary(free, points, kept)
    signs = needed_signs(program, rows[kept], free, w.symptom, thr)
    if signs:
        outcome["signs"] = signs
    outcome["anywhere"] = {"trials": len(either), "kept": sum(either_hit)}
    # a shared input whose both moves keep the symptom is a coincidence, not a condition
    irrelevant = [n for k, n in enumerate(shared) if moved_hit[2 * k] and moved_hit[2 * k + 1]]
    if irrelevant:
        outcome["irrelevant"] = irrelevant
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


def _rows(program: Program, points: list[dict[str, float]]) -> np.ndarray:
    names = [i.name for i in program.inputs]
    return np.array([[p[n] for n in names] for p in points], dtype=np.float64)


def _hits(program: Program, points: list[dict[str, float]], symptom: str, thr: float) -> list:
    """Whether the symptom shows at each point, in one batched run."""
    if not points:
        return []
    rows = _rows(program, points)
    return [bool(h) for h in masks(program, rows, run(program, rows), thr)[symptom]]


def _coincidence_moves(
    point: dict[str, float], free: list[str]
) -> tuple[list[str], list[dict[str, float]]]:
    """The free inputs that share their witness value with another input, and for each two
    points moving it alone past every other value, on either side.  When the symptom stays at
    both, the input only shares the value (``temperature`` = ``high`` = ``low`` = 1 in
    ``t * x / (high - low)``: only ``high`` = ``low`` matters) and a condition leaves it out;
    an order (``hi`` < ``lo``) is broken by one of the two moves."""
    values = list(point.values())
    shared = [n for n in free if values.count(point[n]) > 1]
    widest = max((abs(v) for v in values if math.isfinite(v)), default=1.0)
    beyond = min(2.0 * widest + 1.0, 1e30)  # finite in float32 too
    moves = [{**point, n: moved_to} for n in shared for moved_to in (beyond, -beyond)]
    return shared, moves


def _with_tail(
    program: Program, w: Witness, needed: list[str] | None, tail: dict[str, Any] | None = None
) -> dict[str, Any]:
    """:func:`confirmed`, with the far tail the witness needs (``observed["far_tail"]``; the
    verdict side, ``preconditions.judge``, weighs it after the domains and guards)."""
    out = confirmed(program, w, needed)
    if tail is not None:
        out["observed"]["far_tail"] = tail
    return out


# ---------------------------------------------------------------- far tails


def clamp_far_tail(
    program: Program, w: Witness, thr: float
) -> tuple[Witness, dict[str, Any] | None]:
    """The witness with its log-scale inputs past :data:`preconditions.BAND` clamped into it
    (sign kept, mildest clamp first) when the symptom survives there; else the witness as it is
    with what it needs (``{"inputs": {name: value}, "band": 30}``) for the verdict side, which
    makes the finding inconclusive.  Inputs at values inside the band are left alone."""
    row = w.rows[w.row]
    far = far_inputs(program, row)
    if not far or w.symptom not in TAIL_CHECKED:
        return w, None
    trials = [
        {j: preconditions.clamped(float(row[j]), m) for j in far} for m in preconditions.CLAMPS
    ]
    inside = _inside(program, row, trials)
    found = _clamped_witness(program, w, inside, thr) if inside else None
    if found is not None:
        return found, None
    names = [_shown_name(program.inputs[j]) for j in far]
    return w, {
        "inputs": {n: float(row[j]) for n, j in zip(names, far, strict=True)},
        "band": preconditions.BAND,
    }


def far_inputs(program: Program, row: np.ndarray) -> list[int]:
    """The inputs of a point at a far tail: log-scale values past the band (``preconditions``)."""
    specs = {s.get("name"): s for s in program.probe.get("inputs") or []}
    return [
        j
        for j, spec in enumerate(program.inputs)
        if preconditions.tail_candidate(specs.get(spec.name) or {}, spec.prob, float(row[j]))
    ]


# Symptoms the clamp re-checks: those a point decides alone, and a dead gradient, which is
# judged against the witness's other points (the loss far above what its logits can reach).
TAIL_CHECKED = RELAXABLE | {"dead-gradient"}


def _clamped_witness(
    program: Program, w: Witness, inside: list[dict[int, float]], thr: float
) -> Witness | None:
    """The first clamped trial that still shows the witness's symptom, as a witness."""
    row = w.rows[w.row]
    if w.symptom in RELAXABLE:
        for trial in _keeping(program, row, inside, w.symptom, thr):
            point = _with(row, trial)[None, :]
            res = run(program, point)
            if masks(program, point, res, thr)[w.symptom][0]:
                return Witness(w.symptom, 0, point, res, w.note)
        return None
    rows = np.concatenate([w.rows, np.array([_with(row, t) for t in inside])])
    res = run(program, rows)
    hit = masks(program, rows, res, thr)[w.symptom]
    k = next((k for k in range(len(w.rows), len(rows)) if hit[k]), None)
    return Witness(w.symptom, k, rows, res, w.note) if k is not None else None


def _shown_name(spec: Input) -> str:
    return f"logit({spec.name})" if spec.prob else spec.name


# ---------------------------------------------------------------- witnesses in words


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


def witness_parts(program: Program, w: Witness) -> dict[str, Any]:
    """Inputs, observed numbers and the pieces of the witness sentence."""
    row = w.row
    inputs: dict[str, Any] = {}
    where = []
    for j, spec in enumerate(program.inputs):
        v = float(w.rows[row, j])
        if spec.prob:
            p = float(tf.math.sigmoid(tf.constant(v, trace_ops.DTYPES[program.dtype])).numpy())
            inputs[spec.name] = jsonable(p)
            inputs[f"logit({spec.name})"] = jsonable(v)
            # sigmoid(v) is also the entry of a two-way softmax([v, 0]): say what made it
            made = (
                f"softmax([{format_number(v)}, 0])[0]"
                if spec.producer == "softmax"
                else f"sigmoid({format_number(v)})"
            )
            where.append(f"{spec.name} = {made} = {format_number(p)}")
        else:
            inputs[spec.name] = jsonable(v)
            whole = program.k == 1 or spec.scale  # a scale holds its value in every entry
            shown = format_number(v) if whole else f"[{format_number(v)}, 0]"
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
    if "gw" in w.res:  # the term inside its statement: the loss's gradient through it alone
        observed["gradient_through_term"] = {
            _shown_name(spec): jsonable(pick(w.res[f"gtx_{spec.ident}"], row))
            for spec in program.inputs
        }
        observed["loss_weight"] = jsonable(pick(w.res["gw"], row))
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
    gname, gval = _worst(grads)
    if w.symptom in ("nan-value", "inf-value"):
        return f"{head}, {expr} = {parts['value']}"
    if w.symptom in ("nan-gradient", "inf-gradient"):
        return f"{head}, {expr} = {parts['value']} but its gradient d/d{gname} = {gval}"
    if w.symptom == "exploding-gradient":
        return f"{head}, {expr} = {parts['value']} and d/d{gname} = {gval}: the gradient explodes"
    if w.symptom == "dead-gradient":
        obs = parts["observed"]
        loss = obs.get("loss", obs["value"])
        dying = hazard_logits(program)
        logged = _under_log(program.probe.get("target"))  # the log's own, not its weight's
        logit = next(
            (
                i
                for i in sorted(program.inputs, key=lambda i: i.name not in logged)
                if i.name in dying
            ),
            program.inputs[0],
        )
        lname = f"logit({logit.name})" if logit.prob else logit.name
        lname = f"({lname})" if " " in lname and not logit.prob else lname
        label = "loss" if program.has_loss else expr
        shown_loss = format_number(float(loss) if not isinstance(loss, str) else math.nan)
        squash = "softmax" if program.ops & trace_ops.SOFTMAX_OPS else "sigmoid"
        if program.term_in_loss:  # the underlined term is what is stuck: say so first
            text = (
                f"{head}, {expr} = {parts['value']} and the loss ({shown_loss}) gets "
                f"dloss/d{lname} = 0 through it: {squash} saturated"
            )
        else:
            text = f"{head}, {label} = {shown_loss}"
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


# a log of the first argument, its domain's edge the danger zone: log, log1p
_LOGS_OF_FIRST_ARG = ops.ops_with(
    lambda op: op.log_space and op.danger is not None and op.danger.arg == 0
)


def _under_log(tree: Any) -> set[str]:
    """The inputs read inside a log of the tree (``p_pred`` in ``p * log(p_pred + eps)``)."""
    return {
        n["name"]
        for node in trace.walk(tree)
        if node.get("k") == "call" and node.get("op") in _LOGS_OF_FIRST_ARG
        for n in trace.walk(node.get("args"))
        if n.get("k") == "input"
    }


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


def _worst(grads: dict[str, Any]) -> tuple[str, str]:
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
    parts = witness_parts(program, w)
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
