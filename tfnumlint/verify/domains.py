"""Input domains: the values each free input of a probe can really take.

A probe's free input (a parameter, an attribute, an opaque call) is otherwise probed over every
float.  A witness is only evidence when it lies where the code's inputs can be, so each input
gets a domain, and pairs of inputs get relations, from four sources (strongest first):

- **assertions in scope**: ``tf.debugging.assert_positive(x)``, ``assert_non_negative``,
  ``assert_greater(a, b)``, ``assert_less``... in the same function, or in a class helper it
  passes the value to (``self._maybe_assert_valid_x(x)``);
- **class invariants** (analysis/invariants.py): assertions on ``self.scale`` anywhere in the
  class, ``__init__`` guards that raise, constraining bijectors in ``_parameter_properties``;
- **producers**: a value only ever assigned ``x + square(g)``, ``abs``, ``exp``, norms, ``relu``,
  ``softplus`` (an accumulator of non-negative terms) is non-negative; an input that is a call
  of a known math function the slice does not enter lies in its range (:data:`PRODUCER_RANGES`);
- **callers**: a parameter lies in the range of what the project's call sites pass (the
  index's cross-function provenance: `entropy_loss(softmax(...))` gives [0, 1], a ReLU output
  >= 0); strong when every call site passes a known value and the range is its producer's own
  (:data:`CODE_RANGED_KINDS`), weak when a caller passes an unknown value or the range rests on
  a name (`s * mask`).  A witness outside it is refuted or inconclusive whatever the input's
  origin: a driven parameter too (:func:`unreachable`).  An input that untraced calls only
  move from a parameter (``repeat``, ``reshape``, ``cast``...) keeps that range
  (:func:`passthrough_domain`); two parameters every caller passes from attributes its class
  asserts ordered keep the order (:func:`caller_relations`);
- **relations**: the shifted slices ``x[1:] - x[:-1]`` of a sorted array (``sort``, ``cumsum`` of a
  non-negative value, ``linspace``, ``range``) are non-negative; ``probs`` from a sigmoid and its
  ``logits`` are one parameter;
- **whole numbers** (:func:`integer_inputs`): an input read from ``tf.shape``/``tf.size``/
  ``count_nonzero``/``argmax`` (>= 0), ``tf.range``, a cast to an integer dtype or a rounding,
  or one asserted ``assert_integer_form`` in scope, takes whole values only: a witness that
  needs it at 1e-8 or 0.5 breaks a code-derived domain (refuted);
- **names** (weak evidence): the lexicon in :data:`NAME_LEXICON`, and ``high``/``low``-style
  pairs in :data:`PAIR_WORDS`.

The static side (:func:`annotate`) stores them in the probe as plain data; the probing side
keeps only points inside them (:func:`split_rows`); the verdict side (:func:`judge`) checks the
witness.  A symptom found only outside a domain is not confirmed: ``refuted`` when the domain
comes from the code, ``inconclusive`` with the reason when it comes from a name.  No TensorFlow.

The verdict side also asks whether the witness is *reachable* (:func:`reachable`): an input the
symptom needs (the worker relaxes the others) that is computed by an untraced call and sits at
any value its producer is not known to reach (0, 1e38 or an ordinary -1 alike: nothing computed
that value), or a parameter at a subnormal, or a count at a fraction, makes the finding
inconclusive.  Log-space names (the lexicon
:data:`LOG_SPACE_WORDS` and ``log`` + :data:`LOG_SPACE_AFTER_LOG`: ``logits``, ``new_log_prob``,
``log_variance``) take any value, extreme ones included; probabilities by name, and the results
of :data:`NATURAL_ZERO_CALLS` (products and counts of data, signs, roundings), may be 0 or an
everyday value.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import libcst as cst

from .. import ops
from ..analysis.contracts import Bound, inverse_image, sample_bounds
from ..analysis.driven import mark_inputs
from ..analysis.invariants import (
    bound_arguments,
    callee_scope,
    class_invariants,
    input_key,
    key_invariant,
    parameter_assertions,
)
from ..analysis.module import Binding, qualname
from ..analysis.names import dotted_name, tokens
from ..analysis.values import STRICTLY_POSITIVE_KINDS
from ..floats import max_finite
from .special import SPECIAL_WORDS, special_range

# name token -> (lo, lo_open, hi).  Weak evidence: a name is a convention, not a proof.
NAME_LEXICON: dict[str, tuple[float, bool, float]] = {}
for _words, _dom in (
    (("prob", "probs", "probability", "probabilities", "keep_prob", "dropout"), (0.0, False, 1.0)),
    (("eps", "epsilon"), (0.0, False, 0.5)),
    (("tolerance", "tol"), (0.0, False, 1.0)),
    (("step", "steps", "count", "counts", "counter", "index", "idx", "iteration", "epoch"),
     (0.0, False, math.inf)),
    (("num", "size", "length", "len", "n"), (0.0, False, math.inf)),
    (("std", "stddev", "scale", "sigma", "temperature", "concentration", "df", "bandwidth"),
     (0.0, True, math.inf)),
    (("var", "variance", "rate", "norm", "distance", "dist", "area", "areas", "noncentrality"),
     (0.0, False, math.inf)),
):  # fmt: skip
    for _w in _words:
        NAME_LEXICON[_w] = _dom
# Names of constants: `one = dtype(1.)` is 1 (TFP style), not a free input.  The whole name
# must be the word: `betainc_a_b_half` is not 0.5.
CONSTANT_NAMES = {
    "zero": 0.0,
    "one": 1.0,
    "half": 0.5,
    "two": 2.0,
    "np_pi": math.pi,
    "math_pi": math.pi,
    "pi": math.pi,
    "np_e": math.e,
    "math_e": math.e,
}
# `numpy_dtype(94.5)`, `np.float32(0.5)`: a literal cast to a dtype, sliced as an opaque call.
_CAST_LITERAL = re.compile(r"^(?:numpy_dtype|np_float\d+|dtype|np_dtype)_(\d+)(?:_(\d+))?$")
# Words that make a high/low pair a pair of counts or sizes, not an interval's ends.
_NOT_INTERVAL = frozenset({"count", "counts", "num", "size", "sizes", "index", "idx", "n"})
# Words in an opaque producer's name that make its value non-negative (log1psquare, abs, ...).
_NONNEG_WORDS = re.compile(r"^(?:\w*square|abs|norm|exp|softplus|relu|sqrt|variance|std)$")
MIN_WIDTH = 1e-6  # a named interval narrower than this (relative to 1 or its ends) is degenerate
# (bigger, smaller): `high` - `low` > 0 when both are free inputs of the same probe.
PAIR_WORDS = (
    ("high", "low"),
    ("upper", "lower"),
    ("max", "min"),
    ("maximum", "minimum"),
    ("hi", "lo"),
    ("big", "small"),
    ("end", "start"),
    ("stop", "start"),
    ("right", "left"),
)
_NONNEG_OPS = ops.NONNEGATIVE | {"reduce_euclidean_norm"}  # + a name the registry lacks
_SORTED_OPS = frozenset({"sort", "linspace", "range", "cumsum"})

# The range a known math function's value lies in: (lo, lo_open, hi), keyed by the last word
# of the callee (registered ops: their entry's float range, ops.PRODUCER_RANGES; the rest here) (`tf.math.softplus`, `tfp.math.log1mexp`, `special_math.ndtr`, `inv_probit`).
# A probe input that is such a call (or a name only ever bound to one) is probed inside it.
# Code-derived when the callee resolves to an import from a numerics library, weak (a name
# convention) when it is a local function or only its name matches.  float32 caveats: exp and
# softplus underflow to exactly 0, so they are >= 0 here, not > 0.
_POS = (0.0, True, math.inf)
_NONNEG = (0.0, False, math.inf)
_UNIT = (0.0, False, 1.0)
_NONPOS = (-math.inf, False, 0.0)
PRODUCER_RANGES: dict[str, tuple[float, bool, float]] = {
    **dict.fromkeys(
        ("l2_norm", "reduce_euclidean_norm", "global_norm", "elu_plus_one", "variance", "stddev",
         "reduce_logsumexp_exp", "i0e", "ive", "bessel_ive", "exp2", "cosh"),
        _NONNEG,
    ),
    **dict.fromkeys(
        ("kve", "k0e", "k1e", "bessel_kve", "bessel_k0e", "bessel_k1e", "eps", "epsilon"), _POS
    ),
    **dict.fromkeys(
        ("inv_probit", "ndtr", "cdf", "survival_function", "hard_sigmoid", "betainc",
         "igamma", "igammac", "erfc_half"),
        _UNIT,
    ),
    **dict.fromkeys(
        ("log1mexp", "log_ndtr", "log_cdf", "log_survival_function", "log_sum_of_probabilities"),
        _NONPOS,
    ),
    "erfc": (0.0, False, 2.0),
    "lgamma": (-0.1216, False, math.inf),  # min of log Γ on x > 0 (Γ(1.4616) = 0.8856)
    "eye": (1.0, False, 1.0),  # an identity matrix, probed at its diagonal: its norm is > 0
    "ones_like": (1.0, False, 1.0),
    "i1e": ops.PRODUCER_RANGES["bessel_i1e"],  # odd: negative for a negative input
    **ops.PRODUCER_RANGES,
}  # fmt: skip
# Name patterns of the same families (weak: a naming convention, not a known function).
_PRODUCER_PATTERNS = (
    (re.compile(r"^log_(?:\w+_)?(?:cdf|ndtr|survival|sigmoid)(?:_\w+)?$"), _NONPOS),
    (re.compile(r"^\w*_cdf$|^\w*ndtr$"), _UNIT),
    (re.compile(r"^\w*square$|^\w*_norm$"), _NONNEG),
)
# Table words that, as a variable's name, say nothing about its value.
_NOT_A_VALUE_NAME = frozenset({"eye", "ones", "ones_like", "gamma"})
# Roots of imports whose functions are what their name says (a resolved call is strong evidence).
_NUMERIC_LIBRARIES = frozenset(
    {"tensorflow", "keras", "tf_keras", "tensorflow_probability", "gpflow", "scipy", "numpy"}
)
# Ranges that hold only for the arguments the library documents (lgamma: x > 0), so weak.
_WEAK_RANGES = frozenset({"lgamma"})
_ASSERT_ONE = {
    "assert_positive": (0.0, True, math.inf),
    "assert_non_negative": (0.0, False, math.inf),
    "assert_negative": (-math.inf, False, 0.0),
    "assert_non_positive": (-math.inf, False, 0.0),
}
_ASSERT_TWO = {
    "assert_greater": ">",
    "assert_greater_equal": ">=",
    "assert_less": "<",
    "assert_less_equal": "<=",
}


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


def _fmt(v: float) -> str:
    return f"{v:g}"


def _jf(v: float) -> float | str:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def _pf(v: Any) -> float:
    return float(v)


def sanitize(code: str) -> str:
    """The label the slicer gives an input for this code: the user's text, white space folded
    (see ``Slicer._input``; a repeated label gets a `` (2)`` suffix)."""
    return " ".join(code.split()) or "x"


# ---------------------------------------------------------------- static side


def name_domain(name: str) -> Domain | None:
    """Weak domain from the last meaningful word of an input's name."""
    key = re.sub(r"\W+", "_", name).strip("_")  # `np.pi` -> np_pi, `self.rate` -> self_rate
    if key.lower() in CONSTANT_NAMES:
        value = CONSTANT_NAMES[key.lower()]
        return Domain(name, value, value, False, f"by its name (`{name}`)", strong=False)
    cast = _CAST_LITERAL.match(key)
    if cast:
        value = float(f"{cast.group(1)}.{cast.group(2) or 0}")
        return Domain(name, value, value, False, f"it is the literal {value:g} cast", strong=True)
    words = [t.lower() for t in tokens(name) if not t.isdigit()]
    if not words or "log" in words:
        return None  # log_scale, log_variance, log_prob: log space has no sign
    if len(name) >= 32 and len(words[-1]) >= 4:  # a cut label: `..._temper` of `temperature`
        words[-1] = next((w for w in NAME_LEXICON if w.startswith(words[-1])), words[-1])
    joined = "_".join(words)
    if joined in NAME_LEXICON:
        word = joined
    else:
        word = words[-1] if words[-1] in NAME_LEXICON else ""
        if not word and len(words) > 1 and words[0] in ("num", "n"):
            word = words[0]  # num_steps, n_items
    whole = key.lower().lstrip("_")
    if not word and whole in PRODUCER_RANGES and whole not in _NOT_A_VALUE_NAME:
        lo, lo_open, hi = PRODUCER_RANGES[whole]  # `kve`, `cdf`: named after its producer
        return Domain(name, lo, hi, lo_open, f"its producer's name (`{whole}`)", False)
    if not word and any(_NONNEG_WORDS.match(w) for w in words):
        nonneg = next(w for w in words if _NONNEG_WORDS.match(w))
        return Domain(name, 0.0, math.inf, False, f"its producer's name (`{nonneg}`)", False)
    if not word or (word == "n" and len(words) > 2):
        return None
    lo, lo_open, hi = NAME_LEXICON[word]
    return Domain(name, lo, hi, lo_open, f"by its name (`{word}`)", strong=False)


def pair_relations(names: list[str]) -> list[Relation]:
    """`x_high` and `x_low` (same other words) are an interval: high > low, by convention."""
    out = []
    lowered = {n: _comparable(n) for n in names}
    for a in names:
        if _NOT_INTERVAL & set(lowered[a]):
            continue  # high_counts / low_counts: two counts, not an interval
        for big, small in PAIR_WORDS:
            if big not in lowered[a]:
                continue
            partner = [small if t == big else t for t in lowered[a]]
            for b in names:
                if b != a and lowered[b] == partner:
                    out.append(Relation(a, ">", b, f"`{big}`/`{small}` by their names", False))
    return out


_PROB_WORDS = frozenset({"prob", "probs", "probability", "probabilities"})
_LOGIT_WORDS = ("logits", "logit")


def logit_relations(inputs: list[dict[str, Any]]) -> list[Relation]:
    """`probs` and `logits` (same other words) are one parameter, probs = sigmoid(logits), when
    the probs input comes from a sigmoid: a witness may not set them independently."""
    names = [spec["name"] for spec in inputs]
    words = {n: [t.lower() for t in tokens(n)] for n in names}
    out = []
    for spec in inputs:
        a = spec["name"]
        if spec.get("producer") != "sigmoid" or not _PROB_WORDS & set(words[a]):
            continue
        for logit in _LOGIT_WORDS:
            partner = [logit if w in _PROB_WORDS else w for w in words[a]]
            for b in names:
                if b != a and words[b] == partner:
                    why = f"`{a}` and `{b}` are one parameter (a sigmoid of the logits)"
                    out.append(Relation(a, "sigmoid", b, why, False))
    return out


_BOX_WORDS = frozenset(
    {"window", "box", "boxes", "bbox", "bboxes", "anchor", "anchors", "roi", "rois"}
)
# [ymin, xmin, ymax, xmax]: the object-detection convention for a box or a crop window.
_BOX_PAIRS = (("2", "0"), ("3", "1"))


def box_relations(names: list[str]) -> list[Relation]:
    """`window[3] - window[1]`: a box's max coordinate exceeds its min one, by convention."""
    out = []
    for a in names:
        words = [t.lower() for t in tokens(a)]
        if len(words) < 2 or words[-2] not in _BOX_WORDS:
            continue
        for big, small in _BOX_PAIRS:
            if words[-1] == big:
                b = "_".join([*tokens(a)[:-1], small])
                if b in names:
                    why = f"`{words[-2]}` is [ymin, xmin, ymax, xmax] by convention"
                    out.append(Relation(a, ">", b, why, False))
    return out


def _comparable(name: str) -> list[str]:
    """Lower-case words of a name; the slicer cuts labels at 32 characters, so the last word
    of a cut label (`..._high_i` from `..._high_if ...`) is dropped."""
    words = [t.lower() for t in tokens(name)]
    return words[:-1] if len(name) >= 32 and len(words) > 1 else words


def _call_name(call: cst.Call) -> str:
    node = call.func
    return node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")


def assertion_domains(ctx, scope, names: set[str]) -> tuple[list[Domain], list[Relation]]:
    """``tf.debugging.assert_*`` calls in the same function that name a probe input."""
    doms: list[Domain] = []
    rels: list[Relation] = []
    fn = scope.node
    for site in ctx.info.calls:
        if site.scope is not scope and not _inside(site.scope, fn):
            continue
        call = site.node
        doms += _helper_assertions(ctx, call, site.scope, names)
        what = _call_name(call)
        args = [a.value for a in call.args if a.keyword is None]
        if what in _ASSERT_ONE and args:
            label = sanitize(ctx.code(args[0]))
            if label in names:
                lo, lo_open, hi = _ASSERT_ONE[what]
                doms.append(Domain(label, lo, hi, lo_open, f"asserted by `{what}`", True))
        elif what in _ASSERT_TWO and len(args) >= 2:
            a, b = sanitize(ctx.code(args[0])), sanitize(ctx.code(args[1]))
            if a in names and b in names:
                rels.append(Relation(a, _ASSERT_TWO[what], b, f"asserted by `{what}`", True))
            elif a in names:
                bound = ctx.val(args[1], site)
                if bound.const is not None and what.startswith("assert_greater"):
                    strict = what == "assert_greater"
                    doms.append(
                        Domain(a, bound.const, math.inf, strict, f"asserted by `{what}`", True)
                    )
    return doms, rels


def _helper_assertions(ctx, call: cst.Call, scope, names: set[str]) -> list[Domain]:
    """``self._maybe_assert_valid_x(x)``: what the helper asserts on its parameter holds for
    the argument passed here."""
    callee = callee_scope(call, scope)
    if callee is None:
        return []
    asserted = ctx.fact(f"param-asserts:{id(callee)}", lambda: parameter_assertions(callee))
    out = []
    for param, arg in bound_arguments(call, callee).items():
        label = sanitize(ctx.code(arg))
        for lo, lo_open, hi, why in asserted.get(param, ()) if label in names else ():
            out.append(Domain(label, lo, hi, lo_open, why, True))
    return out


def class_domains(ctx, fn_scope, names: list[str]) -> tuple[list[Domain], list[Relation]]:
    """The class's own invariants (analysis/invariants.py) on inputs that read its attributes:
    ``self.scale``, ``self._scale``, the ``scale`` property, the ``__init__`` parameter."""
    cls = fn_scope.cls
    if cls is None:
        return [], []
    inv = ctx.fact(f"invariants:{id(cls)}", lambda: class_invariants(cls))
    if not inv.bounds and not inv.relations and not inv.integer:
        return [], []
    keys = {name: input_key(name, fn_scope) for name in names}
    doms: list[Domain] = []
    for name, key in keys.items():
        found = key_invariant(inv, key)
        if found is not None:
            doms.append(
                Domain(
                    name, found.lo, found.hi, found.lo_open, found.why, True, False, found.integer
                )
            )
    rels = []
    for a_key, op, b_key, why in inv.relations:
        for a in (n for n, k in keys.items() if k == a_key):
            for b in (n for n, k in keys.items() if k == b_key):
                rels.append(Relation(a, op, b, why, True))
    return doms, rels


def _annotated_class(param: cst.Param) -> str | None:
    """The class name a parameter is annotated with: ``C``, ``Optional[C]``, ``"C"``."""
    node: cst.BaseExpression | None = param.annotation.annotation if param.annotation else None
    if isinstance(node, cst.Subscript) and dotted_name(node.value).endswith("Optional"):
        items = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        node = items[0] if len(items) == 1 else None
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        try:
            node = cst.parse_expression(text if isinstance(text, str) else "")
        except cst.ParserSyntaxError:
            return None
    dotted = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else ""
    return dotted or None


def _typed_param(name: str, fn_scope) -> cst.Param | None:
    """The parameter ``name`` is, or that a local alias bound once (``kernel = kern1``) names."""
    for _ in range(3):
        if name in fn_scope.params:
            return fn_scope.params[name]
        bindings = fn_scope.bindings.get(name) or []
        if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Name):
            return None
        if bindings[0].index is not None:
            return None
        name = bindings[0].value.value
    return None


def typed_domains(ctx, fn_scope, names: list[str]) -> list[Domain]:
    """``kernel.lengthscales`` with ``kernel: SquaredExponential``: the class hierarchy
    declares the attribute a ``Parameter`` with a positive transform, so every instance the
    annotation admits holds a value in that transform's range (analysis/invariants.py)."""
    project = ctx.ev.project
    if project is None:
        return []
    out = []
    for name in names:
        m = re.fullmatch(r"(\w+)\.(\w+)", name)
        param = _typed_param(m.group(1), fn_scope) if m else None
        if m is None or param is None:
            continue
        ref = _annotated_class(param)
        found = project.declared_bound(ref, m.group(2)) if ref else None
        if found is not None:
            lo, lo_open, hi, why = found
            out.append(Domain(name, lo, hi, lo_open, why, True))
    return out


def contract_domains(
    ctx, fn_scope, statement, names: list[str]
) -> tuple[list[Domain], list[Relation]]:
    """The API contract the library declares for a method's inputs (analysis/contracts.py):
    the sample check of a density method, the forward's image for a bijector's inverse.  A
    witness outside it is a misuse by the caller: strong, so refuted."""
    found = sample_bounds(fn_scope) + inverse_image(ctx, fn_scope, statement)
    doms: list[Domain] = []
    rels: list[Relation] = []
    keys = {name: input_key(name, fn_scope) for name in names}
    for item in found:
        if item.name not in names:
            continue
        if isinstance(item, Bound):
            doms.append(Domain(item.name, item.lo, item.hi, item.lo_open, item.why, True))
            continue
        for other, key in keys.items():
            if key == item.low:
                rels.append(Relation(item.name, ">=", other, item.why, True))
            elif key == item.high:
                rels.append(Relation(item.name, "<=", other, item.why, True))
    return doms, rels


def _inside(scope, fn) -> bool:
    s = scope
    while s is not None:
        if s.node is fn:
            return True
        s = s.parent
    return False


def _nonneg(ctx, node: cst.BaseExpression, site_scope, order: int, self_name: str) -> bool:
    """``node`` is a sum/product of non-negative terms (``self_name`` itself counts as one)."""
    if isinstance(node, cst.Name) and node.value == self_name:
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Multiply, cst.Divide)
    ):
        return _nonneg(ctx, node.left, site_scope, order, self_name) and _nonneg(
            ctx, node.right, site_scope, order, self_name
        )
    if isinstance(node, cst.Call):
        op = ctx.info.imports.op(node.func)
        if op in _NONNEG_OPS:
            return True
        found = call_range(ctx, node)
        if found is not None and found[0] >= 0 and found[4]:
            return True
        if op in ("add", "multiply") and len(node.args) == 2:
            return all(_nonneg(ctx, a.value, site_scope, order, self_name) for a in node.args)
    v = ctx.ev.value(node, site_scope, order)
    return v.lo >= 0


def _callee_word(func: cst.BaseExpression) -> str:
    node = func.attr if isinstance(func, cst.Attribute) else func
    return node.value.lstrip("_").lower() if isinstance(node, cst.Name) else ""


def _library_call(ctx, func: cst.BaseExpression) -> bool:
    """The callee is imported from a numerics library (TF, TFP, GPflow, SciPy, numpy)."""
    if ctx.info.imports.resolve(func) is not None:
        return True
    while isinstance(func, cst.Attribute):
        func = func.value
    if not isinstance(func, cst.Name):
        return False
    dotted = ctx.info.imports.aliases.get(func.value) or ""
    return dotted.split(".")[0] in _NUMERIC_LIBRARIES


def call_range(ctx, node: cst.BaseExpression) -> tuple[float, bool, float, str, bool] | None:
    """(lo, lo_open, hi, producer word, strong) of a known math function's call (or a subscript
    of one, `tf.norm(x)[..., None]`); None when the callee is not in :data:`PRODUCER_RANGES`."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if not isinstance(node, cst.Call):
        return None
    word = _callee_word(node.func)
    op = ctx.info.imports.op(node.func)
    for key in (op, word):
        if key and key in PRODUCER_RANGES:
            lo, lo_open, hi = PRODUCER_RANGES[key]
            strong = key not in _WEAK_RANGES and _library_call(ctx, node.func)
            return lo, lo_open, hi, key, strong
    for pattern, (lo, lo_open, hi) in _PRODUCER_PATTERNS:
        if pattern.match(word):
            return lo, lo_open, hi, word, False
    return None


def _range_domain(name: str, found: tuple[float, bool, float, str, bool], shown: str) -> Domain:
    lo, lo_open, hi, word, strong = found
    why = f"its producer `{shown}` ({word}) lies there" if strong else f"`{word}` by its name"
    return Domain(name, lo, hi, lo_open, why, strong)


def _dtype_max(dtype: str) -> float:
    try:
        return max_finite(dtype)
    except (KeyError, ValueError):
        return max_finite("float64")  # an unknown dtype: the widest bound


def special_domain(ctx, name: str, node: cst.BaseExpression, at, dtype: str) -> Domain | None:
    """A call of a special function of :mod:`.special` whose arguments the static analysis bounds
    at ``at`` ((scope, order) of the flagged statement): the range they give it.  Code-derived
    when the callee resolves to a numerics library, weak when only its name matches."""
    if at is None or not isinstance(node, cst.Call) or any(a.keyword or a.star for a in node.args):
        return None
    word = _callee_word(node.func)
    if word not in SPECIAL_WORDS:
        return None
    scope, order = at
    args = []
    for a in node.args:
        v = ctx.ev.value(a.value, scope, order)
        args.append((v.lo, v.hi))
    found = special_range(word, args, _dtype_max(dtype))
    if found is None:
        return None
    strong = _library_call(ctx, node.func)
    why = "; ".join([*where_notes(ctx, node, scope, order), found.why])
    why = why if strong else f"{why}, if `{word}` is that function"
    return Domain(name, found.lo, found.hi, False, why, strong)


def where_notes(ctx, node: cst.BaseExpression, scope, order: int) -> list[str]:
    """For each name ``node`` reads that is bound to a `tf.where` whose condition bounds a
    branch: "`safe_df` = tf.where(small, two, df): `df` > 1 on the else branch"."""
    from ..analysis.transfer import where_branches

    notes = []
    for name in dict.fromkeys(n.value for n in _names_in(node)):
        found = ctx.ev.lookup(name, scope, order)
        value = getattr(found, "value", None)
        if not isinstance(value, cst.Call) or ctx.ev.op(value) != "where":
            continue
        branches = where_branches(ctx.ev, value, found.scope, found.at)
        if branches and branches[2]:
            notes.append(f"`{name}` = {ctx.code(value)}: {'; '.join(branches[2])}")
    return notes


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    out = [node] if isinstance(node, cst.Name) else []
    for child in node.children:
        out += _names_in(child)
    return out


def call_domain(ctx, name: str, at=None, dtype: str = "float32") -> Domain | None:
    """An input the slicer named by the text of an opaque call (``inv_probit(f)``,
    ``tfp.math.log1mexp(x)``): the range of that function, from its arguments' ranges for the
    special functions of :mod:`.special` (``at``: the scope and order they are read at)."""
    text = re.sub(r" \(\d+\)$", "", name)
    if "(" not in text:
        return None
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return None
    special = special_domain(ctx, name, node, at, dtype)
    if special is not None:
        return special
    found = call_range(ctx, node)
    return _range_domain(name, found, text) if found else None


def _bindings_domain(ctx, name: str, bindings) -> Domain | None:
    """A name only ever bound to calls of known math functions: the union of their ranges."""
    found = [call_range(ctx, b.value) for b in bindings]
    ranges = [r for r in found if r is not None]
    if not ranges or len(ranges) < len(found):
        return None
    lo = min(r[0] for r in ranges)
    hi = max(r[2] for r in ranges)
    lo_open = all(r[1] for r in ranges if r[0] == lo)
    strong = all(r[4] for r in ranges)
    word = "/".join(sorted({r[3] for r in ranges}))
    return _range_domain(name, (lo, lo_open, hi, word, strong), ctx.code(bindings[0].value))


def producer_domain(ctx, name: str, scope) -> Domain | None:
    """A name only ever assigned non-negative values, or accumulating them (``x + square(g)``)."""
    s = scope
    while s is not None:
        bindings = s.bindings.get(name)
        if bindings:
            break
        s = s.parent
    if not bindings or any(b.value is None or b.index is not None for b in bindings):
        return None
    ranged = _bindings_domain(ctx, name, bindings)
    if ranged is not None:
        return ranged
    shown = None
    for b in bindings:
        if not _nonneg(ctx, b.value, b.scope, b.at, name):
            return None
        shown = shown or ctx.code(b.value)
    return Domain(
        name, 0.0, math.inf, False, f"its producer `{shown}` is never negative", strong=True
    )


def _sorted_base(ctx, node: cst.BaseExpression, site) -> str | None:
    """Why the array ``node`` is sorted (ascending), when the code shows it."""
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, site.scope, site.order)
        value = getattr(found, "value", None)
        if isinstance(value, cst.Call):
            op = ctx.info.imports.op(value.func) or _call_name(value)
            nonneg = op != "cumsum" or (
                value.args and _nonneg(ctx, value.args[0].value, site.scope, site.order, "")
            )
            if op in _SORTED_OPS and nonneg:
                return f"`{node.value}` = {op}(...) is ascending"
    return None


def _is_slice(sub: cst.Subscript, start: int | None, stop: int | None) -> bool:
    last = sub.slice[-1].slice if sub.slice else None
    if not isinstance(last, cst.Slice) or last.step is not None:
        return False

    def num(e) -> int | None:
        if e is None:
            return None
        if isinstance(e, cst.Integer):
            return int(e.value)
        if isinstance(e, cst.UnaryOperation) and isinstance(e.expression, cst.Integer):
            return -int(e.expression.value)
        return 999

    return num(last.lower) == start and num(last.upper) == stop


def shifted_slice_relations(ctx, node: cst.CSTNode, site, names: set[str]) -> list[Relation]:
    """``x[1:] - x[:-1]`` of one sorted array: the later slice is >= the earlier one."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if not (isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Subtract)):
            continue
        left, right = n.left, n.right
        if not (isinstance(left, cst.Subscript) and isinstance(right, cst.Subscript)):
            continue
        if ctx.code(left.value) != ctx.code(right.value):
            continue
        if not (_is_slice(left, 1, None) and _is_slice(right, None, -1)):
            continue
        a, b = _labels(ctx, left, names), _labels(ctx, right, names)
        if sanitize(ctx.code(left)) == sanitize(ctx.code(right)):
            base = sanitize(ctx.code(left))  # the slicer numbers repeated labels in order
            a, b = (base, f"{base} (2)") if {base, f"{base} (2)"} <= names else (None, None)
        if not (a and b):
            continue
        why = _sorted_base(ctx, left.value, site)
        base = ctx.code(left.value).lower()
        if why:
            out.append(Relation(a, ">=", b, why, True))
        elif re.search(r"(?:sorted|ascending|edges|boundar|knots|grid|cdf|cumulative)", base):
            out.append(Relation(a, ">=", b, f"`{base}` is ascending by its name", False))
    return out


def repeated_reads(ctx, statement: cst.CSTNode, names: list[str]) -> list[Relation]:
    """`self.low` read twice in one statement is one value, though the slicer numbers the
    second read `self_low_2`: keep the copies equal."""
    plain: set[str] = set()
    stack = [statement]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Name, cst.Attribute)):
            plain.add(sanitize(ctx.code(n)))
        stack.extend(n.children)
    out = []
    for name in names:
        m = re.fullmatch(r"(.+) \((\d+)\)", name)
        if m and m.group(1) in plain and m.group(1) in names:
            out.append(Relation(name, "==", m.group(1), "the same value, read twice", True))
    return out


def _is_stop_gradient(ctx, func: cst.BaseExpression, site) -> bool:
    """``tf.stop_gradient``, or a local name bound to it (``stop = tf.stop_gradient``)."""
    if ctx.info.imports.op(func) == "stop_gradient":
        return True
    if isinstance(func, cst.Name):
        found = ctx.ev.lookup(func.value, site.scope, site.order)
        value = getattr(found, "value", None)
        return isinstance(value, cst.BaseExpression) and ctx.info.imports.op(value) == (
            "stop_gradient"
        )
    return False


def stop_gradient_copies(ctx, site, names: list[str]) -> list[Relation]:
    """``x - stop(x)`` is 0 forward: the stopped copy equals its argument."""
    out = []
    stack = [site.statement]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if not (isinstance(n, cst.Call) and len(n.args) == 1):
            continue
        if not _is_stop_gradient(ctx, n.func, site):
            continue
        copy, original = sanitize(ctx.code(n)), sanitize(ctx.code(n.args[0].value))
        if copy in names and original in names:
            why = "tf.stop_gradient does not change the value"
            out.append(Relation(copy, "==", original, why, True))
    return out


def _labels(ctx, node, names: set[str]) -> str | None:
    """The input name the slicer gave ``node`` (it de-duplicates with _2, _3 suffixes)."""
    base = sanitize(ctx.code(node))
    taken = [n for n in names if n == base or re.fullmatch(re.escape(base) + r" \(\d+\)", n)]
    return taken[0] if len(taken) == 1 else None


# Calls whose results are whole numbers: sizes and counts (>= 0), and the ones of any sign.
SIZE_CALLS = frozenset(
    {"shape", "size", "rank", "count_nonzero", "bincount", "argmax", "argmin", "num_elements",
     "shape_tensor", "prefer_static_shape", "prefer_static_size", "prefer_static_rank",
     "confusion_matrix", "histogram_fixed_width"}
)  # fmt: skip
WHOLE_CALLS = frozenset({"range", "floor", "ceil", "round", "rint", "to_int32", "to_int64"})
_INT_DTYPE = re.compile(r"\bu?int(?:8|16|32|64)\b")
# assertion -> the lower bound it implies besides the integer form
_ASSERT_INTEGER = {
    "assert_integer_form": -math.inf,
    "assert_nonnegative_integer_form": 0.0,
}


def _whole_source(source: str) -> tuple[float, str] | None:
    """(lower bound, why) when ``source`` (a call's text) gives whole numbers."""
    try:
        node = cst.parse_expression(source)
    except cst.ParserSyntaxError:
        return None
    if isinstance(node, cst.Subscript):
        node = node.value  # tf.shape(x)[0]: an item of a shape
    if not isinstance(node, cst.Call):
        return None
    what = _call_name(node)
    if what in SIZE_CALLS:
        return 0.0, f"`{what}` gives sizes and counts: whole numbers >= 0"
    if what in WHOLE_CALLS:
        return -math.inf, f"`{what}` gives whole numbers"
    if what == "cast" and len(node.args) > 1:
        dtype = cst.Module([]).code_for_node(node.args[1].value)
        if _INT_DTYPE.search(dtype):
            return -math.inf, "it is cast to an integer dtype"
    return None


def integer_inputs(ctx, probe: dict[str, Any], fn_scope) -> dict[str, tuple[float, str]]:
    """Inputs that take whole values only, by the code that makes them: name -> (lower
    bound, why).  From the call the slice stopped at (``tf.shape(x)[0]``, ``tf.range(n)``, a
    cast to ``tf.int32``) or an ``assert_integer_form`` on the input in the same function."""
    out: dict[str, tuple[float, str]] = {}
    names = set()
    for spec in probe.get("inputs") or []:
        name = spec.get("name", "")
        names.add(name)
        origin = spec.get("origin")
        if origin == "call" or (origin == "subscript" and spec.get("of") == "call"):
            found = _whole_source(str(spec.get("source") or name))
            if found is not None:
                out[name] = found
    if fn_scope is None:
        return out
    for site in ctx.info.calls:
        if site.scope is not fn_scope and not _inside(site.scope, fn_scope.node):
            continue
        what = _call_name(site.node)
        args = [a.value for a in site.node.args if a.keyword is None]
        if what in _ASSERT_INTEGER and args:
            label = sanitize(ctx.code(args[0]))
            if label in names:
                out[label] = (_ASSERT_INTEGER[what], f"asserted by `{what}`")
        counted = _class_count(ctx, site.node)
        if counted is not None and sanitize(ctx.code(counted)) in names:
            op = ctx.op(site.node)
            out.setdefault(
                sanitize(ctx.code(counted)), (1.0, f"it is the `depth` of `{op}`: a class count")
            )
    return out


def _class_count(ctx, call: cst.Call) -> cst.BaseExpression | None:
    """The value a registry op takes as its ``depth`` (``tf.one_hot(labels, depth=n)``): a
    whole number of classes, at least 1, or None."""
    op = ops.REGISTRY.get(ctx.op(call) or "")
    params = (op.params or ()) if op is not None else ()
    if "depth" not in params:
        return None
    return ctx.arg(call, params.index("depth"), "depth")


def _with_integer(dom: Domain | None, name: str, lo: float, why: str) -> Domain:
    """A code-derived domain of ``name`` that also says it takes whole values only."""
    if dom is None or not dom.strong:
        return Domain(name, lo, math.inf, False, why, True, integer=True)
    lo_open = dom.lo_open if dom.lo >= lo else False
    return Domain(
        name, max(dom.lo, lo), dom.hi, lo_open, f"{dom.why}; {why}", True, dom.callers, True
    )


# Producer kinds whose range is a fact of the op (a softmax is in [0, 1], a ReLU >= 0), so the
# range of what every call site passes is code-derived and strong: a witness outside it is
# refuted.  Any other bounded join (`s * mask`, a clip) is evidence, not proof: inconclusive.
# Registered ops with a range (ops.RANGED), a one-hot (its on/off values are read from the
# code), and kinds the registry does not hold.
CODE_RANGED_KINDS = ops.RANGED | {
    "one_hot", "reduce_euclidean_norm", "exponential", "normalised", "asserted"
}  # fmt: skip


def caller_domain(ctx, spec: dict[str, Any], site) -> Domain | None:
    """A parameter input whose value comes from its call sites in the project (the index's
    cross-function provenance) lies in the range they pass: a softmax output in [0, 1], a
    ReLU >= 0.  Strong when that range is the producer's own (:data:`CODE_RANGED_KINDS`)."""
    name = spec.get("name", "")
    if spec.get("origin") != "param" or not re.fullmatch(r"\w+", name):
        return None
    found = ctx.ev.lookup(name, site.scope, site.order)
    if not isinstance(found, cst.Param) or ctx.ev.project is None:
        return None
    return _callers_range(ctx, name, found, site.scope, site.order, "")


def _callers_range(ctx, name: str, param: cst.Param, scope, order: int, via: str) -> Domain | None:
    """The domain of input ``name`` from what the callers pass for ``param`` (``via``: how
    the input is made from the parameter, for the message)."""
    pname = param.name.value
    val = ctx.ev.value(param.name, scope, order)
    if val.origin is None or val.origin[4] != pname:
        return None  # not what callers pass (a default, a name guess, an annotation)
    lo, hi = val.lo, val.hi
    if math.isinf(lo) and math.isinf(hi) and not val.integer:
        return None
    if lo == hi:
        return None  # one constant: the probe is set to it already
    every = _every_caller_passes(ctx, param, scope, pname)
    strong = every and val.kind in CODE_RANGED_KINDS and not val.prob_by_name
    path, line, _, _, _, what = val.origin
    where = (
        f"in [{_fmt(lo)}, {_fmt(hi)}]"
        if math.isfinite(lo) and math.isfinite(hi)
        else (
            f">= {_fmt(lo)}"
            if math.isfinite(lo)
            else (f"<= {_fmt(hi)}" if math.isfinite(hi) else "")
        )
    )
    if val.integer:
        where = f"that is a whole number {where}".rstrip()
    example = f"{what or 'a value'}, {path}:{line}" if line else (what or "a value")
    subject = f"for `{pname}` " if via else ""
    if every:
        why = f"every caller in the project passes {subject}a value {where} ({example})"
    else:
        why = (
            f"the callers in the project that pass a known value {subject}pass one {where} "
            f"({example})"
        )
    if via:
        why = f"`{name}` is `{pname}` passed through {via}, and {why}"
    return Domain(name, lo, hi, False, why, strong, callers=True, integer=val.integer)


# Calls that only move, copy or convert a value: what comes out is one of the values that went
# in (a float cast of a whole number stays whole).
# (registered ones: ops.VALUE_PRESERVING; the rest are names the registry does not hold)
VALUE_PRESERVING = ops.VALUE_PRESERVING | {
    "repeat", "broadcast_to", "convert_to_tensor", "ensure_shape", "convert_nonref_to_tensor"
}  # fmt: skip
MAX_MOVES = 16  # calls and bindings followed back to the parameter


def passthrough_domain(ctx, spec: dict[str, Any], site) -> Domain | None:
    """An input computed by an untraced call that only moves a parameter's values
    (``tf.repeat(tf.reshape(tf.cast(total_count, dt), [-1]), k)``) takes the values the
    parameter's callers pass: the callers' range is its domain."""
    name = spec.get("name", "")
    if spec.get("origin") != "call" or ctx.ev.project is None:
        return None
    try:
        node = cst.parse_expression(name if re.fullmatch(r"\w+", name) else spec.get("source", ""))
    except cst.ParserSyntaxError:
        return None
    scope, order = site.scope, site.order
    moves: list[str] = []
    for _ in range(MAX_MOVES):
        if isinstance(node, cst.Call):
            what = _call_name(node)
            if what not in VALUE_PRESERVING or not node.args or node.args[0].keyword:
                return None
            moves.append(what)
            node = node.args[0].value
            continue
        if not isinstance(node, cst.Name):
            return None
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            if not moves:
                return None
            via = ", ".join(f"`{m}`" for m in dict.fromkeys(moves))
            return _callers_range(ctx, name, found, scope, order, via)
        if not isinstance(found, Binding) or found.value is None or found.index is not None:
            return None
        node, scope, order = found.value, found.scope, found.at
    return None


def caller_relations(ctx, probe: dict[str, Any], fn_scope) -> list[Relation]:
    """Two parameter inputs that every call site passes from attributes its class asserts
    related (``_pdf(self.low, self.high)`` under ``assert_less(self.low, self.high)``) keep
    that relation: strong, since every caller is known and the class checks it."""
    if fn_scope is None or ctx.ev.project is None:
        return []
    qual = qualname(fn_scope)
    if not qual:
        return []
    params = {
        s["name"]
        for s in probe.get("inputs") or []
        if s.get("origin") == "param" and s.get("name") in fn_scope.params
    }
    if len(params) < 2:
        return []
    out = []
    for a, op, b, why in ctx.ev.project.caller_relations(qual):
        if a in params and b in params:
            out.append(
                Relation(a, op, b, f"every caller in the project passes them so ({why})", True)
            )
    return out


def _every_caller_passes(ctx, param: cst.Param, scope, name: str) -> bool:
    owner = scope
    while owner is not None and owner.params.get(name) is not param:
        owner = owner.parent
    qual = qualname(owner) if owner is not None else None
    return bool(qual) and ctx.ev.project.every_caller_passes(qual, name)


def annotate(probe: dict[str, Any] | None, ctx, hit) -> None:
    """Add the inputs' domains and relations to the probe (plain data, in place)."""
    if not probe or probe.get("kind") != "expr":
        return
    names = [spec["name"] for spec in probe.get("inputs") or []]
    if not names:
        return
    site = hit.site
    scope = site.scope
    fn_scope = scope
    while fn_scope is not None and fn_scope.kind != "function":
        fn_scope = fn_scope.parent
    domains: dict[str, Domain] = {}
    relations: list[Relation] = []
    if fn_scope is not None:
        doms, rels = assertion_domains(ctx, fn_scope, set(names))
        for d in doms:
            domains.setdefault(d.name, d)
        relations += rels
        doms, rels = class_domains(ctx, fn_scope, names)
        for d in doms:
            domains.setdefault(d.name, d)
        relations += rels
        doms, rels = contract_domains(ctx, fn_scope, site.statement, names)
        declared = typed_domains(ctx, fn_scope, names)
        for d in doms + declared:
            domains.setdefault(d.name, d)
        for spec in probe.get("inputs") or []:
            if any(d.name == spec["name"] for d in declared):
                spec["declared"] = True  # a trainable Parameter, not a plain attribute
        relations += rels
    for spec in probe.get("inputs") or []:
        passed = caller_domain(ctx, spec, site) or passthrough_domain(ctx, spec, site)
        if passed is not None:
            domains.setdefault(passed.name, passed)
    relations += caller_relations(ctx, probe, fn_scope)
    for name, (lo, why) in integer_inputs(ctx, probe, fn_scope).items():
        domains[name] = _with_integer(domains.get(name), name, lo, why)
    for spec in probe.get("inputs") or []:
        name = spec["name"]
        if name in domains or spec.get("prob") or spec.get("producer") in ("logits", "sigmoid"):
            continue
        lo = _pf(spec.get("lo", "-inf"))
        if lo >= 0:
            continue  # provenance already knows it
        found: Domain | None
        if re.fullmatch(r"\w+", name):
            found = producer_domain(ctx, name, scope)
        else:
            found = call_domain(ctx, name, (scope, site.order), str(probe.get("dtype") or ""))
        found = found or name_domain(name)
        if found is not None:
            domains[name] = found
    mark_masked(probe, ctx, site)
    for name, dom in gram_domains(probe, ctx, site).items():
        domains.setdefault(name, dom)
    relations += shifted_slice_relations(ctx, site.statement, site, set(names))
    relations += repeated_reads(ctx, site.statement, names)
    relations += stop_gradient_copies(ctx, site, names)
    if len(names) > 1:
        relations += pair_relations(names) + box_relations(names)
        relations += logit_relations(probe.get("inputs") or [])
    for spec in probe.get("inputs") or []:
        held = domains.get(spec["name"])
        if held is not None and held.lo == held.hi:  # a constant: probe it at its value only
            spec["lo"] = spec["hi"] = _jf(held.lo)
    if domains:
        probe["domains"] = [
            {**asdict(d), "lo": _jf(d.lo), "hi": _jf(d.hi)} for d in domains.values()
        ]
    relations = without_weaker_duplicates(relations)
    if relations:
        probe["relations"] = [asdict(r) for r in relations]


def _name_value(ctx, name: str, scope, order: int):
    """The value of ``name`` at ``order`` in ``scope`` (a parameter: what its callers pass)."""
    found = ctx.ev.lookup(name, scope, order)
    node = found.name if isinstance(found, cst.Param) else cst.Name(name)
    return ctx.ev.value(node, scope, order)


def mark_masked(probe: dict[str, Any], ctx, site) -> None:
    """Inputs that are a strictly positive value times a mask (``softmax(z) * mask``, passed by
    the callers or bound here): ``spec["masked_by"] = [mask code, producer]``.  Such a value is
    0 only where the mask is, so the precondition gate reads a witness needing it all-zero as an
    empty selection (``preconditions.empty_selection_reason``)."""
    for spec in probe.get("inputs") or []:
        name = spec.get("name", "")
        if not re.fullmatch(r"\w+", name):
            continue
        masked = _name_value(ctx, name, site.scope, site.order).masked_by
        if masked:
            spec["masked_by"] = list(masked)


GRAM_CALLS = frozenset({"matmul", "modal_dot", "dot", "batch_dot", "tensordot"})
TRANSPOSE_KEYWORDS = frozenset({"transpose_a", "transpose_b", "adjoint_a", "adjoint_b"})
GRAM_EINSUMS = frozenset({"ij,ik->jk", "ji,ki->jk", "ij,kj->ik", "...ij,...ik->...jk"})


def _same_name(a: cst.BaseExpression, b: cst.BaseExpression) -> str | None:
    if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value:
        return a.value
    return None


def _transposed(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`tf.transpose(s)` / `s.T` -> `s`."""
    if isinstance(node, cst.Attribute) and node.attr.value == "T":
        return node.value
    if isinstance(node, cst.Call) and _call_name(node).split(".")[-1] in ("transpose", "adjoint"):
        return node.args[0].value if node.args else None
    return None


def gram_factor(node: cst.BaseExpression | None) -> str | None:
    """The `s` of a Gram product of one value with itself: ``matmul(s, s, transpose_a=True)``
    (or ``transpose_b``, or an untraced helper given ``s`` twice with such a flag),
    ``s @ tf.transpose(s)``, ``einsum('ij,ik->jk', s, s)``.  None for anything else."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        left, right = _transposed(node.left), _transposed(node.right)
        return (
            _same_name(left, node.right)
            if left is not None
            else (_same_name(node.left, right) if right is not None else None)
        )
    if not isinstance(node, cst.Call):
        return None
    word = _call_name(node).split(".")[-1]
    positional = [a.value for a in node.args if a.keyword is None]
    flags = {
        a.keyword.value
        for a in node.args
        if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value == "True"
    }
    if word == "einsum" and len(positional) == 3 and isinstance(positional[0], cst.SimpleString):
        spec = positional[0].evaluated_value
        if isinstance(spec, str) and spec.replace(" ", "") in GRAM_EINSUMS:
            return _same_name(positional[1], positional[2])
        return None
    matmul_like = word in GRAM_CALLS or word.endswith(("dot", "matmul"))
    if matmul_like and len(positional) == 2 and len(flags & TRANSPOSE_KEYWORDS) == 1:
        return _same_name(positional[0], positional[1])
    return None


def _single_binding(name: str, scope):
    s = scope
    while s is not None:
        bindings = s.bindings.get(name)
        if bindings:
            return bindings[0] if len(bindings) == 1 and bindings[0].index is None else None
        s = s.parent
    return None


def gram_domains(probe: dict[str, Any], ctx, site) -> dict[str, Domain]:
    """Inputs cut at a Gram product ``sᵀ s`` / ``s sᵀ``: positive semi-definite, its diagonal the
    squared norms of ``s``, so zero only when ``s`` is.  Of a strictly positive ``s`` (a softmax:
    rows sum to 1, so the diagonal of ``s sᵀ`` is >= 1/k) it is never zero: a strong domain
    (0, inf) as the probe sets it (one value everywhere).  Of a masked one it is marked masked
    too (``spec["masked_by"]``): zero only on an empty mask."""
    out: dict[str, Domain] = {}
    for spec in probe.get("inputs") or []:
        name = spec.get("name", "")
        if spec.get("origin") == "param" or not re.fullmatch(r"\w+", name):
            continue
        binding = _single_binding(name, site.scope)
        factor = gram_factor(binding.value) if binding is not None else None
        if factor is None:
            continue
        val = _name_value(ctx, factor, binding.scope, binding.at)
        if val.masked_by:
            mask, kind = val.masked_by
            spec["masked_by"] = [mask, f"Gram product of a {kind}"]
        elif val.kind in STRICTLY_POSITIVE_KINDS:
            why = (
                f"`{name}` is a Gram product of the {val.kind} output `{factor}` (its diagonal "
                "holds squared norms of entries that are never 0), never zero"
            )
            out[name] = Domain(name, 0.0, math.inf, True, why, strong=True)
    return out


def without_weaker_duplicates(relations: list[Relation]) -> list[Relation]:
    """A name guess about two inputs that the code already relates is dropped: the code's
    assertion decides, and a witness that breaks it is refuted, not merely unlikely."""
    asserted = {frozenset((r.a, r.b)) for r in relations if r.strong}
    return [r for r in relations if r.strong or frozenset((r.a, r.b)) not in asserted]


# ---------------------------------------------------------------- probing & verdict side


def _load(probe: dict[str, Any]) -> tuple[list[Domain], list[Relation]]:
    doms = [
        Domain(**{**d, "lo": _pf(d["lo"]), "hi": _pf(d["hi"])}) for d in probe.get("domains") or []
    ]
    rels = [Relation(**r) for r in probe.get("relations") or []]
    return doms, rels


def broken(probe: dict[str, Any], point: dict[str, float]) -> list[Domain | Relation]:
    """The domains and relations a point (input name -> value) lies outside of."""
    doms, rels = _load(probe)
    out: list[Domain | Relation] = []
    for d in doms:
        if d.name in point and not d.holds(point[d.name]):
            out.append(d)
    for r in rels:
        if r.a in point and r.b in point and not r.holds(point[r.a], point[r.b]):
            out.append(r)
    return out


def split_rows(probe: dict[str, Any], names: list[str], rows) -> tuple[Any, Any]:
    """(rows inside every domain, rows outside one): probe the first, explain with the second."""
    if not probe.get("domains") and not probe.get("relations"):
        return rows, rows[:0]
    keep = [not broken(probe, dict(zip(names, map(float, row), strict=True))) for row in rows]
    inside = rows[[i for i, k in enumerate(keep) if k]]
    outside = rows[[i for i, k in enumerate(keep) if not k]]
    return inside, outside


def _reason(
    items: list[Domain | Relation], point: dict[str, float] | None = None
) -> tuple[str, bool]:
    parts = []
    for it in items:
        if isinstance(it, Domain) and it.callers and point and it.name in point:
            parts.append(f"needs `{it.name}` = {_fmt(point[it.name])}, but {it.why}")
            continue
        negated = _negate(it)
        parts.append(f"{negated}, and {it.why} rules that out")
    return "; ".join(parts), all(it.strong for it in items)


def _negate(it: Domain | Relation) -> str:
    if isinstance(it, Relation):
        if it.op == "sigmoid":
            return f"breaks only if `{it.a}` != sigmoid(`{it.b}`)"
        flip = {">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!="}[it.op]
        return f"breaks only if `{it.a}` {flip} `{it.b}`"
    if it.integer and it.lo == -math.inf and it.hi == math.inf:
        return f"breaks only if `{it.name}` is not a whole number"
    if it.integer:
        return f"breaks only if `{it.name}` is not a whole number in {_span(it)}"
    if it.lo != -math.inf and it.hi != math.inf:
        return f"breaks only if `{it.name}` is outside [{_fmt(it.lo)}, {_fmt(it.hi)}]"
    if it.lo != -math.inf:
        return f"breaks only if `{it.name}` {'<=' if it.lo_open else '<'} {_fmt(it.lo)}"
    return f"breaks only if `{it.name}` > {_fmt(it.hi)}"


def _span(it: Domain) -> str:
    if it.hi == math.inf:
        return f"({_fmt(it.lo)}, inf)" if it.lo_open else f"[{_fmt(it.lo)}, inf)"
    return f"[{_fmt(it.lo)}, {_fmt(it.hi)}]"


def outside_verdict(
    probe: dict[str, Any], witness_point: dict[str, float], dtype: str | None
) -> dict[str, Any]:
    """The symptom shows only at a point outside the inputs' domains: not confirmed."""
    items = broken(probe, witness_point)
    reason, strong = _reason(items, witness_point)
    return {"status": "refuted" if strong else "inconclusive", "detail": reason, "dtype": dtype}


# ---------------------------------------------------------------- reachability of a witness
#
# A witness sets every free input of the slice freely.  That is evidence for an input the code
# receives (a parameter, data), not for a value computed by code the slice did not follow: a
# witness `kve = 0` says nothing when `kve = bessel_kve(v, x)` is never 0.  The worker reports
# which inputs the symptom needs (``observed["needed"]``: the others were relaxed to ordinary
# values); a needed input at a value its producer is not known to reach makes the finding
# inconclusive, with the reason.

# Smallest normal magnitude of each float dtype: below it, subnormals.
SMALLEST_NORMAL: dict[str, float] = {
    "float16": 6.103515625e-05,
    "bfloat16": 1.1754943508222875e-38,
    "float32": 1.1754943508222875e-38,
    "float64": 2.2250738585072014e-308,
}
ORDINARY_LO, ORDINARY_HI = 0.1, 10.0  # |v| in this range (and not 1 ± an ulp) is ordinary
# Origins whose values the code receives as they are: a witness may set them freely.
RECEIVED = frozenset({"data", "random", "model", "logits"})
COMPUTED = frozenset({"call", "cut"})  # computed by code the slice did not follow
# Producers that reach subnormal magnitudes in ordinary use (they underflow).
UNDERFLOWING = ops.UNDERFLOWING
# Log-space lexicon: a computed value whose name (or producer's name) says it is a log-density,
# log-probability or logit takes any real value, extreme ones included (a PPO ratio
# exp(new_log_prob - old_log_prob) overflows when the policies diverge).  `log1mexp`, `logsumexp`
# and other log *functions* are not in it: their name says nothing about the value's range.
LOG_SPACE_WORDS = frozenset({"logits", "logit", "logp", "logprob", "logprobs", "loglik", "lp"})
LOG_SPACE_AFTER_LOG = frozenset(
    {"prob", "probs", "probability", "probabilities", "likelihood", "lik", "density", "pdf",
     "pmf", "odds", "ratio", "weights", "p", "variance", "var", "std", "stddev", "scale",
     "sigma", "det"}
)  # fmt: skip
PROBABILITY_WORDS = frozenset({"prob", "probs", "probability", "probabilities"})  # reach 0
# Called functions whose value is 0 for ordinary inputs (a product or count of data, a sign, a
# rounding): an untraced call to one of them may be 0 in a witness.
# (registered ones: ops.NATURAL_ZERO; the rest are names the registry does not hold)
NATURAL_ZERO_CALLS = ops.NATURAL_ZERO | {
    "modal_dot", "dot", "batch_dot", "tensordot", "einsum", "matvec", "rint", "segment_sum",
    "unsorted_segment_sum", "bincount", "confusion_matrix", "histogram_fixed_width"
}  # fmt: skip
COUNT_WORDS = frozenset({"count", "counts", "counter"})  # a name ending so is a whole count
COUNT_PREFIXES = frozenset({"num", "n"})  # num_samples, n_items


# A computed input is set to no value without evidence (its producer's range, a domain from the
# code, a log-space name, a natural-zero call); small ones (1e-8 .. 0.1) are allowed for a
# precision loss, which needs them by nature and where they are common results of computation.


def value_class(v: float, dtype: str | None) -> str:
    """What kind of number a witness value is: ``ordinary`` (0.1 <= |v| <= 10, not 1 ± an
    ulp), or why not: zero, subnormal, smallest-normal, small, near-one, large, nan."""
    if math.isnan(v):
        return "nan"
    a = abs(v)
    normal = SMALLEST_NORMAL.get(dtype or "float32", SMALLEST_NORMAL["float32"])
    if a == 0:
        return "zero"
    if a < normal:
        return "subnormal"
    if a <= normal * (1 + 1e-6):
        return "smallest-normal"
    if a < ORDINARY_LO:
        return "small"
    if a > ORDINARY_HI:
        return "large"
    if a != 1 and abs(a - 1) < 1e-5:
        return "near-one"
    return "ordinary"


def log_space(*texts: str) -> bool:
    """A log-probability, log-density or logit by its name (:data:`LOG_SPACE_WORDS`)."""
    for text in texts:
        words = [t.lower() for t in tokens(_callee(text))]
        if any(w in LOG_SPACE_WORDS for w in words):
            return True
        if any(a == "log" and b in LOG_SPACE_AFTER_LOG for a, b in itertools.pairwise(words)):
            return True
    return False


def _callee(source: str) -> str:
    """`policy.distribution(t).log_prob(a)` -> `log_prob`: the name a call's value is known by."""
    text = source.strip()
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            head = text[:i]
            return re.split(r"[^\w]", head)[-1] if head else text
    return text


def _count_like(name: str) -> bool:
    words = [t.lower() for t in tokens(name) if not t.isdigit()]
    if not words or "log" in words:
        return False
    return words[-1] in COUNT_WORDS or (len(words) > 1 and words[0] in COUNT_PREFIXES)


def _covered(spec: dict[str, Any], v: float, dom: Domain | None, training: bool = True) -> bool:
    """What the static pass knows of the producer allows ``v``: its value range (a sigmoid,
    ReLU or exp output, a probability), a domain from the code, a producer that is 0 for
    ordinary inputs (:data:`NATURAL_ZERO_CALLS`), and, in a training context (``training``:
    where training sweeps model outputs over their range), a probability or a log-space name.
    Outside one (a distribution's quantile gradient, a quadrature's weights) a name is no
    evidence that the computed value reaches 0 or an extreme."""
    lo, hi = _pf(spec.get("lo", "-inf")), _pf(spec.get("hi", "inf"))
    slack = 1e-6 * max(abs(v), 1e-300)  # the witness holds the bound rounded to the dtype
    if (math.isfinite(lo) or math.isfinite(hi)) and lo - slack <= v <= hi + slack:
        return True
    if dom is not None and (dom.strong or "producer" in dom.why) and dom.holds(v):
        return dom.lo != -math.inf or dom.hi != math.inf
    name, source = str(spec.get("name", "")), str(spec.get("source", ""))
    if _callee(source) in NATURAL_ZERO_CALLS and (v == 0 or value_class(v, None) == "ordinary"):
        return True  # counts and products of data: 0 and everyday values alike
    if not training:
        return False
    if 0 <= v <= 1 and PROBABILITY_WORDS & {t.lower() for t in tokens(name)}:
        return True  # a probability by its name: 0 is reached by underflow
    return log_space(name, source)


def unreachable(
    spec: dict[str, Any],
    v: float,
    dom: Domain | None,
    dtype: str | None,
    small_ok: bool = False,
    training: bool = True,
) -> str | None:
    """Why the witness value ``v`` of a needed input is not one the code gives it, or None.
    ``small_ok``: a small computed value is evidence (a precision loss needs one);
    ``training``: the finding is in a training context (see :func:`_covered`)."""
    name, origin = spec.get("name", "x"), spec.get("origin")
    if dom is not None and dom.callers and not dom.holds(v):
        # whatever the origin (a driven parameter too): the code gives it another range
        return f"needs `{name}` = {_fmt(v)}, but {dom.why}"
    if origin is None or origin in RECEIVED or spec.get("prob"):
        return None
    kind = value_class(v, dtype)
    computed = origin in COMPUTED or (origin == "subscript" and spec.get("of") in COMPUTED)
    underflows = spec.get("producer") in UNDERFLOWING
    if kind in ("subnormal", "smallest-normal") and not underflows and dtype != "float16":
        what = "a subnormal" if kind == "subnormal" else f"the smallest normal {dtype}"
        return f"needs `{name}` = {_fmt(v)}, {what}" + (_producer(spec) if computed else "")
    if _count_like(name) and (v < 0 or v != math.floor(v)):
        return f"needs `{name}` = {_fmt(v)}, which is not a count"
    if not computed or (kind == "small" and small_ok) or _covered(spec, v, dom, training):
        return None
    # Any value, ordinary ones too: the review found computed values set to what their code
    # never gives (a softmax output of -1, floor(0.5) = 1, mel weights of -1).
    return f"breaks only if `{name}` = {_fmt(v)}" + _producer(spec)


def assumed(probe: dict[str, Any], name: str) -> bool:
    """The input's value comes from code the slice did not follow (an untraced call, a cut, an
    element of either): whatever value a witness gives it is an assumption."""
    for spec in probe.get("inputs") or []:
        if spec.get("name") == name:
            origin = spec.get("origin")
            return origin in COMPUTED or (origin == "subscript" and spec.get("of") in COMPUTED)
    return False


def _producer(spec: dict[str, Any]) -> str:
    """`; `kve` is computed by `bessel_kve(v, x)`, which was not traced`: why nothing is known."""
    name, source = spec.get("name", "x"), spec.get("source") or spec.get("name", "x")
    if spec.get("origin") == "cut":
        return ", a value the slice did not follow"
    if source == name:
        return ", a value computed by a call that was not traced"
    element = "an element of a value " if spec.get("origin") == "subscript" else ""
    return f"; `{name}` is {element}computed by `{source}`, which was not traced"


def unreachable_inputs(
    probe: dict[str, Any],
    point: dict[str, Any],
    names: list[str],
    dtype: str | None,
    small_ok: bool = False,
) -> list[str]:
    """For each of ``names`` whose value in ``point`` the code is not known to give it, why."""
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    doms = {d.name: d for d in _load(probe)[0]}
    training = probe.get("training_context", True) is not False  # absent: as before contexts
    reasons = []
    for name in names:
        spec, v = specs.get(name), point.get(name)
        if spec is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        reason = unreachable(spec, float(v), doms.get(name), dtype, small_ok, training)
        if reason:
            reasons.append(reason)
    return reasons


def reachable(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A confirmed witness whose needed inputs the code cannot give those values is not a
    confirmation: inconclusive, saying which value it needs and why that is not known to occur.
    What was seen stays in the verdict (inputs, observed values)."""
    return _not_confirmed(out, _reach_reasons(probe, out))


def _reach_reasons(probe: dict[str, Any], out: dict[str, Any]) -> list[str]:
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return []
    needed, point = observed.get("needed"), out.get("inputs")
    if not isinstance(needed, list) or not isinstance(point, dict):
        return []
    dtype = out.get("dtype") or probe.get("dtype")
    small_ok = out.get("symptom") == "diverges"
    return unreachable_inputs(probe, point, needed, dtype, small_ok)


def _not_confirmed(out: dict[str, Any], reasons: list[str]) -> dict[str, Any]:
    if not reasons or out.get("status") != "confirmed":
        return out
    detail = f"{'; '.join(reasons)} (seen: {out.get('detail', '')})"
    return {**out, "status": "inconclusive", "detail": detail}


def annotate_probe(probe: dict[str, Any] | None, ctx, hit) -> None:
    """Everything issue #11 adds to a probe: where gradients flow, and the inputs' domains.
    Best effort: an analysis failure leaves the probe as the slicer made it, never loses a file."""
    if not probe or probe.get("kind") != "expr":
        return
    try:
        _annotate_probe(probe, ctx, hit)
    except (RecursionError, AttributeError, KeyError, TypeError, ValueError, IndexError):
        for key in (
            "no_gradient",
            "no_gradient_likely",
            "per_example",
            "unused",
            "loop_state",
            "value_guarded",
            "guarded",
            "domains",
            "relations",
        ):
            probe.pop(key, None)


def _imported_elsewhere(ctx):
    """``name -> bool``: another module of the project imports that name from this module
    (``""``: the module itself); its callers there are not followed, so reachability stays
    unknown.  Without a project index nothing is imported."""
    project = getattr(ctx.ev, "project", None)
    if project is None:
        return None
    return project.imported_elsewhere


def _annotate_probe(probe: dict[str, Any], ctx, hit) -> None:
    from ..analysis.gradflow import (
        cond_guard_reason,
        dataset_map_reason,
        element_map_reason,
        no_gradient,
        overwritten_reason,
        where_guard_reason,
    )

    site = hit.site
    elsewhere = _imported_elsewhere(ctx)
    flow = no_gradient(site.scope, site.statement, hit.node, ctx.path, probe, elsewhere)
    if flow:
        probe["no_gradient"] = flow.reason
        if not flow.certain:
            probe["no_gradient_likely"] = True  # a dataset map function: inconclusive
    mapped = dataset_map_reason(site.scope) or element_map_reason(site.scope)
    if mapped:
        probe["per_example"] = mapped  # one example at a time: axis 0 is not the batch axis
    unused = overwritten_reason(site.scope, site.statement)
    if unused:
        probe["unused"] = unused  # a dead store: no symptom of it reaches anything
    guard = where_guard_reason(site.statement, hit.node, site.scope)
    if guard:
        probe["value_guarded"] = guard  # tf.where computes the branch: its gradient still leaks
    branch = cond_guard_reason(site.scope, site.statement, hit.node)
    if branch:
        probe["guarded"] = branch  # tf.cond / if: the branch does not run at all
    annotate(probe, ctx, hit)
    mark_inputs(probe, ctx, site)  # which inputs training drives: the genericity test reads it
