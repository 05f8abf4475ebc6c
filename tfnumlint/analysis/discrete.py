"""Values that reach only whole-number or boolean results, where no gradient flows (issue 22).

A matching cost that only feeds an assignment solver (the Hungarian matcher of a DETR-style
loss), scores that only feed ``argmax`` or a comparison: the loss never differentiates them, so
a gradient-only symptom there is refuted.  The hazard's value is followed forward through the
assignments of its function, out of a nested function's ``return`` to its call sites, out of
a module-level function's ``return`` to every call of it in the module (when nothing else names
it and no other module reads it: :func:`callers_reason`), and into the arguments of project
functions whose every return is a whole number or a boolean (the project index keeps that fact
per function: :func:`discrete_returns`).  Anything else the value
reaches (another call, an attribute or subscript store, a closure, a callback) ends the claim.
Only code structure and TensorFlow API names decide; user names never do.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator
from itertools import pairwise

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .. import ops
from .dead_stores import reads, reads_of, string_value
from .module import Binding, Scope
from .names import children, dotted_name

# TF ops whose result is a whole number or a boolean (no gradient flows back through them):
# the registry's order-only and boolean ops, and API spellings it does not hold.
STEP_FUNCTIONS = ops.STEP_FUNCTIONS | {
    "rint", "floordiv", "floor_div", "argmax", "argmin", "is_nan", "is_inf", "is_finite", "int"
}  # fmt: skip
INTEGER_DTYPE = re.compile(r"^(?:u?int(?:8|16|32|64)|bool)$")

MAX_HOPS = 3  # nested-function returns followed to their call sites
MAX_STATEMENTS = 400  # a longer function is not followed (the claim is dropped, not guessed)


def _dtype_text(node: cst.BaseExpression) -> str:
    text = string_value(node) if isinstance(node, cst.SimpleString) else dotted_name(node)
    return (text or "").rsplit(".", 1)[-1]


def integer_cast(call: cst.Call, last: str) -> bool:
    """``tf.cast(x, tf.int32)``, ``tf.cast(x, dtype="int64")``: a cast to an integer dtype."""
    if last not in ("cast", "saturate_cast"):
        return False
    args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    dtype = args.get("dtype", positional[1] if len(positional) > 1 else None)
    return dtype is not None and bool(INTEGER_DTYPE.match(_dtype_text(dtype)))


def _integer_dtype_keyword(call: cst.Call) -> bool:
    """``zeros(n, dtype="int32")``, ``arange(n, dtype=tf.int64)``: made in an integer dtype."""
    return any(
        a.keyword is not None
        and a.keyword.value == "dtype"
        and bool(INTEGER_DTYPE.match(_dtype_text(a.value)))
        for a in call.args
    )


Lookup = Callable[[str, Scope, int], object]


def discrete_expr(expr: cst.BaseExpression, scope: Scope, at: int, lookup: Lookup, depth=0) -> bool:
    """``expr`` is a whole number or a boolean: a comparison, ``not``, an integer or boolean
    op, an integer cast or dtype, a tuple of such, or a local name last bound to one."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return True
    if isinstance(expr, (cst.Tuple, cst.List)):
        return bool(expr.elements) and all(
            discrete_expr(e.value, scope, at, lookup, depth + 1) for e in expr.elements
        )
    if isinstance(expr, cst.Call):
        last = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
        return last in STEP_FUNCTIONS or integer_cast(expr, last) or _integer_dtype_keyword(expr)
    if isinstance(expr, cst.Name):
        found = lookup(expr.value, scope, at)
        if not isinstance(found, Binding):
            return False  # a parameter, or nothing bound here
        value = found.value if found.index is None else found.element()
        return value is not None and discrete_expr(value, found.scope, found.at, lookup, depth + 1)
    return False


def discrete_returns(scope: Scope, lookup: Lookup) -> bool:
    """Every ``return`` of the function gives whole numbers or booleans (indices, masks)."""
    return bool(scope.returns) and all(
        discrete_expr(expr, scope, at, lookup) for at, expr in scope.returns
    )


# -- following a value forward ----------------------------------------------------------------

_OWNERS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def _statements(fn: cst.FunctionDef | cst.Module) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(statement, the innermost def, lambda or class holding it) under ``fn`` (a function or
    a whole module): small statements, and the headers of compound ones (an ``if`` test, a
    ``for`` iterable)."""
    start = fn.body if isinstance(fn, cst.FunctionDef) else fn
    stack: list[tuple[cst.CSTNode, cst.CSTNode]] = [(start, fn)]
    while stack:
        node, owner = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                yield small, owner
            continue
        if isinstance(node, (cst.If, cst.While)):
            yield node.test, owner
        elif isinstance(node, cst.For):
            yield node.iter, owner
        elif isinstance(node, cst.With):
            for item in node.items:
                yield item.item, owner
        elif isinstance(node, cst.Lambda):
            yield node.body, node
            continue
        inner = node if isinstance(node, _OWNERS) and node is not fn else owner
        stack.extend((child, inner) for child in children(node))


def _path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes from ``root`` down to ``target`` (both included)."""
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        path.append(node)
        if node is target:
            return path
        stack.extend((c, depth + 1) for c in reversed(children(node)))
    return None


class _Flow:
    """One forward walk; ``sinks`` collects why each end carries no gradient."""

    def __init__(self, is_discrete_call: Callable[[str], bool], sink_reason) -> None:
        self.is_discrete_call = is_discrete_call
        self.sink_reason = sink_reason  # (statement, node) -> why no gradient flows, or None
        self.sinks: list[str] = []

    def fate(self, stmt: cst.CSTNode, node: cst.CSTNode) -> set[str] | str | None:
        """Where the value of ``node`` goes in ``stmt``: names it is assigned to, "return",
        "sink" (a gradient-free end), or None (anything else: no claim)."""
        reason = self.sink_reason(stmt, node)
        if reason:
            self.sinks.append(reason)
            return "sink"
        path = _path_to(stmt, node)
        if path is None:
            return None
        for above, below in pairwise(path):
            if isinstance(above, cst.Call) and above.func is not below:  # an argument of it
                name = dotted_name(above.func) or ""
                if name and self.is_discrete_call(name):
                    self.sinks.append(
                        f"it only feeds `{name}`, whose results are whole numbers or booleans"
                    )
                    return "sink"
        if isinstance(stmt, cst.Return):
            return "return"
        if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = (
                [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            )
            names: set[str] = set()
            for target in targets:
                elements = (
                    target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
                )
                for e in elements:
                    t = e.value if isinstance(e, cst.Element) else e
                    if not isinstance(t, cst.Name):
                        return None
                    names.add(t.value)
            return names
        return None

    def follow(self, fn: cst.FunctionDef, stmt: cst.CSTNode, node: cst.CSTNode) -> bool | None:
        """True when the value ends only in sinks inside ``fn``; "returned" ends are left to
        the caller: returns True, False (it is returned), or None (no claim)."""
        statements = list(_statements(fn))
        if len(statements) > MAX_STATEMENTS:
            return None
        first = self.fate(stmt, node)
        if first is None:
            return None
        returned = first == "return"
        tainted: set[str] = first if isinstance(first, set) else set()
        done: set[str] = set()
        while tainted - done:
            name = next(iter(tainted - done))
            done.add(name)
            for s, owner in statements:
                for read in reads_of(s, name):
                    if owner is not fn:
                        if _binds(owner, name):
                            continue  # a local of a nested function: another value
                        return None  # a closure reads it
                    where = self.fate(s, read)
                    if where is None:
                        return None
                    if where == "return":
                        returned = True
                    elif isinstance(where, set):
                        tainted |= where
        return not returned


def _binds(owner: cst.CSTNode, name: str) -> bool:
    """``owner`` (a nested def) has its own ``name``: a parameter or an assignment."""
    if isinstance(owner, (cst.FunctionDef, cst.Lambda)):
        params = owner.params
        every = (*params.posonly_params, *params.params, *params.kwonly_params)
        if any(p.name.value == name for p in every):
            return True
    if not isinstance(owner, cst.FunctionDef):
        return False
    for s, inner in _statements(owner):
        if inner is owner and isinstance(s, cst.Assign):
            for t in s.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    return True
    return False


def _enclosing_def(scope: Scope) -> Scope | None:
    s: Scope | None = scope
    while s is not None and s.kind != "function":
        s = s.parent
    return s


def only_discrete_reason(
    scope: Scope,
    statement: cst.CSTNode,
    node: cst.CSTNode,
    is_discrete_call: Callable[[str], bool],
    sink_reason,
    imported: Callable[[str], object] | None = None,
) -> str | None:
    """Why the value of ``node`` (in ``statement``) takes no gradient: every path from it ends
    in a whole-number or boolean result, also through the returns of nested functions and of
    module-level functions whose every caller in the module uses the result only so
    (``imported(name)``: another module reads that function, so its callers are not all in
    view); None when one path may reach something differentiated (or cannot be followed)."""
    flow = _Flow(is_discrete_call, sink_reason)
    fs = _enclosing_def(scope)
    hops = 0
    while fs is not None:
        fn = fs.node
        if not isinstance(fn, cst.FunctionDef):
            return None  # a lambda: its value goes where its caller takes it
        ended = flow.follow(fn, statement, node)
        if ended is None:
            return None
        if ended:
            return _reason(flow.sinks)
        # returned: follow a nested function's result to its call sites in the function around it
        hops += 1
        parent = _enclosing_def(fs.parent) if fs.parent is not None else None
        if parent is None and fs.parent is not None and fs.parent.kind == "module":
            return callers_reason(fs.parent, fn, flow, imported, hops)
        if parent is None or hops > MAX_HOPS:
            return None
        sites = _call_sites(parent.node, fn) if isinstance(parent.node, cst.FunctionDef) else []
        if not sites:
            return None
        for site_stmt, call, owner in sites[1:]:  # each further site ends in its own function
            if (
                not isinstance(owner, cst.FunctionDef)
                or flow.follow(owner, site_stmt, call) is not True
            ):
                return None
        statement, node, owner = sites[0]
        if not isinstance(owner, cst.FunctionDef):
            return None
        fs = _scope_like(owner, parent)
    return None


def _scope_like(fn: cst.FunctionDef, parent: Scope) -> Scope:
    """A stand-in scope for a def nested in ``parent`` (only ``node``, ``kind`` and ``parent``
    are read here)."""
    return Scope("function", fn, parent)


def _call_sites(
    parent: cst.FunctionDef, fn: cst.FunctionDef
) -> list[tuple[cst.CSTNode, cst.Call, cst.CSTNode]]:
    """Every ``fn(...)`` under ``parent``, with its statement and owner; empty when ``fn`` is
    also used otherwise (passed as a callback, rebound), so its result may go anywhere."""
    name = fn.name.value
    out: list[tuple[cst.CSTNode, cst.Call, cst.CSTNode]] = []
    for stmt, owner in _statements(parent):
        for read in reads_of(stmt, name):
            call, _ = _called(stmt, read)
            if call is None:
                return []
            out.append((stmt, call, owner))
    return out


def _called(stmt: cst.CSTNode, read: cst.Name) -> tuple[cst.Call | None, list[cst.CSTNode]]:
    """The call ``read`` is the callee of in ``stmt`` (None when it is read otherwise), and
    the path from ``stmt`` down to ``read``."""
    path = _path_to(stmt, read) or []
    call = path[-2] if len(path) >= 2 else None
    return (call if isinstance(call, cst.Call) and call.func is read else None), path


def _reason(sinks: list[str]) -> str:
    if not sinks:
        return "nothing reads the value"
    return f"every use of the value is gradient-free ({sinks[0]})"


# -- a module-level function's value, followed to its callers -------------------------------


def callers_reason(
    root: Scope,
    fn: cst.FunctionDef,
    flow: _Flow,
    imported: Callable[[str], object] | None,
    hops: int,
) -> str | None:
    """``fn`` returns the value: why it takes no gradient in any caller (every call of ``fn`` in
    the module uses the result only as whole numbers or booleans, following a caller that
    returns it in turn to its own callers); None when a call may differentiate it, when ``fn``
    is named otherwise than called (passed, stored, decorated: its callers are not all in
    view), or when another module reads it."""
    if not isinstance(root.node, cst.Module):
        return None
    names = _names(root)
    start = len(flow.sinks)
    uses = _discrete_callers(names, fn, flow, imported, hops)
    if not uses:
        return None
    shown: list[str] = []
    for caller, stmt in uses:
        line = _line(names, caller, stmt)
        place = f"`{caller.name.value}`" + (f" at line {line}" if line else "")
        if place not in shown:  # a caller reached through several calls is named once
            shown.append(place)
    head = flow.sinks[start] if len(flow.sinks) > start else "nothing reads it"
    return (
        f"`{fn.name.value}`'s value only reaches whole numbers or booleans in its callers "
        f"({', '.join(shown)}: {head})"
    )


def _discrete_callers(
    names: _Names,
    fn: cst.FunctionDef,
    flow: _Flow,
    imported: Callable[[str], object] | None,
    hops: int,
) -> list[tuple[cst.FunctionDef, cst.CSTNode]] | None:
    """(caller, statement) of each call of ``fn`` whose result ends in sinks (through callers
    that return it, up to :data:`MAX_HOPS`), or None."""
    name = fn.name.value
    if fn.decorators or hops > MAX_HOPS:
        return None  # a decorator may register it: callers by that name are not in view
    if (imported is not None and imported(name)) or getattr(imported, "quiet", {}).get(name):
        return None  # another module reads it: its callers there are not followed here
    sites = _module_sites(names, fn)
    if not sites:
        return None
    out: list[tuple[cst.FunctionDef, cst.CSTNode]] = []
    for stmt, call, owner in sites:
        if not isinstance(owner, cst.FunctionDef):
            return None  # module-level or class-level code: its value goes anywhere
        ended = flow.follow(owner, stmt, call)
        if ended is None:
            return None
        if not ended:  # the caller returns it: its own callers decide
            if owner is fn or not any(owner is b for b in names.module.body):
                return None
            further = _discrete_callers(names, owner, flow, imported, hops + 1)
            if not further:
                return None
            out.extend(further)
        out.append((owner, stmt))
    return out


class _Names:
    """One walk of a module: where each name is read (statement, node, owner), and how many
    times each is spelled at all (imports, parameters, assignments, ``def`` names too)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.reads: dict[str, list[tuple[cst.CSTNode, cst.Name, cst.CSTNode]]] = {}
        for stmt, owner in _statements(module):
            for read in reads(stmt):
                self.reads.setdefault(read.value, []).append((stmt, read, owner))
        self.spelled: dict[str, int] = {}
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                self.spelled[node.value] = self.spelled.get(node.value, 0) + 1
                continue
            if isinstance(node, cst.Attribute):  # `x.f`: another name
                stack.append(node.value)
                continue
            if isinstance(node, cst.Arg) and node.keyword is not None:  # `g(f=...)`
                stack.append(node.value)
                continue
            stack.extend(children(node))
        self.lines: list[int] | None = None  # the first line of each module-level statement


_NAMES: weakref.WeakKeyDictionary[Scope, _Names] = weakref.WeakKeyDictionary()


def _names(root: Scope) -> _Names:
    """The walk of the module ``root`` (its module scope) is the scope of, once per scope."""
    found = _NAMES.get(root)
    if found is None:
        assert isinstance(root.node, cst.Module)
        found = _NAMES[root] = _Names(root.node)
    return found


def _module_sites(
    names: _Names, fn: cst.FunctionDef
) -> list[tuple[cst.CSTNode, cst.Call, cst.CSTNode]] | None:
    """Every ``fn(...)`` in the module, with its statement and owner; None when the module also
    names ``fn`` otherwise (passed, stored, rebound, imported, shadowed, inside a lambda), so its
    result may go anywhere."""
    name = fn.name.value
    out: list[tuple[cst.CSTNode, cst.Call, cst.CSTNode]] = []
    for stmt, read, owner in names.reads.get(name, ()):
        call, path = _called(stmt, read)
        if call is None or any(isinstance(n, cst.Lambda) for n in path):
            return None
        out.append((stmt, call, owner))
    # every other spelling of the name (but its own `def`) is one of these calls
    return out if len(out) == names.spelled.get(name, 0) - 1 else None


def _line(names: _Names, fn: cst.FunctionDef, stmt: cst.CSTNode) -> int | None:
    """The line of ``stmt`` in ``fn`` (a module-level def), or None: the module's lines counted
    once, and positions resolved in ``fn`` alone (only for a message)."""
    module = names.module
    index = next((i for i, b in enumerate(module.body) if b is fn), None)
    if index is None:
        return None
    try:
        if names.lines is None:
            lines = [len(module.header)]
            for b in module.body:
                lines.append(lines[-1] + module.code_for_node(b).count("\n"))
            names.lines = lines
        alone = MetadataWrapper(cst.Module(body=[fn]), unsafe_skip_copy=True)
        return names.lines[index] + alone.resolve(PositionProvider)[stmt].start.line
    except (KeyError, ValueError, RecursionError):
        return None
