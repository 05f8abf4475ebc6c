"""How the evaluator (:mod:`.provenance`) reads arithmetic: constants folded, ranges
combined, and the facts a division or a product carries (a value normalised by its own sum, a
masked factor, a linear output scaled).  Static: libcst only.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .. import ops
from .module import ModuleInfo, Scope
from .names import ImportMap
from .values import (
    INF,
    LINEAR_KINDS,
    STRICTLY_POSITIVE_KINDS,
    Val,
    constant,
    interval_mul,
    paren,
    revalue,
    rounded,
)


class EvaluatesArithmetic:
    """The evaluator's reading of arithmetic, mixed into :class:`~.provenance.Evaluator`."""

    imports: ImportMap
    info: ModuleInfo

    # the host class's own, which these methods call back
    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val:
        raise NotImplementedError

    def _binop(self, node: cst.BinaryOperation, scope: Scope, order: int) -> Val:
        a = self.value(node.left, scope, order)
        b = self.value(node.right, scope, order)
        op = node.operator
        tensor = a.tensor or b.tensor
        if a.const is not None and b.const is not None:
            try:
                c = _fold(op, a.const, b.const)
            except (ZeroDivisionError, OverflowError, ValueError):
                c = None
            if c is not None:
                return constant(c)
        if isinstance(op, cst.Add):
            dtype = self.info.dtype(scope)
            a, b = rounded(a, dtype), rounded(b, dtype)
            lo, hi = a.lo + b.lo, a.hi + b.hi
            # a sum of non-negatives is 0 only when both are: keep a reason only then
            both = a.lo >= 0 and b.lo >= 0 and a.can_be_zero and b.can_be_zero
            zero = (a.zero or b.zero) if both and (a.zero or b.zero) else None
            gap = saturation_gap(a, b, -b.lo) or saturation_gap(b, a, -a.lo)  # 1 + tanh(u)
            zero = zero or gap
            guarded = (a.guarded or b.guarded) or (
                (a.lo >= 0 and b.const is not None and b.const > 0)
                or (b.lo >= 0 and a.const is not None and a.const > 0)
            )
            linear = LINEAR_KINDS & {a.kind, b.kind} and not (
                a.prob or b.prob or a.has_exp or b.has_exp
            )
            return Val(
                "linear" if linear else "arith",
                lo,
                hi,
                tensor=tensor,
                guarded=guarded,
                zero=zero,
                zero_weak=a.zero_weak and b.zero_weak,
                saturates=(a.saturates or b.saturates) if gap else None,
                desc=f"{paren(a.desc)} + {paren(b.desc)}",
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
            )
        if isinstance(op, cst.Subtract):
            if b.kind == "reduce_max":  # x - reduce_max(x): the max-shifted form, <= 0
                return Val("diff_max", -INF, 0.0, tensor=True, desc="a max-shifted value")
            lo, hi = a.lo - b.hi, a.hi - b.lo
            prob = a.const == 1.0 and b.prob
            kind = "diff" if a.const is None and b.const is None else "arith"
            gap = saturation_gap(a, b, b.hi)
            return Val(
                kind,
                lo,
                hi,
                tensor=tensor,
                prob=prob,
                prob_by_use=prob and b.prob_by_use,
                zero="its operands are equal" if kind == "diff" else gap,
                saturates=b.saturates if gap else None,
                desc=f"{paren(a.desc)} - {paren(b.desc)}",
                logits=b.logits if prob else None,
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
                activation=b.kind if prob and b.kind in ("sigmoid",) else None,
            )
        if isinstance(op, cst.Multiply):
            lo, hi = interval_mul(a, b)
            prob = (a.prob or a.one_hot) and (b.prob or b.one_hot) and (a.prob or b.prob)
            zero = (
                a.zero or b.zero
                if (a.can_be_zero or b.can_be_zero) and (a.known or b.known)
                else None
            )
            return Val(
                "linear" if _scaled_linear(a, b) or _scaled_linear(b, a) else "arith",
                lo,
                hi,
                tensor=tensor,
                prob=prob,
                zero=zero,
                one_hot=a.one_hot and b.one_hot,
                desc=f"{paren(a.desc)} * {paren(b.desc)}",
                masked_by=_masked(a, b, node.right) or _masked(b, a, node.left),
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
            )
        if isinstance(op, cst.Divide):
            if b.lo > 0 or b.hi < 0:
                inv = (1 / b.hi if b.hi else INF, 1 / b.lo if b.lo else INF)
                lo, hi = interval_mul(a, Val(lo=min(inv), hi=max(inv)))
            else:
                lo, hi = -INF, INF
            if a.lo >= 0 and b.lo >= 0:
                lo = max(lo, 0.0)
            softmax = a.has_exp and b.exp_sum
            if not softmax and _normalised_by_own_sum(self.imports, node.left, node.right):
                return Val(
                    "normalised",
                    0.0,
                    1.0,
                    tensor=tensor,
                    prob=True,
                    zero=f"an entry of {a.desc or 'the numerator'} is 0 (an empty bin or count)",
                    desc=f"{paren(a.desc)} / {paren(b.desc)}",
                )
            return Val(
                "softmax" if softmax else "arith",
                0.0 if softmax else lo,
                1.0 if softmax else hi,
                tensor=tensor,
                prob=softmax,
                desc=f"{paren(a.desc)} / {paren(b.desc)}",
            )
        if isinstance(op, cst.Power):
            if (
                b.const is not None
                and b.const == int(b.const)
                and int(b.const) % 2 == 0
                and b.const > 0
            ):
                strong = a.zero is not None and not a.zero_weak
                bound = max(abs(a.lo), abs(a.hi)) if a.saturates else INF  # tanh(u)**2 <= 1
                return Val(
                    "square",
                    0.0,
                    bound**b.const,
                    tensor=tensor,
                    zero=a.zero if strong else "its base is 0",
                    zero_weak=not strong,
                    desc=f"{paren(a.desc)}**{fmt_number(b.const)}",
                    saturates=a.saturates,
                )
            return Val("arith", tensor=tensor)
        return Val("arith", tensor=tensor)


def fmt_number(v: float) -> str:
    return f"{v:g}"


def _masked(value: Val, factor: Val, factor_node: cst.BaseExpression) -> tuple[str, str] | None:
    """``softmax(z) * mask``: a strictly positive value (or one already masked) times a mask is
    0 exactly where the mask is, so a witness needing it all-zero needs an empty mask.  A ReLU
    output is no such value: it is 0 by itself."""
    if factor.kind != "mask":
        return None
    if value.masked_by:
        return value.masked_by
    if value.kind not in STRICTLY_POSITIVE_KINDS:
        return None
    return (cst.Module([]).code_for_node(factor_node), value.kind)


def _scaled_linear(x: Val, factor: Val) -> bool:
    """A linear output times a Python scalar (a temperature, a constant) is still one."""
    return (
        x.kind in LINEAR_KINDS
        and (factor.const is not None or not factor.tensor)
        and (factor.kind not in ("instance", "tuple"))
    )


def _normalised_by_own_sum(imports, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """``x / reduce_sum(x)`` or ``x / (eps + reduce_sum(x, ...))``: an empirical distribution
    (a normalised count or weight), a probability that is exactly 0 wherever ``x`` is 0.  The
    fact comes from the code's shape, so it survives a name that says nothing (issue 12
    replaced the name guess that used to find it)."""
    if isinstance(den, cst.BinaryOperation) and isinstance(den.operator, cst.Add):
        sides = [den.left, den.right]
    else:
        sides = [den]
    for side in sides:
        if (
            isinstance(side, cst.Call)
            and imports.op(side.func) == "reduce_sum"
            and side.args
            and side.args[0].keyword is None
            and side.args[0].value.deep_equals(num)
        ):
            return True
    return False


def einsum_value(ev: Any, node: cst.Call, args, scope, order) -> Val:
    """``einsum(eq, a, b)`` sums products of its operands: of non-negative operands it is
    non-negative, and exactly 0 where an operand is 0 over all it sums (a dead ReLU row)."""
    operands = [ev.value(a.value, scope, order) for a in args[1:] if a.keyword is None]
    if not operands or any(v.lo < 0 for v in operands):
        return Val("einsum", tensor=True, desc="an einsum")
    zero = next((v.zero for v in operands if v.zero and v.can_be_zero and v.known), None)
    weak = zero is None or all(v.zero_weak for v in operands if v.zero == zero)
    return Val("einsum", 0.0, INF, tensor=True, zero=zero, zero_weak=weak,
               desc=f"an einsum of {', '.join(v.desc or '...' for v in operands)}")  # fmt: skip


def saturating(kind: str, val: Val, inner: Val) -> Val | None:
    """``tanh(u)`` reaches +-1 exactly once it saturates (tanh(9.1) rounds to 1.0), and so do
    its square and absolute value (to 1): the ends a ``1 - tanh(u)**2`` gap closes at."""
    if kind in ops.SIGNED_SQUASHING:
        return revalue(val, saturates=kind)
    if kind in ops.ZERO_PRESERVING and inner.saturates:
        bound = max(abs(inner.lo), abs(inner.hi))
        hi = bound * bound if kind == "square" else bound
        return revalue(val, lo=0.0, hi=hi, saturates=inner.saturates)
    return None


def saturation_gap(bound: Val, squashed: Val, end: float) -> str | None:
    """Why ``c - tanh(u)**2`` (``c`` the end tanh**2 reaches) is exactly 0: the squashing op
    saturates, and floating point rounds it onto that end (TensorFlow's float32 tanh is
    exactly +-1 past |u| of about 7.9), so the gap closes at a finite input."""
    if squashed.saturates and bound.const is not None and bound.const == end:
        return f"{squashed.saturates} saturates ({paren(squashed.desc)} rounds to {end:g})"
    return None


def _fold(op: cst.BaseBinaryOp, a: float, b: float) -> float | None:
    if isinstance(op, cst.Add):
        return a + b
    if isinstance(op, cst.Subtract):
        return a - b
    if isinstance(op, cst.Multiply):
        return a * b
    if isinstance(op, cst.Divide):
        return a / b
    if isinstance(op, cst.Power):
        r = a**b
        return r if isinstance(r, float | int) else None
    return None
