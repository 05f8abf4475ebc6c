"""Where a confirmed symptom starts: at the flagged op, or in an operand already inf/NaN.

``a / (b - c) * d / e``: a witness with ``b == c`` makes the outer division's numerator inf
before the outer division runs, so the outer finding only repeats the inner one.  The worker
records that (``observed["upstream"]``: which operand, its text, its value) when the flagged
op has no witness of its own on the probe's grid, i.e. no point where every operand is finite
and the result is not; the report stage (``grouping.fold_upstream``) then folds the finding
into the finding flagged inside that operand.  Recorded before the domain and attribution
judges, which replace a witness by a reason, and kept whatever they conclude except refuted.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .. import ops as registry
from ..ops import Danger
from . import domains, trace
from .points import point_grid
from .program import TRACE_ERRORS, build, probe_dtype, run
from .symptoms import flat
from .trace import format_number
from .verdicts import VALUE_SYMPTOMS, flagged_operands, near_zone, operand_values


def upstream_start(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any] | None:
    """The operand of the flagged op that carries a confirmed value symptom in from upstream,
    or None when the symptom starts at the op (or the witness cannot be rebuilt)."""
    if out.get("status") != "confirmed" or out.get("symptom") not in VALUE_SYMPTOMS:
        return None
    if not isinstance(out.get("inputs"), dict):
        return None
    found = flagged_operands(probe.get("target"))
    if found is None:
        return None
    op_name, operands = found
    trees = [t for _, t in operands]
    try:
        values = operand_values(probe, out, trees, str(out.get("dtype")))
        if values is None:
            return None
        index = next(
            (i for i, v in enumerate(values) if v is not None and not math.isfinite(v)), None
        )
        if index is None or has_own_witness(probe, op_name, trees):
            return None
    except TRACE_ERRORS:
        return None
    role, subtree = operands[index]
    value = values[index]
    assert value is not None  # the index picked a value that is not finite
    return {
        "op": op_name,
        "operand": role,
        "index": index,
        "expr": trace.render(subtree),
        "value": format_number(value),
    }


def has_own_witness(probe: dict[str, Any], op_name: str, operands: list[Any]) -> bool:
    """Some grid point (inside the domains) where the flagged op yields inf/NaN from finite
    operands with its checked input in its danger zone (a divisor of 0): the op is a hazard
    of its own there, not only a carrier of an upstream one.  An overflow of finite operands
    (1e38 / 0.1) does not count: every division has one."""
    dtype = probe_dtype(probe)
    whole = build(probe, dtype, extras=False, grads=False)
    rows = point_grid(whole.inputs, dtype)
    names = [i.name if not i.prob else "" for i in whole.inputs]
    rows, _ = domains.split_rows(probe, names, rows)
    if not len(rows):
        return False
    zone = _danger(op_name)
    own = ~np.isfinite(flat(run(whole, rows)["t"])).all(1)
    for i, tree in enumerate(operands):
        if '"k": "input"' not in json.dumps(tree):
            continue  # a constant operand is finite (and its zone is the rule's business)
        part = {**probe, "target": tree, "loss": None}
        program = build(part, dtype, extras=False, grads=False, shape=(whole.k, whole.rank))
        values = flat(run(program, rows)["t"])
        own &= np.isfinite(values).all(1)
        if zone is not None and i == zone.arg:
            own &= np.array(
                [any(near_zone(zone.test, zone.bound, float(x)) for x in r) for r in values]
            )
    return bool(own.any())


def _danger(op_name: str) -> Danger | None:
    entry = registry.REGISTRY.get("divide" if op_name == "division" else op_name)
    return entry.danger if entry is not None else None


def with_upstream(out: dict[str, Any], upstream: dict[str, Any] | None) -> dict[str, Any]:
    """The final verdict with the upstream start attached (a refuted one needs none)."""
    if upstream is None or out.get("status") == "refuted":
        return out
    observed = dict(out.get("observed") or {})
    observed["upstream"] = upstream
    return {**out, "observed": observed}
