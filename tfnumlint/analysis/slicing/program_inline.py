"""A program function inlined where the training rung's slice calls it (static side, no TF
import): ``weight_variable([784, 10])`` or ``xavier_init(size)`` read as what it returns, with
its parameters bound to the call's arguments, so the slice reads the weight's initializer at
the call.
"""

from __future__ import annotations

import libcst as cst

from ..context import Context
from ..module import Binding, Scope


class _Substituted(cst.CSTTransformer):
    """Names replaced by expressions (never an attribute's name or a keyword)."""

    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        self.values = values

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.values.get(original.value, updated)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def inlined(ctx: Context, call: cst.Call, scope: Scope, order: int) -> cst.BaseExpression | None:
    """``weight_variable([784, 10])`` of a straight-line module function: what it returns,
    with its parameters replaced by the call's arguments and its locals by their values, to
    read at the call (``tf.Variable(tf.truncated_normal([784, 10], stddev=0.1))``).  None when
    a name the function reads from its module means something else at the call."""
    from .tools import straight_line

    if not isinstance(call.func, cst.Name) or any(a.star for a in call.args):
        return None
    fn_scope = ctx.info.functions.get(call.func.value)
    fn = fn_scope.node if fn_scope is not None else None
    if not isinstance(fn, cst.FunctionDef) or not straight_line(fn):
        return None
    assert fn_scope is not None
    params = fn.params
    if params.posonly_params or params.kwonly_params:
        return None
    values: dict[str, cst.BaseExpression] = {}
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if len(positional) > len(params.params):
        return None
    for i, param in enumerate(params.params):
        name = param.name.value
        given = positional[i] if i < len(positional) else keywords.pop(name, param.default)
        if given is None:
            return None
        values[name] = given
    if keywords:
        return None
    returned: cst.BaseExpression | None = None
    for stmt in fn.body.body:
        assert isinstance(stmt, cst.SimpleStatementLine)  # straight-line: one small statement
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            target = small.targets[0].target
            if not isinstance(target, cst.Name):
                return None
            values[target.value] = small.value.visit(_Substituted(values))  # type: ignore[assignment]
        elif isinstance(small, cst.Return) and small.value is not None:
            returned = small.value.visit(_Substituted(values))  # type: ignore[assignment]
    if returned is None or not _reads_the_same_module_names(ctx, fn_scope, values, scope, order):
        return None
    return returned


class _FreeNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _reads_the_same_module_names(
    ctx: Context, fn_scope: Scope, own: dict[str, cst.BaseExpression], scope: Scope, order: int
) -> bool:
    """Does every name the function reads from its module mean the same at the call (no
    local of the caller, and no parameter, shadows it)?"""
    module = fn_scope.parent
    if module is None or module.kind != "module":
        return False
    fn = fn_scope.node
    assert isinstance(fn, cst.FunctionDef)
    seen = _FreeNames()
    fn.body.visit(seen)
    for name in seen.names - set(own):
        found = ctx.ev.lookup(name, scope, order)
        if isinstance(found, cst.Param) or (
            isinstance(found, Binding) and found.scope is not module
        ):
            return False
    return True
