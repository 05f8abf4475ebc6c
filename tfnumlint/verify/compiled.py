"""The compiled form: the probe as the user's code runs under tf.function, Keras fit or a Session.

The worker evaluates probes with TensorFlow's graph optimizer (grappler) off, for exact op
semantics.  Compiled code runs with it on, and its arithmetic optimizer regroups constants:
``1 - p + 1e-10`` becomes ``(1 + 1e-10) - p``, and 1 + 1e-10 == 1 in float32, so
``log(1 - sigmoid(30) + 1e-10)`` is -inf compiled and -23.03 eagerly.  So a probe is evaluated
in both forms (``probe["forms"]``, default both): after the eager verdict, the points it was
judged on run once more through the traced function with the optimizer on (one call of the
function the climb already traced, not a new slice).  A NaN/Inf the compiled form shows where
the eager form shows none, or shows only a weaker symptom, is the verdict, and says so.

The rewrites of grappler's arithmetic optimizer that change a probe's numbers are regroupings
of constants; the others (``log(1 + x)`` to ``log1p``, ``x * x`` to ``square``) make a value
no less finite.  So only a slice with a sum of two constants one of which the dtype absorbs
into the other (``1 + 1e-10``) pays for the compiled run; the rest cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import tensorflow as tf

from . import trace, trace_ops
from .program import Program, recipe, run
from .symptoms import GENERIC, Witness, masks
from .trace import format_number
from .witness import confirmed, far_inputs, unreachable_reasons

FORMS = ("eager", "compiled")
VALUE_SYMPTOMS = ("inf-value", "nan-value")


def forms(probe: dict[str, Any]) -> tuple[str, ...]:
    """The forms a probe is evaluated in: both, unless the static side knows better."""
    return tuple(probe.get("forms") or FORMS)


@contextmanager
def graph_optimizer() -> Iterator[None]:
    """TensorFlow's graph optimizer on, as in the user's compiled program; restored after."""
    before = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options(before)


def run_compiled(program: Program, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The points through the traced function (values and gradients), optimizer on."""
    with graph_optimizer():
        return run(program, rows, traced=True)


def review(
    program: Program | None,
    rows: np.ndarray | None,
    eager: dict[str, np.ndarray] | None,
    out: dict[str, Any],
    threshold: float,
) -> dict[str, Any]:
    """The eager verdict, or a compiled-only symptom when the eager form found none (or only a
    symptom weaker than a NaN/Inf value); ``eager`` holds the eager results at ``rows``."""
    if program is None or rows is None or eager is None or not len(rows):
        return out
    if "compiled" not in forms(program.probe) or recipe(program.probe)["check"] != "probe":
        return out  # absorption, divergence, underflow: number checks, not evaluations
    if folded_constants(program.probe.get("target"), trace_ops.DTYPES[program.dtype]) is None:
        return out  # nothing the graph optimizer regroups: compiled, the numbers are the same
    status, symptom = out.get("status"), out.get("symptom")
    if status == "confirmed":
        if symptom in VALUE_SYMPTOMS:
            return out
        wanted: tuple[str, ...] = VALUE_SYMPTOMS
    elif status == "refuted":
        wanted = wanted_symptoms(program)
    else:
        return out
    found = compiled_only(program, rows, eager, wanted, threshold)
    if found is None:
        return out
    return compiled_verdict(program, found, threshold)


def wanted_symptoms(program: Program) -> tuple[str, ...]:
    how = recipe(program.probe)
    order = tuple(how["symptoms"]) + (() if how["only_listed"] else GENERIC)
    listed = [s for s in order if s in GENERIC]
    return tuple(dict.fromkeys(listed))


def compiled_only(
    program: Program,
    rows: np.ndarray,
    eager_res: dict[str, np.ndarray],
    wanted: tuple[str, ...],
    thr: float,
) -> Witness | None:
    """The first point (at values the code gives, not at a far tail) where the compiled form
    shows a wanted symptom that the eager form does not; confirmed on the point alone."""
    res = run_compiled(program, rows)
    eager = masks(program, rows, eager_res, thr)
    compiled = masks(program, rows, res, thr)
    for symptom in wanted:
        hits = np.flatnonzero(compiled[symptom] & ~eager[symptom])
        mildest = sorted((int(i) for i in hits), key=lambda i: float(np.abs(rows[i]).max()))
        for i in mildest[:8]:
            row = rows[i]
            if far_inputs(program, row) or unreachable_reasons(program, row, None):
                continue
            alone = rows[i : i + 1]
            again = run_compiled(program, alone)
            if masks(program, alone, again, thr)[symptom][0]:
                return Witness(symptom, 0, alone, again)
    return None


def compiled_verdict(program: Program, w: Witness, thr: float) -> dict[str, Any]:
    """The compiled witness's verdict, saying that only the compiled form shows it and why."""
    out = confirmed(program, w)
    eager = run(program, w.rows)
    eager_value = format_number(float(np.ravel(eager["t"])[0]))
    out["observed"]["form"] = "compiled"
    out["observed"]["eager_value"] = eager_value
    out["detail"] = (
        f"only when compiled: {why(program)} (as under tf.function, Keras fit or a Session), "
        f"so {out['detail']}; evaluated eagerly it is {eager_value}"
    )
    return out


def why(program: Program) -> str:
    """The regrouping that changes the value: a constant absorbed by another in the same sum
    (``TensorFlow's graph optimizer folds 1 + 1e-10 to 1``), when the expression has one."""
    folded = folded_constants(program.probe.get("target"), trace_ops.DTYPES[program.dtype])
    if folded is None:
        return "TensorFlow's graph optimizer rewrites the expression"
    big, small = folded
    return (
        f"TensorFlow's graph optimizer folds {format_number(big)} + {format_number(small)} "
        f"to {format_number(big)}"
    )


def folded_constants(tree: Any, dtype: tf.DType) -> tuple[float, float] | None:
    """Two constants of one sum (``1 - p + 1e-10``) whose sum in the dtype is the larger one."""
    for node in trace.walk(tree):
        if node.get("k") != "bin" or node.get("op") not in ("+", "-"):
            continue
        consts = sorted(set(sum_constants(node)), key=abs, reverse=True)
        for j, big in enumerate(consts):
            for small in consts[j + 1 :]:
                a, b = tf.constant(big, dtype), tf.constant(small, dtype)
                if small and bool(tf.equal(a + b, a)):
                    return big, small
    return None


def sum_constants(node: Any) -> list[float]:
    """The constants added or subtracted along a chain of ``+``/``-`` (signs dropped)."""
    if not isinstance(node, dict):
        return []
    if node.get("k") == "const":
        return [abs(trace.parse_float(node["v"]))]
    if node.get("k") == "bin" and node.get("op") in ("+", "-"):
        return sum_constants(node["l"]) + sum_constants(node["r"])
    return []
