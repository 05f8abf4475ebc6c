"""TNL10x: logarithms of probabilities, of unbounded values, and their hand-written forms."""

from __future__ import annotations

import math

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.epsilons import additive_terms, first_arg, split_eps
from ..analysis.module import Site, parent_map
from ..analysis.values import LINEAR_KINDS, Val
from ..floats import exp_overflow, exp_underflow
from .common import fmt
from .graph import Hazard as GraphHazard
from .graph import (
    graph_rule,
    is_danger,
    producer_is_probability,
    producer_text,
    range_text,
    where_op,
)
from .registry import rule
from .saturation import squashed, zero_clause

LOG_ARG = ("x", "input")


def _log_input(call: cst.Call) -> cst.BaseExpression | None:
    return first_arg(call, *LOG_ARG)


def _strip_guard_free(v: Val) -> bool:
    """A value whose log can be -inf: it can be exactly 0 and nothing keeps it away."""
    return not v.guarded and not v.positive


@rule("TNL101", ops={"log"})
def log_of_probability(site: Site[cst.Call], ctx: Context):
    x = _log_input(site.node)
    if x is None:
        return
    _, eps = split_eps(ctx, x, site)
    if eps is not None:
        return  # log(p + eps) is TNL102's
    v = ctx.val(x, site)
    if not v.prob or not _strip_guard_free(v):
        return
    if v.prob_by_use:
        why = (
            f"{v.desc} is used as a probability here (its negated log, or the log of its "
            "complement, is taken) and nothing clips it away from 0"
        )
    elif v.kind == "normalised":
        why = f"{v.desc} is a normalised value (x / sum(x)), exactly 0 where {v.zero}"
    else:
        why = f"{v.desc} is a probability that is exactly 0 {_where_zero(ctx, x, site)}"
    yield Hit(
        site.node,
        f"log of a probability: {why}; log(0) = -inf and 0 * log(0) = NaN",
        site,
        {"logits": v.logits is not None},
    )


@rule("TNL102", ops={"log"})
def log_epsilon_unclipped(site: Site[cst.Call], ctx: Context):
    x = _log_input(site.node)
    if x is None:
        return
    rest, eps = split_eps(ctx, x, site)
    if eps is None:
        return
    core = ctx.val(rest, site)
    if core.guarded and core.lo > 0:
        return
    if core.const is not None:
        return  # log(cast(0, tf.float64) + 1e-307): a constant (a log-zero stand-in), no gradient
    if _linear_log_loss(ctx, site) is not None:
        return  # the epsilon guards a logit: TNL503 names the real mistake
    found = squashed(ctx, rest, site)
    const = f"log({fmt(eps)}) = {math.log(eps):.1f}"
    stuck = (
        f"x is exactly 0 {zero_clause(found, ctx.dtype(site))}, where the log is the constant "
        f"{const} with zero gradient"
        if found
        else f"a saturated x gives a constant {const} with zero gradient"
    )
    yield Hit(
        site.node,
        f"log(x + {fmt(eps)}) guards only the forward value: the gradient 1/(x + {fmt(eps)}) reaches "
        f"{fmt(1 / eps)} at x = 0, and {stuck}; clip x to [eps, 1 - eps] or use the logits form",
        site,
        {"eps": eps},
    )


def _where_zero(ctx: Context, x: cst.BaseExpression, site: Site) -> str:
    """'once its logit is below -87.3 in float32 ...', computed for this expression."""
    found = squashed(ctx, x, site)
    if found is None:
        return f"in {ctx.dtype(site)} once it saturates or underflows"
    return zero_clause(found, ctx.dtype(site))


def _is_log_call(ctx: Context, node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and ctx.op(node) == "log"


def _probability_under_log(ctx: Context, call: cst.Call, site: Site) -> Val | None:
    x = _log_input(call)
    if x is None:
        return None
    rest, _ = split_eps(ctx, x, site)
    v = ctx.val(rest, site)
    if v.prob and not v.guarded:
        return v
    return None


@rule("TNL103", binops=(cst.Multiply,), ops={"multiply"})
def cross_entropy_from_probabilities(site: Site, ctx: Context):
    node = site.node
    if isinstance(node, cst.Call):
        if len(node.args) != 2:
            return
        left, right = node.args[0].value, node.args[1].value
    else:
        left, right = node.left, node.right
    for factor, other in ((left, right), (right, left)):
        if not isinstance(factor, cst.Call) or not _is_log_call(ctx, factor):
            continue
        p = _probability_under_log(ctx, factor, site)
        if p is None:
            continue
        log_arg = _log_input(factor)
        if log_arg is None:  # never: _probability_under_log found it
            continue
        rest, _ = split_eps(ctx, log_arg, site)
        if _same_code(ctx, rest, other) or _same_code(ctx, log_arg, other):
            return  # p * log(p): an entropy, not a cross-entropy
        if ctx.val(other, site).const is not None:
            return  # -2 * log(p): a constant is a scale, not a label (issue #11)
        key = id(site.statement)
        if not ctx.once("TNL103", site.statement):
            return
        del key
        fused = (
            "tf.nn.softmax_cross_entropy_with_logits"
            if p.kind == "softmax"
            else (
                "tf.nn.sigmoid_cross_entropy_with_logits"
                if p.kind == "sigmoid"
                else "a *_with_logits loss"
            )
        )
        on = "logits" if p.logits is not None else "the logits (keep the layer linear)"
        yield Hit(
            node,
            f"hand-written cross-entropy on probabilities ({p.desc}): it is -inf/NaN once the "
            f"probability saturates to 0 or 1; use {fused} on {on}",
            site,
            {"fused": fused},
        )
        return


def _same_code(ctx: Context, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    try:
        return ctx.code(a).strip("() ") == ctx.code(b).strip("() ")
    except Exception:
        return False


# Producers whose output is routinely <= 0: a raw linear output, a difference, a squashing op
# of either sign (tanh); and raw input data fed through a placeholder or a Keras Input, which
# nothing keeps positive.  (sin, cos and sign have signed ranges too, but are not read here:
# adding them would widen TNL104, a change of its own.)
_COMPUTED = LINEAR_KINDS | ops.SIGNED_SQUASHING | ops.FED | {"diff"}


@rule("TNL104", ops={"log"})
def log_of_unbounded(site: Site[cst.Call], ctx: Context):
    x = _log_input(site.node)
    if x is None:
        return
    _, eps = split_eps(ctx, x, site)
    if eps is not None:
        return
    v = ctx.val(x, site)
    if v.prob or v.guarded:
        return
    if v.lo == 0 and v.kind in ops.DEAD_ZONE and v.zero:  # log(relu(z)): exactly 0 at z <= 0
        yield Hit(
            site.node,
            f"log of {v.desc or 'a computed value'}, which is exactly 0 where {v.zero} "
            f"(range [0, {fmt(v.hi)}]): log(0) = -inf, and its gradient 1/x is inf there",
            site,
        )
        return
    if v.lo == 0 and v.saturates and v.zero:  # log(1 - tanh(u)**2): 0 once tanh saturates
        yield Hit(
            site.node,
            f"log of {v.desc or 'a computed value'}, which is exactly 0 once {v.zero} "
            f"(range [0, {fmt(v.hi)}]): log(0) = -inf, and its gradient 1/x is inf there",
            site,
        )
        return
    fed_zero = v.lo == 0 and v.kind == "placeholder"  # fed data whose range reaches 0
    if (v.lo >= 0 and not fed_zero) or v.kind not in _COMPUTED:
        return
    if _linear_log_loss(ctx, site) is not None:
        return  # a log-loss on logits: TNL503 names the mismatch
    yield Hit(
        site.node,
        f"log of {v.desc or 'a computed value'}, which is not known to be positive "
        f"(range [{fmt(v.lo)}, {fmt(v.hi)}]): log(0) = -inf and log of a negative is NaN",
        site,
    )


@rule("TNL105", ops={"log"})
def log1p_by_hand(site: Site[cst.Call], ctx: Context):
    x = _log_input(site.node)
    if x is None:
        return
    terms = additive_terms(x)
    if len(terms) != 2:
        return
    if any(sign < 0 for _, sign in terms):
        return  # log(1 - p) is a log of a probability, not log1p territory
    ones = [t for t, _ in terms if ctx.val(t, site).const == 1.0]
    rest = [t for t, _ in terms if ctx.val(t, site).const is None]
    if len(ones) == 1 and len(rest) == 1:
        yield Hit(
            site.node,
            "log(1 + x) loses every digit of x once |x| < 6e-8 in float32 (1 + x rounds to 1); "
            "use tf.math.log1p(x)",
            site,
        )


@rule("TNL105", binops=(cst.Subtract,))
def expm1_by_hand(site: Site, ctx: Context):
    node = site.node
    if (
        isinstance(node.left, cst.Call)
        and ctx.op(node.left) == "exp"
        and ctx.val(node.right, site).const == 1.0
    ):
        yield Hit(
            node,
            "exp(x) - 1 cancels catastrophically for small |x| (exp(1e-8) - 1 is 0 in float32); "
            "use tf.math.expm1(x)",
            site,
        )


@rule("TNL106", ops={"log"})
def logsumexp_by_hand(site: Site[cst.Call], ctx: Context):
    x = _log_input(site.node)
    if x is None:
        return
    v = ctx.val(x, site)
    if v.exp_sum:
        dtype = ctx.dtype(site)
        high, low = exp_overflow(dtype), exp_underflow(dtype)
        yield Hit(
            site.node,
            f"log(reduce_sum(exp(x))) overflows to inf once x > {fmt(high)} ({dtype}) and "
            f"underflows to log(0) = -inf once every x < {fmt(low)}; use tf.reduce_logsumexp(x)",
            site,
        )


def _linear_log_loss(ctx: Context, site: Site) -> Val | None:
    """The linear output under ``log`` when the log is a factor of a product (``y * log(z)``,
    a hand-written log-loss), else None."""
    x = _log_input(site.node)
    if x is None:
        return None
    rest, _ = split_eps(ctx, x, site)
    v = ctx.val(rest, site)
    if v.kind not in LINEAR_KINDS or v.prob:
        return None
    parents = ctx.fact(f"parents:{id(site.statement)}", lambda: parent_map(site.statement))
    node: cst.CSTNode = site.node
    parent = parents.get(id(node))
    while isinstance(parent, cst.UnaryOperation) or (
        isinstance(parent, cst.BinaryOperation)
        and isinstance(parent.operator, cst.Subtract)
        and parent.left is not node
    ):
        node, parent = parent, parents.get(id(parent))  # -log(z), 1 - log(z)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
        return v
    if isinstance(parent, cst.Arg):
        call = parents.get(id(parent))
        if isinstance(call, cst.Call) and ctx.op(call) == "multiply":
            return v
    return None


@rule("TNL503", ops={"log"})
def log_loss_on_linear_output(site: Site[cst.Call], ctx: Context):
    v = _linear_log_loss(ctx, site)
    if v is None:
        return
    yield Hit(
        site.node,
        f"a log-loss on a linear output: {v.desc} has no sigmoid or softmax, so it is a logit, "
        "not a probability (log of a negative logit is NaN, of 0 is -inf); pass it as logits to "
        "tf.nn.sigmoid_cross_entropy_with_logits or tf.nn.softmax_cross_entropy_with_logits",
        site,
    )


# ---------------------------------------------------------------- the same rules on model graphs


@graph_rule("TNL101", lambda h: is_danger(h, "log") and producer_is_probability(h))
def log_of_probability_op(h: GraphHazard) -> str:
    return (
        f"log of a probability: {where_op(h)} takes the log of {producer_text(h)}, which reaches "
        "exactly 0 when it saturates; log(0) = -inf; take the log in logit space (log_softmax)"
    )


@graph_rule(
    "TNL104",
    lambda h: (
        is_danger(h, "log", "log1p", "xlogy")
        and not (is_danger(h, "log") and producer_is_probability(h))
    ),  # that one is TNL101's
)
def log_of_unbounded_op(h: GraphHazard) -> str:
    return (
        f"log of a value not known to be positive: {where_op(h)} reads {producer_text(h)}, "
        f"whose range with the model's weights is {range_text(h)}; log(0) = -inf and log of a "
        "negative is NaN"
    )
