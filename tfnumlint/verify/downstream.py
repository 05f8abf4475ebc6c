"""Does the symptom survive where the flagged value goes?  One decision, with its reason.

A witness shows the flagged expression's value broken (NaN, inf, or a precision loss).  The
code may handle it right after: a select whose condition picks the other branch at the
witness, a comparison (only a boolean comes out), a log-sum-exp where a -inf entry is exact,
a draw from logits, an argmax or a top-k where a -inf entry is an impossible outcome that
sorts last (as long as its row keeps a finite entry), or a sum whose own rounding is larger
than the precision lost.  The sinks come from the static half
(``analysis/slicing/uses.py``); here they are evaluated at the witness, never assumed.

A select, a log-sum-exp or a maximum handles the forward value only: in differentiated code the
gradient of the discarded NaN still reaches the inputs (the ``tf.where`` gradient trap: 0 *
NaN = NaN).  So where a gradient may flow and the flagged value's own gradient is NaN/inf at
the witness, the finding stays confirmed as that gradient symptom.  A comparison, a draw and
an index (argmax, argsort, top_k's indices) pass no gradient back at all.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from . import intervals as iv
from . import trace, trace_ops
from .gradient_gate import labels_only_reason
from .program import TRACE_ERRORS, Program, build, probe_dtype, run
from .symptoms import flat
from .trace import format_number

VALUE_SYMPTOMS = frozenset({"nan-value", "inf-value"})
GENERIC_VALUES = (-1.0, 0.0, 0.5, 1.0, 2.0)  # values tried for a condition's extra free inputs
MAX_EXTRA = 3
# Sinks that pass no gradient back: only a boolean, a drawn index or an order comes out.
GRADIENT_FREE = frozenset({"compare", "sample", "order"})
# Sinks where a -inf entry is exact while its row keeps a finite entry.
ORDER_KINDS = frozenset({"sample", "order", "max"})


@dataclass
class Handled:
    """Every sink of the flagged value handles its symptom at the witness: ``reason`` says
    how; ``gradient_free`` when no sink passes a gradient back (comparisons only);
    ``instead`` the non-finite value ("inf") every select takes there instead, if it does."""

    reason: str
    gradient_free: bool
    instead: str | None = None


def review(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The verdict for a value-symptom witness whose value the code handles downstream.  An
    inconclusive witness (one the code may not reach) is refuted too when the value is handled
    and no gradient symptom is left; when only the gradient trap is left, it keeps its own
    reason as the trap's condition, and says that the value is handled."""
    uses = probe.get("uses")
    status = out.get("status")
    if status not in ("confirmed", "inconclusive") or not uses:
        return out
    if out.get("symptom") not in VALUE_SYMPTOMS or not isinstance(out.get("inputs"), dict):
        return out
    handled = handled_downstream(probe, out, uses)
    if handled is None:
        return out
    verdict = _gradient_verdict(probe, out, handled)
    if status == "inconclusive" and verdict["status"] != "refuted":
        return {**verdict, "status": "inconclusive"}  # the value is handled: only its gradient
    return verdict


def _gradient_verdict(probe: dict[str, Any], out: dict[str, Any], handled: Handled) -> dict:
    seen = out.get("detail", "")
    if handled.gradient_free:
        return {**out, "status": "refuted", "detail": f"{seen}; but handled: {handled.reason}"}
    no_grad = probe.get("no_gradient")
    if no_grad and not probe.get("no_gradient_likely"):
        detail = f"{seen}; but handled: {handled.reason}, and no gradient flows here ({no_grad})"
        return {**out, "status": "refuted", "detail": detail}
    bad = _bad_gradient(out)
    # gradflow's rule: a label's gradient trains nothing; nor does a count's
    labels = labels_only_reason(out, probe) or counts_only_reason(probe, out)
    if bad is not None and labels:
        detail = f"{seen}; but handled: {handled.reason}, and {labels}"
        return {**out, "status": "refuted", "detail": detail}
    if bad is None:
        detail = f"{seen}; but handled: {handled.reason}, and its gradient is finite there"
        return {**out, "status": "refuted", "detail": detail}
    if handled.instead is not None:
        detail = (
            f"{seen}; {handled.reason}, and the value taken instead is {handled.instead} "
            f"there too: the gradient trap ({bad[1]} gradient) matters only if later code "
            f"turns that {handled.instead} into a finite value (1 / inf = 0)"
        )
        symptom = "nan-gradient" if bad[1] == "nan" else "inf-gradient"
        return {**out, "status": "inconclusive", "symptom": symptom, "detail": detail}
    name, value = bad
    trap = (
        f"{seen}; {handled.reason}, but its gradient is {value} there (d/d{name}): the "
        f"chain rule multiplies it by 0 and still gets nan, which reaches the inputs"
    )
    if no_grad:
        detail = f"{trap}; no gradient is likely to flow here ({no_grad})"
        return {**out, "status": "inconclusive", "detail": detail}
    symptom = "nan-gradient" if value == "nan" else "inf-gradient"
    return {**out, "symptom": symptom, "detail": trap}


# Ops whose result counts items: TensorFlow defines no gradient through them.
COUNTING_CALLS = frozenset(
    {"confusion_matrix", "bincount", "histogram_fixed_width", "count_nonzero"}
)


def counts_only_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """The bad gradient is only with respect to counts (``tf.math.confusion_matrix(...)``,
    ``bincount``) and NumPy host constants (``np.finfo(dtype).eps``): no gradient reaches
    either, so nothing trains through that one."""
    grads = (out.get("observed") or {}).get("gradient") or {}
    bad = [n for n, v in grads.items() if _non_finite(v)]
    sources = {str(s.get("name")): str(s.get("source") or "") for s in probe.get("inputs") or []}
    counts = [n for n in bad if _counting(sources.get(n, ""))]
    if not counts or not all(n in counts or _host(sources.get(n, "")) for n in bad):
        return None
    return f"the bad gradient is only with respect to `{counts[0]}`, a count, which has none"


def _counting(source: str) -> bool:
    call = re.match(r"[\w.]*?(\w+)\(", source)
    return call is not None and call.group(1) in COUNTING_CALLS and "weights=" not in source


def _host(source: str) -> bool:
    return bool(re.match(r"(?:np|numpy|math)\.", source))


def _non_finite(value: Any) -> bool:
    if value in ("nan", "inf", "-inf"):
        return True
    return isinstance(value, float) and not math.isfinite(value)


def _bad_gradient(out: dict[str, Any]) -> tuple[str, str] | None:
    """(input, "nan"/"inf") of the flagged value's first non-finite gradient at the witness."""
    grads = (out.get("observed") or {}).get("gradient") or {}
    for name, value in grads.items():
        if value in ("nan", "inf", "-inf"):
            return name, "nan" if value == "nan" else "inf"
        if isinstance(value, float) and not math.isfinite(value):
            return name, "nan" if math.isnan(value) else "inf"
    return None


def handled_downstream(
    probe: dict[str, Any], out: dict[str, Any], uses: dict[str, Any]
) -> Handled | None:
    """How every sink handles the symptom at the witness, or None if one does not (or a
    sink cannot be evaluated there)."""
    sinks = uses.get("sinks") or []
    if not sinks:
        return None
    value = (out.get("observed") or {}).get("value")
    reasons: list[str] = []
    instead: list[str | None] = []
    for sink in sinks:
        kind = sink.get("kind")
        where = f"`{sink.get('code')}` at line {sink.get('line')}"
        if kind == "compare":
            reasons.append(f"only compared, in {where}")
        elif kind == "select":
            if not _discarded(probe, out, uses, sink):
                return None
            reasons.append(f"discarded by {where}, whose condition selects the other value there")
            instead.append(_non_finite_instead(probe, out, uses, sink))
        elif kind == "logsumexp":
            if value != "-inf" or not _exact_entries(probe, out, uses, sink, sinks):
                return None
            reasons.append(f"a -inf entry of {where}, where it is exact (exp(-inf) = 0)")
        elif kind in ORDER_KINDS:
            if value != "-inf" or not _ordered_entries(probe, out, uses, sink, sinks):
                return None
            reasons.append(_order_reason(kind, where))
        else:
            return None
    gradient_free = all(s.get("kind") in GRADIENT_FREE for s in sinks)
    taken = instead[0] if instead and len(set(instead)) == 1 else None
    if len(instead) != len(sinks):
        taken = None  # another sink passes the value on: its gradient trap still counts
    return Handled("; ".join(dict.fromkeys(reasons)), gradient_free, taken)


def _non_finite_instead(probe: dict, out: dict, uses: dict, sink: dict) -> str | None:
    """``inf``/``-inf``/``nan`` when the branch a select takes instead of the flagged value is that
    at every element at the witness (``tf.where(t < 0.5, var, np.inf)``: a variance that is
    infinite by definition there), else None.  The discarded value's NaN gradient then sits
    where the result is not finite by design: a symptom only if later code, which is not
    followed, makes that value finite again."""
    values = _evaluate(probe, out, uses, sink.get("other"))
    if not values:
        return None
    kinds = set()
    for v in values:
        if np.isfinite(v).any():
            return None
        kinds |= {"nan" if np.isnan(x) else ("inf" if x > 0 else "-inf") for x in np.ravel(v)}
    return kinds.pop() if len(kinds) == 1 else None


def _order_reason(kind: str, where: str) -> str:
    if kind == "sample":
        return f"it only feeds the logits of {where}, where -inf is an impossible outcome"
    if kind == "max":
        return f"a -inf entry of {where}, whose row keeps a finite maximum"
    return f"only ordered, by {where}, where -inf sorts last"


def _checked_before(sinks: list[dict]) -> bool:
    """A sink reached through a top_k/sort's values has no slice of its own: the entries were
    checked on that reorder's input, an ``order`` sink with its slice."""
    return any(s.get("kind") == "order" and isinstance(s.get("arg"), dict) for s in sinks)


def _discarded(probe: dict, out: dict, uses: dict, sink: dict) -> bool:
    """The condition, at the witness (and at every generic value of inputs only it reads),
    selects the other branch at every element."""
    values = _evaluate(probe, out, uses, sink.get("cond"))
    if values is None:
        return False
    keep = bool(sink.get("selected_when"))
    return all(bool(np.all((v != 0) != keep)) for v in values)


def _exact_entries(probe: dict, out: dict, uses: dict, sink: dict, sinks: list[dict]) -> bool:
    """The log-sum-exp's argument holds no NaN and no +inf at the witness: only finite
    entries and -inf ones, which it handles exactly."""
    if sink.get("arg") is None:
        return _checked_before(sinks)
    values = _evaluate(probe, out, uses, sink.get("arg"))
    if values is None:
        return False
    return all(not np.isnan(v).any() and not np.isposinf(v).any() for v in values)


def _ordered_entries(probe: dict, out: dict, uses: dict, sink: dict, sinks: list[dict]) -> bool:
    """A draw, an order or a maximum is exact at a -inf entry, not at NaN or +inf, and only
    while the row keeps a finite entry (TensorFlow draws an out-of-range index from a row of
    -inf logits).  At the witness every entry of the row is broken alike, so the row is
    evaluated with the witness in one entry and ordinary values in the other: the -inf must be
    there, with no NaN or +inf, and some entry of each row finite.  A -inf the argument
    spreads over its whole row (a log of a row sum) fails that test."""
    if sink.get("arg") is None:
        return _checked_before(sinks)
    whole = _evaluate(probe, out, uses, sink.get("arg"))
    if whole is None or any(np.isnan(v).any() or np.isposinf(v).any() for v in whole):
        return False
    for other in GENERIC_VALUES:
        rows = _evaluate(probe, out, uses, sink.get("arg"), other=other)
        if rows is not None and all(_finite_row(v) for v in rows):
            return True
    return False


def _finite_row(v: np.ndarray) -> bool:
    """-inf entries beside a finite one in every row (the last axis), and no NaN or +inf."""
    if np.isnan(v).any() or np.isposinf(v).any() or not np.isneginf(v).any():
        return False
    if v.ndim == 0:
        return bool(np.isfinite(v))
    return bool(np.isfinite(v).any(axis=-1).all())


def _evaluate(
    probe: dict[str, Any],
    out: dict[str, Any],
    uses: dict[str, Any],
    tree: Any,
    other: float | None = None,
) -> list[np.ndarray] | None:
    """``tree``'s value at the witness, once per generic assignment of the inputs the probe
    does not have; None when it cannot be rebuilt or traced.  With ``other``, each input the
    flagged expression reads is a row of two entries: the witness, then ``other`` (a
    probability's logit), so one entry is broken and the rest of its row ordinary."""
    if not isinstance(tree, dict):
        return None
    # the witness fixes only what the flagged expression reads; an input of its statement
    # alone (`should_stop` in `tf.where(should_stop, f, a / b)`) took an arbitrary value there
    read = _tree_inputs(probe.get("target"))
    probe_inputs = list(probe.get("inputs") or [])
    fixed = [spec for spec in probe_inputs if spec.get("name") in read]
    free = [spec for spec in probe_inputs if spec.get("name") not in read]
    free += list(uses.get("inputs") or [])
    if len(free) > MAX_EXTRA:
        return None
    part = {**probe, "target": tree, "loss": None, "inputs": fixed + free}
    try:
        given = out.get("dtype")
        dtype = (
            given if isinstance(given, str) and given in trace_ops.DTYPES else probe_dtype(probe)
        )
        whole = _whole(probe, dtype)
        witness = witness_row(whole, out["inputs"])
        if witness is None:
            return None
        row = [v for spec, v in zip(whole.inputs, witness, strict=True) if spec.name in read]
        k = whole.k if other is None else 2
        program = build(part, dtype, extras=False, grads=False, shape=(k, whole.rank))
        tails = list(itertools.product(GENERIC_VALUES, repeat=len(free))) or [()]
        rows = np.array([row + list(tail) for tail in tails], dtype=np.float64)
        if other is None:
            t = flat(run(program, rows)["t"])
        else:
            t = _run_two_entries(program, rows, len(row), other)
    except TRACE_ERRORS:
        return None
    return [t[i] for i in range(len(rows))]


def _run_two_entries(program: Program, rows: np.ndarray, fixed: int, other: float) -> np.ndarray:
    """``program`` (built with rows of two entries) on inputs whose first ``fixed`` columns
    hold the point in entry 0 and ``other`` in entry 1; the rest (inputs only a sink reads, a
    divisor kept alike across the row) hold their value in both.  The result keeps its axes:
    the last is the row."""
    n = rows.shape[0]
    tensors = []
    for j, spec in enumerate(program.inputs):
        arr = np.repeat(rows[:, j : j + 1], 2, axis=1)
        if j < fixed and not spec.scale:
            arr[:, 1] = other
        arr = arr.reshape((n, *[1] * (program.rank - 1), 2))
        tensors.append(tf.constant(arr.astype(iv.np_dtype(program.dtype))))
    return np.asarray(tf.cast(program.fn(*tensors)["t"], tf.float64))


def _tree_inputs(tree: Any) -> set[str]:
    return {str(n.get("name")) for n in trace.walk(tree) if n.get("k") == "input"}


def _whole(probe: dict[str, Any], dtype: str) -> Program:
    """The probe as the witness was found on: with its statement, or the target alone when
    the statement does not trace (``program.build_with_fallback``), forward only."""
    try:
        return build(probe, dtype, extras=False, grads=False)
    except TRACE_ERRORS:
        if probe.get("loss") is None:
            raise
    return build({**probe, "loss": None}, dtype, extras=False, grads=False)


def witness_row(program: Program, witness: dict[str, Any]) -> list[float] | None:
    """The witness as one row of ``program``'s inputs (a softmax input by its logit), or
    None when it does not name them all."""
    row = []
    for spec in program.inputs:
        key = f"logit({spec.name})" if spec.prob else spec.name
        if key not in witness:
            return None
        row.append(trace.parse_float(witness[key]))
    return row


# ---------------------------------------------------------------- precision absorbed by the sum

FLAGGED = "flagged value"
NON_FINITE = "the statement is not finite there"


def precision_absorbed(
    program: Program, probe: dict[str, Any], rows: np.ndarray
) -> list[str | None]:
    """Per row: why the precision lost at the flagged expression does not show in its
    statement, or None when it does (or cannot be told).  A statement already NaN/inf there
    (another term's log(0)) shows no precision at all: that is another finding's symptom.  The statement must be a sum whose
    terms hold the flagged expression; its own rounding is the largest term's (unit roundoff
    times its magnitude), and the loss is how much the statement moves when the flagged
    expression is computed exactly instead of in the dtype (both in float64)."""
    none: list[str | None] = [None] * len(rows)
    loss, target = probe.get("loss"), probe.get("target")
    if loss is None or not program.has_loss or program.k != 1:
        return none
    terms = additive_terms(loss)
    if not any(_holds(term, target) for term in terms):
        return none
    swapped = _replace(loss, target, {"k": "input", "name": FLAGGED})
    spec = {"name": FLAGGED, "lo": "-inf", "hi": "inf", "prob": False, "producer": "value"}
    base = {**probe, "loss": None}
    shape = (program.k, program.rank)
    try:
        low = flat(run(program, rows)["t"])
        exact = _exact(base, shape)
        high = flat(run(exact, rows)["t"])
        if low.shape[1] != 1 or high.shape[1] != 1:
            return none
        swapped_probe = {**base, "target": swapped, "inputs": [*probe.get("inputs", []), spec]}
        stmt = _exact(swapped_probe, shape)
        with_low = flat(run(stmt, np.column_stack([rows, low[:, 0]]))["t"])
        with_high = flat(run(stmt, np.column_stack([rows, high[:, 0]]))["t"])
        sizes = [flat(run(_exact({**base, "target": t}, shape), rows)["t"]) for t in terms]
    except TRACE_ERRORS:
        return none
    unit = float(iv.finfo(program.dtype).eps) / 2
    out = list(none)
    for i in range(len(rows)):
        if not np.isfinite(with_high[i]).all():
            out[i] = NON_FINITE + (
                f" ({format_number(float(with_high[i][0]))}) whatever the precision of "
                f"`{trace.render(target)}`"
            )
            continue
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: the test below fails
            lost = float(np.max(np.abs(with_low[i] - with_high[i])))
        largest = max(float(np.max(np.abs(s[i]))) for s in sizes)
        own = unit * largest
        if math.isfinite(lost) and math.isfinite(own) and lost <= own:
            out[i] = (
                f"the precision lost at `{trace.render(target)}` ({format_number(lost)}) is below "
                f"the statement's own rounding ({format_number(own)}, a term of "
                f"{format_number(largest)} in {program.dtype}): the loss does not show there"
            )
    return out


def _exact(probe: dict[str, Any], shape: tuple[int, int]) -> Program:
    """The probe's target in float64, on the input shapes of the whole probe."""
    return build(probe, "float64", extras=False, grads=False, shape=shape)


def absorbed_reason(reasons: list[str | None]) -> str:
    """The reason to show when every diverging point's loss is absorbed: one at a point where
    the statement is finite, if any (a rounding comparison says more than a broken value)."""
    given = [r for r in reasons if r]
    return next((r for r in given if not r.startswith(NON_FINITE)), given[0])


def additive_terms(tree: Any) -> list[Any]:
    """The terms of a sum at the root of ``tree`` (``a - b - c`` -> [a, b, c]); a root that is
    not a sum is one term."""
    if isinstance(tree, dict) and tree.get("k") == "bin" and tree.get("op") in ("+", "-"):
        return additive_terms(tree["l"]) + additive_terms(tree["r"])
    if isinstance(tree, dict) and tree.get("k") == "neg":
        return additive_terms(tree["x"])
    return [tree]


def _holds(tree: Any, target: Any) -> bool:
    if tree == target:
        return True
    if isinstance(tree, dict):
        return any(_holds(v, target) for v in tree.values())
    if isinstance(tree, list):
        return any(_holds(v, target) for v in tree)
    return False


def _replace(tree: Any, target: Any, by: Any) -> Any:
    if tree == target:
        return by
    if isinstance(tree, dict):
        return {k: _replace(v, target, by) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_replace(v, target, by) for v in tree]
    return tree
