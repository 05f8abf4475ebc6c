"""Static transfer functions: the value a call of each canonical op produces.

The op registry (:mod:`tfnumlint.ops`) says which handler family evaluates an op and with
which range and zero reason (``Transfer("unary", 0.0, INF, zero=...)``); this module holds
the families.  A handler gets the evaluator, the call, its positional arguments, scope and
order, and returns the call's :class:`~.values.Val`.

The conditions a ``tf.where`` branch is restricted by are read in ``conditions.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import libcst as cst

from .. import ops
from ..floats import exp_overflow, exp_underflow
from .conditions import (
    where_branches,
)
from .draw_range import draw_value
from .dtypectx import FLOAT_WORDS, dtype_word
from .module import Binding, ModuleInfo, Scope, call_arg
from .names import ImportMap, literal_axes
from .provenance_arith import einsum_value, saturating
from .values import (
    INF,
    LAYER_KINDS,
    LINEAR_KINDS,
    UNKNOWN,
    Val,
    constant,
    join_vals,
    paren,
    revalue,
)


class Evaluator(Protocol):
    """What a handler reads of the evaluator (:class:`.provenance.Evaluator` is one).  A
    protocol, so this module does not import the evaluator that imports its handlers."""

    info: ModuleInfo
    imports: ImportMap

    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val: ...

    def op(self, call: cst.Call) -> str | None: ...

    def fed(self, placeholder: cst.Call) -> tuple[tuple[float, float], str] | None: ...

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None: ...

    def _binop(self, node: cst.BinaryOperation, scope: Scope, order: int) -> Val: ...


Handler = Callable[..., Val]


def _zero(lo: float, hi: float, a: Val, b: Val) -> str | None:
    if not (lo <= 0 <= hi):
        return None
    for v in (a, b):
        if v.zero and v.known:
            return v.zero
    return None


# output ranges by Keras activation name (`Dense(activation=...)`, a model's last layer)
ACTIVATION_RANGES = {
    **{
        op.keras_activation: (op.range.lo, op.range.hi)
        for op in ops.REGISTRY.values()
        if op.keras_activation and op.range
    },
    "elu": (-1.0, INF),  # no op of the registry: x < 0 gives exp(x) - 1 > -1
}


def _unary(kind: str, lo: float, hi: float, zero: str | None = None, **extra):
    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        inner = ev.value(args[0].value, scope, order) if args else UNKNOWN
        val = Val(
            kind, lo, hi, tensor=True, zero=zero, desc=f"{kind}({inner.desc or '...'})", **extra
        )
        if kind in ops.PROBABILITY:
            return revalue(
                val,
                prob=True,
                logits=args[0].value if args else None,
                zero="the probability saturates",
            )
        if kind == "abs" and inner.prob:  # |p| of a probability is the probability
            return revalue(inner, tensor=True, const=None, desc=f"abs({inner.desc or '...'})")
        if kind == "sqrt":
            return revalue(
                val,
                lo=math.sqrt(inner.lo) if inner.lo > 0 else 0.0,
                zero=inner.zero if inner.can_be_zero else None,
            )
        if (squashed := saturating(kind, val, inner)) is not None:  # tanh(u), tanh(u)**2
            return squashed
        if kind in ops.ZERO_PRESERVING and inner.const is None:  # square, abs: 0 from a 0
            strong = inner.zero is not None and not inner.zero_weak
            return revalue(val, zero=inner.zero if strong else zero, zero_weak=not strong)
        if kind == "exp":
            return _exp(ev, val, inner, scope)
        return val

    return handler


_EXP_BOUNDED = ("diff_max",)  # exp(x - max x): the largest term is exp(0) = 1


def _exp(ev: Evaluator, val: Val, inner: Val, scope) -> Val:
    """exp overflows past log(max) and underflows to exactly 0 below log(smallest normal) of
    the dtype (TensorFlow flushes subnormals): a zero source for what divides by it."""
    dtype = ev.info.dtype(scope)
    over, under = exp_overflow(dtype), exp_underflow(dtype)
    shifted = inner.kind.startswith("log_") or inner.kind in _EXP_BOUNDED
    zero = None
    if inner.lo < under and not shifted:
        zero = (
            f"its input is below {under:.2f} (exp underflows to 0 in {dtype}; "
            f"{exp_underflow(dtype, flush_to_zero=False):.2f} without flush-to-zero)"
        )
    return revalue(
        val,
        has_exp=not shifted,
        hi=INF if inner.hi > over else math.exp(inner.hi),
        lo=0.0 if inner.lo < under else math.exp(inner.lo),
        zero=zero,
        # a loose clip (-100) or a raw logit reaching -87 is a real reason; an arbitrary
        # computed value (a log-density, a difference) is only a weak one
        zero_weak=zero is not None and inner.lo == -INF and inner.kind not in LINEAR_KINDS,
    )


def _reduce(kind: str):
    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        inner = ev.value(args[0].value, scope, order) if args else UNKNOWN
        if kind == "reduce_sum":
            if inner.prob and inner.one_hot is False and _has_one_hot(ev, args, scope, order):
                return Val(
                    "reduce_sum",
                    0.0,
                    1.0,
                    tensor=True,
                    prob=True,
                    zero="the picked probability saturates",
                    desc="a picked probability",
                )
            lo = 0.0 if inner.lo >= 0 else -INF
            keeps_zero = (
                inner.lo >= 0 and inner.zero and not inner.prob
            )  # a sum of softmax outputs is 1
            zero = inner.zero if keeps_zero else None
            weak = inner.zero_weak
            if inner.kind == "abs" and zero is not None:  # sum |w| over an axis: a zero column
                zero, weak = "every |w| it sums is 0 (an all-zero row or column)", False
            elif inner.kind == "exp" and zero is not None:
                zero = f"every exp underflows: {inner.zero}"
            return Val(
                "reduce_sum",
                lo,
                INF,
                tensor=True,
                zero=zero,
                zero_weak=weak,
                log_space=inner.log_space,
                exp_sum=inner.has_exp,
                desc=f"reduce_sum({inner.desc or '...'})",
            )
        if kind in ops.WITHIN_INPUTS:  # a mean, max or min keeps its entries' range
            return revalue(
                inner,
                kind=kind,
                const=None,
                tensor=True,
                exp_sum=False,
                desc=f"{kind}({inner.desc or '...'})",
                one_hot=False,
            )
        return Val(kind, tensor=True)

    return handler


def _has_one_hot(ev: Evaluator, args, scope, order) -> bool:
    node = args[0].value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return (
            ev.value(node.left, scope, order).one_hot or ev.value(node.right, scope, order).one_hot
        )
    return False


def _clip(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    x = ev.value(args[0].value, scope, order) if args else UNKNOWN
    lo_node = call_arg(node, 1, "clip_value_min", "x_min", "min_value")
    hi_node = call_arg(node, 2, "clip_value_max", "x_max", "max_value")
    lo_v = ev.value(lo_node, scope, order) if lo_node is not None else UNKNOWN
    hi_v = ev.value(hi_node, scope, order) if hi_node is not None else UNKNOWN
    lo = max(x.lo, lo_v.lo) if lo_v.lo > -INF else (0.0 if x.prob else x.lo)
    hi = min(x.hi, hi_v.hi) if hi_v.hi < INF else x.hi
    guarded = lo_v.lo > 0 or lo_node is None or lo_v.kind not in ("constant",)
    return Val(
        "clip_by_value",
        lo,
        hi,
        tensor=True,
        guarded=guarded,
        prob=False,
        zero=None if lo > 0 or guarded else x.zero,
        desc="a clipped value",
    )


def _maximum(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    if len(args) < 2:
        return Val("maximum", tensor=True)
    a = ev.value(args[0].value, scope, order)
    b = ev.value(args[1].value, scope, order)
    lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
    # maximum(x, floor) with a computed floor is a guard by intent (e.g. 1/sqrt(n)).
    guarded = (
        lo > 0
        or (b.const is None and not b.can_be_zero)
        or (b.const is None and b.kind not in ops.LITERAL_SOURCES)
    )
    return Val(
        "maximum",
        lo,
        hi,
        tensor=True,
        guarded=guarded,
        zero=None if guarded else _zero(lo, hi, a, b),
        desc=f"maximum({paren(a.desc or '...')}, {paren(b.desc or '...')})",
    )


def _minimum(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    if len(args) < 2:
        return Val("minimum", tensor=True)
    a = ev.value(args[0].value, scope, order)
    b = ev.value(args[1].value, scope, order)
    lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
    return Val("minimum", lo, hi, tensor=True, prob=a.prob and b.prob, zero=_zero(lo, hi, a, b))


# comparison operators and the canonical compare ops, as "subject op bound"


def _where(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """tf.where(c, x, y) lies between its branches' bounds, each branch restricted by the
    condition that selects it.  Only the range travels: a where is usually a guard, so a
    branch's zero reasons do not (`tf.where(d > 0, d, 1.)` is no 0)."""
    found = where_branches(ev, node, scope, order)
    if found is None:
        return Val("where", tensor=True, desc="the where output")
    x, y, _ = found
    return Val(
        "where",
        min(x.lo, y.lo),
        max(x.hi, y.hi),
        tensor=True,
        guarded=True,
        prob=x.prob and y.prob,
        log_space=x.log_space and y.log_space,
        desc="the where output",
    )


def _passthrough(kind: str):
    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        inner = ev.value(args[0].value, scope, order) if args else UNKNOWN
        return revalue(inner, tensor=True, const=None if kind != "constant" else inner.const)

    return handler


def _concat(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """concat keeps what every piece shares (the join of the pieces)."""
    pieces = args[0].value if args else None
    if isinstance(pieces, (cst.List, cst.Tuple)) and pieces.elements:
        vals = [ev.value(e.value, scope, order) for e in pieces.elements]
        joined = join_vals(vals)
        return revalue(
            joined,
            tensor=True,
            const=None,
            prob=all(v.prob for v in vals),
            kind=joined.kind if len({v.kind for v in vals}) == 1 else "arith",
        )
    return Val("concat", tensor=True)


def _cast(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    inner = ev.value(args[0].value, scope, order) if args else UNKNOWN
    if inner.kind in ("bool", "mask"):
        return Val("mask", 0.0, 1.0, tensor=True, zero="the mask is all zeros")
    if inner.const is not None and _to_float(node, scope):
        return revalue(inner, tensor=True)  # cast(0, tf.float64) is still the constant 0
    return revalue(inner, tensor=True, const=None)


def _to_float(cast: cst.Call, scope: Scope) -> bool:
    """Whether a cast names a floating dtype (which keeps a literal's value; an integer or
    boolean one may not)."""
    target = call_arg(cast, 1, "dtype")
    return target is not None and dtype_word(target, scope) in FLOAT_WORDS


# the libcst node of each Python operator an `arith` entry names (`Op.operator`)
_ARITH_NODES: dict[str, type[cst.BaseBinaryOp]] = {
    "+": cst.Add,
    "-": cst.Subtract,
    "*": cst.Multiply,
    "/": cst.Divide,
}


def _arith_op(kind: str):
    operator = _ARITH_NODES[str(ops.REGISTRY[kind].operator)]

    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        if len(args) < 2:
            return Val(kind, tensor=True)
        synthetic = cst.BinaryOperation(
            left=args[0].value, operator=operator(), right=args[1].value
        )
        return revalue(ev._binop(synthetic, scope, order), tensor=True)

    return handler


def _moments(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """(mean, variance); a variance over the batch axis 0 records what it reduces, so the
    verifier can tell "every example identical" from a dead unit (``batch_of``)."""
    x = call_arg(node, 0, "x")
    batch_of = None
    if x is not None and 0 in literal_axes(call_arg(node, 1, "axes")):
        batch_of = ev.value(x, scope, order).kind
    return Val(
        "tuple",
        tuple_items=(
            Val("mean", tensor=True, desc="a mean"),
            Val(
                "variance",
                0.0,
                INF,
                tensor=True,
                zero="the batch is constant",
                desc="the tf.nn.moments variance",
                batch_of=batch_of,
            ),
        ),
    )


CONVERTS = "convert_to_tensor"  # the API's pass-through: its value is its argument's


def _source(kind: str):
    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        if kind == "constant" and args:
            inner = ev.value(args[0].value, scope, order)
            if inner.const is not None:
                return revalue(inner, tensor=True)
            if (ev.imports.resolve(node.func) or "").endswith(CONVERTS):
                # x as a tensor: described as x is, never as "a constant" (its kind stays the
                # source's, as the rules have always read it)
                return Val(kind, tensor=True, desc=inner.desc)
        if kind == "zeros":
            return Val("zeros", 0.0, 0.0, tensor=True, zero="always", desc="zeros")
        if kind == "ones":
            return Val("ones", 1.0, 1.0, tensor=True, desc="ones")
        if kind == "placeholder":
            fed = ev.fed(node)
            if fed is not None:  # the program feeds it bounded NumPy data
                (lo, hi), code = fed
                return Val(kind, lo, hi, tensor=True, desc=f"a placeholder fed `{code}`")
        return Val(kind, tensor=True, desc=f"a {kind}")

    return handler


def activation_name(ev: Evaluator, act_node: cst.BaseExpression | None) -> str | None:
    """The activation a layer argument names: ``"softmax"``, ``tf.nn.softmax``, ``None``
    (linear); None when it is not known (``self.act``, a custom function)."""
    if act_node is None or (isinstance(act_node, cst.Name) and act_node.value == "None"):
        return "linear"
    if isinstance(act_node, cst.SimpleString):
        text = act_node.evaluated_value
        return text if isinstance(text, str) else None
    return ev.imports.op(act_node) or None


def _layer(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """``Dense(units, activation)``: the activation is the second positional argument."""
    return _with_activation(ev, call_arg(node, 1, "activation"), scope, order, "a Dense layer")


def _conv_layer(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """A convolution (``Conv2D(filters, kernel_size, ..., activation=...)``): its activation
    sits after the geometry arguments, which differ by layer and version, so only the
    keyword is read."""
    act_node = call_arg(node, -1, "activation")
    return _with_activation(ev, act_node, scope, order, "a convolution layer")


def _with_activation(ev: Evaluator, act_node, scope: Scope, order: int, desc: str) -> Val:
    """A layer with the activation ``act_node`` names; a parameter of the enclosing function
    (``activation=out_activation`` in a model-building helper) is kept as that parameter, so
    each call of the helper gives its own argument (the producer, whatever the names)."""
    if isinstance(act_node, cst.Name) and isinstance(
        ev.lookup(act_node.value, scope, order), cst.Param
    ):
        return Val("layer", activation_param=act_node.value, desc=desc)
    return Val("layer", activation=activation_name(ev, act_node), desc=desc)


def _activation_layer(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """``Activation("sigmoid")``: a layer that only applies the named activation."""
    act_node = call_arg(node, 0, "activation")
    act = activation_name(ev, act_node) if act_node is not None else None
    return Val("layer", activation=act, desc="an Activation layer")


def _lambda_layer(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    """``Lambda(tf.nn.softmax)``: a layer whose function is a known activation op; any other
    function (a lambda, a helper) says nothing about the output."""
    fn = call_arg(node, 0, "function")
    op = ev.imports.op(fn) if isinstance(fn, (cst.Name, cst.Attribute)) else None
    act = op if op in ACTIVATION_RANGES else None
    return Val("layer", activation=act, desc="a Lambda layer")


# Arguments of an activation layer that change its function (`ReLU(negative_slope=0.1)` is a
# leaky ReLU, `threshold` moves its zero): given at all, the output is not the plain activation.
_RESHAPING_ARGS = frozenset({"negative_slope", "threshold", "alpha"})


def _fixed_layer(kind: str) -> Handler:
    """``Softmax()``, ``ReLU()``: a layer that is one activation (``axis``, ``max_value``
    keep its range's lower end and its zeros)."""

    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        reshaped = any(
            a.keyword is not None and a.keyword.value in _RESHAPING_ARGS for a in node.args
        )
        if reshaped or (kind == "relu" and len(args) > 1):
            return Val("layer", activation=None, desc=f"a {kind} layer")
        return Val("layer", activation=kind, desc=f"a {kind} layer")

    return handler


def _sequential(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    layers = args[0].value if args else None
    while isinstance(layers, cst.BinaryOperation) and isinstance(layers.operator, cst.Add):
        layers = layers.right  # `[hidden layers...] + [Dense(k, "softmax")]`: the last one
    last_node, last_scope, last_order = _last_layer(ev, layers, scope, order)
    if last_node is not None:
        last = ev.value(last_node, last_scope, last_order)
        if last.kind not in LAYER_KINDS:
            return Val("model", desc="a Sequential model")
        return Val(
            "model",
            activation=last.activation,
            activation_param=last.activation_param,
            desc="a Sequential model",
        )
    return Val("model", desc="a model")


def _last_layer(ev: Evaluator, layers, scope: Scope, order: int):
    """The expression of a Sequential's last layer, with where to evaluate it: the last item
    of a literal list, or of a list bound to a name and grown by ``.append(layer)`` before
    the model is built (``layers = [Dense(...) for ...]; layers.append(Dense(k, act))``)."""
    if isinstance(layers, (cst.List, cst.Tuple)) and layers.elements:
        return layers.elements[-1].value, scope, order
    if not isinstance(layers, cst.Name):
        return None, scope, order
    binding = ev.lookup(layers.value, scope, order)
    if not isinstance(binding, Binding) or binding.index is not None:
        return None, scope, order
    appended = [
        site
        for site in ev.info.calls
        if isinstance(site.node.func, cst.Attribute)
        and site.node.func.attr.value == "append"
        and isinstance(site.node.func.value, cst.Name)
        and site.node.func.value.value == layers.value
        and len(site.node.args) == 1
        and site.scope is binding.scope
        and binding.visible <= site.order < order
        and ev.lookup(layers.value, site.scope, site.order) is binding
    ]
    if appended:
        last = max(appended, key=lambda site: site.order)
        return last.node.args[0].value, last.scope, last.order
    if isinstance(binding.value, (cst.List, cst.Tuple)):
        return _last_layer(ev, binding.value, binding.scope, binding.at)
    return None, scope, order


def _functional(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
    out = call_arg(node, 1, "outputs")
    if out is not None:
        val = ev.value(out, scope, order)
        act = val.kind if val.kind in (*ACTIVATION_RANGES, "linear") else None
        return Val("model", activation=act, desc="a functional model")
    return Val("model", desc="a model")


def _one_hot(ev, node, args, scope, order) -> Val:
    return Val("one_hot", 0.0, 1.0, tensor=True, one_hot=True, desc="a one-hot")


def _norm(kind: str, zero: str | None):
    def handler(ev: Evaluator, node: cst.Call, args, scope, order) -> Val:
        return Val(
            kind,
            0.0,
            INF,
            tensor=True,
            zero=zero,  # the entry's reason: a zero vector, nothing counted, a constant batch
            desc=f"{kind}({_arg_desc(ev, args, scope, order)})",
        )

    return handler


def _arg_desc(ev: Evaluator, args, scope, order) -> str:
    return (ev.value(args[0].value, scope, order).desc or "...") if args else "..."


def _epsilon(ev, node, args, scope, order) -> Val:
    return revalue(constant(1e-7), desc="K.epsilon() = 1e-07")


# handler families whose handler depends on the op (its kind, and for unary ops its range)
_FACTORIES: dict[str, Callable[[str, ops.Transfer], Handler]] = {
    "unary": lambda kind, t: _unary(kind, t.lo, t.hi, zero=t.zero),
    "reduce": lambda kind, t: _reduce(kind),
    "norm": lambda kind, t: _norm(kind, t.zero),
    "passthrough": lambda kind, t: _passthrough(kind),
    "arith": lambda kind, t: _arith_op(kind),
    "source": lambda kind, t: _source(kind),
    "activation_layer_of": lambda kind, t: _fixed_layer(kind),
}
# handler families that are one function
_HANDLERS: dict[str, Handler] = {
    "clip": _clip,
    "maximum": _maximum,
    "minimum": _minimum,
    "cast": _cast,
    "where": _where,
    "concat": _concat,
    "moments": _moments,
    "einsum": einsum_value,
    "dense_layer": _layer,
    "conv_layer": _conv_layer,
    "activation_layer": _activation_layer,
    "lambda_layer": _lambda_layer,
    "sequential": _sequential,
    "functional_model": _functional,
    "one_hot": _one_hot,
    "epsilon": _epsilon,
    "draw_range": draw_value,
}
_BUILT: dict[str, tuple[ops.Transfer, Handler]] = {}


def handler_for(op: str) -> Handler | None:
    """The transfer function of a canonical op, from its registry entry (built once)."""
    spec = ops.transfer(op)
    if spec is None:
        return None
    built = _BUILT.get(op)
    if built is None or built[0] is not spec:
        factory = _FACTORIES.get(spec.rule)
        fn = factory(spec.kind or op, spec) if factory else _HANDLERS[spec.rule]
        built = _BUILT[op] = (spec, fn)
    return built[1]


def known_rules() -> frozenset[str]:
    """The handler families a registry entry may name."""
    return frozenset(_FACTORIES) | frozenset(_HANDLERS)
