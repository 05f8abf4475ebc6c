"""In-place changes of an array the data code made: the ones a recipe replays, the rest.

Data code often edits an array after drawing it: ``hist[np.arange(L)[None, :] >= seen[:, None]]
= 0`` pads histories, ``x[x < 0] = 0`` clips, ``y[:, 0] += 1`` shifts a column.  A recipe of
the name's assignment alone would be another array than the one fed, so every in-place change
is found here.  An item assignment ``a[idx] = v`` (or ``a[idx] op= v``) that is a statement of
the very block the array is bound in (not inside a loop, a branch or another function) is
replayed as a ``setitem`` recipe node, in order; any other change (a method that mutates, an
``out=`` argument, a change through a view or inside a loop) leaves the name with no recipe.

Views: an array bound as a view of another (``v = x[:, 0]``, ``x.reshape(...)``, ``v = x``)
shares its memory, so a change of one reaches the other.  A change through a name bound to
such an expression marks its base as changed (not replayed), and a base whose view was taken
before one of its changes is not replayed either.  Slicing is taken as a view even when NumPy
copies (a fancy index): that only refuses more.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import libcst as cst

from .module import ModuleInfo, Scope
from .names import descendants
from .recipe_tables import FIRST_ARGUMENT_MUTATORS, MUTATORS

# methods and NumPy functions whose result may share its argument's memory
_VIEWS = frozenset(
    {"reshape", "ravel", "view", "transpose", "swapaxes", "squeeze", "asarray", "asanyarray",
     "moveaxis", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to",
     "flip", "fliplr", "flipud", "rot90", "diagonal", "real", "imag"}
)  # fmt: skip
_AUGMENTED = {
    cst.AddAssign: "+",
    cst.SubtractAssign: "-",
    cst.MultiplyAssign: "*",
    cst.DivideAssign: "/",
    cst.PowerAssign: "**",
    cst.FloorDivideAssign: "//",
    cst.ModuloAssign: "%",
}


@dataclass(frozen=True)
class Store:
    """``a[idx] = v`` (``op`` None) or ``a[idx] op= v``: a statement from walk order ``start``
    to ``end``."""

    start: int
    end: int
    target: cst.Subscript
    value: cst.BaseExpression
    op: str | None


_SITES: weakref.WeakKeyDictionary[Scope, dict[str, list[cst.CSTNode]]] = weakref.WeakKeyDictionary()
_VIEWED: weakref.WeakKeyDictionary[Scope, frozenset[str]] = weakref.WeakKeyDictionary()


def base_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def view_bases(value: cst.BaseExpression) -> set[str]:
    """The names whose memory ``value`` may share (``x`` of ``x``, ``x[:, 0]``, ``x.T``,
    ``x.reshape(n, -1)``, ``np.asarray(x)``); a call that makes a new array shares none."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.add(node.value)
        elif isinstance(node, (cst.Subscript, cst.Attribute)):
            stack.append(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(e.value for e in node.elements)
        elif isinstance(node, cst.IfExp):
            stack.extend((node.body, node.orelse))
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _VIEWS
        ):
            stack.append(node.func.value)  # x.reshape(...)
            if node.args:
                stack.append(node.args[0].value)  # np.reshape(x, ...)
    return out


def _targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for e in target.elements for t in _targets(e.value)]
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    return [target]


def sites(scope: Scope) -> dict[str, list[cst.CSTNode]]:
    """Each name changed in place somewhere in ``scope`` (its nested functions included),
    with the nodes that change it: an ``AssignTarget`` or ``AugAssign`` of an item or an
    attribute, a ``del`` of one, a method that mutates (``x.sort()``), a NumPy function that
    changes its first argument (``rng.shuffle(x)``, ``np.add.at(x, i, 1)``), ``out=x``."""
    known = _SITES.get(scope)
    if known is not None:
        return known
    found: dict[str, list[cst.CSTNode]] = {}

    def note(name: str | None, node: cst.CSTNode) -> None:
        if name is not None:
            found.setdefault(name, []).append(node)

    for node in descendants(scope.node):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.Del)):
            for target in _targets(node.target):
                if isinstance(target, (cst.Subscript, cst.Attribute)):
                    note(base_name(target), node)
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                method = node.func.attr.value
                if method in MUTATORS:
                    note(base_name(node.func.value), node)
                if method in FIRST_ARGUMENT_MUTATORS and node.args:
                    note(base_name(node.args[0].value), node)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "out":
                    for target in _targets(arg.value):
                        note(base_name(target), node)
    _SITES[scope] = found
    return found


def _viewed(scope: Scope) -> frozenset[str]:
    """Names changed through a view: the bases of every binding (in ``scope`` and the scopes
    inside it) of a name changed in place, and theirs in turn."""
    known = _VIEWED.get(scope)
    if known is not None:
        return known
    values: dict[str, list[cst.BaseExpression]] = {}
    for node in descendants(scope.node):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                for target in _targets(t.target):
                    if isinstance(target, cst.Name):
                        values.setdefault(target.value, []).append(node.value)
    out: set[str] = set()
    todo = list(sites(scope))
    while todo:
        name = todo.pop()
        for value in values.get(name, ()):
            for base in view_bases(value) - {name} - out:
                out.add(base)
                todo.append(base)
    _VIEWED[scope] = frozenset(out)
    return _VIEWED[scope]


def mutated(scope: Scope) -> frozenset[str]:
    """Names changed in place somewhere in ``scope``, directly or through a view."""
    return frozenset(sites(scope)) | _viewed(scope)


def block_statements(scope: Scope) -> set[int]:
    """The ids of the small statements that sit directly in ``scope``'s own block (not under
    an ``if``, a loop or a ``with``)."""
    node = scope.node
    body = node.body if isinstance(node, cst.Module) else getattr(node, "body", None)
    lines = body if isinstance(body, (list, tuple)) else getattr(body, "body", ())
    return {
        id(small)
        for line in lines
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
    }


def stores(info: ModuleInfo, scope: Scope, name: str) -> list[Store] | None:
    """The in-place changes of ``name`` (bound in ``scope``) in walk order, when every one of
    them is an item assignment a recipe replays; None when one is not (see the module doc)."""
    if name in _viewed(scope):
        return None
    changes = sites(scope).get(name)
    if not changes:
        return []
    top = block_statements(scope)
    modelled: dict[int, Store] = {}
    for start, end, stmt in scope.stores:
        if id(stmt) not in top:
            continue
        site: cst.CSTNode
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            site, target, op = stmt.targets[0], stmt.targets[0].target, None
        elif isinstance(stmt, cst.AugAssign) and type(stmt.operator) in _AUGMENTED:
            site, target, op = stmt, stmt.target, _AUGMENTED[type(stmt.operator)]
        else:
            continue
        if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name):
            continue
        if target.value.value != name or stmt.value is None:
            continue
        if all(isinstance(e.slice, (cst.Index, cst.Slice)) for e in target.slice):
            modelled[id(site)] = Store(start, end, target, stmt.value, op)
    if any(id(site) not in modelled for site in changes):
        return None
    found = sorted(modelled.values(), key=lambda s: s.start)
    if _aliased_before(info, scope, name, found[-1].start):
        return None
    return found


def _aliased_before(info: ModuleInfo, scope: Scope, name: str, last: int) -> bool:
    """Is a view of ``name`` bound (in ``scope`` or a scope inside it) before its last change?
    The change then reaches the view, which its recipe would not replay."""
    for s in info.scopes:
        inner: Scope | None = s
        while inner is not None and inner is not scope:
            inner = inner.parent
        if inner is None:
            continue
        for bound, bindings in s.bindings.items():
            for b in bindings:
                if s is scope and bound == name:
                    continue  # the name's own rebinding: the old array is left behind
                if b.value is not None and b.at < last and name in view_bases(b.value):
                    return True
    return False
