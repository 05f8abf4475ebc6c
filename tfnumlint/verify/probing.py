"""The verifier's entry point: one probe in, one verdict out.

An expression probe goes through the pipeline's stages in order: ``program.py`` traces it,
``verdicts.py`` may refute it by value ranges, ``points.py`` lays the boundary points (inside
the inputs' domains), ``symptoms.py`` evaluates them, ``climb.py`` climbs toward the danger
zone when no point shows a symptom, and ``witness.py`` minimises and words the witness;
``gates.judge`` then weighs whether the code can reach it.  Training probes go to
``training.py``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import tensorflow as tf

from . import compiled, domains, downstream, gates, gradient_gate, preconditions, stand_ins
from .climb import CLIMB_STEPS, climb
from .downstream import witness_row
from .points import point_grid
from .program import (
    TRACE_ERRORS,
    Program,
    build_with_fallback,
    probe_dtype,
    recipe,
    run,
    user_rank,
)
from .related import review_related
from .spread import identical_batch
from .symptoms import (
    Witness,
    find_symptom,
    flat,
    points_independent,
    points_mixed,
    vector_only,
    witness_alone,
)
from .trace import UnsupportedProbe, format_number, walk
from .trace_ops import SOFTMAX_OPS
from .upstream import upstream_start, with_upstream
from .verdicts import (
    inconclusive,
    range_refutation,
    refuted,
    review_witness,
    verify_constant_absorption,
    verify_diverges,
    verify_underflow,
)
from .witness import choose, confirmed_generic, minimise


def verify_expr(probe: dict[str, Any], threshold: float) -> dict[str, Any]:
    """Verify one expression probe in both forms (``compiled.py``): the eager verdict, unless
    the compiled form shows a NaN/Inf at the points it was reached on that the eager does not."""
    seen: dict[str, Any] = {}
    out = verify_eager(probe, threshold, seen)
    if "rows" in seen and out.get("status") in ("confirmed", "refuted"):
        out = compiled.review(seen["program"], seen["rows"], seen.get("res"), out, threshold)
    return out


def verify_eager(probe: dict[str, Any], threshold: float, seen: dict[str, Any]) -> dict[str, Any]:
    """Verify one expression probe, eager-exact; ``seen`` gets the program and the points."""
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
    seen.update(program=program, rows=rows)
    if len(rows):
        res = run(program, rows)
        seen["res"] = res
        aside: np.ndarray | None = None  # a point whose symptom only vectorised kernels show
        independent = points_independent(program, rows, res)
        if not independent and not points_mixed(program, rows, res):
            # the kernels differ, the points do not mix: the batch stands where it agrees
            drop = vector_only(program, rows, res, threshold)
            if drop.all():
                return vector_only_verdict(names, rows[0], dtype)
            if drop.any():
                aside = rows[np.flatnonzero(drop)[0]]
                rows, res = rows[~drop], {k: v[~drop] for k, v in res.items()}
        elif not independent:
            alone = witness_alone(program, rows, res, threshold)
            if alone is not None:
                return _confirmed(program, *minimise(program, alone, threshold), threshold)
            return inconclusive(
                "no verdict: the probe points evaluated in one batch and one by one disagree, "
                "and a batch of a point's own copies does not give what the batch gave (the "
                "points mixed), and no symptom reproduces on a point evaluated alone",
                dtype,
            )
        chosen = choose(program, rows, res, threshold)
        if chosen is not None:
            return _confirmed(program, *chosen, threshold)
        climbed = climb(program, rows, res, threshold)
        if climbed is not None:
            note = f"after a gradient climb toward the danger zone, {climbed.note}"
            climbed.note = note.rstrip(", ")
            return _confirmed(program, *minimise(program, climbed, threshold), threshold)
        if aside is not None:
            return vector_only_verdict(names, aside, dtype)
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


def _confirmed(
    program: Program, w: Witness, needed: list[str] | None, threshold: float
) -> dict[str, Any]:
    """The witness's verdict (``witness.confirmed_generic``), with whether it needs every
    example along the batch axis to be identical (``spread.identical_batch``)."""
    out = identical_batch(program, confirmed_generic(program, w, needed, thr=threshold), threshold)
    return masked_row(program, out)


# Values the mask inputs of a -inf fill are moved to (non-zero is true, as a where reads them)
MASK_VALUES = (1.0, -1.0, 0.0, 2.0, 0.5)


def masked_row(program: Program, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with ``observed["masked_row"]`` (the fill's mask inputs) when its NaN value rests
    on a row the mask of a -inf fill empties: with those inputs moved together, every other as
    in the witness, some point is finite (``preconditions.masked_row_reason`` states it)."""
    if out.get("status") != "confirmed" or out.get("symptom") != "nan-value":
        return out
    names = preconditions.fill_masks(program.probe)
    cols = [j for j, spec in enumerate(program.inputs) if spec.name in names and not spec.prob]
    point = out.get("inputs")
    found = witness_row(program, point) if isinstance(point, dict) and cols else None
    if found is None:
        return out
    rows = np.array([found] * len(MASK_VALUES), dtype=np.float64)
    rows[:, cols] = np.array(MASK_VALUES)[:, None]
    try:
        finite = np.isfinite(flat(run(program, rows)["t"])).all(1)
    except TRACE_ERRORS:
        return out
    if not finite.any():
        return out
    moved = sorted(program.inputs[j].name for j in cols)
    return {**out, "observed": {**(out.get("observed") or {}), "masked_row": moved}}


def vector_only_verdict(names: list[str], point: np.ndarray, dtype: str) -> dict[str, Any]:
    """A symptom only TensorFlow's vectorised kernels show: neither confirmed (evaluated alone
    the point is fine) nor refuted (a batch of such values does show it)."""
    at = ", ".join(f"{n} = {format_number(float(v))}" for n, v in zip(names, point, strict=True))
    return inconclusive(
        f"no verdict: at {at} ({dtype}) the symptom shows only when TensorFlow evaluates the "
        "point in a batch (its vectorised kernels round differently from its scalar ones: "
        "evaluated alone the point is fine), and no other point shows one",
        dtype,
    )


def with_repro(probe: dict[str, Any], out: dict[str, Any], threshold: float) -> dict[str, Any]:
    """A confirmed verdict, with the probe as it was traced (stand-ins bound) and the shapes
    each input took: the reproducer rebuilds the slice from these, never from the source."""
    if out.get("status") != "confirmed":
        return out
    if out.get("repro", {}).get("rung") == "training-program":
        return out  # the training rung's own script
    if probe.get("kind") == "train":
        return {**out, "repro": {"rung": "training", "probe": probe}}
    traced = {k: probe.get(k) for k in ("target", "loss", "inputs", "eps", "dtype", "recipe")}
    trees = (probe.get("target"), probe.get("loss"))
    ops = {n.get("op") for n in walk(list(trees)) if n.get("k") == "call"}
    k = 2 if ops & SOFTMAX_OPS else 1
    shape = {"k": k, "rank": user_rank(*trees), "threshold": threshold}
    return {**out, "repro": {"rung": "witness", "probe": traced, **shape}}


# symptoms of a state the witness puts the slice in, which training may or may not reach (an
# epsilon rounded away is a fact of the dtype: no state of the program is needed for it)
STATE_SYMPTOMS = frozenset(
    {
        "nan-value",
        "inf-value",
        "nan-gradient",
        "inf-gradient",
        "exploding-gradient",
        "dead-gradient",
    }
)


def program_run(probe: dict[str, Any]) -> dict[str, Any] | None:
    """The training rung's verdict on the probe's objective, or None when there is none; a
    script that cannot run is ``failed``, with why (the rungs below then decide, and a
    stand-in model's confirmation no longer stands for the program's)."""
    spec = probe.get("program")
    if not spec:
        return None
    from .repro_code import NotRenderable
    from .training_rung import verify_program

    try:
        return verify_program(spec)
    except (UnsupportedProbe, NotRenderable, tf.errors.OpError, ValueError, TypeError,
            KeyError, NameError, AttributeError, IndexError) as exc:  # fmt: skip
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        return {"status": "failed", "detail": f"{type(exc).__name__}: {first}".rstrip(": ")}


def with_training(
    probe: dict[str, Any], out: dict[str, Any], trained: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The training rung over the rungs below: training the program's slice to the hazard
    confirms it; a witness that training does not reach is not a confirmation."""
    from .training_rung import reached

    trained = trained if trained is not None else program_run(probe)
    if trained is not None and trained["status"] == "failed":
        if probe.get("kind") == "train" and out.get("status") == "confirmed":
            return {  # a stand-in's run where the program's own slice was there to run
                **out,
                "status": "inconclusive",
                "detail": f"{out['detail']}; but the program's own slice could not be trained "
                f"({trained['detail']}): the stand-in's run is not the program's",
            }
        if out.get("status") == "inconclusive":  # why the strongest rung says nothing
            return {**out, "detail": f"{out['detail']}; the program's own slice could not be "
                    f"trained ({trained['detail']})"}  # fmt: skip
        return out
    if trained is None or trained["status"] == "not run":
        return out
    if trained["status"] == "confirmed":
        return trained
    if trained["status"] == "inconclusive":  # reached, on data or weights it had to assume
        if out.get("status") in ("confirmed", "inconclusive"):
            return {**out, "detail": f"{out['detail']}; {trained['reached']}, on data the "
                    "code does not give"}  # fmt: skip
        return trained
    stand_in = probe.get("kind") == "train"  # a stand-in model's run, where the program's ran
    state = out.get("symptom") in STATE_SYMPTOMS or stand_in
    # a witness state the program's own training was there to reach is confirmed by that
    # run or not at all: a run its time budget stopped does not know, and a finished one would
    # overturn it, so a busy machine never keeps a confirmation an idle one drops
    if out.get("status") == "confirmed" and trained["own"] and state:
        if stand_in:
            why = "the stand-in's run is not the program's"
        elif trained.get("cut"):
            why = (
                "whether its training reaches the witness is not known (a longer "
                "--probe-timeout lets the run finish)"
            )
        else:
            why = "the witness is not a state its training was seen to reach"
        return {
            **out,
            "status": "inconclusive",
            "detail": f"{out['detail']}; but {reached(trained)}: {why}",
        }
    if (out.get("status") == "inconclusive" and not stand_in) or trained.get("cut"):
        return {**out, "detail": f"{out['detail']}; {reached(trained)}"}  # what its run saw
    if out.get("status") == "inconclusive" and trained["own"]:  # a stand-in's: the program's run
        return {**out, "detail": reached(trained)}
    return out


UPSTREAM = "upstream_start"  # the staged probe's key for the upstream start (not the slicer's)


def _attach_upstream(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    return with_upstream(out, probe.get(UPSTREAM))


def _first_step(out: dict[str, Any]) -> dict[str, str]:
    step = {"gate": "witness search", "status": str(out.get("status"))}
    if out.get("status") != "confirmed":
        step["why"] = str(out.get("detail", "")).split(" (seen: ")[0]
    return step


# The gates a witness's verdict passes, in order (issue 22: one list, and a trail in JSON).
EXPR_GATES: tuple[gates.Gate, ...] = (
    gates.Gate("domains", gates.in_domains),  # the witness inside what the code allows
    gates.Gate("gradient flow", gates.gradient_flow),  # is it differentiated there?
    gates.Gate("related inputs", review_related),  # no values set apart from their source
    gates.Gate("witness review", review_witness),  # where the symptom starts
    gates.Gate("reachability", gates.reachability),  # values the code receives, names apart
    gates.Gate("downstream", downstream.review),  # where the value goes: handled right after?
    gates.Gate("preconditions", preconditions.judge),  # a far tail, an empty selection
    gates.Gate("free signs", gates.free_signs),  # the sign of a parameter nothing drives
    gates.Gate("conditional", gradient_gate.conditional),  # differentiated only by callers unseen
    gates.Gate("upstream", _attach_upstream),  # the report folds it into the upstream finding
    gates.Gate("stand-ins", stand_ins.with_note),  # the axis/depth/shape it was reached with
    gates.Gate("training rung", lambda probe, out: with_training(probe, out)),  # issue 23
)


def verify(probe: dict[str, Any], threshold: float) -> dict[str, Any]:
    """Entry point used by the worker: any failure becomes an honest inconclusive."""
    start = time.perf_counter()
    try:
        if probe.get("kind") == "train":
            from .training import verify_training

            trained = program_run(probe)  # the program's own run, before any stand-in model
            if trained is not None and trained["status"] == "confirmed":
                out = trained
            else:
                out = with_training(probe, verify_training(probe), trained)
        elif probe.get("kind", "expr") == "expr":
            if probe.get("assumed"):
                probe = stand_ins.traceable(probe, probe_dtype(probe))
            out = verify_expr(probe, threshold)
            out = stand_ins.holds_for_others(probe, out, lambda p: verify_expr(p, threshold))
        elif probe.get("kind") == "program":  # no witness probe: the training rung alone
            out = with_training(probe, inconclusive("not probed at a witness", probe.get("dtype")))
        else:
            out = inconclusive(f"unknown probe kind {probe.get('kind')!r}")
    except UnsupportedProbe as exc:
        out = inconclusive(f"cannot verify: {exc}", probe.get("dtype"))
        if probe.get("assumed"):
            out = stand_ins.untraceable(probe, str(exc))
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
        if probe.get("assumed"):  # the stand-in may be what broke it: no better than before
            out = stand_ins.untraceable(probe, f"{type(exc).__name__}: {msg}")
    if probe.get("kind", "expr") == "expr":
        # the upstream start is read before the gates replace the witness
        staged = {**probe, UPSTREAM: upstream_start(probe, out)}
        out = gates.run_gates(EXPR_GATES, staged, {**out, "trail": [_first_step(out)]})
    out = with_repro(probe, out, threshold)  # what a reproducer script needs (``repro.py``)
    out["seconds"] = round(time.perf_counter() - start, 4)
    return {k: v for k, v in out.items() if v is not None}
