"""The range of a uniform draw, read from its bounds (static, libcst only).

``tf.random.uniform(shape, minval, maxval)`` and ``tf.random.stateless_uniform(shape, seed,
minval, maxval)`` return values in [minval, maxval): ``minval`` is 0 when left out, ``maxval``
is 1 when left out or None (a float draw).  The op registry gives each one's argument
positions (``Op.draw_bounds``); the value of each bound is the evaluator's, so a literal, a
module constant or ``np.finfo(dtype).tiny`` (> 0) bounds the draw.  A bound that is not known
leaves that end open (-inf or inf).  Only the code decides: no name of the caller or the draw's
target is read.
"""

from __future__ import annotations

import math
from typing import Any

import libcst as cst
import numpy as np

from .. import ops
from .module import Scope, call_arg
from .values import INF, Val

DEFAULT_MINVAL = 0.0
DEFAULT_MAXVAL = 1.0  # a float draw's maxval when it is None or left out


def bound_args(
    call: cst.Call, op: str | None
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None] | None:
    """The ``minval`` and ``maxval`` argument nodes of a uniform draw (None where left out),
    or None when ``op`` is no uniform draw."""
    entry = ops.REGISTRY.get(op) if op else None
    if entry is None or entry.draw_bounds is None:
        return None
    lo_at, hi_at = entry.draw_bounds
    return call_arg(call, lo_at, "minval"), call_arg(call, hi_at, "maxval")


def is_none(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def end_of(v: Val | None, low: bool, left_out: bool) -> float:
    """One end of the draw from the value its bound argument has (``v``; None: not known);
    ``left_out``: the argument is absent or None, so the op's default applies."""
    if left_out:
        return DEFAULT_MINVAL if low else DEFAULT_MAXVAL
    if v is None:
        return -INF if low else INF
    end = v.lo if low else v.hi
    return end if not math.isnan(end) else (-INF if low else INF)


def uniform_draw(lo: float, hi: float, desc: str = "") -> Val:
    """A uniform draw's value in [lo, hi): the kind every random source has, with its range
    (the open end closed at :func:`below`)."""
    if lo > hi:  # bounds the evaluator cannot order: nothing known
        lo, hi = -INF, INF
    return Val("random", lo, below(hi), tensor=True, desc=desc or "a uniform draw")


def draw_value(ev: Any, node: cst.Call, args, scope: Scope, order: int) -> Val:
    """The transfer of a uniform draw op: its range from its bounds' values."""
    found = bound_args(node, ev.op(node))
    if found is None:
        return Val("random", tensor=True, desc="a random")
    ends = []
    for arg, low in zip(found, (True, False), strict=True):
        left_out = arg is None or is_none(arg)
        v = None if left_out or arg is None else ev.value(arg, scope, order)
        ends.append(end_of(v, low, left_out))
    lo, hi = ends
    shown = [f"{e:g}" if math.isfinite(e) else "?" for e in (lo, hi)]
    return uniform_draw(lo, hi, f"a uniform draw in [{shown[0]}, {shown[1]})")


def below(end: float) -> float:
    """The largest value a draw under the open end ``end`` takes, as a closed bound: the float32
    just below it (a float32 draw's largest; a float64 one's is closer, but never ``end``), so
    that ``1 - u`` of a draw in [0, 1) is never 0 at a witness the verifier rounds to float32."""
    if not math.isfinite(end):
        return end
    return float(np.nextafter(np.float32(end), np.float32(-np.inf)))
