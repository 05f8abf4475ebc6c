"""Domains read from the code around a probe input: assertions in scope, class invariants,
declared types, contracts, and the ranges of known producers (:data:`.call_ranges.PRODUCER_RANGES`) and
special functions.  Code-derived evidence is strong: a witness outside it is refuted."""

from __future__ import annotations

import math
import re

import libcst as cst

from .. import ops
from ..floats import max_finite
from .call_ranges import _callee_word, _library_call, call_range
from .conditions import where_branches
from .contracts import Bound, inverse_image, sample_bounds
from .domain_model import Domain, Relation, sanitize
from .invariants import (
    bound_arguments,
    callee_scope,
    class_invariants,
    input_key,
    key_invariant,
    parameter_assertions,
)
from .names import children as child_nodes
from .names import dotted_name
from .special import SPECIAL_FUNCTIONS, special_range

_NONNEG_OPS = ops.NONNEGATIVE | {"reduce_euclidean_norm"}  # + a name the registry lacks
SORTED_OPS = frozenset({"sort", "linspace", "range", "cumsum"})

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


def call_name(call: cst.Call) -> str:
    node = call.func
    return node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")


def assertion_domains(ctx, scope, names: set[str]) -> tuple[list[Domain], list[Relation]]:
    """``tf.debugging.assert_*`` calls in the same function that name a probe input."""
    doms: list[Domain] = []
    rels: list[Relation] = []
    fn = scope.node
    for site in ctx.info.calls:
        if site.scope is not scope and not inside(site.scope, fn):
            continue
        call = site.node
        doms += _helper_assertions(ctx, call, site.scope, names)
        what = call_name(call)
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


def inside(scope, fn) -> bool:
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
        if ops.OPERATORS.get(op or "") in ("+", "*") and len(node.args) == 2:
            return all(_nonneg(ctx, a.value, site_scope, order, self_name) for a in node.args)
    v = ctx.ev.value(node, site_scope, order)
    return v.lo >= 0


def _range_domain(name: str, found: tuple[float, bool, float, str, bool], shown: str) -> Domain:
    lo, lo_open, hi, word, strong = found
    why = (
        f"its producer `{shown}` ({word}) lies there"
        if strong
        else f"`{word}` as a library names it"
    )
    return Domain(name, lo, hi, lo_open, why, strong)


def _dtype_max(dtype: str) -> float:
    try:
        return max_finite(dtype)
    except (KeyError, ValueError):
        return max_finite("float64")  # an unknown dtype: the widest bound


def special_domain(ctx, name: str, node: cst.BaseExpression, at, dtype: str) -> Domain | None:
    """A call of a special function of :mod:`.special` whose arguments the static analysis bounds
    at ``at`` ((scope, order) of the flagged statement): the range they give it, when the callee
    resolves to a numerics library (TF, TFP, SciPy...)."""
    if at is None or not isinstance(node, cst.Call) or any(a.keyword or a.star for a in node.args):
        return None
    word = _callee_word(node.func)
    if word not in SPECIAL_FUNCTIONS or not _library_call(ctx, node.func):
        return None  # a project function's name is no evidence of what it computes
    scope, order = at
    args = []
    for a in node.args:
        v = ctx.ev.value(a.value, scope, order)
        args.append((v.lo, v.hi))
    found = special_range(word, args, _dtype_max(dtype))
    if found is None:
        return None
    why = "; ".join([*where_notes(ctx, node, scope, order), found.why])
    return Domain(name, found.lo, found.hi, False, why, True)


def where_notes(ctx, node: cst.BaseExpression, scope, order: int) -> list[str]:
    """For each name ``node`` reads that is bound to a `tf.where` whose condition bounds a
    branch: "`safe_df` = tf.where(small, two, df): `df` > 1 on the else branch"."""
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
    for child in child_nodes(node):
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
    bindings = scope.bindings_of(name) if scope is not None else []
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
