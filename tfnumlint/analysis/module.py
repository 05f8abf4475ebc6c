"""One fast pass over a libcst tree: scopes, assignments, imports and the nodes rules look at.

libcst's own visitor dispatch costs about 0.6x the parse; an explicit stack over the
dataclass fields costs about 0.05x, so the walk is done here by hand, in source order.
Assignments are recorded with the walk order at which they become visible, so a use sees
the binding that precedes it (``x = f(x)`` sees the earlier ``x``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import libcst as cst

from .dtypectx import context_words
from .names import ImportMap
from .names import children as child_nodes

# Fields that never hold code: skipping them makes the walk several times cheaper.
_SKIP_FIELDS = frozenset(
    {
        "whitespace",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "newline",
        "whitespace_before",
        "whitespace_after",
        "whitespace_before_colon",
        "whitespace_after_colon",
        "whitespace_before_params",
        "whitespace_after_def",
        "whitespace_after_name",
        "whitespace_before_args",
        "whitespace_after_func",
        "whitespace_after_star",
        "whitespace_after_param",
        "whitespace_after_arg",
        "whitespace_before_arg",
        "equal",
        "colon",
        "dot",
        "operator",
        "star",
        "asynchronous",
        "whitespace_after_class",
        "whitespace_before_equal",
        "whitespace_after_equal",
        "whitespace_before_value",
        "whitespace_after_keyword",
        "trailing_whitespace",
        "encoding",
        "default_indent",
        "default_newline",
        "has_trailing_newline",
        "indent",
        "last_line",
        "whitespace_after_indent",
        "whitespace_after_import",
        "whitespace_before_import",
        "whitespace_after_from",
        "whitespace_after_as",
        "whitespace_before_as",
        "whitespace_after_lambda",
        "whitespace_after_await",
        "whitespace_before_walrus",
        "whitespace_after_walrus",
        "whitespace_before_in",
        "whitespace_after_in",
        "whitespace_after_for",
        "whitespace_before_for",
        "whitespace_before_if",
        "whitespace_after_if",
        "whitespace_before_else",
        "whitespace_after_else",
        "whitespace_before_expression",
        "whitespace_before_indicator",
        "whitespace_after_indicator",
        "whitespace_before_from",
    }
)
_FIELD_CACHE: dict[type, tuple[str, ...]] = {}

# Children in source order where dataclass field order differs from it.
_ORDER_OVERRIDES: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
}

FLOAT16_MARKERS = frozenset({"float16", "half", "mixed_float16"})
BFLOAT16_MARKERS = frozenset({"bfloat16", "mixed_bfloat16"})


def _fields(tp: type) -> tuple[str, ...]:
    names = _FIELD_CACHE.get(tp)
    if names is None:
        names = _ORDER_OVERRIDES.get(tp) or tuple(
            f.name for f in dataclasses.fields(tp) if f.name not in _SKIP_FIELDS
        )
        _FIELD_CACHE[tp] = names
    return names


@dataclass(eq=False)
class Binding:
    """One assignment of a name: visible from walk order ``visible``; its value is evaluated
    in ``scope`` at order ``at``.  ``index`` selects an element of a tuple-unpacking."""

    visible: int
    at: int
    value: cst.BaseExpression | None
    scope: Scope
    index: int | None = None
    # a name nested in the unpacking (``(a, b), (c, d) = v``): ``v`` and the element path.
    # ``value`` is then None (unknown to every reader that does not follow the path)
    nested: tuple[cst.BaseExpression, tuple[int, ...]] | None = None

    def element(self) -> cst.BaseExpression | None:
        """``a, b = x, y``: the expression this name takes from a literal tuple or list (None
        for a whole value, or the element of a value that is not a literal)."""
        if self.index is None or self.value is None:
            return None
        return literal_item(self.value, self.index)


def literal_item(value: cst.BaseExpression, index: int) -> cst.BaseExpression | None:
    """Item ``index`` of a literal tuple or list (``x, y`` or ``return a, b``); None past its
    end, with a starred item, or for anything but such a literal."""
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    items = value.elements
    if index >= len(items) or any(isinstance(e, cst.StarredElement) for e in items):
        return None
    return items[index].value


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    attrs: dict[str, list[Binding]] = field(default_factory=dict)
    # ``self.w, self.b = make(...)``: each attribute's binding with its element index, kept
    # apart from ``attrs``, whose readers take a binding's value as the attribute's own
    unpacked_attrs: dict[str, list[Binding]] = field(default_factory=dict)
    method_scopes: dict[str, Scope] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Scope:
    kind: str  # module | function | class
    node: cst.CSTNode
    parent: Scope | None
    cls: ClassInfo | None = None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    params: dict[str, cst.Param] = field(default_factory=dict)
    self_name: str | None = None
    dtype_markers: set[str] = field(default_factory=set)
    returns: list[tuple[int, cst.BaseExpression]] = field(default_factory=list)
    # item assignments (``a[i] = v``, ``a[m] += v``): (start, end, statement), for in_place.py
    stores: list[tuple[int, int, cst.CSTNode]] = field(default_factory=list)
    # how the body uses its names (a roles.Roles, from roles.name_roles): a fact of the tree
    # alone, kept here so that the evaluators of later rounds over the same walk do not walk
    # the body again (roles.py imports this module, so the type stays unnamed here)
    roles: object = field(default=None, repr=False)

    @property
    def name(self) -> str:
        node = self.node
        return node.name.value if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else "<module>"

    def bindings_of(self, name: str) -> list[Binding]:
        """Every binding of ``name`` in the nearest scope (this one or an enclosing one) that
        binds it; empty when none does."""
        s: Scope | None = self
        while s is not None:
            if s.bindings.get(name):
                return s.bindings[name]
            s = s.parent
        return []


N = TypeVar("N", bound=cst.CSTNode)


@dataclass(eq=False)
class Site(Generic[N]):
    """A node a rule inspects, with where it sits.  A check names the node type its
    subscription guarantees: ``Site[cst.Call]`` for ops and methods, ``Site[cst.BinaryOperation]``
    for binary operators."""

    node: N
    scope: Scope
    statement: cst.CSTNode
    order: int
    top: cst.CSTNode | None = None  # the module-level statement that contains the node


@dataclass(eq=False)
class ModuleInfo:
    module: cst.Module
    imports: ImportMap
    root: Scope
    calls: list[Site] = field(default_factory=list)
    binops: list[Site] = field(default_factory=list)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)  # module-level def/class names
    functions: dict[str, Scope] = field(default_factory=dict)  # module-level defs
    import_nodes: list[cst.Import | cst.ImportFrom] = field(default_factory=list)  # incl. relative
    default_float: str = "float32"  # the project's float type (config.Settings.float_type)
    scopes: list[Scope] = field(default_factory=list, repr=False)  # every scope, for release()
    scaled: list[Scope] = field(default_factory=list, repr=False)  # scopes with an `x *= m`

    def release(self) -> None:
        """Break the reference cycles of the walk (a binding names its scope, a class's
        scope and its methods' scopes name each other) once nothing will read it again:
        reference counting then frees the tree and the walk as soon as the last reference
        goes, instead of the cyclic collector finding them by walking every young object
        (about a tenth of the static pass on TF's python/ops; collector.py)."""
        for scope in self.scopes:
            scope.bindings = {}
            if scope.cls is not None:
                scope.cls.attrs = {}
                scope.cls.unpacked_attrs = {}
                scope.cls.method_scopes = {}
            scope.cls = None

    def float16_storage(self, scope: Scope) -> bool:
        """float16 variables or casts, not just the mixed policy (which keeps variables and
        optimizer state in float32)."""
        s: Scope | None = scope
        markers: set[str] = set(self.root.dtype_markers)
        while s is not None:
            markers |= s.dtype_markers
            s = s.parent
        return bool(markers & {"float16", "half"})

    def dtype(self, scope: Scope) -> str:
        """The lowest precision the code in ``scope`` may run in (module markers apply to all);
        with no local dtype, the project's float type (``default_float``)."""
        markers: set[str] = set(self.root.dtype_markers)
        s: Scope | None = scope
        while s is not None:
            markers |= s.dtype_markers
            s = s.parent
        if markers & FLOAT16_MARKERS:
            return "float16"
        if markers & BFLOAT16_MARKERS:
            return "bfloat16"
        if "float32" in markers:
            return "float32"
        return self.default_float


_LEAVE = object()


def _target_names(target: cst.BaseExpression) -> list[tuple[str, int | None]]:
    """The names a target binds, with their element index (None: the whole value); a name
    nested deeper is left out (see :func:`_nested_names`)."""
    if isinstance(target, cst.Name):
        return [(target.value, None)]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[tuple[str, int | None]] = []
        for i, el in enumerate(target.elements):
            if isinstance(el.value, cst.Name):
                out.append((el.value.value, i))
        return out
    return []


def _nested_names(target: cst.BaseExpression, path: tuple[int, ...] = ()) -> list:
    """``(a, b), (c, d)``: the names two or more levels deep, with their element paths."""
    out: list[tuple[str, tuple[int, ...]]] = []
    if not isinstance(target, (cst.Tuple, cst.List)):
        return out
    for i, el in enumerate(target.elements):
        inner = el.value
        if isinstance(el, cst.StarredElement):
            continue
        if isinstance(inner, cst.Name) and path:
            out.append((inner.value, (*path, i)))
        elif isinstance(inner, (cst.Tuple, cst.List)):
            out.extend(_nested_names(inner, (*path, i)))
    return out


def build(module: cst.Module) -> ModuleInfo:
    """Walk ``module`` once and return everything the rules need."""
    imports = ImportMap()
    root = Scope("module", module, None)
    info = ModuleInfo(module, imports, root)
    info.scopes.append(root)
    order = 0
    # stack entries: (node, scope, statement, class_info) or (_LEAVE, callback)
    stack: list = [(module, root, module)]
    top: cst.CSTNode | None = None
    while stack:
        entry = stack.pop()
        if entry[0] is _LEAVE:
            entry[1](order)
            continue
        node, scope, stmt = entry
        order += 1
        tp = type(node)
        if tp in LEAF_TYPES:
            continue  # it has its walk order, and nothing else to record or visit
        if stmt is module and (
            tp is cst.SimpleStatementLine or isinstance(node, cst.BaseCompoundStatement)
        ):
            top = node  # a module-level statement; depth-first, everything until the next is inside
        if _is_statement(tp):
            stmt = node
        if tp is cst.Call:
            info.calls.append(Site(node, scope, stmt, order, top))
            _note_call_dtypes(node, scope)
        elif tp is cst.BinaryOperation:
            info.binops.append(Site(node, scope, stmt, order, top))
        elif tp is cst.Import:
            imports.add_import(node)
            info.import_nodes.append(node)
        elif tp is cst.ImportFrom:
            imports.add_import_from(node)
            info.import_nodes.append(node)
        elif tp is cst.Assign or tp is cst.AnnAssign or tp is cst.AugAssign:
            if tp is cst.Assign and scope is root:
                imports.add_module_alias(node)  # tf1 = tf.compat.v1
            elif tp is cst.AugAssign and type(node.operator) is cst.MultiplyAssign:
                info.scaled.append(scope)
            _schedule_assignment(stack, node, scope, order)
        elif tp is cst.Return and node.value is not None:
            scope.returns.append((order, node.value))
        elif tp is cst.For or tp is cst.CompFor:
            for name, _ in _target_names(node.target):
                scope.bindings.setdefault(name, []).append(Binding(order, order, None, scope))
        elif tp is cst.WithItem and node.asname is not None:
            for name, _ in _target_names(node.asname.name):
                scope.bindings.setdefault(name, []).append(Binding(order, order, None, scope))
        elif tp is cst.FunctionDef or tp is cst.Lambda:
            scope = _enter_function(info, node, scope, stack, stmt)
            continue
        elif tp is cst.ClassDef:
            scope = _enter_class(info, node, scope, stack, stmt)
            continue
        _push_children(stack, node, scope, stmt)
    _drop_shadowed_imports(info)
    return info


def _drop_shadowed_imports(info: ModuleInfo) -> None:
    """`from tensorflow.math import log` then `def log(msg)`: the name is no longer TF's."""
    for name in info.defined & set(info.imports.aliases):
        del info.imports.aliases[name]


_NODE_TYPES: dict[type, bool] = {}
_STATEMENT_TYPES: dict[type, bool] = {}

# Nodes with no child the walk visits (their other fields are text, or skipped above) and that
# no branch of :func:`build` records: a third of a module's nodes are names.
LEAF_TYPES = frozenset(
    {
        cst.Name,
        cst.SimpleString,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.Ellipsis,
        cst.SimpleWhitespace,
        cst.Comment,
        cst.Newline,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.Pass,
        cst.Break,
        cst.Continue,
    }
)


def _is_node(tp: type) -> bool:
    """isinstance(x, cst.CSTNode) goes through ABC machinery; cache it per type."""
    known = _NODE_TYPES.get(tp)
    if known is None:
        known = _NODE_TYPES[tp] = issubclass(tp, cst.CSTNode)
    return known


def _is_statement(tp: type) -> bool:
    known = _STATEMENT_TYPES.get(tp)
    if known is None:
        known = _STATEMENT_TYPES[tp] = issubclass(
            tp, (cst.BaseSmallStatement, cst.BaseCompoundStatement)
        )
    return known


def _push_children(stack: list, node: cst.CSTNode, scope: Scope, stmt: cst.CSTNode) -> None:
    children: list[cst.CSTNode] = []
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if value is None:
            continue
        tp = type(value)
        if tp is tuple or tp is list:
            children.extend(v for v in value if _is_node(type(v)))
        elif _is_node(tp):
            children.append(value)
    for child in reversed(children):
        stack.append((child, scope, stmt))


def _note_call_dtypes(node: cst.Call, scope: Scope) -> None:
    """A low-precision dtype set by a call (tf.cast(x, tf.float16), dtype=tf.float16,
    set_global_policy("mixed_float16"), x.astype("float16")) sets the scope's dtype context,
    and so does float32 in a float64 project.  A bare mention (np.finfo(np.float16), a dtype
    list, a local named `half`) does not."""
    scope.dtype_markers |= context_words(node, scope)


def _schedule_assignment(stack: list, node, scope: Scope, start: int) -> None:
    """Record the binding when the walk leaves the statement, so its own value sees the
    previous binding of the same name."""
    value: cst.BaseExpression | None
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
        value = node.value
    elif isinstance(node, cst.AnnAssign):
        targets, value = [node.target], node.value
    else:  # AugAssign: x += v  ->  unknown afterwards unless we rebuild it
        targets = [node.target]
        value = cst.BinaryOperation(
            left=node.target,
            operator=_AUG_TO_BIN.get(type(node.operator), cst.Add)(),
            right=node.value,
        )

    def record(end: int) -> None:
        for target in targets:
            if isinstance(target, cst.Subscript):
                scope.stores.append((start, end, node))
            for name, index in _target_names(target):
                scope.bindings.setdefault(name, []).append(Binding(end, start, value, scope, index))
            if value is not None:
                for name, path in _nested_names(target):
                    nested = Binding(end, start, None, scope, nested=(value, path))
                    scope.bindings.setdefault(name, []).append(nested)
            attr = _self_attribute(target, scope)
            if attr is not None and scope.cls is not None:
                scope.cls.attrs.setdefault(attr, []).append(Binding(end, start, value, scope))
            if isinstance(target, (cst.Tuple, cst.List)) and scope.cls is not None:
                for i, el in enumerate(target.elements):
                    attr = _self_attribute(el.value, scope)
                    if attr is not None:
                        scope.cls.unpacked_attrs.setdefault(attr, []).append(
                            Binding(end, start, value, scope, i)
                        )
            if scope.kind == "class" and scope.cls is not None:
                for name, _ in _target_names(target):
                    scope.cls.attrs.setdefault(name, []).append(Binding(end, start, value, scope))

    stack.append((_LEAVE, record))


def _self_attribute(target: cst.BaseExpression, scope: Scope) -> str | None:
    """``attr`` for a target ``self.attr`` of a method (``self`` the method's own name)."""
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == scope.self_name
    ):
        return target.attr.value
    return None


# the binary operator of an augmented assignment (x += v is x = x + v); a class is its factory
_AUG_TO_BIN: dict[type[cst.BaseAugOp], Callable[[], cst.BaseBinaryOp]] = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.PowerAssign: cst.Power,
}


def _enter_function(info: ModuleInfo, node, outer: Scope, stack: list, stmt) -> Scope:
    cls = outer.cls if outer.kind == "class" else None
    scope = Scope("function", node, outer, cls=cls)
    info.scopes.append(scope)
    params = node.params
    all_params = (
        list(params.posonly_params)
        + list(params.params)
        + list(params.kwonly_params)
        + [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    )
    for p in all_params:
        scope.params[p.name.value] = p
    if cls is not None and isinstance(node, cst.FunctionDef):
        cls.method_scopes[node.name.value] = scope
        first = list(params.posonly_params) + list(params.params)
        if first:
            scope.self_name = first[0].name.value
    if isinstance(node, cst.FunctionDef):
        outer.bindings.setdefault(node.name.value, []).append(Binding(0, 0, None, outer))
        if outer.kind == "module":
            info.defined.add(node.name.value)
            info.functions[node.name.value] = scope
        head = [*node.decorators, node.params]  # decorators run in the outer scope
    else:
        head = [node.params]
    stack.append((node.body, scope, stmt))
    for child in reversed(head):
        stack.append((child, scope if child is node.params else outer, stmt))
    return scope


def _enter_class(info: ModuleInfo, node: cst.ClassDef, outer: Scope, stack: list, stmt) -> Scope:
    cls = ClassInfo(node)
    cls.bases = [info.imports.resolve(b.value) or "" for b in node.bases]
    info.classes[node.name.value] = cls
    scope = Scope("class", node, outer, cls=cls)
    info.scopes.append(scope)
    outer.bindings.setdefault(node.name.value, []).append(Binding(0, 0, None, outer))
    if outer.kind == "module":
        info.defined.add(node.name.value)
    stack.append((node.body, scope, stmt))
    for child in reversed([*node.decorators, *[b.value for b in node.bases]]):
        stack.append((child, outer, stmt))
    return scope


def qualname(scope: Scope) -> str | None:
    """``f`` for a module-level function, ``C.m`` for a method of a module-level class; None
    for anything nested deeper (the project index does not track those)."""
    if scope.kind != "function" or not isinstance(scope.node, cst.FunctionDef):
        return None
    parent = scope.parent
    if parent is not None and parent.kind == "module":
        return scope.name
    grand = parent.parent if parent is not None else None
    if (
        parent is not None
        and parent.kind == "class"
        and grand is not None
        and grand.kind == "module"
    ):
        return f"{parent.name}.{scope.name}"
    return None


def contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """``inner`` is ``outer`` or one of its descendants (by identity)."""
    stack = [outer]
    while stack:
        n = stack.pop()
        if n is inner:
            return True
        stack.extend(child_nodes(n))
    return False


def parent_map(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """id(node) -> its parent, for every node under ``root``."""
    out: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        for c in child_nodes(n):
            out[id(c)] = n
            stack.append(c)
    return out


def call_arg(call: cst.Call, index: int, *keywords: str) -> cst.BaseExpression | None:
    """The argument given by one of ``keywords``, else the ``index``-th positional one."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keywords:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if 0 <= index < len(positional) else None
