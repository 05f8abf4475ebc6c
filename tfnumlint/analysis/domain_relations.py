"""Relations between probe inputs, and the domains that need more than the input's own
code: shifted slices of a sorted array, a value read twice, ``stop_gradient`` copies, whole
numbers (:func:`integer_inputs`), what the project's callers pass (:func:`caller_domain`,
:func:`passthrough_domain`, :func:`caller_relations`), and Gram factors (:func:`gram_domains`)."""

from __future__ import annotations

import math
import re
from typing import Any

import libcst as cst

from .. import ops
from .domain_code import (
    SORTED_OPS,
    _nonneg,
    call_name,
    inside,
)
from .domain_model import Domain, Relation, fmt_g, sanitize
from .module import Binding, qualname
from .names import children, dotted_name
from .values import STRICTLY_POSITIVE_KINDS
from .wholes import local_callee, whole_expr, whole_returns, whole_source


def _sorted_base(ctx, node: cst.BaseExpression, site) -> str | None:
    """Why the array ``node`` is sorted (ascending), when the code shows it."""
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, site.scope, site.order)
        value = getattr(found, "value", None)
        if isinstance(value, cst.Call):
            op = ctx.info.imports.op(value.func) or call_name(value)
            nonneg = op != "cumsum" or (
                value.args and _nonneg(ctx, value.args[0].value, site.scope, site.order, "")
            )
            if op in SORTED_OPS and nonneg:
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
        stack.extend(children(n))
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
        if why:  # a name (`edges`, `sorted_x`) is no evidence of order (issue 22)
            out.append(Relation(a, ">=", b, why, True))
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
        stack.extend(children(n))
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
        stack.extend(children(n))
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


# assertion -> the lower bound it implies besides the integer form
_ASSERT_INTEGER = {
    "assert_integer_form": -math.inf,
    "assert_nonnegative_integer_form": 0.0,
}


def _whole_input(ctx, spec: dict[str, Any], fn_scope) -> tuple[float, str] | None:
    """(lower bound, why) of an input read from a call that gives whole numbers: by the API it
    calls (``tf.shape(x)[0]``), or by the body of the function it calls, in this module
    (``self._event_shape_tensor(x)[0]`` returning ``ps.shape(x)[-1:]``) or another one."""
    source = str(spec.get("source") or spec.get("name", ""))
    lookup, project = ctx.ev.lookup, ctx.ev.project

    def resolve(call: cst.Call, scope) -> Any:
        local = local_callee(call, scope, ctx.info.functions, lookup)
        if local is not None or project is None:
            return local
        dotted = dotted_name(call.func)
        return project.whole(dotted) if dotted else None

    try:
        node = cst.parse_expression(source)
    except cst.ParserSyntaxError:
        node = None
    called = node
    while isinstance(called, cst.Subscript):
        called = called.value  # event_size(x)[0]: an item of what the function returns
    if fn_scope is not None and isinstance(called, cst.Call):
        local = local_callee(called, fn_scope, ctx.info.functions, lookup)
        if local is not None:  # the program's own function: its body says, never its name
            return whole_returns(local, lookup, resolve)
    found = whole_source(source, spec.get("element"))
    if found is not None or fn_scope is None or node is None:
        return found
    return whole_expr(node, fn_scope, 1 << 30, lookup, resolve)


def integer_inputs(ctx, probe: dict[str, Any], fn_scope) -> dict[str, tuple[float, str]]:
    """Inputs that take whole values only, by the code that makes them: name -> (lower
    bound, why).  From the call the slice stopped at (``tf.shape(x)[0]``, ``tf.range(n)``, a
    cast to ``tf.int32``, a helper returning a shape) or an ``assert_integer_form`` on the
    input in the same function."""
    out: dict[str, tuple[float, str]] = {}
    names = set()
    for spec in probe.get("inputs") or []:
        name = spec.get("name", "")
        names.add(name)
        origin = spec.get("origin")
        if origin == "call" or (origin == "subscript" and spec.get("of") == "call"):
            found = _whole_input(ctx, spec, fn_scope)
            if found is not None:
                out[name] = found
    if fn_scope is None:
        return out
    for site in ctx.info.calls:
        if site.scope is not fn_scope and not inside(site.scope, fn_scope.node):
            continue
        what = call_name(site.node)
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


def with_integer(dom: Domain | None, name: str, lo: float, why: str) -> Domain:
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
    strong = every and val.kind in CODE_RANGED_KINDS and not val.prob_by_use
    path, line, _, _, _, what = val.origin
    where = (
        f"in [{fmt_g(lo)}, {fmt_g(hi)}]"
        if math.isfinite(lo) and math.isfinite(hi)
        else (
            f">= {fmt_g(lo)}"
            if math.isfinite(lo)
            else (f"<= {fmt_g(hi)}" if math.isfinite(hi) else "")
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
            what = call_name(node)
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
    if isinstance(node, cst.Call) and call_name(node).split(".")[-1] in ("transpose", "adjoint"):
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
    word = call_name(node).split(".")[-1]
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
        val = name_value(ctx, factor, binding.scope, binding.at)
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


def name_value(ctx, name: str, scope, order: int):
    """The value of ``name`` at ``order`` in ``scope`` (a parameter: what its callers pass)."""
    found = ctx.ev.lookup(name, scope, order)
    node = found.name if isinstance(found, cst.Param) else cst.Name(name)
    return ctx.ev.value(node, scope, order)
