"""The hazards of a model graph, found from the op registry's facts (no rule codes here).

- ``danger``: an op with a danger zone (``Op.danger``) whose checked input's range reaches it;
  the producer of that input is reported (through the registry's value-preserving ops), so
  the rules can tell a log of a softmax from a log of anything.
- ``where``: a select (danger test ``branches``) with a branch computed by a danger op whose
  input reaches its zone: the select hides the value, not the gradient.
- ``absorbed``: an addition of a small constant that the other operand's range rounds away.
- ``underflow``: a cast of a nonzero constant to a float type in which it is exactly 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from ... import ops as ops_
from .. import intervals as iv
from .ranges import Box, const_value

EPSILON_MAX = 1e-3  # a constant this small, added to a value, is read as an epsilon
_LOW_FLOATS = ("float16", "bfloat16")


@dataclass
class Hazard:
    op: tf.Operation
    pattern: str  # danger | where | absorbed | underflow
    canonical: str  # the registry name of the op (or its graph type)
    checked: tf.Tensor | None  # the input whose range is checked
    range: iv.Interval
    reaches: bool  # the range touches the danger zone (False: refuted by the range)
    zone: str = ""
    what: str = ""
    test: str = ""
    bound: float = 0.0
    producer: str | None = None  # canonical op of the checked input's producer
    producer_op: str | None = None
    guarded: tf.Operation | None = None  # where: the danger op in the branch
    facts: dict = field(default_factory=dict)  # absorbed/underflow: the numbers


def _by_type() -> dict[str, ops_.Op]:
    return iv.tables().ops


def passthrough(t: tf.Tensor) -> tf.Tensor:
    """The tensor whose values ``t`` holds: through the registry's value-preserving ops."""
    table = _by_type()
    while t.op.inputs:
        entry = table.get(t.op.type)
        if t.op.type == "Cast" or (entry is not None and entry.interval == "same"):
            t = t.op.inputs[0]
            continue
        break
    return t


def producer_of(t: tf.Tensor) -> tuple[str, str]:
    src = passthrough(t)
    entry = _by_type().get(src.op.type)
    return (entry.name if entry is not None else src.op.type), src.op.name


def find(ops: list[tf.Operation], boxes: dict[str, Box]) -> list[Hazard]:
    """The hazards among ``ops`` (a graph's operations), with the tensors' boxes."""
    hulls = {name: box.hull for name, box in boxes.items()}
    found: list[Hazard] = []
    for op in ops:
        entry = _by_type().get(op.type)
        zone = entry.danger if entry is not None else None
        if (
            zone is not None
            and zone.test not in ("branches", "never")
            and zone.arg < len(op.inputs)
        ):
            found.append(_danger(op, entry, hulls))  # type: ignore[arg-type]  # zone => entry
        elif zone is not None and zone.test == "branches":
            found.extend(_where(op, hulls))
        elif op.type in ("Add", "AddV2", "Sub"):
            found.extend(_absorbed(op, hulls))
        elif op.type == "Cast":
            found.extend(_underflow(op))
    guarded = {h.guarded.name for h in found if h.guarded is not None}
    return [h for h in found if not (h.pattern == "danger" and h.op.name in guarded)]


def _danger(op: tf.Operation, entry: ops_.Op, hulls) -> Hazard:
    zone = entry.danger
    assert zone is not None
    reaches, label, rng = iv.danger(op, hulls, _dtype(op))
    checked = op.inputs[zone.arg]
    producer, producer_op = producer_of(checked)
    return Hazard(
        op,
        "danger",
        entry.name,
        checked,
        rng,
        reaches,
        label,
        iv.describe(op.type),
        zone.test,
        zone.bound,
        producer,
        producer_op,
    )


def _dtype(op: tf.Operation) -> str:
    for t in list(op.inputs) + list(op.outputs):
        if t.dtype.is_floating:
            return t.dtype.name
    return "float32"


def _where(op: tf.Operation, hulls) -> list[Hazard]:
    """A branch whose own producer is a danger op that reaches its zone."""
    out = []
    for branch in list(op.inputs)[1:3]:
        src = passthrough(branch)
        entry = _by_type().get(src.op.type)
        zone = entry.danger if entry is not None else None
        if entry is None or zone is None or zone.test in ("branches", "never"):
            continue
        reaches, label, rng = iv.danger(src.op, hulls, _dtype(src.op))
        if not reaches:
            continue
        checked = src.op.inputs[zone.arg]
        out.append(
            Hazard(
                op,
                "where",
                "where",
                checked,
                rng,
                True,
                label,
                iv.describe(src.op.type),
                zone.test,
                zone.bound,
                entry.name,
                src.op.name,
                guarded=src.op,
            )
        )
    return out


def _absorbed(op: tf.Operation, hulls) -> list[Hazard]:
    if not op.outputs[0].dtype.is_floating or len(op.inputs) != 2:
        return []
    dtype = op.outputs[0].dtype.name
    for i in (0, 1):
        value = const_value(passthrough(op.inputs[i]).op)
        if value is None or value.size != 1:
            continue
        c = float(value.reshape(-1)[0])
        if not 0 < abs(c) <= EPSILON_MAX:
            continue
        other = op.inputs[1 - i]
        lo, hi = hulls.get(other.name, iv.TOP)
        smallest = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
        if not math.isfinite(smallest) or smallest == 0.0:
            return []
        dt = iv.np_dtype(dtype)
        x = np.asarray(smallest if lo > 0 else -smallest, dt)
        total = (x + np.asarray(c, dt)) if op.type != "Sub" or i == 1 else (np.asarray(c, dt) - x)
        if not bool(total == (x if op.type != "Sub" or i == 1 else -x)):
            return []  # the epsilon survives at the value nearest 0: not absorbed anywhere
        facts = {"epsilon": c, "smallest": float(x), "dtype": dtype, "range": [lo, hi]}
        return [Hazard(op, "absorbed", "add", other, (lo, hi), True, facts=facts)]
    return []


def _underflow(op: tf.Operation) -> list[Hazard]:
    dst = op.outputs[0].dtype.name
    if dst not in _LOW_FLOATS:
        return []
    value = const_value(passthrough(op.inputs[0]).op)
    if value is None or value.size == 0:
        return []
    arr = np.asarray(value, np.float64).reshape(-1)
    nonzero = arr[arr != 0]
    if nonzero.size == 0:
        return []
    cast = np.asarray(nonzero, iv.np_dtype(dst)).astype(np.float64)
    lost = nonzero[cast == 0]
    if lost.size == 0:
        return []
    smallest = float(iv.finfo(dst).smallest_subnormal)
    facts = {"value": float(lost[0]), "dtype": dst, "smallest": smallest}
    rng = (float(lost.min()), float(lost.max()))
    return [Hazard(op, "underflow", "cast", op.inputs[0], rng, True, facts=facts)]
