"""The abstract values of the provenance analysis: :class:`Val`, their join, and literals.

A value is a closed interval ``[lo, hi]`` with float semantics in mind (a float32 sigmoid
*really* reaches 0 and 1), plus what produced it and why it can be exactly 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import libcst as cst

from .. import ops
from ..floats import round_to

INF = math.inf
# producer kinds of a linear output (a logit): scaling it by a Python scalar keeps it one
# (the raw linear ops, and "linear": a Keras layer without an activation)
LINEAR_KINDS = ops.RAW_LINEAR | {"linear"}
# Keras layers and models: calling one gives its output activation's range
LAYER_KINDS = frozenset({"layer", "model"})


@dataclass(frozen=True)
class Val:
    """The abstract value of an expression."""

    kind: str = "unknown"  # producer: sigmoid, softmax, relu, exp, param, matmul, arith, ...
    lo: float = -INF
    hi: float = INF
    const: float | None = None
    tensor: bool = False  # known to be a TF tensor
    prob: bool = False  # a probability in [0, 1]
    prob_by_use: bool = False  # ...only because of how its scope uses it (roles)
    guarded: bool = False  # passed through clip/maximum/+eps that keeps it away from 0
    zero: str | None = None  # why it can be exactly 0, when it can
    zero_weak: bool = False  # ...only if an arbitrary input is exactly 0 (square(x), abs(x))
    desc: str = ""  # how to name it in a message
    activation: str | None = None  # layers and models: their output activation
    trained: bool = False  # a layer's or model's output: a value training drives
    # ...or the parameter of the enclosing function that names it (`Dense(k, activation=act)`
    # in a model-building helper): each call of the helper puts its argument in
    activation_param: str | None = None
    exp_sum: bool = False  # a sum of exponentials (manual softmax / logsumexp)
    has_exp: bool = False  # an exp somewhere inside, unshifted
    one_hot: bool = False
    logits: cst.BaseExpression | None = None  # for sigmoid/softmax outputs: their input
    tuple_items: tuple[Val, ...] | None = None
    instance_of: str | None = None  # an instance of a class: `C` here, `module:C` elsewhere
    log_space: bool = False  # computed from logs (a log-likelihood): exp of it is intended
    origin: tuple | None = None  # the call site that passed it (project.Origin)
    integer: bool = False  # takes whole-number values only (an asserted integer-form count)
    # a strictly positive value (softmax, sigmoid, exp, softplus) times a mask: 0 only where
    # the mask is; the mask's code (`mask[0]`) and the positive producer's kind
    masked_by: tuple[str, str] | None = None
    # a dispersion (a moments variance) over the batch axis 0: the producer of what it
    # reduces (`relu` when a dead unit can make it 0 across the whole batch)
    batch_of: str | None = None
    # the squashing op whose saturation makes this value reach an end of its range exactly
    # (`tanh`: tanh(u), tanh(u)**2 and 1 - tanh(u)**2 reach +-1, 1 and 0 in floating point)
    saturates: str | None = None

    @property
    def known(self) -> bool:
        return self.kind not in ("unknown", "param", "call", "name")

    @property
    def can_be_zero(self) -> bool:
        return self.lo <= 0.0 <= self.hi

    @property
    def positive(self) -> bool:
        return self.lo > 0.0


_VAL_FIELDS = frozenset(f.name for f in fields(Val))


def revalue(val: Val, /, **changes: Any) -> Val:
    """``dataclasses.replace(val, **changes)``, without its field scan and the frozen
    ``__setattr__`` per field: the evaluator derives a value from another for most names it
    reads, and the generic copy was a few percent of the static pass."""
    if not _VAL_FIELDS.issuperset(changes):
        raise TypeError(f"Val has no field {sorted(set(changes) - _VAL_FIELDS)}")
    new = object.__new__(Val)
    state = new.__dict__
    state.update(val.__dict__)
    state.update(changes)
    return new


UNKNOWN = Val()
# producers whose output is never exactly 0 short of a saturation or an underflow
STRICTLY_POSITIVE_KINDS = ops.STRICTLY_POSITIVE
NOT_KNOWN = ("unknown", "param", "call", "name")


def _risk(v: Val) -> int:
    """How much a value can do harm downstream: the join keeps the riskiest producer."""
    if v.kind in NOT_KNOWN:
        return 0
    return 1 + (not v.guarded) + v.prob + (v.zero is not None and not v.zero_weak) + (v.hi == INF)


def join_vals(vals: list[Val]) -> Val:
    """The join over call sites (a may-analysis): a hazard any site makes real is kept, a
    guarantee only when every site gives it.  The riskiest value names the producer."""
    if len(vals) == 1:
        return vals[0]
    rep = max(vals, key=_risk)  # max() keeps the first of equals: deterministic by site order
    consts = {v.const for v in vals}
    return revalue(
        rep,
        lo=min(v.lo for v in vals),
        hi=max(v.hi for v in vals),
        const=rep.const if len(consts) == 1 else None,
        tensor=any(v.tensor for v in vals),
        prob=rep.prob,
        guarded=all(v.guarded for v in vals),
        zero=next((v.zero for v in vals if v.zero and not v.zero_weak), rep.zero),
        zero_weak=all(v.zero_weak or v.zero is None for v in vals) and rep.zero_weak,
        log_space=all(v.log_space for v in vals),
        has_exp=any(v.has_exp for v in vals),
        exp_sum=any(v.exp_sum for v in vals),
        one_hot=all(v.one_hot for v in vals),
        tuple_items=rep.tuple_items,
        integer=all(v.integer for v in vals),
        masked_by=rep.masked_by if all(v.masked_by for v in vals) else None,
        trained=any(v.trained for v in vals),  # training drives it through that call site
    )


def constant(value: float) -> Val:
    return Val("constant", value, value, const=value, desc=repr(value))


def number(node: cst.BaseExpression) -> float | None:
    """A numeric literal, with unary minus."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return literal_number(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return -inner if inner is not None else None
    return None


def literal_number(node: cst.Integer | cst.Float) -> float | None:
    """The value of a numeric literal.  (``evaluated_value`` calls ast.literal_eval, which
    compiles: 60 us a literal, most of the analysis time on numeric-heavy files.)"""
    text = node.value.replace("_", "")
    try:
        if isinstance(node, cst.Integer):
            return float(int(text, 0))
        return float(text)
    except (ValueError, OverflowError):
        return None


def _mul(a: float, b: float) -> float:
    if (a == 0 and math.isinf(b)) or (b == 0 and math.isinf(a)):
        return 0.0
    return a * b


def interval_mul(x: Val, y: Val) -> tuple[float, float]:
    products = [_mul(x.lo, y.lo), _mul(x.lo, y.hi), _mul(x.hi, y.lo), _mul(x.hi, y.hi)]
    return min(products), max(products)


def rounded(v: Val, dtype: str) -> Val:
    """A constant as the dtype stores it: 1e-9 is 0 in float16."""
    if v.const is None or dtype != "float16":
        return v
    c = round_to(v.const, dtype)
    return v if c == v.const else revalue(v, lo=c, hi=c, const=c)


def paren(desc: str) -> str:
    """Parenthesise a compound description inside a larger one."""
    return f"({desc})" if " " in desc else desc
