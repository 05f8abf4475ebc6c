"""The plain data a probe carries about its inputs: a :class:`Domain` per input and a
:class:`Relation` per pair, made by the static pass (``probe_annotate``) and read back by the
verifier (``verify/domains.py``) as JSON.  No TensorFlow, no libcst."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MIN_WIDTH = 1e-6  # a named interval narrower than this (relative to 1 or its ends) is degenerate


@dataclass
class Domain:
    """``name`` lies in [lo, hi] (lo excluded when ``lo_open``); ``why`` says where from."""

    name: str
    lo: float
    hi: float
    lo_open: bool
    why: str
    strong: bool  # from the code itself (an assertion, a producer), not from a name
    callers: bool = False  # the range of what the project's call sites pass
    integer: bool = False  # whole numbers only (an integer-form assertion, a count of items)

    def holds(self, v: float) -> bool:
        if math.isnan(v):
            return True
        if self.integer and math.isfinite(v) and v != math.floor(v):
            return False
        return (v > self.lo if self.lo_open else v >= self.lo) and v <= self.hi


@dataclass
class Relation:
    """``a op b`` between two inputs (op one of > >= < <=)."""

    a: str
    op: str
    b: str
    why: str
    strong: bool

    def holds(self, a: float, b: float) -> bool:
        if math.isnan(a) or math.isnan(b):
            return True
        if self.op == "==":
            return a == b
        if self.op == "sigmoid":  # a = sigmoid(b), to float32 rounding
            s = 0.5 * (1.0 + math.tanh(0.5 * b)) if math.isfinite(b) else float(b > 0)
            return abs(a - s) <= 1e-6 + 1e-3 * s
        if self.op in (">", "<"):  # strict: a real interval, not one of zero or subnormal width
            big, small = (a, b) if self.op == ">" else (b, a)
            return big - small >= MIN_WIDTH * max(1.0, abs(big), abs(small))
        return {">=": a >= b, "<=": a <= b}[self.op]


def fmt_g(v: float) -> str:
    return f"{v:g}"


def to_json_float(v: float) -> float | str:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def from_json_float(v: Any) -> float:
    return float(v)


def sanitize(code: str) -> str:
    """The label the slicer gives an input for this code: the user's text, white space folded
    (see ``Slicer._input``; a repeated label gets a `` (2)`` suffix)."""
    return " ".join(code.split()) or "x"


def without_weaker_duplicates(relations: list[Relation]) -> list[Relation]:
    """A name guess about two inputs that the code already relates is dropped: the code's
    assertion decides, and a witness that breaks it is refuted, not merely unlikely."""
    asserted = {frozenset((r.a, r.b)) for r in relations if r.strong}
    return [r for r in relations if r.strong or frozenset((r.a, r.b)) not in asserted]
