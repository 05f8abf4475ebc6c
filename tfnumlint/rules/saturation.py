"""Where a probability under a log reaches exactly 0, computed from the expression and dtype.

``p = sigmoid(z)`` is 0 once z is past the exp range (float32: below -87.3 with TensorFlow's
flush-to-zero, -104 where subnormals are kept); ``1 - p`` is 0 once the sigmoid rounds to 1
(float32: z above 16.6).  A softmax entry is the same with "its logit" read as its gap to the
other logits.  The message says the one that holds for the underlined expression.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context
from ..analysis.module import Site
from ..floats import exp_underflow, sigmoid_one
from .common import fmt

SQUASHES = ops.PROBABILITY


@dataclass
class Squashed:
    """A sigmoid or softmax output, or its complement ``1 - p``."""

    squash: str  # "sigmoid" or "softmax"
    complement: bool


def squashed(ctx: Context, node: cst.BaseExpression, site: Site) -> Squashed | None:
    """The squash under ``node`` (through ``1 - ...``, any number of times), when known."""
    complement = False
    while (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and ctx.val(node.left, site).const == 1.0
    ):
        complement, node = not complement, node.right
    v = ctx.val(node, site)
    squash = v.kind if v.kind in SQUASHES else v.activation
    return Squashed(squash, complement) if squash in SQUASHES else None


def zero_clause(found: Squashed, dtype: str) -> str:
    """When the value is exactly 0, as a clause: 'once its logit is below -87.3 in float32
    (the sigmoid underflows; -104 where subnormals are kept)'."""
    low, low_sub = exp_underflow(dtype), exp_underflow(dtype, flush_to_zero=False)
    one = sigmoid_one(dtype)
    if found.squash == "sigmoid" and not found.complement:
        return (
            f"once its logit is below {fmt(low)} in {dtype} (the sigmoid underflows; "
            f"{fmt(low_sub)} where subnormals are kept)"
        )
    if found.squash == "sigmoid":
        return f"once the logit is above {fmt(one)} in {dtype} (the sigmoid rounds to 1)"
    if not found.complement:
        return (
            f"once its logit trails the largest by more than {fmt(-low)} in {dtype} (the "
            f"softmax underflows; {fmt(-low_sub)} where subnormals are kept)"
        )
    return (
        f"once its logit leads every other by more than {fmt(one)} in {dtype} (the softmax "
        "entry rounds to 1)"
    )
