"""The op registry: everything tfnumlint knows about one canonical op, in one entry.

A canonical op (``"log"``, ``"softmax"``, ...) is what every spelling of a TensorFlow/Keras
function collapses onto (``tf.math.log``, ``tf.log``, ``keras.ops.log``, ``K.log``).  Its
entry holds, next to each other:

- its spellings, as :func:`tfnumlint.analysis.names.normalise` writes them;
- its static transfer (range, zero reason, kind) for :mod:`tfnumlint.analysis.transfer`;
- its probe signature (canonical parameter names) and trace builder for the verifier;
- the TensorFlow graph op types it lowers to, their interval transfer and danger zone;
- its fix rendering (``tf.`` path, Keras-backend name).

Plain data, no TensorFlow and no libcst: the static side reads every field, and the TF side
(:mod:`tfnumlint.verify.trace`, :mod:`tfnumlint.verify.intervals`) resolves the names it
holds (``trace="math.log"`` is ``tf.math.log``; ``interval="sqrt"`` is a transfer named in
``intervals.py``).  So layers keep pointing one way and adding an op is one entry here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass

from .optimizers import OPTIMIZERS

SELU_FLOOR = 1.0507009873554805 * 1.6732632423543772  # selu's infimum is -scale * alpha
INF = math.inf


@dataclass(frozen=True)
class Transfer:
    """How the static evaluator computes the op's value: ``rule`` names a handler family in
    :mod:`tfnumlint.analysis.transfer` (``unary`` uses the range and zero reason given here)."""

    rule: str
    lo: float = -INF
    hi: float = INF
    zero: str | None = None  # why the output can be exactly 0 (unary ops)
    kind: str | None = None  # the value's producer kind, when it is not the op's name


@dataclass(frozen=True)
class Danger:
    """Where an input of the op makes it produce NaN/Inf, tested on its interval.

    ``test``: ``reaches`` (lo <= bound), ``straddles`` (lo <= bound <= hi), ``overflows``
    (hi past log(max) of the dtype), ``leaves_unit`` (reaches -1 or 1), ``pow_base`` (a
    base <= 0 with a non-integral exponent), ``never`` (a guarded op), ``branches`` (the op
    is unsafe only through its branches, which are checked as ops of their own)."""

    arg: int
    test: str
    bound: float = 0.0
    label: str = "0"  # how a message names the zone
    what: str | None = None  # how a message names the input checked (default: "<type> input")


@dataclass(frozen=True)
class Range:
    """The values a producer returns, in exact arithmetic: ``lo``/``hi`` and whether each end
    is excluded.  Float rounding closes an open end (:func:`float_range`): an op that
    underflows reaches 0, a saturating op reaches its bounds."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False


@dataclass(frozen=True)
class Op:
    """One canonical op.  Every field but the name is optional: an op the verifier cannot
    trace has no ``params``/``trace``, an op no rewrite writes has no ``render``."""

    name: str
    spellings: tuple[str, ...] = ()  # normalised dotted names the static rules dispatch on
    probe_spellings: tuple[str, ...] = ()  # names only the verifier's slicer accepts
    transfer: Transfer | None = None
    log_space: bool = False  # its output is a log-likelihood: exp of it is intended
    params: tuple[str, ...] | None = None  # canonical parameters, in positional order
    param_aliases: tuple[tuple[str, str], ...] = ()  # per-op keyword -> canonical parameter
    trace: str | None = None  # "math.log" (tf.math.log), "reduction(math.reduce_sum)", "_pow"
    float_only: bool = False  # the traced op casts a bool/int operand to float first
    logits_input: bool = False  # its first input is a logit (sigmoid/softmax family)
    probability: bool = False  # its output is a probability the proofs watch
    row_coupled: bool = False  # each output reads a whole row: probes give rows of 2+ values
    graph: tuple[str, ...] = ()  # TF graph op types it lowers to
    interval: str | None = None  # interval transfer of those graph types (intervals.py)
    danger: Danger | None = None
    render: tuple[str, str | None] | None = None  # (path under tf, keras.backend name)
    # Numerical facts the gates and rules read (each a set of ops elsewhere before; now one
    # field, so a new op's entry teaches every gate at once):
    range: Range | None = None  # producer range: what any input can make it return
    value_preserving: bool = False  # its outputs are input entries moved, copied or converted
    selects: bool = False  # (value-preserving) it may drop entries: `gather` picks some
    boolean: bool = False  # its result is a truth value (a comparison, a logical op)
    order_only: bool = False  # a step function of its input: piecewise constant, no gradient
    underflows: bool = False  # reaches subnormal magnitudes (and 0) for ordinary inputs
    natural_zero: bool = False  # exactly 0 for ordinary inputs (a product or count of data)
    zero_preserving: bool = False  # nonzero in, nonzero out (value-preserving ops are too)
    saturating: bool = False  # rounds to the ends of its range at a large input (sigmoid(17))
    dead_zone: bool = False  # exactly 0 on a whole region of its input (a dead ReLU unit)
    shape_keeping: bool = False  # its output has its first input's shape (entry by entry)
    operator: str | None = None  # the Python binary operator it computes (`+`, `/`, `<`, ...)
    reduction: str | None = None  # what it reduces its axes to: sum, mean, max, min, prod, ...
    divisor: int | None = None  # the argument it divides by (its 0 is a division by zero)
    fused_xent: bool = False  # a cross-entropy computed from logits in one stable op
    clips_norm: bool = False  # rescales its input to a bound on a norm (gradient clipping)
    source: str | None = None  # a source's values: "data", "weights", "draw" or "literal"
    keras_activation: str | None = None  # its name as a Keras `activation=` string
    bijector: str | None = None  # the TensorFlow Probability bijector computing it (`Softplus`)
    # its gradient is inf/NaN where its value is, so the untaken branch of a `tf.where` still
    # poisons the gradient (0 * inf); sqrt, rsqrt and reciprocal turn a zero upstream gradient
    # into 0 (measured in TF 2.21)
    unsafe_gradient: bool = False
    conversion: bool = False  # returns its argument as a tensor: cast, identity, constant(x)
    power: float | None = None  # the power it raises its input (or a difference) to
    whole: bool = False  # returns whole numbers for any input (a rounding, a sign, a count)
    rank_dependent: bool = False  # reads its operand's layout beyond any axis it names (matmul)
    # sums or normalises exp of its entries, so a -inf entry is an exact 0 term (exp(-inf) = 0)
    log_sum_exp: bool = False
    gradient_sink: str | None = None  # why a value read only by it takes no gradient there
    floors: bool = False  # raises its input to a floor its 2nd operand gives: an eps guard
    fixed_values: bool = False  # its entries are values its arguments fix (one_hot's on/off)
    # a raw linear output (matmul: a layer's output before any activation): of either sign and
    # with no bound in practice, so neither a log nor an exp of it is safe
    raw_linear: bool = False
    # a uniform draw: the positions of its ``minval`` and ``maxval`` arguments (also read by
    # keyword); its value lies between them, [minval, maxval), 1 when maxval is None or left out
    draw_bounds: tuple[int, int] | None = None
    # a spatial pooling op's window reduction, as ``tf.nn.pool`` names it ("MAX", "AVG")
    pooling: str | None = None
    # the rung-only op the training rung's slice writes it as (a finding's probe takes its
    # output as one input): ``conv2d`` is ``conv2d_nhwc``
    rung: str | None = None


REGISTRY: dict[str, Op] = {}
SPELLINGS: dict[str, str] = {}  # normalised dotted name -> canonical op (static dispatch)
PROBE_SPELLINGS: dict[str, str] = {}  # extra names the verifier's slicer accepts
_version = [0]  # bumped by register(): derived tables on the TF side rebuild on a change


def register(op: Op) -> Op:
    """Add an op: its spellings, transfer, probe signature and trace become live at once."""
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    SPELLINGS.update(dict.fromkeys(op.spellings, op.name))
    PROBE_SPELLINGS.update(dict.fromkeys(op.probe_spellings, op.name))
    _version[0] += 1
    return op


def unregister(name: str) -> None:
    """Remove an op (tests that register one of their own clean up with this)."""
    op = REGISTRY.pop(name)
    for table, names in ((SPELLINGS, op.spellings), (PROBE_SPELLINGS, op.probe_spellings)):
        for spelling in names:
            if table.get(spelling) == name:
                del table[spelling]
    _version[0] += 1


def version() -> int:
    """Changes whenever an op is registered or removed (a cache key for derived tables)."""
    return _version[0]


class _Traceable(Set[str]):
    """The ops a probe may contain (those with a signature), read live from the registry."""

    def __contains__(self, name: object) -> bool:
        op = REGISTRY.get(name) if isinstance(name, str) else None
        return op is not None and op.params is not None

    def __iter__(self) -> Iterator[str]:
        return (n for n, op in REGISTRY.items() if op.params is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:  # type: ignore[override]
        return frozenset(it)  # what `|` and `&` return: a snapshot


class _Params(Mapping[str, tuple[str, ...]]):
    """Canonical op -> its canonical parameter names, read live from the registry."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        params = REGISTRY[name].params
        if params is None:
            raise KeyError(name)
        return params

    def __iter__(self) -> Iterator[str]:
        return iter(TRACEABLE)

    def __len__(self) -> int:
        return len(TRACEABLE)


TRACEABLE: Set[str] = _Traceable()
PARAMS: Mapping[str, tuple[str, ...]] = _Params()


def param_aliases(name: str) -> dict[str, str]:
    op = REGISTRY.get(name)
    return dict(op.param_aliases) if op else {}


def transfer(name: str) -> Transfer | None:
    op = REGISTRY.get(name)
    return op.transfer if op else None


def ops_with(predicate: Callable[[Op], bool]) -> frozenset[str]:
    """Names of the registered ops an entry predicate holds for (a snapshot)."""
    return frozenset(n for n, op in REGISTRY.items() if predicate(op))


def kinds_with(predicate: Callable[[Op], bool]) -> frozenset[str]:
    """The provenance kinds of the values the ops a predicate holds for make (an op's kind is
    its transfer's ``kind``, else its name: a Keras ``Input`` makes an ``input``), a snapshot."""
    return frozenset(
        (op.transfer.kind if op.transfer and op.transfer.kind else n)
        for n, op in REGISTRY.items()
        if predicate(op)
    )


# Keras convolution-like layers: their activation is a keyword after the geometry arguments
_CONV_LAYERS = (
    "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
    "SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D", "Convolution1D",
    "Convolution2D", "Convolution3D", "LocallyConnected1D", "LocallyConnected2D", "EinsumDense",
)  # fmt: skip

for _op in (
    Op(
        "log",
        unsafe_gradient=True,
        shape_keeping=True,
        spellings=("tf.math.log", "tf.log", "keras.ops.log", "keras.backend.log"),
        log_space=True,
        params=("x",),
        trace="math.log",
        float_only=True,
        graph=("Log",),
        interval="monotone:log",
        danger=Danger(0, "reaches", 0.0, "0"),
        render=("math.log", "log"),
    ),
    Op(
        "log1p",
        unsafe_gradient=True,
        shape_keeping=True,
        spellings=("tf.math.log1p", "tf.log1p", "keras.ops.log1p"),
        log_space=True,
        params=("x",),
        trace="math.log1p",
        float_only=True,
        graph=("Log1p",),
        interval="monotone:log1p",
        danger=Danger(0, "reaches", -1.0, "-1"),
        render=("math.log1p", None),
    ),
    Op(
        "exp",
        log_sum_exp=True,
        keras_activation="exponential",
        bijector="Exp",
        unsafe_gradient=True,
        shape_keeping=True,
        range=Range(0.0, INF, lo_open=True),
        underflows=True,
        spellings=("tf.math.exp", "tf.exp", "keras.ops.exp", "keras.backend.exp"),
        transfer=Transfer("unary", 0.0, INF),
        params=("x",),
        trace="math.exp",
        float_only=True,
        graph=("Exp",),
        interval="monotone:exp",
        danger=Danger(0, "overflows", label="an overflow"),
    ),
    Op(
        "expm1",
        shape_keeping=True,
        spellings=("tf.math.expm1", "tf.expm1", "keras.ops.expm1"),
        params=("x",),
        trace="math.expm1",
        float_only=True,
        graph=("Expm1",),
        interval="monotone:expm1",
        danger=Danger(0, "overflows", label="an overflow"),
        render=("math.expm1", None),
    ),
    Op(
        "log_softmax",
        keras_activation="log_softmax",
        log_sum_exp=True,
        shape_keeping=True,
        range=Range(-INF, 0.0),
        saturating=True,
        spellings=(
            "tf.nn.log_softmax",
            "tf.math.log_softmax",
            "keras.ops.log_softmax",
            "keras.activations.log_softmax",
        ),
        transfer=Transfer("unary", -INF, 0.0),
        log_space=True,
        params=("x", "axis"),
        param_aliases=(("logits", "x"),),
        trace="axis_op(nn.log_softmax)",
        graph=("LogSoftmax",),
        interval="nonpositive",
        render=("nn.log_softmax", None),
        logits_input=True,
        row_coupled=True,
    ),
    Op(
        "log_sigmoid",
        keras_activation="log_sigmoid",
        shape_keeping=True,
        range=Range(-INF, 0.0, hi_open=True),
        saturating=True,
        spellings=("tf.math.log_sigmoid", "keras.ops.log_sigmoid"),
        transfer=Transfer("unary", -INF, 0.0),
        log_space=True,
        params=("x",),
        trace="math.log_sigmoid",
        float_only=True,
        render=("math.log_sigmoid", None),
        logits_input=True,
    ),
    Op(
        "reduce_logsumexp",
        log_sum_exp=True,
        reduction="logsumexp",
        spellings=(
            "tf.math.reduce_logsumexp",
            "tf.reduce_logsumexp",
            "keras.ops.logsumexp",
            "keras.backend.logsumexp",
        ),
        log_space=True,
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_logsumexp)",
        render=("reduce_logsumexp", "logsumexp"),
        row_coupled=True,
    ),
    Op(
        "xlogy",
        spellings=("tf.math.xlogy", "keras.ops.xlogy"),
        log_space=True,
        params=("x", "y"),
        trace="elementwise(math.xlogy)",
        graph=("Xlogy",),
        interval="top",  # no bound kept: any value
        danger=Danger(1, "reaches", 0.0, "0", what="log argument"),
    ),
    Op(
        "sigmoid",
        keras_activation="sigmoid",
        bijector="Sigmoid",
        shape_keeping=True,
        range=Range(0.0, 1.0, lo_open=True, hi_open=True),
        underflows=True,
        saturating=True,
        spellings=(
            "tf.math.sigmoid",
            "tf.sigmoid",
            "tf.nn.sigmoid",
            "keras.ops.sigmoid",
            "keras.activations.sigmoid",
            "keras.backend.sigmoid",
        ),
        transfer=Transfer("unary", 0.0, 1.0),
        params=("x",),
        trace="math.sigmoid",
        float_only=True,
        graph=("Sigmoid",),
        interval="monotone:sigmoid",
        logits_input=True,
        probability=True,
    ),
    Op(
        "softmax",
        log_sum_exp=True,
        keras_activation="softmax",
        shape_keeping=True,
        range=Range(0.0, 1.0, lo_open=True),
        underflows=True,
        saturating=True,
        spellings=(
            "tf.nn.softmax",
            "tf.math.softmax",
            "keras.ops.softmax",
            "keras.activations.softmax",
            "keras.backend.softmax",
        ),
        transfer=Transfer("unary", 0.0, 1.0),
        params=("x", "axis"),
        param_aliases=(("logits", "x"),),
        trace="axis_op(nn.softmax)",
        graph=("Softmax",),
        interval="unit",
        render=("nn.softmax", "softmax"),
        logits_input=True,
        probability=True,
        row_coupled=True,
    ),
    Op(
        "relu",
        keras_activation="relu",
        shape_keeping=True,
        range=Range(0.0, INF),
        dead_zone=True,
        spellings=("tf.nn.relu", "keras.ops.relu", "keras.activations.relu", "keras.backend.relu"),
        transfer=Transfer("unary", 0.0, INF, zero="every relu input is <= 0"),
        params=("x",),
        trace="nn.relu",
        graph=("Relu",),
        interval="relu",
    ),
    Op(
        "relu6",
        keras_activation="relu6",
        shape_keeping=True,
        range=Range(0.0, 6.0),
        dead_zone=True,
        spellings=("tf.nn.relu6", "keras.ops.relu6"),
        transfer=Transfer("unary", 0.0, 6.0, zero="every relu input is <= 0"),
        params=("x",),
        trace="nn.relu6",
        graph=("Relu6",),
        interval="relu6",
    ),
    Op(
        "elu",
        keras_activation="elu",
        shape_keeping=True,
        range=Range(-1.0, INF, lo_open=True),
        spellings=("tf.nn.elu", "keras.ops.elu", "keras.activations.elu", "keras.backend.elu"),
        transfer=Transfer("unary", -1.0, INF),
        params=("x",),
        trace="nn.elu",
        float_only=True,
        graph=("Elu",),
        interval="monotone:elu",
        render=("nn.elu", "elu"),
    ),
    Op(
        "selu",
        keras_activation="selu",
        shape_keeping=True,
        range=Range(-SELU_FLOOR, INF, lo_open=True),
        spellings=("tf.nn.selu", "keras.ops.selu", "keras.activations.selu"),
        transfer=Transfer("unary", -SELU_FLOOR, INF),
        params=("x",),
        trace="nn.selu",
        float_only=True,
        graph=("Selu",),
        interval="monotone:selu",
        render=("nn.selu", None),
    ),
    Op(
        "leaky_relu",
        keras_activation="leaky_relu",
        shape_keeping=True,
        spellings=("tf.nn.leaky_relu", "keras.ops.leaky_relu", "keras.activations.leaky_relu"),
        transfer=Transfer("unary", -INF, INF),
        params=("x", "alpha"),
        param_aliases=(("negative_slope", "alpha"),),
        trace="nn.leaky_relu",
        float_only=True,
        graph=("LeakyRelu",),
        interval="top",
        render=("nn.leaky_relu", None),
    ),
    Op(
        "softplus",
        keras_activation="softplus",
        bijector="Softplus",
        shape_keeping=True,
        range=Range(0.0, INF, lo_open=True),
        underflows=True,
        spellings=(
            "tf.math.softplus",
            "tf.nn.softplus",
            "keras.ops.softplus",
            "keras.activations.softplus",
            "keras.backend.softplus",
        ),
        transfer=Transfer("unary", 0.0, INF),
        params=("x",),
        trace="math.softplus",
        float_only=True,
        graph=("Softplus",),
        interval="softplus",
        render=("math.softplus", "softplus"),
    ),
    Op(
        "tanh",
        keras_activation="tanh",
        shape_keeping=True,
        range=Range(-1.0, 1.0, lo_open=True, hi_open=True),
        saturating=True,
        spellings=("tf.math.tanh", "tf.tanh", "tf.nn.tanh", "keras.ops.tanh", "keras.backend.tanh"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x",),
        trace="math.tanh",
        float_only=True,
        graph=("Tanh",),
        interval="monotone:tanh",
    ),
    Op(
        # the error function: an affine map of it (a probit, `0.5 * (1 + erf(x / sqrt(2)))`)
        # has a range the evaluator can give.  Closed, as float rounding reaches +-1 (erf(4));
        # not marked saturating, so TNL104 reads tanh alone among signed squashings, as reviewed
        "erf",
        shape_keeping=True,
        range=Range(-1.0, 1.0),
        spellings=("tf.math.erf", "tf.erf", "keras.ops.erf"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x",),
        trace="math.erf",
        float_only=True,
        graph=("Erf",),
        interval="monotone:erf",
    ),
    Op(
        "square",
        power=2.0,
        shape_keeping=True,
        range=Range(0.0, INF),
        underflows=True,
        zero_preserving=True,
        spellings=("tf.math.square", "tf.square", "keras.ops.square", "keras.backend.square"),
        transfer=Transfer("unary", 0.0, INF, zero="its input is 0"),
        params=("x",),
        trace="math.square",
        graph=("Square",),
        interval="square",
        render=("square", "square"),
    ),
    Op(
        "squared_difference",
        power=2.0,
        range=Range(0.0, INF),
        underflows=True,
        spellings=("tf.math.squared_difference", "tf.squared_difference"),
        transfer=Transfer("unary", 0.0, INF, zero="its operands are equal"),
        params=("x", "y"),
        trace="elementwise(math.squared_difference)",
        graph=("SquaredDifference",),
        interval="nonnegative",
    ),
    Op(
        "sqrt",
        power=0.5,
        shape_keeping=True,
        range=Range(0.0, INF),
        zero_preserving=True,
        spellings=("tf.math.sqrt", "tf.sqrt", "keras.ops.sqrt", "keras.backend.sqrt"),
        transfer=Transfer("unary", 0.0, INF),
        params=("x",),
        trace="math.sqrt",
        float_only=True,
        graph=("Sqrt",),
        interval="sqrt",
        danger=Danger(0, "reaches", 0.0, "0"),
        render=("sqrt", "sqrt"),
    ),
    Op(
        "rsqrt",
        power=-0.5,
        divisor=0,
        shape_keeping=True,
        spellings=("tf.math.rsqrt", "tf.rsqrt", "keras.ops.rsqrt"),
        params=("x",),
        trace="math.rsqrt",
        float_only=True,
        graph=("Rsqrt",),
        interval="rsqrt",
        danger=Danger(0, "reaches", 0.0, "0"),
    ),
    Op(
        "reciprocal",
        power=-1.0,
        divisor=0,
        shape_keeping=True,
        spellings=("tf.math.reciprocal", "tf.reciprocal", "keras.ops.reciprocal"),
        params=("x",),
        trace="math.reciprocal",
        float_only=True,
        graph=("Reciprocal", "Inv"),
        interval="reciprocal",
        danger=Danger(0, "straddles", 0.0, "0"),
    ),
    Op(
        "abs",
        shape_keeping=True,
        range=Range(0.0, INF),
        zero_preserving=True,
        spellings=(
            "tf.math.abs",
            "tf.abs",
            "keras.ops.abs",
            "keras.ops.absolute",
            "keras.backend.abs",
        ),
        transfer=Transfer("unary", 0.0, INF, zero="its input is 0"),
        params=("x",),
        trace="math.abs",
        graph=("Abs",),
        interval="abs",
    ),
    Op(
        "pow",
        operator="**",
        unsafe_gradient=True,
        spellings=("tf.math.pow", "tf.pow", "keras.ops.power", "keras.backend.pow"),
        params=("x", "y"),
        trace="_pow",
        graph=("Pow",),
        interval="top",  # no bound kept: any value
        danger=Danger(0, "pow_base", 0.0, "0", what="base"),
    ),
    Op(
        "acos",
        unsafe_gradient=True,
        spellings=("tf.math.acos", "tf.acos", "keras.ops.arccos"),
        params=("x",),
        trace="math.acos",
        float_only=True,
        graph=("Acos",),
        interval="acos",
        danger=Danger(0, "leaves_unit", label="±1"),
    ),
    Op(
        "asin",
        unsafe_gradient=True,
        spellings=("tf.math.asin", "tf.asin", "keras.ops.arcsin"),
        params=("x",),
        trace="math.asin",
        float_only=True,
        graph=("Asin",),
        interval="asin",
        danger=Danger(0, "leaves_unit", label="±1"),
    ),
    Op(
        "atanh",
        unsafe_gradient=True,
        spellings=("tf.math.atanh", "tf.atanh", "keras.ops.arctanh"),
        params=("x",),
        trace="math.atanh",
        float_only=True,
        graph=("Atanh",),
        interval="top",
        danger=Danger(0, "leaves_unit", label="±1"),
    ),
    Op(
        "divide",
        operator="/",
        divisor=1,
        unsafe_gradient=True,
        spellings=(
            "tf.math.divide",
            "tf.divide",
            "tf.math.truediv",
            "tf.truediv",
            "tf.math.realdiv",
            "tf.realdiv",
            "tf.div",
            "tf.math.div",
            "keras.ops.divide",
            "keras.ops.true_divide",
        ),
        transfer=Transfer("arith"),
        params=("x", "y"),
        trace="_divide",
        graph=("RealDiv", "Div"),
        interval="div",
        danger=Danger(1, "straddles", 0.0, "0", what="denominator"),
    ),
    Op(
        "divide_no_nan",
        divisor=1,
        spellings=("tf.math.divide_no_nan", "tf.div_no_nan", "keras.ops.divide_no_nan"),
        params=("x", "y"),
        trace="elementwise(math.divide_no_nan)",
        graph=("DivNoNan",),
        interval="div_no_nan",
        danger=Danger(1, "never", 0.0, "0", what="denominator"),
        render=("math.divide_no_nan", None),
    ),
    Op(
        "multiply",
        operator="*",
        underflows=True,
        spellings=("tf.math.multiply", "tf.multiply", "keras.ops.multiply"),
        transfer=Transfer("arith"),
        params=("x", "y"),
        trace="elementwise(_multiply)",
        graph=("Mul",),
        interval="mul",
    ),
    Op(
        "add",
        operator="+",
        spellings=("tf.math.add", "tf.add", "keras.ops.add"),
        transfer=Transfer("arith"),
        params=("x", "y"),
        trace="elementwise(_add)",
        graph=("Add", "AddV2"),
        interval="add",
    ),
    Op(
        "subtract",
        operator="-",
        spellings=("tf.math.subtract", "tf.subtract", "keras.ops.subtract"),
        transfer=Transfer("arith"),
        params=("x", "y"),
        trace="elementwise(_subtract)",
        graph=("Sub",),
        interval="sub",
    ),
    Op(
        "negative",
        shape_keeping=True,
        spellings=("tf.math.negative", "tf.negative", "keras.ops.negative"),
        params=("x",),
        trace="math.negative",
        graph=("Neg",),
        interval="neg",
    ),
    Op(
        "maximum",
        floors=True,
        spellings=("tf.math.maximum", "tf.maximum", "keras.ops.maximum", "keras.backend.maximum"),
        transfer=Transfer("maximum"),
        params=("x", "y"),
        trace="elementwise(math.maximum)",
        graph=("Maximum",),
        interval="maximum",
        render=("maximum", "maximum"),
    ),
    Op(
        "minimum",
        spellings=("tf.math.minimum", "tf.minimum", "keras.ops.minimum", "keras.backend.minimum"),
        transfer=Transfer("minimum"),
        params=("x", "y"),
        trace="elementwise(math.minimum)",
        graph=("Minimum",),
        interval="minimum",
    ),
    Op(
        "clip_by_value",
        floors=True,
        shape_keeping=True,
        spellings=("tf.clip_by_value", "keras.ops.clip", "keras.backend.clip"),
        transfer=Transfer("clip"),
        params=("x", "clip_value_min", "clip_value_max"),
        trace="elementwise(clip_by_value)",
        graph=("ClipByValue",),
        interval="structural",
        render=("clip_by_value", "clip"),
    ),
    Op(
        "clip_by_norm",
        clips_norm=True,
        spellings=("tf.clip_by_norm",),
        params=("x", "clip_norm", "axes"),
        trace="_clip_by_norm",
    ),
    Op("clip_by_global_norm", spellings=("tf.clip_by_global_norm",), clips_norm=True),
    Op(
        "where",
        spellings=("tf.where", "tf.where_v2", "keras.ops.where", "keras.backend.switch"),
        params=("condition", "x", "y"),
        param_aliases=(("x1", "x"), ("x2", "y")),
        transfer=Transfer("where"),
        trace="_where",
        graph=("Select", "SelectV2"),
        interval="structural",
        danger=Danger(0, "branches", label=""),
        render=("where", None),
    ),
    Op(
        "cast",
        conversion=True,
        shape_keeping=True,
        value_preserving=True,
        # "tf.math.cast": TF's own ``math_ops.cast`` (internal modules map to tf.math.)
        spellings=(
            "tf.cast",
            "tf.dtypes.cast",
            "tf.math.cast",
            "keras.ops.cast",
            "keras.backend.cast",
        ),
        transfer=Transfer("cast"),
        params=("x", "dtype"),
        trace="_cast",
    ),
    Op(
        "stop_gradient",
        gradient_sink="the value is under tf.stop_gradient",
        shape_keeping=True,
        value_preserving=True,
        spellings=("tf.stop_gradient", "keras.ops.stop_gradient", "keras.backend.stop_gradient"),
        transfer=Transfer("passthrough"),
        params=("x",),
        trace="stop_gradient",
        graph=("StopGradient",),
        interval="same",
    ),
    Op(
        "identity",
        conversion=True,
        shape_keeping=True,
        value_preserving=True,
        spellings=("tf.identity",),
        transfer=Transfer("passthrough"),
        params=("x",),
        trace="identity",
        graph=("Identity",),
        interval="same",
    ),
    Op(
        # Keras's Dropout layer as it trains (the training rung's slices only: no spelling)
        "dropout",
        shape_keeping=True,
        params=("x", "rate"),
        trace="_dropout",
    ),
    Op(
        # a Keras Embedding layer's lookup: the rows of a table the whole-number ids pick, of a
        # vocabulary of ``depth`` rows (the training rung's slices only: no spelling)
        "embedding_lookup",
        params=("params", "ids", "depth"),
        trace="_embedding_lookup",
    ),
    Op(
        # ``tf.einsum(equation, a, b)`` of two operands of any rank (the training rung's slices
        # only: no spelling; a probe's per-point values have no batch and sequence axes)
        "einsum_pair",
        params=("equation", "a", "b"),
        trace="_einsum_pair",
    ),
    Op(
        # a 2-D convolution of channels-last images (``tf.nn.conv2d``, a simple
        # ``tf.nn.convolution``, ``keras.ops.conv``): a sum of products, of either sign.  A
        # finding's probe takes its output as one input (its per-point values have no image
        # axes); the training rung's slice writes it as ``conv2d_nhwc``
        "conv2d",
        spellings=("tf.nn.conv2d", "tf.nn.convolution", "keras.ops.conv"),
        transfer=Transfer("unary", -INF, INF),
        rung="conv2d_nhwc",
    ),
    Op(
        # a max pooling of channels-last images over a window: entries of its input
        "max_pool",
        spellings=("tf.nn.max_pool", "tf.nn.max_pool2d", "keras.ops.max_pool"),
        transfer=Transfer("passthrough"),
        pooling="MAX",
        rung="pool2d_nhwc",
    ),
    Op(
        # an average pooling of channels-last images over a window: within its input's range
        "avg_pool",
        spellings=("tf.nn.avg_pool", "tf.nn.avg_pool2d", "keras.ops.average_pool"),
        transfer=Transfer("passthrough"),
        pooling="AVG",
        rung="pool2d_nhwc",
    ),
    Op(
        # ``tf.nn.dropout(x, keep_prob)`` (TF1) / ``tf.nn.dropout(x, rate)``: the kept entries
        # rescaled, the others 0 (no static transfer: a rescaled probability is not one); the
        # training rung's slice writes it as ``dropout`` with the rate the program trains with
        "nn_dropout",
        spellings=("tf.nn.dropout",),
        rung="dropout",
    ),
    Op(
        # ``conv2d`` in the training rung's slices (no spelling): NHWC input, a
        # [kh, kw, in, out] kernel, strides [sh, sw] and "SAME"/"VALID" padding as literals
        "conv2d_nhwc",
        params=("x", "filters", "strides", "padding"),
        trace="_conv2d_nhwc",
    ),
    Op(
        # ``max_pool`` / ``avg_pool`` in the training rung's slices (no spelling), as
        # ``tf.nn.pool`` computes them: a [wh, ww] window, its reduction, strides and padding
        "pool2d_nhwc",
        params=("x", "window", "pooling", "strides", "padding"),
        trace="_pool2d_nhwc",
    ),
    Op(
        # a Keras Conv1D over the steps of [rows, steps, channels] (the training rung's slices
        # only: no spelling): a [k, in, out] kernel, a stride and "SAME"/"VALID" padding
        "conv1d_nwc",
        params=("x", "filters", "stride", "padding"),
        trace="_conv1d_nwc",
    ),
    Op(
        # a Keras LSTM / GRU / SimpleRNN layer over the steps of [rows, steps, features], as
        # Keras runs it with its defaults (the training rung's slices only: no spelling)
        "recurrent",
        params=("x", "kernel", "recurrent_kernel", "bias", "cell", "sequences"),
        trace="_recurrent",
    ),
    Op(
        # ``tf.random.normal(tf.shape(x), mean, stddev)``: a fresh draw shaped like ``x`` at
        # each training step, or with ``x``'s rows and ``width`` entries each (the training
        # rung's slices only: no spelling)
        "normal_draw",
        params=("x", "mean", "stddev", "width"),
        trace="_normal_draw",
    ),
    Op(
        "reshape",
        value_preserving=True,
        spellings=("tf.reshape", "keras.ops.reshape", "keras.backend.reshape"),
        transfer=Transfer("passthrough"),
        params=("x", "shape"),
        trace="_reshape",
        graph=("Reshape",),
        interval="same",
    ),
    Op(
        "tile",
        rank_dependent=True,
        value_preserving=True,
        spellings=("tf.tile", "keras.ops.tile", "keras.backend.tile"),
        transfer=Transfer("passthrough"),
        params=("x", "multiples"),
        trace="_values_kept",
        graph=("Tile",),
        interval="same",
    ),
    # TFP's rank padding of `x` to the rank of a reference (broadcast_util): a reshape that
    # adds trailing axes of size 1, so the values are x's and the reference gives only a rank
    Op(
        "expand_dims_like",
        probe_spellings=(
            "tensorflow_probability.python.internal.broadcast_util.left_justified_expand_dims_like",
            "tensorflow_probability.python.internal.broadcast_util.left_justified_expand_dims_to",
        ),
        transfer=Transfer("passthrough"),
        params=("x", "reference"),
        trace="_values_kept",
    ),
    Op(
        "transpose",
        rank_dependent=True,
        value_preserving=True,
        spellings=(
            "tf.transpose",
            "tf.linalg.matrix_transpose",
            "keras.ops.transpose",
            "keras.backend.transpose",
        ),
        probe_spellings=("tf.linalg.transpose", "keras.backend.permute_dimensions"),
        transfer=Transfer("passthrough"),
        params=("x", "perm"),
        trace="_transpose",
        graph=("Transpose",),
        interval="same",
    ),
    Op(
        "expand_dims",
        rank_dependent=True,
        value_preserving=True,
        spellings=("tf.expand_dims", "keras.ops.expand_dims", "keras.backend.expand_dims"),
        transfer=Transfer("passthrough"),
        params=("x", "axis"),
        trace="_expand_dims",
        graph=("ExpandDims",),
        interval="same",
    ),
    Op(
        "squeeze",
        rank_dependent=True,
        value_preserving=True,
        spellings=("tf.squeeze", "keras.ops.squeeze", "keras.backend.squeeze"),
        probe_spellings=("tf.compat.v1.squeeze",),
        transfer=Transfer("passthrough"),
        params=("x", "axis"),
        trace="_squeeze",
        graph=("Squeeze",),
        interval="same",
    ),
    Op(
        "gather",
        value_preserving=True,
        selects=True,
        spellings=("tf.gather", "keras.ops.take", "keras.backend.gather"),
        transfer=Transfer("passthrough"),
        params=("x", "indices", "axis"),
        param_aliases=(("indices", "indices"),),
        trace="_values_kept",
    ),
    Op(
        "concat",
        rank_dependent=True,
        spellings=("tf.concat", "keras.ops.concatenate", "keras.backend.concatenate"),
        transfer=Transfer("concat"),
        params=("x", "axis"),
        trace="_concat",
    ),
    Op(
        "reduce_sum",
        reduction="sum",
        spellings=("tf.math.reduce_sum", "tf.reduce_sum", "keras.ops.sum", "keras.backend.sum"),
        transfer=Transfer("reduce"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_sum)",
        graph=("Sum",),
        interval="sum",
        render=("reduce_sum", "sum"),
    ),
    Op(
        "reduce_mean",
        reduction="mean",
        spellings=("tf.math.reduce_mean", "tf.reduce_mean", "keras.ops.mean", "keras.backend.mean"),
        transfer=Transfer("reduce"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_mean)",
        graph=("Mean",),
        interval="same",
        render=("reduce_mean", "mean"),
    ),
    Op(
        "reduce_max",
        reduction="max",
        spellings=("tf.math.reduce_max", "tf.reduce_max", "keras.ops.max", "keras.backend.max"),
        transfer=Transfer("reduce"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_max)",
        graph=("Max",),
        interval="same",
    ),
    Op(
        "reduce_min",
        reduction="min",
        spellings=("tf.math.reduce_min", "tf.reduce_min", "keras.ops.min", "keras.backend.min"),
        transfer=Transfer("reduce"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_min)",
        graph=("Min",),
        interval="same",
    ),
    Op(
        "reduce_prod",
        reduction="prod",
        spellings=("tf.math.reduce_prod", "tf.reduce_prod", "keras.ops.prod", "keras.backend.prod"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_prod)",
        graph=("Prod",),
        interval="prod",
    ),
    Op(
        "reduce_std",
        reduction="std",
        range=Range(0.0, INF),
        spellings=("tf.math.reduce_std", "keras.ops.std", "keras.backend.std"),
        transfer=Transfer("norm", zero="the batch is constant"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_std)",
    ),
    Op(
        "reduce_variance",
        reduction="variance",
        range=Range(0.0, INF),
        spellings=("tf.math.reduce_variance", "keras.ops.var", "keras.backend.var"),
        transfer=Transfer("norm", zero="the batch is constant"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_variance)",
    ),
    Op(
        "count_nonzero",
        whole=True,
        reduction="count",
        order_only=True,
        natural_zero=True,
        spellings=("tf.math.count_nonzero", "tf.count_nonzero", "keras.ops.count_nonzero"),
        transfer=Transfer("norm", zero="nothing is counted"),
        params=("x", "axis", "keepdims", "dtype"),
        trace="_count_nonzero",
    ),
    Op(
        "norm",
        reduction="norm",
        range=Range(0.0, INF),
        spellings=("tf.norm", "tf.linalg.norm", "keras.ops.norm", "keras.ops.linalg.norm"),
        transfer=Transfer("norm", zero="the vector is zero"),
        params=("x", "ord", "axis", "keepdims"),
        trace="_norm",
    ),
    Op(
        "euclidean_norm",
        reduction="norm",
        range=Range(0.0, INF),
        spellings=("tf.math.reduce_euclidean_norm", "tf.reduce_euclidean_norm"),
        transfer=Transfer("norm", zero="the vector is zero"),
        params=("x", "axis", "keepdims", "name"),
        trace="reduction(math.reduce_euclidean_norm)",
        graph=("EuclideanNorm",),
        interval="nonnegative",
    ),
    Op(
        "l2_normalize",
        spellings=("tf.math.l2_normalize", "tf.nn.l2_normalize", "keras.backend.l2_normalize"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x", "axis", "epsilon"),
        trace="_l2_normalize",
    ),
    Op(
        "matmul",
        raw_linear=True,
        rank_dependent=True,
        natural_zero=True,
        spellings=(
            "tf.linalg.matmul",
            "tf.matmul",
            "keras.ops.matmul",
            "keras.backend.dot",
            "keras.ops.dot",
        ),
        transfer=Transfer("unary", -INF, INF),
        params=("a", "b", "transpose_a", "transpose_b"),
        param_aliases=(("x", "a"), ("y", "b"), ("x1", "a"), ("x2", "b"), ("a", "a"), ("b", "b")),
        trace="_matmul",
        graph=("MatMul", "BatchMatMulV2", "BatchMatMulV3"),
        interval="matmul",
    ),
    Op(
        # a sum of products of its operands: >= 0 when every operand is, and 0 where one of
        # them is 0 across what it sums (a row of ReLU outputs all 0)
        "einsum",
        spellings=("tf.einsum", "tf.linalg.einsum", "keras.ops.einsum"),
        transfer=Transfer("einsum"),
    ),
    Op(
        "moments",
        spellings=("tf.nn.moments",),
        transfer=Transfer("moments"),
        reduction="moments",
    ),
    Op(
        "one_hot",
        fixed_values=True,
        natural_zero=True,
        spellings=("tf.one_hot", "keras.ops.one_hot", "keras.backend.one_hot"),
        transfer=Transfer("one_hot"),
        params=("indices", "depth", "on_value", "off_value", "axis", "dtype"),
        param_aliases=(("indices", "indices"),),
        trace="_one_hot",
    ),
    Op(
        "placeholder",
        source="data",
        spellings=("tf.placeholder", "keras.backend.placeholder"),
        transfer=Transfer("source"),
    ),
    Op(
        "variable",
        source="weights",
        spellings=("tf.Variable", "tf.get_variable", "keras.Variable", "keras.backend.variable"),
        transfer=Transfer("source"),
    ),
    Op(
        "constant",
        source="literal",
        conversion=True,
        spellings=("tf.constant", "tf.convert_to_tensor", "keras.ops.convert_to_tensor"),
        transfer=Transfer("source"),
        params=("x", "dtype"),
        trace="_constant",
    ),
    Op(
        "zeros",
        source="literal",
        spellings=("tf.zeros", "tf.zeros_like", "keras.ops.zeros", "keras.ops.zeros_like"),
        transfer=Transfer("source"),
        params=("x", "dtype"),
        param_aliases=(("shape", "x"), ("input", "x")),
        trace="like(zeros_like)",
        graph=("ZerosLike",),
        interval="zero",
        render=("zeros_like", "zeros_like"),
    ),
    Op(
        "ones",
        source="literal",
        range=Range(1.0, 1.0),
        spellings=("tf.ones", "tf.ones_like", "keras.ops.ones", "keras.ops.ones_like"),
        transfer=Transfer("source"),
        params=("x", "dtype"),
        param_aliases=(("shape", "x"), ("input", "x")),
        trace="like(ones_like)",
        graph=("OnesLike",),
        interval="one",
        render=("ones_like", "ones_like"),
    ),
    Op(
        "random",
        source="draw",
        spellings=(
            "tf.random.normal",
            "tf.random_normal",
            "tf.random.truncated_normal",
            "tf.truncated_normal",
        ),
        transfer=Transfer("source"),
    ),
    Op(
        # a draw in [minval, maxval): its value keeps the bounds its arguments give it
        "uniform_draw",
        source="draw",
        spellings=("tf.random.uniform", "tf.random_uniform", "keras.random.uniform"),
        transfer=Transfer("draw_range", kind="random"),
        draw_bounds=(1, 2),
    ),
    Op(
        "stateless_uniform_draw",
        source="draw",
        spellings=("tf.random.stateless_uniform",),
        transfer=Transfer("draw_range", kind="random"),
        draw_bounds=(2, 3),
    ),
    Op(
        "keras_input",
        source="data",
        spellings=("keras.Input", "keras.layers.Input"),
        transfer=Transfer("source", kind="input"),
    ),
    Op(
        "epsilon",
        spellings=("keras.backend.epsilon", "keras.config.epsilon"),
        transfer=Transfer("epsilon"),
    ),
    Op(
        "sigmoid_xent",
        fused_xent=True,
        spellings=("tf.nn.sigmoid_cross_entropy_with_logits",),
        params=("labels", "logits"),
        param_aliases=(("logits", "logits"),),
        trace="xent(nn.sigmoid_cross_entropy_with_logits)",
        render=("nn.sigmoid_cross_entropy_with_logits", None),
    ),
    Op(
        "softmax_xent",
        fused_xent=True,
        spellings=(
            "tf.nn.softmax_cross_entropy_with_logits",
            "tf.nn.softmax_cross_entropy_with_logits_v2",
        ),
        params=("labels", "logits", "axis"),
        param_aliases=(("logits", "logits"), ("dim", "axis")),
        trace="xent(nn.softmax_cross_entropy_with_logits)",
        render=("nn.softmax_cross_entropy_with_logits", None),
        row_coupled=True,
    ),
    Op(
        # class ids, not one-hot rows: the dense op on `one_hot(labels, classes)`, which is what
        # the sparse op computes for every valid id (a probe's row gives its first entry)
        "sparse_softmax_xent",
        fused_xent=True,
        spellings=("tf.nn.sparse_softmax_cross_entropy_with_logits",),
        params=("labels", "logits"),
        param_aliases=(("logits", "logits"),),
        trace="_sparse_xent",
        row_coupled=True,
    ),
    Op(
        "weighted_xent",
        fused_xent=True,
        spellings=("tf.nn.weighted_cross_entropy_with_logits",),
        params=("labels", "logits", "pos_weight"),
        trace="_weighted_xent",
        render=("nn.weighted_cross_entropy_with_logits", None),
    ),
    Op(
        "check_numerics",
        gradient_sink="the value only feeds a runtime check",
        spellings=(
            "tf.debugging.check_numerics",
            "tf.check_numerics",
            "tf.debugging.assert_all_finite",
            "tf.debugging.enable_check_numerics",
            "tf.verify_tensor_all_finite",
        ),
    ),
    Op(
        "set_policy",
        spellings=(
            "keras.mixed_precision.set_global_policy",
            "keras.mixed_precision.experimental.set_policy",
            "keras.mixed_precision.set_dtype_policy",
            "keras.config.set_dtype_policy",
        ),
    ),
    Op(
        "loss_scale_optimizer",
        spellings=(
            "keras.mixed_precision.LossScaleOptimizer",
            "tf.train.experimental.enable_mixed_precision_graph_rewrite",
            "tf.mixed_precision.enable_mixed_precision_graph_rewrite",
        ),
    ),
    Op(
        "dataset",
        spellings=(
            "tf.data.Dataset.from_tensor_slices",
            "tf.data.Dataset.from_tensors",
            "tf.data.Dataset.from_generator",
            "tf.data.TFRecordDataset",
        ),
    ),
    Op("dense", spellings=("keras.layers.Dense",), transfer=Transfer("dense_layer")),
    # Keras layers whose output range is their activation's: `self.mlp = Conv2D(...,
    # activation="relu")` built in `build` makes `self.mlp(x)` a ReLU output wherever it is called
    Op(
        "conv_layer",
        spellings=tuple(f"keras.layers.{name}" for name in _CONV_LAYERS),
        transfer=Transfer("conv_layer"),
    ),
    Op(
        "activation_layer",
        spellings=("keras.layers.Activation",),
        transfer=Transfer("activation_layer"),
    ),
    Op("lambda_layer", spellings=("keras.layers.Lambda",), transfer=Transfer("lambda_layer")),
    Op(
        "softmax_layer",
        spellings=("keras.layers.Softmax",),
        transfer=Transfer("activation_layer_of", kind="softmax"),
    ),
    Op(
        "relu_layer",
        spellings=("keras.layers.ReLU",),
        transfer=Transfer("activation_layer_of", kind="relu"),
    ),
    Op(
        "sequential",
        spellings=("keras.Sequential", "keras.models.Sequential"),
        transfer=Transfer("sequential"),
    ),
    Op(
        "keras_model",
        spellings=("keras.Model", "keras.models.Model"),
        transfer=Transfer("functional_model"),
    ),
    Op("gradient_tape", spellings=("tf.GradientTape",)),
    # Known calls whose relation to their input a probe keeps by tracing them (a cut input
    # set independently of `y` would allow `floor(y)` = 1 at `y` = 0.5), and whose ranges the
    # static side and the interval analysis learn: cos in [-1, 1], i0e > 0.
    Op(
        "floor",
        whole=True,
        order_only=True,
        natural_zero=True,
        spellings=("tf.math.floor", "tf.floor", "keras.ops.floor"),
        params=("x",),
        trace="math.floor",
        float_only=True,
        graph=("Floor",),
        interval="monotone:floor",
    ),
    Op(
        "ceil",
        whole=True,
        order_only=True,
        natural_zero=True,
        spellings=("tf.math.ceil", "tf.ceil", "keras.ops.ceil"),
        params=("x",),
        trace="math.ceil",
        float_only=True,
        graph=("Ceil",),
        interval="monotone:ceil",
    ),
    Op(
        "round",
        whole=True,
        order_only=True,
        natural_zero=True,
        spellings=("tf.math.round", "tf.round", "keras.ops.round"),
        params=("x",),
        trace="math.round",
        float_only=True,
        graph=("Round",),
        interval="monotone:round",
    ),
    Op(
        "sign",
        whole=True,
        shape_keeping=True,
        range=Range(-1.0, 1.0),
        order_only=True,
        natural_zero=True,
        spellings=("tf.math.sign", "tf.sign", "keras.ops.sign"),
        transfer=Transfer("unary", -1.0, 1.0, zero="its input is 0"),
        params=("x",),
        trace="math.sign",
        graph=("Sign",),
        interval="monotone:sign",
    ),
    Op(
        "cos",
        shape_keeping=True,
        range=Range(-1.0, 1.0),
        spellings=("tf.math.cos", "tf.cos", "keras.ops.cos"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x",),
        trace="math.cos",
        float_only=True,
        graph=("Cos",),
        interval="signed_unit",
    ),
    Op(
        "sin",
        shape_keeping=True,
        range=Range(-1.0, 1.0),
        spellings=("tf.math.sin", "tf.sin", "keras.ops.sin"),
        transfer=Transfer("unary", -1.0, 1.0),
        params=("x",),
        trace="math.sin",
        float_only=True,
        graph=("Sin",),
        interval="signed_unit",
    ),
    Op(
        "bessel_i0e",
        range=Range(1e-20, 1.0),
        spellings=("tf.math.bessel_i0e", "tf.math.special.bessel_i0e"),
        # exp(-|x|) I0(x) is decreasing in |x| from 1, and > 2e-20 at float32's largest x
        transfer=Transfer("unary", 1e-20, 1.0),
        params=("x",),
        trace="math.bessel_i0e",
        float_only=True,
        graph=("BesselI0e",),
        interval="i0e",
    ),
    Op(
        "bessel_i1e",
        range=Range(-0.25, 0.25),
        spellings=("tf.math.bessel_i1e", "tf.math.special.bessel_i1e"),
        transfer=Transfer("unary", -0.25, 0.25, zero="its input is 0"),  # |i1e| < 0.216
        params=("x",),
        trace="math.bessel_i1e",
        float_only=True,
        graph=("BesselI1e",),
        interval="i1e",
    ),
    Op(
        "lgamma",
        spellings=("tf.math.lgamma", "tf.lgamma"),
        params=("x",),
        trace="math.lgamma",
        float_only=True,
        graph=("Lgamma",),
        interval="lgamma",
    ),
    Op(
        "digamma",
        spellings=("tf.math.digamma", "tf.digamma"),
        params=("x",),
        trace="math.digamma",
        float_only=True,
        graph=("Digamma",),
        interval="top",
    ),
    Op(
        "polygamma",
        spellings=("tf.math.polygamma", "tf.polygamma"),
        params=("a", "x"),
        param_aliases=(("a", "a"), ("x", "x")),
        trace="elementwise(math.polygamma)",
        graph=("Polygamma",),
        interval="top",
    ),
    Op(
        "greater",
        operator=">",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.greater", "tf.math.greater", "keras.ops.greater"),
        params=("x", "y"),
        trace="compare(>)",
    ),
    Op(
        "greater_equal",
        operator=">=",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.greater_equal", "tf.math.greater_equal", "keras.ops.greater_equal"),
        params=("x", "y"),
        trace="compare(>=)",
    ),
    Op(
        "less",
        operator="<",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.less", "tf.math.less", "keras.ops.less"),
        params=("x", "y"),
        trace="compare(<)",
    ),
    Op(
        "less_equal",
        operator="<=",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.less_equal", "tf.math.less_equal", "keras.ops.less_equal"),
        params=("x", "y"),
        trace="compare(<=)",
    ),
    Op(
        "equal",
        operator="==",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.equal", "tf.math.equal", "keras.ops.equal"),
        params=("x", "y"),
        trace="compare(==)",
    ),
    Op(
        "not_equal",
        operator="!=",
        boolean=True,
        order_only=True,
        probe_spellings=("tf.not_equal", "tf.math.not_equal", "keras.ops.not_equal"),
        params=("x", "y"),
        trace="compare(!=)",
    ),
    Op(
        "logical_and",
        boolean=True,
        probe_spellings=("tf.logical_and", "tf.math.logical_and", "keras.ops.logical_and"),
        params=("x", "y"),
        trace="logical(math.logical_and)",
    ),
    Op(
        "logical_or",
        boolean=True,
        probe_spellings=("tf.logical_or", "tf.math.logical_or", "keras.ops.logical_or"),
        params=("x", "y"),
        trace="logical(math.logical_or)",
    ),
    Op(
        "logical_not",
        boolean=True,
        probe_spellings=("tf.logical_not", "tf.math.logical_not", "keras.ops.logical_not"),
        params=("x",),
        trace="logical(math.logical_not)",
    ),
    # Keras losses, by family (the rules read the family from the name after "loss:")
    Op(
        "loss:binary_crossentropy",
        spellings=(
            "keras.losses.BinaryCrossentropy",
            "keras.losses.binary_crossentropy",
            "keras.backend.binary_crossentropy",
            "keras.metrics.binary_crossentropy",
        ),
    ),
    Op(
        "loss:categorical_crossentropy",
        spellings=(
            "keras.losses.CategoricalCrossentropy",
            "keras.losses.categorical_crossentropy",
            "keras.backend.categorical_crossentropy",
            "keras.losses.SparseCategoricalCrossentropy",
            "keras.losses.sparse_categorical_crossentropy",
            "keras.backend.sparse_categorical_crossentropy",
        ),
    ),
):
    register(_op)

# optimizers keep their facts in one table of their own; their spellings dispatch here as
# the canonical op "optimizer:<family>"
for _family, _opt in OPTIMIZERS.items():
    SPELLINGS.update(dict.fromkeys(_opt.spellings, "optimizer:" + _family))


def float_range(name: str) -> tuple[float, bool, float] | None:
    """The op's range as float arithmetic returns it, ``(lo, lo_open, hi)``: an open end is
    reached when the op underflows (to 0) or saturates (a sigmoid of 17 is 1.0)."""
    op = REGISTRY.get(name)
    r = op.range if op else None
    if op is None or r is None:
        return None
    closes = op.saturating or (op.underflows and r.lo == 0.0)
    return (r.lo, r.lo_open and not closes, r.hi)


# Sets of ops by fact, computed once the entries above are in.  Gates and rules read these
# instead of keeping op names of their own (tests/test_op_tables.py enforces it).
PROBABILITY = ops_with(lambda op: op.probability)  # a probability: sigmoid, softmax
SATURATING = ops_with(lambda op: op.saturating)
# ops that squash a logit: 0/1 (or a log of them) only at a far logit
LOGIT_SQUASHING = ops_with(lambda op: op.saturating and op.logits_input)
# a squashing op of either sign (tanh): bounded, yet half its inputs make it negative
SIGNED_SQUASHING = ops_with(
    lambda op: op.saturating and op.range is not None and op.range.lo < 0.0 < op.range.hi
)
VALUE_PRESERVING = ops_with(lambda op: op.value_preserving)
ENTRY_KEEPING = ops_with(lambda op: op.value_preserving and not op.selects)  # every entry on
ZERO_PRESERVING = ops_with(lambda op: op.zero_preserving or op.value_preserving)
BOOLEAN = ops_with(lambda op: op.boolean)
COMPARISONS = ops_with(lambda op: op.boolean and (op.trace or "").startswith("compare("))
STEP_FUNCTIONS = ops_with(lambda op: op.order_only or op.boolean)
UNDERFLOWING = ops_with(lambda op: op.underflows)
NATURAL_ZERO = ops_with(lambda op: op.natural_zero)
DEAD_ZONE = ops_with(lambda op: op.dead_zone)
SHAPE_KEEPING = ops_with(lambda op: op.shape_keeping)
RANGED = ops_with(lambda op: op.range is not None)
NONNEGATIVE = ops_with(lambda op: op.range is not None and op.range.lo >= 0.0)
STRICTLY_POSITIVE = ops_with(
    lambda op: (
        op.range is not None and (op.range.lo > 0.0 or (op.range.lo == 0.0 and op.range.lo_open))
    )
)
# positive in exact arithmetic, 0 only once it underflows (exp, softplus, sigmoid, softmax)
UNDERFLOWING_POSITIVE = STRICTLY_POSITIVE & UNDERFLOWING
PRODUCER_RANGES: dict[str, tuple[float, bool, float]] = {
    n: r for n in sorted(RANGED) if (r := float_range(n)) is not None
}
# Sets of ops by kind (issue 26: each was a literal table in the module reading it).
OPERATORS: dict[str, str] = {n: op.operator for n, op in REGISTRY.items() if op.operator}
REDUCTIONS = ops_with(lambda op: op.reduction is not None)
# reductions whose result lies between their entries' min and max (it keeps their range)
WITHIN_INPUTS = ops_with(lambda op: op.reduction in ("mean", "max", "min"))
# reductions that are linear in their entries (a sum, a mean: `-sum(y * log p)` stays one sum)
LINEAR_REDUCTIONS = ops_with(lambda op: op.reduction in ("sum", "mean"))
# reductions of nonnegative entries that are 0 exactly when every entry is 0 (nothing selected)
ZERO_WHEN_EMPTY = ops_with(lambda op: op.reduction in ("sum", "mean", "max", "count", "norm"))
DIVIDING = ops_with(lambda op: op.divisor is not None)
FUSED_XENT = ops_with(lambda op: op.fused_xent)
NORM_CLIPPING = ops_with(lambda op: op.clips_norm)
UNSAFE_GRADIENT = ops_with(lambda op: op.unsafe_gradient)
CONVERSIONS = ops_with(lambda op: op.conversion)
LITERAL_SOURCES = ops_with(lambda op: op.source == "literal")  # constant, zeros, ones
# the provenance kinds of values fed by data or trained (a placeholder, a Keras Input, a variable)
DATA_SOURCES = kinds_with(lambda op: op.source in ("data", "weights"))
FED = kinds_with(lambda op: op.source == "data")  # fed data: a placeholder, a Keras Input
DRAWN = ops_with(lambda op: op.source == "draw")
WHOLE = ops_with(lambda op: op.whole)
FLOORING = ops_with(lambda op: op.floors)  # maximum(x, eps), clip_by_value(x, eps, hi)
FIXED_VALUES = ops_with(lambda op: op.fixed_values or op.source == "literal")  # one_hot, ...
# a log of a squashed logit: <= 0 by construction, never the log of a 0 (log_softmax, log_sigmoid)
LOG_SQUASHING = ops_with(lambda op: op.log_space and op.saturating and op.logits_input)
RANK_DEPENDENT = ops_with(lambda op: op.rank_dependent)
RAW_LINEAR = ops_with(lambda op: op.raw_linear)  # matmul
POOLING = {n: op.pooling for n, op in REGISTRY.items() if op.pooling}  # max_pool: "MAX"
RUNG_FORMS = {n: op.rung for n, op in REGISTRY.items() if op.rung}  # conv2d: "conv2d_nhwc"
LOG_SUM_EXP = ops_with(lambda op: op.log_sum_exp)
SQUARING = ops_with(lambda op: op.power == 2.0)  # square, squared_difference
ROOTS = ops_with(lambda op: op.power in (0.5, -0.5))  # sqrt, rsqrt
GRADIENT_SINKS: dict[str, str] = {
    n: op.gradient_sink for n, op in REGISTRY.items() if op.gradient_sink
}
