"""Class invariants: what a class asserts about its own attributes holds in all its methods.

A TFP-style distribution checks ``assert_positive(self.scale)`` in
``_parameter_control_dependencies``, raises ``ValueError`` in ``__init__`` when ``df <= 0``, or
declares ``scale=ParameterProperties(default_constraining_bijector_fn=Softplus)``.  Each of these
says, in the code itself, which values the attribute can hold; a witness that needs ``scale = 0``
in ``_log_prob`` contradicts the class, not an input the code receives.

An attribute is named by its *key*: ``self.scale``, ``self._scale``, the ``scale`` property and
the ``__init__`` parameter ``scale`` all share the key ``scale`` (leading underscores dropped).
:func:`class_invariants` returns plain data (bounds and relations by key);
``analysis/domain_code.py`` turns them into the probe's domains.  Static only: no TensorFlow, no rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from .. import ops
from .module import ClassInfo, Scope
from .names import descendants, dotted_name

# assertion (last name of the callee) -> (lo, lo_open, hi)
ASSERT_ONE: dict[str, tuple[float, bool, float]] = {
    "assert_positive": (0.0, True, math.inf),
    "assert_non_negative": (0.0, False, math.inf),
    "assert_negative": (-math.inf, False, 0.0),
    "assert_non_positive": (-math.inf, False, 0.0),
}
ASSERT_TWO: dict[str, str] = {
    "assert_greater": ">",
    "assert_greater_equal": ">=",
    "assert_less": "<",
    "assert_less_equal": "<=",
}
# Assertions that imply one of :data:`ASSERT_ONE` (a non-negative integer is non-negative).
IMPLIED_ONE = {"assert_nonnegative_integer_form": "assert_non_negative"}
# Assertions that the value has no fractional part (its values are whole numbers).
ASSERT_INTEGER = frozenset(
    {"assert_integer_form", "assert_nonnegative_integer_form", "assert_integer"}
)
# Calls that only convert a value (the converted value keeps the attribute's invariants): the
# registry's conversions (cast, identity, constant) and TF's conversion helpers it does not hold.
CONVERSIONS = ops.CONVERSIONS | {"convert_to_tensor", "convert_nonref_to_tensor", "as_tensor"}
# What the slicer may label an attribute by (what ``__init__`` assigned it): a conversion, or
# a trainable ``Parameter(x, transform=...)`` wrapping the ``__init__`` parameter.
_LABELS = CONVERSIONS | {"Parameter"}
# A constraining bijector's range, its op's exact range: Softplus/Exp give > 0, Sigmoid (0, 1).
_BIJECTOR_RANGES = {
    op.bijector: (op.range.lo, op.range.lo_open, op.range.hi)
    for op in ops.REGISTRY.values()
    if op.bijector and op.range
}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass
class Invariants:
    """Bounds (key -> [(lo, lo_open, hi, why)]) and relations ((a, op, b, why)) of a class."""

    bounds: dict[str, list[tuple[float, bool, float, str]]] = field(default_factory=dict)
    relations: list[tuple[str, str, str, str]] = field(default_factory=list)
    integer: dict[str, str] = field(default_factory=dict)  # key -> why it is whole-numbered

    def bound(self, key: str, lo: float, lo_open: bool, hi: float, why: str) -> None:
        self.bounds.setdefault(key, []).append((lo, lo_open, hi, why))


def attr_key(node: cst.BaseExpression, self_name: str | None) -> str | None:
    """``self.scale`` / ``self._scale`` -> ``scale``."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and self_name is not None
        and node.value.value == self_name
    ):
        return node.attr.value.lstrip("_") or None
    return None


def _callee(node: cst.BaseExpression) -> str:
    return dotted_name(node).rsplit(".", 1)[-1]


def value_key(node: cst.BaseExpression, scope: Scope, init_params: frozenset[str]) -> str | None:
    """The attribute key a value in a method stands for: ``self._scale``, a conversion of it
    (``tf.convert_to_tensor(self.scale)``), a local bound to one, or an ``__init__`` parameter."""
    for _ in range(4):
        key = attr_key(node, scope.self_name)
        if key is not None:
            return key
        if isinstance(node, cst.Call) and _callee(node.func) in CONVERSIONS and node.args:
            node = node.args[0].value
            continue
        if isinstance(node, cst.Name):
            bindings = scope.bindings.get(node.value) or []
            if len(bindings) == 1 and bindings[0].value is not None and bindings[0].index is None:
                node = bindings[0].value
                continue
            if len(bindings) == 1 and bindings[0].value is not None:
                item = _unpacked(bindings[0].value, bindings[0].index, scope)
                if item is not None:
                    node = item
                    continue
            if not bindings and node.value in init_params and node.value in scope.params:
                return node.value.lstrip("_") or None
        return None
    return None


def _unpacked(
    value: cst.BaseExpression, index: int | None, scope: Scope, depth: int = 0
) -> cst.BaseExpression | None:
    """``a, b = self._params()``: the ``index``-th item of what the method returns, when it
    returns one list or tuple (``[self._a, self._b]``), or converts each item of another such
    method's list (``[tf.convert_to_tensor(p) for p in self._params()]``)."""
    cls = scope.cls
    if index is None or depth > 3 or cls is None or not isinstance(value, cst.Call):
        return None
    func = value.func
    if not (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == scope.self_name
    ):
        return None
    method = cls.method_scopes.get(func.attr.value)
    if method is None:
        return None
    returns = [n for n in descendants(method.node) if isinstance(n, cst.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    returned = returns[0].value
    if isinstance(returned, (cst.List, cst.Tuple)):
        items = returned.elements
        if index < len(items) and not isinstance(items[index], cst.StarredElement):
            return _as_self(items[index].value, method, scope)
        return None
    if (
        isinstance(returned, cst.ListComp)
        and isinstance(returned.elt, cst.Call)
        and _callee(returned.elt.func) in CONVERSIONS
        and returned.elt.args
        and isinstance(returned.elt.args[0].value, cst.Name)
        and isinstance(returned.for_in.target, cst.Name)
        and returned.elt.args[0].value.value == returned.for_in.target.value
        and returned.for_in.inner_for_in is None
        and not returned.for_in.ifs
    ):
        inner = _unpacked(returned.for_in.iter, index, method, depth + 1)
        return _as_self(inner, method, scope) if inner is not None else None
    return None


def _as_self(node: cst.BaseExpression, method: Scope, scope: Scope) -> cst.BaseExpression | None:
    """``self._a`` read in ``method``, spelled with ``scope``'s name for the instance."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == method.self_name
        and scope.self_name is not None
    ):
        return node.with_changes(value=cst.Name(scope.self_name))
    return None


def _const(node: cst.BaseExpression) -> float | None:
    sign = 1.0
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        sign, node = -1.0, node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return sign * float(node.evaluated_value)
        except (ValueError, OverflowError):
            return None
    return None


def _assertions(inv: Invariants, scope: Scope, init_params: frozenset[str]) -> None:
    """``assert_positive(self.scale)``, ``assert_greater(self.high, self.low)`` in a method."""
    for node in descendants(scope.node):
        if not isinstance(node, cst.Call):
            continue
        written = _callee(node.func)
        what = IMPLIED_ONE.get(written, written)
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if _integer_assertion(node, written) and args:
            key = value_key(args[0], scope, init_params)
            if key:
                inv.integer.setdefault(key, f"the class asserts `{written}` on it")
        if what in ASSERT_ONE and args:
            key = value_key(args[0], scope, init_params)
            if key:
                lo, lo_open, hi = ASSERT_ONE[what]
                inv.bound(key, lo, lo_open, hi, f"the class asserts `{written}` on it")
        elif what in ASSERT_TWO and len(args) >= 2:
            a = value_key(args[0], scope, init_params)
            b = value_key(args[1], scope, init_params)
            op = ASSERT_TWO[what]
            if a and b:
                inv.relations.append((a, op, b, f"the class asserts `{what}`"))
            elif a:
                _const_bound(inv, a, op, args[1], what)
            elif b:
                _const_bound(inv, b, _FLIP[op], args[0], what)


def _integer_assertion(call: cst.Call, written: str) -> bool:
    """``assert_integer_form(x)``, or ``assert_casting_closed(x, target_dtype=tf.int32)``: the
    value survives a round trip through an integer dtype, so it is a whole number."""
    if written in ASSERT_INTEGER:
        return True
    if written != "assert_casting_closed":
        return False
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "target_dtype":
            return re.search(r"\bu?int(8|16|32|64)\b", dotted_name(arg.value)) is not None
    return False


def _const_bound(inv: Invariants, key: str, op: str, bound: cst.BaseExpression, why: str) -> None:
    """``key op c`` for a literal ``c``."""
    c = _const(bound)
    if c is None:
        return
    text = f"the class asserts `{why}`" if why.startswith("assert") else why
    if op in (">", ">="):
        inv.bound(key, c, op == ">", math.inf, text)
    else:
        inv.bound(key, -math.inf, False, c, text)


def _raises(body: cst.BaseSuite) -> bool:
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in stmts:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        if any(isinstance(s, cst.Raise) for s in small):
            return True
    return False


def _guard_conditions(test: cst.BaseExpression) -> list[cst.Comparison]:
    """``a <= 0 or a > 1`` -> its comparisons (each one raises)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _guard_conditions(test.left) + _guard_conditions(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return [test]
    return []


def _guards(inv: Invariants, scope: Scope, init_params: frozenset[str]) -> None:
    """``if df <= 0: raise ValueError(...)`` in ``__init__``: afterwards ``df > 0``."""
    for node in descendants(scope.node):
        if not isinstance(node, cst.If) or not _raises(node.body):
            continue
        for cmp in _guard_conditions(node.test):
            op_node = cmp.comparisons[0].operator
            ops = {
                cst.LessThan: "<",
                cst.LessThanEqual: "<=",
                cst.GreaterThan: ">",
                cst.GreaterThanEqual: ">=",
            }
            op = ops.get(type(op_node))
            if op is None:
                continue
            left, right = cmp.left, cmp.comparisons[0].comparator
            key = value_key(left, scope, init_params)
            if key:
                _const_bound(inv, key, _NEGATE[op], right, "`__init__` raises otherwise")
                continue
            key = value_key(right, scope, init_params)
            if key:
                _const_bound(inv, key, _NEGATE[_FLIP[op]], left, "`__init__` raises otherwise")


def _properties(inv: Invariants, scope: Scope) -> None:
    """``scale=ParameterProperties(default_constraining_bijector_fn=...Softplus...)``."""
    for node in descendants(scope.node):
        if not (isinstance(node, cst.Call) and _callee(node.func) == "dict"):
            continue
        for arg in node.args:
            value = arg.value
            if arg.keyword is None or not isinstance(value, cst.Call):
                continue
            if _callee(value.func) != "ParameterProperties":
                continue
            for prop in value.args:
                if prop.keyword is not None and prop.keyword.value == (
                    "default_constraining_bijector_fn"
                ):
                    found = _bijector_range(prop.value)
                    if found is not None:
                        lo, lo_open, hi, name = found
                        why = f"its constraining bijector is {name} (`_parameter_properties`)"
                        inv.bound(arg.keyword.value.lstrip("_"), lo, lo_open, hi, why)


def _bijector_range(node: cst.BaseExpression) -> tuple[float, bool, float, str] | None:
    """The range of a constraining bijector that is one range bijector class, referenced or
    constructed (``Softplus``, ``lambda: Sigmoid(low=-1., high=2.)``).  Anything around it (a
    ``Shift(5.)(...)``, a ``Chain``, a project helper) may move the range: not trusted."""
    top = node.body if isinstance(node, cst.Lambda) else node
    args: Sequence[cst.Arg] = top.args if isinstance(top, cst.Call) else ()
    ref = top.func if isinstance(top, cst.Call) else top
    if not isinstance(ref, (cst.Name, cst.Attribute)) or _callee(ref) not in _BIJECTOR_RANGES:
        return None
    kind = _callee(ref)
    lo, lo_open, hi = _BIJECTOR_RANGES[kind]
    for arg in args:  # Softplus(low=1.), Sigmoid(low=-1., high=2.), low=dtype_util.eps(dt)
        if arg.keyword is None:
            return None  # a positional low/high (Sigmoid(lo, hi)): not read here
        if arg.keyword.value not in ("low", "high"):
            continue
        c = _const(arg.value)
        if c is None and arg.keyword.value == "low" and _names_eps(arg.value):
            c = FLOAT32_EPS  # the machine epsilon of the (at least float32) dtype
        if c is None:
            return None  # Sigmoid(low=self.low, high=self.high): bounds not known here
        if arg.keyword.value == "low":
            lo, lo_open = c, True
        else:
            hi = c
    return lo, lo_open, hi, kind


FLOAT32_EPS = 2.0**-23


def _names_eps(node: cst.BaseExpression) -> bool:
    """``dtype_util.eps(dtype)``, ``np.finfo(dt).eps``, ``keras.backend.epsilon()``: the
    dtype's machine epsilon (2**-23 in float32, the dtype the verifier probes in), read from
    the API call or attribute, never from a variable's name."""
    if isinstance(node, cst.Call):
        return (not node.args and _callee(node.func) == "epsilon") or (
            _callee(node.func) == "eps" and isinstance(node.func, cst.Attribute)
        )
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == "eps"
        and isinstance(node.value, cst.Call)
        and _callee(node.value.func) == "finfo"
    )


def transform_bound(value: cst.BaseExpression | None) -> tuple[float, bool, float, str] | None:
    """``Parameter(x, transform=positive())`` (> 0; ``positive(lower=c)``: > c) or a
    ``transform=`` Softplus/Exp/Sigmoid bijector: the declared transform bounds every value
    the trainable parameter takes, whatever the optimiser does to its unconstrained form."""
    if not isinstance(value, cst.Call) or _callee(value.func) != "Parameter":
        return None
    for arg in value.args:
        if arg.keyword is None or arg.keyword.value != "transform":
            continue
        t = arg.value
        if isinstance(t, cst.Call) and _callee(t.func) == "positive":
            lower: float | None = 0.0
            for targ in t.args:
                if targ.keyword is not None and targ.keyword.value == "base":
                    continue
                lower = _const(targ.value)  # positive(lower=c) or positive(c)
            if lower is None:
                return None
            return lower, True, math.inf, "its declared transform is `positive()`"
        found = _bijector_range(t)
        if found is not None:
            lo, lo_open, hi, name = found
            return lo, lo_open, hi, f"its declared transform is {name}"
    return None


def class_transforms(cls: ClassInfo) -> dict[str, tuple[float, bool, float, str] | None]:
    """Attribute name -> the bound its assignments declare: every ``self.x = ...`` in the
    class must declare the same transform, else ``None`` (a method that reassigns the
    attribute without it, ``Parameter(self.x.numpy())``, leaves nothing known)."""
    out: dict[str, tuple[float, bool, float, str] | None] = {}
    for attr, bindings in cls.attrs.items():
        found = {transform_bound(b.value) if b.index is None else None for b in bindings}
        out[attr] = found.pop() if len(found) == 1 else None
    return out


def class_invariants(cls: ClassInfo) -> Invariants:
    """Everything ``cls`` asserts about its attributes, from any of its methods."""
    inv = Invariants()
    for attr, bound in class_transforms(cls).items():
        if bound is not None:
            inv.bound(attr.lstrip("_") or attr, *bound)
    init = cls.method_scopes.get("__init__")
    init_params = frozenset(init.params) if init is not None else frozenset()
    for name, scope in cls.method_scopes.items():
        _assertions(inv, scope, init_params if name == "__init__" else frozenset())
        if name == "__init__":
            _guards(inv, scope, init_params)
        if name == "_parameter_properties":
            _properties(inv, scope)
    return inv


def _local(name: str, fn: Scope) -> bool:
    """``name`` is a parameter or a binding of the method ``fn`` (or a function inside it)."""
    s: Scope | None = fn
    while s is not None and s.kind == "function":
        if name in s.params or name in s.bindings:
            return True
        s = s.parent
    return False


def input_key(text: str, scope: Scope) -> str | None:
    """The attribute key of a probe input labelled ``text`` in a method of the class:
    ``self.scale``, ``self._scale (2)``, ``tensor_util.convert_nonref_to_tensor(scale, ...)``
    (the slicer labels ``self._scale`` by what ``__init__`` assigned), or an ``__init__``
    parameter ``scale`` when the finding is in ``__init__``."""
    text = re.sub(r" \(\d+\)$", "", text)
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return None
    fn: Scope | None = scope
    while fn is not None and fn.kind != "function":
        fn = fn.parent
    self_name = fn.self_name if fn is not None else None
    converted = False
    for _ in range(3):
        key = attr_key(node, self_name or "self")
        if key is not None:
            return key
        if isinstance(node, cst.Call) and _callee(node.func) in _LABELS and node.args:
            node, converted = node.args[0].value, True
            continue
        if (
            isinstance(node, cst.Name)
            and fn is not None
            and fn.cls is not None
            and (converted or fn.name == "__init__" or not _local(node.value, fn))
        ):  # not this method's own name: the slicer followed `self._x = x` to `__init__`
            init = fn.cls.method_scopes.get("__init__")
            if init is not None and node.value in init.params:
                return node.value.lstrip("_") or None
        return None
    return None


def parameter_assertions(fn: Scope) -> dict[str, list[tuple[float, bool, float, str]]]:
    """What a helper asserts about its own parameters (``_maybe_assert_valid_x(self, x)``
    asserting ``assert_non_negative(x)``): it holds for the arguments of every call to it made
    under its control dependencies."""
    out: dict[str, list[tuple[float, bool, float, str]]] = {}
    for node in descendants(fn.node):
        if not isinstance(node, cst.Call):
            continue
        written = _callee(node.func)
        what = IMPLIED_ONE.get(written, written)
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if not args or not isinstance(args[0], cst.Name) or args[0].value not in fn.params:
            continue
        why = f"`{fn.name}` asserts `{written}` on it"
        if what in ASSERT_ONE:
            lo, lo_open, hi = ASSERT_ONE[what]
            out.setdefault(args[0].value, []).append((lo, lo_open, hi, why))
        elif what in ASSERT_TWO and len(args) >= 2:
            c = _const(args[1])
            op = ASSERT_TWO[what]
            if c is not None and op in (">", ">="):
                out.setdefault(args[0].value, []).append((c, op == ">", math.inf, why))
            elif c is not None:
                out.setdefault(args[0].value, []).append((-math.inf, False, c, why))
    return out


def callee_scope(call: cst.Call, scope: Scope) -> Scope | None:
    """The method ``self.m(...)`` of the class around ``scope`` that ``call`` calls."""
    fn: Scope | None = scope
    while fn is not None and fn.kind != "function":
        fn = fn.parent
    if fn is None or fn.cls is None or not isinstance(call.func, cst.Attribute):
        return None
    obj = call.func.value
    if not (isinstance(obj, cst.Name) and obj.value == fn.self_name):
        return None
    return fn.cls.method_scopes.get(call.func.attr.value)


def bound_arguments(call: cst.Call, callee: Scope) -> dict[str, cst.BaseExpression]:
    """Parameter name -> the argument ``call`` passes for it (``self`` skipped)."""
    params = [p for p in callee.params if p != callee.self_name]
    out: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for name, arg in zip(params, positional, strict=False):
        out[name] = arg.value
    for arg in call.args:
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
    return out


@dataclass(frozen=True)
class KeyInvariant:
    """What a class says about one attribute: its range and whether it is whole-numbered."""

    lo: float
    lo_open: bool
    hi: float
    integer: bool
    why: str


def key_invariant(inv: Invariants, key: str | None) -> KeyInvariant | None:
    """The attribute's bounds joined (the tightest of each end) and its integer form."""
    if not key:
        return None
    bounds = inv.bounds.get(key) or []
    integer = inv.integer.get(key)
    if not bounds and integer is None:
        return None
    lo = max((b[0] for b in bounds), default=-math.inf)
    hi = min((b[2] for b in bounds), default=math.inf)
    lo_open = any(b[1] for b in bounds if b[0] == lo)
    reasons = [b[3] for b in bounds if b[0] == lo or b[2] == hi][:1]
    if integer is not None and integer not in reasons:
        reasons.append(integer)
    asserted = [re.fullmatch(r"the class asserts (`\w+`) on it", r) for r in reasons]
    if len(reasons) > 1 and all(asserted):
        reasons = [f"the class asserts {' and '.join(m.group(1) for m in asserted if m)} on it"]
    return KeyInvariant(lo, lo_open, hi, integer is not None, " and ".join(reasons))


def argument_invariant(node: cst.BaseExpression, fn: Scope, inv: Invariants) -> KeyInvariant | None:
    """What the class of the method ``fn`` asserts about an argument ``fn`` passes on: the
    argument reads one of its attributes (``self.total_count``, a conversion of it, a local
    bound to one, an item of ``self._params_list_as_tensors()``)."""
    if fn.cls is None:
        return None
    init_params = frozenset(fn.params) if fn.name == "__init__" else frozenset()
    return key_invariant(inv, value_key(node, fn, init_params))
