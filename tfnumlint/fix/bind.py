"""Name a long subexpression once instead of copying it.

A rewrite often evaluates an operand of an earlier statement at the hit (``log(y)`` with
``y = softmax(matmul(x, W) + b)`` becomes ``log_softmax(matmul(x, W) + b)``).  When that
earlier statement stays (``y`` is still read, by an accuracy), the copy would compute the
logits twice and make the two drift apart under later edits.  So the operand is bound to a
fresh name in a new assignment just before its statement, the statement reads the name, and
the rewrite reads it too.  Only within one block (the name is then visible at the rewrite,
which comes later in it); short operands (a name, an attribute) are copied as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.module import contains
from ..analysis.names import children as child_nodes
from .ir import Plan, Src, walk

BASE_NAME = "logits"  # what a moved pre-activation operand is, in every rewrite that moves one
LONG = 12  # characters: shorter operands are copied


@dataclass
class Binding:
    """The fresh names of moved operands, and the assignments to insert before statements."""

    names: dict[int, str] = field(default_factory=dict)  # id(operand node) -> name
    inserts: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)  # id(stmt) ->
    uses: dict[int, cst.CSTNode] = field(default_factory=dict)  # id(operand) -> its Name


def _statement(parents: dict[int, cst.CSTNode], node: cst.CSTNode) -> cst.CSTNode | None:
    cur: cst.CSTNode | None = node
    while cur is not None and not isinstance(cur, cst.SimpleStatementLine):
        cur = parents.get(id(cur))
    return cur


def _names(module: cst.Module) -> set[str]:
    out = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        stack.extend(child_nodes(n))
    return out


def _fresh(taken: set[str]) -> str:
    name, k = BASE_NAME, 2
    while name in taken:
        name, k = f"{BASE_NAME}_{k}", k + 1
    taken.add(name)
    return name


def _long(module: cst.Module, node: cst.CSTNode) -> bool:
    if isinstance(node, (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString)):
        return False
    return len(module.code_for_node(node).strip()) >= LONG


def bind_moved(
    module: cst.Module,
    parents: dict[int, cst.CSTNode],
    plans: Sequence[Plan],
    remove: set[int],
) -> Binding:
    """The bindings ``plans`` need: each long operand moved from a statement that stays, in
    the same block as the rewrite."""
    out = Binding()
    taken = _names(module)
    for plan in plans:
        for edit in plan.edits:
            target = _statement(parents, edit.node)
            for ir in walk(edit.new):
                if not isinstance(ir, Src) or id(ir.node) in out.names:
                    continue
                node = ir.node
                if contains(edit.node, node) or not _long(module, node):
                    continue  # evaluated where it was written, or short: no copy to name
                stmt = _statement(parents, node)
                if stmt is None or target is None or id(stmt) in remove:
                    continue  # the statement goes: the operand is written once anyway
                if parents.get(id(stmt)) is not parents.get(id(target)) or stmt is target:
                    continue  # another block: the name might not be visible at the rewrite
                if any(contains(e.node, stmt) for p in plans for e in p.edits):
                    continue
                name = _fresh(taken)
                code = module.code_for_node(node).strip()
                out.names[id(node)] = name
                out.uses[id(node)] = cst.Name(name)
                assign = cst.parse_statement(f"{name} = {code}\n")
                out.inserts.setdefault(id(stmt), []).append(assign)
    return out
