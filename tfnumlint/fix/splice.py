"""Splice rendered replacements into a module: parentheses where precedence needs them,
assignments a rewrite made dead removed, and the TensorFlow import added when it is missing.

Edits are addressed by the identity of the original node (``id(node)``), which is why one
parse of the file is planned, rendered and spliced together.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ..analysis.context import Context
from ..analysis.module import contains
from ..analysis.names import children as child_nodes
from .bind import bind_moved
from .ir import Edit, Plan
from .match import pure
from .render import Namer, render_plan

Rendered = dict[int, cst.CSTNode]  # id of an original node -> its replacement

Span = tuple[int, int, int, int]  # start line, start column, end line, end column


def overlaps(a: Span, b: Span) -> bool:
    a0, a1 = (a[0], a[1]), (a[2], a[3])
    b0, b1 = (b[0], b[1]), (b[2], b[3])
    return a0 < b1 and b0 < a1


def covers(outer: Span, inner: Span) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (
        outer[2],
        outer[3],
    )


class Replace(cst.CSTTransformer):
    """Replace the nodes of ``mapping`` and remove the statements of ``remove`` (by id)."""

    def __init__(
        self,
        mapping: dict[int, cst.CSTNode],
        remove: set[int],
        parents: dict[int, cst.CSTNode],
        inserts: dict[int, list[cst.BaseStatement]] | None = None,
    ) -> None:
        self.mapping = mapping
        self.remove = remove
        self.parents = parents
        self.inserts = inserts or {}  # id(statement) -> statements to insert before it

    # libcst types on_leave as returning the visited node's own type, but a replacement of
    # another type (a call for a division) is what its transformers are for
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.BaseStatement]:
        new = self.mapping.get(id(original_node))
        if new is not None:
            return _fit(original_node, new, self.parents.get(id(original_node)))
        if id(original_node) in self.remove:
            return cst.RemoveFromParent()
        before = self.inserts.get(id(original_node))
        if before and isinstance(updated_node, cst.SimpleStatementLine):
            # the statement's comments and blank lines above now sit above the insertion
            first = before[0]
            if isinstance(first, cst.SimpleStatementLine):
                first = first.with_changes(leading_lines=updated_node.leading_lines)
            rest = updated_node.with_changes(leading_lines=[])
            return cst.FlattenSentinel([first, *before[1:], rest])
        return updated_node


def replace_in(module: cst.Module, parents: dict[int, cst.CSTNode], replace: Replace) -> cst.Module:
    """``module.visit(replace)``, visiting only the module-level statements that hold a node
    it replaces, removes or inserts before: the same module, without rebuilding (and
    validating) every other statement of a large file."""
    tops: set[int] = set()
    for key in (*replace.mapping, *replace.remove, *replace.inserts):
        top = _top_of(module, parents, key)
        if top is None:  # not under a module-level statement: visit everything
            return module.visit(replace)
        tops.add(top)
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if id(stmt) not in tops:
            body.append(stmt)
            continue
        new = stmt.visit(replace)
        if isinstance(new, cst.FlattenSentinel):
            body.extend(new.nodes)
        elif isinstance(new, cst.BaseStatement):
            body.append(new)
    return module.with_changes(body=body)


def _top_of(module: cst.Module, parents: dict[int, cst.CSTNode], key: int) -> int | None:
    """id of the module-level statement holding the node ``key`` (None: not in ``module``)."""
    while True:
        parent = parents.get(key)
        if parent is None:
            return None
        if parent is module:
            return key
        key = id(parent)


# an expression in these parents is an operand: a compound replacement needs parentheses
_OPERAND_OF = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Attribute,
    cst.Subscript,
    cst.Comparison,
)


def _fit(original: cst.CSTNode, new: cst.CSTNode, parent: cst.CSTNode | None) -> cst.CSTNode:
    """Keep the original's own parentheses; add some where precedence needs them."""
    lpar = getattr(original, "lpar", ())
    if lpar:
        return new.with_changes(lpar=lpar, rpar=getattr(original, "rpar", ()))
    needs = isinstance(parent, _OPERAND_OF) or (
        isinstance(parent, cst.Call) and parent.func is original
    )
    if isinstance(new, (cst.BinaryOperation, cst.UnaryOperation)) and needs:
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return new


def dead_statements(
    ctx: Context,
    parents: dict[int, cst.CSTNode],
    plans: list[Plan],
    rendered: dict[int, cst.CSTNode],
) -> set[int]:
    """Statement lines of the plans' fold assignments that no longer have a reader."""
    out: set[int] = set()
    edits = [e for p in plans for e in p.edits]
    folds = {(name, id(scope)): (name, scope) for p in plans for name, scope in p.folds}
    for name, scope in folds.values():
        if scope.kind != "function":
            continue
        bindings = scope.bindings.get(name, [])
        if len(bindings) != 1 or bindings[0].value is None or bindings[0].index is not None:
            continue
        value = bindings[0].value
        line = _sole_assignment(parents, value)
        if line is None:
            continue
        if not pure(ctx, value) or any(contains(e.node, line) for e in edits):
            continue
        total = _count_names(scope.node, name)
        inside = sum(_count_names(e.node, name) for e in edits if not _nested(e, edits))
        added = sum(_count_names(n, name) for k, n in rendered.items() if not _nested_id(k, edits))
        if total - 1 - inside + added == 0:
            body = parents.get(id(line))
            if isinstance(body, cst.IndentedBlock) and len(body.body) > 1:
                out.add(id(line))
    return out


def _sole_assignment(
    parents: dict[int, cst.CSTNode], value: cst.BaseExpression
) -> cst.SimpleStatementLine | None:
    """The line ``name = value`` when it is a plain assignment alone on its line, with no
    comment to lose; else None."""
    assign = parents.get(id(value))
    line = parents.get(id(assign))
    if (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, cst.Name)
        and isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and not line.trailing_whitespace.comment
        and not any(e.comment for e in line.leading_lines)
    ):
        return line
    return None


def _nested(edit: Edit, edits: Sequence[Edit]) -> bool:
    return any(o is not edit and contains(o.node, edit.node) for o in edits)


def _nested_id(key: int, edits: Sequence[Edit]) -> bool:
    own = [e for e in edits if id(e.node) == key]
    return bool(own) and _nested(own[0], edits)


def _count_names(node: cst.CSTNode, name: str) -> int:
    count = 0
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name) and n.value == name:
            count += 1
        if isinstance(n, cst.Attribute):
            stack.append(n.value)  # x.name is not a use of name
            continue
        stack.extend(child_nodes(n))
    return count


def add_import(module: cst.Module, line: str) -> cst.Module:
    """``line`` after the module's leading imports, or after its docstring and
    ``__future__`` imports when it has none."""
    stmt = cst.parse_statement(line + "\n")
    body = list(module.body)
    last = -1
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(
            isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body
        ):
            last = i
        elif i == 0 and isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr):
            continue  # the docstring
        elif last >= 0:
            break
    if last >= 0:
        body.insert(last + 1, stmt)
        return module.with_changes(body=body)
    first = 1 if body and _is_docstring(body[0]) else 0
    while first < len(body) and _is_future_import(body[first]):
        first += 1
    body.insert(first, stmt)
    return module.with_changes(body=body)


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(b, cst.ImportFrom)
        and b.module is not None
        and getattr(b.module, "value", "") == "__future__"
        for b in stmt.body
    )


def splice_plans(
    display: str,
    module: cst.Module,
    ctx: Context,
    namer: Namer,
    parents: dict[int, cst.CSTNode],
    chosen: list[tuple[Plan, Rendered]],
) -> tuple[str, cst.Module] | None:
    """The file's text and tree with ``chosen`` spliced in (dead assignments removed, the
    import added); None when the result does not compile.  The tree shares ``module``'s
    nodes, and may hold one twice (see ``parsing.reparse_changed``)."""
    mapping: Rendered = {}
    for _plan, rendered in chosen:
        mapping.update(rendered)
    plans = [plan for plan, _r in chosen]
    remove = dead_statements(ctx, parents, plans, mapping)
    binding = bind_moved(module, parents, plans, remove)
    if binding.names:  # long operands copied from a statement that stays: name them once
        for plan in plans:
            again = render_plan(plan, module, namer, binding.names)
            if again is None:
                return None
            mapping.update(again)
        mapping.update(binding.uses)
    new_module = replace_in(module, parents, Replace(mapping, remove, parents, binding.inserts))
    if any(plan.uses_import for plan in plans) and namer.import_line:
        new_module = add_import(new_module, namer.import_line)
    code = new_module.code
    try:
        compile(code, display, "exec")
    except SyntaxError:
        return None
    return code, new_module
