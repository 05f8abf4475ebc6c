"""Layers made in a generator or comprehension and unpacked into names (static side, no TF
import).

``wq, wk, wv = (Dense(h, use_bias=False) for _ in range(3))`` makes three layers, one per
name, as if each were written out: the item a name unpacks is the comprehension's element,
read with its loop variable replaced by the value ``range`` gives that item
(``a, b = [Dense(8 * (i + 1)) for i in range(2)]``: ``Dense(8 * (0 + 1))``, then
``Dense(8 * (1 + 1))``).  Only a comprehension of calls that makes as many items as the names
it is unpacked into, over ``range`` or a literal tuple of whole numbers the code fixes, with
one ``for`` and no ``if``, is read; anything else is None.
"""

from __future__ import annotations

import libcst as cst

from ..context import Context
from ..module import Binding
from ..names import descendants


class _Replaced(cst.CSTTransformer):
    """The loop variable replaced by a number (never an attribute's name or a keyword)."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return cst.Integer(str(self.value)) if original.value == self.name else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def _reads(element: cst.BaseExpression, name: str) -> bool:
    """Does ``element`` read the name (not as an attribute's name or a keyword)?"""
    skip: set[int] = set()
    for node in descendants(element):
        if isinstance(node, cst.Attribute):
            skip.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skip.add(id(node.keyword))
        elif isinstance(node, cst.Name) and node.value == name and id(node) not in skip:
            return True
    return False


def _numbers(ctx: Context, found: Binding, nodes: list[cst.BaseExpression]) -> list[int] | None:
    out = []
    for node in nodes:
        c = ctx.ev.value(node, found.scope, found.at).const
        if c is None or isinstance(c, bool) or not float(c).is_integer():
            return None
        out.append(int(c))
    return out


def _iterated(ctx: Context, found: Binding, iterated: cst.BaseExpression) -> list[int] | None:
    """The whole numbers a comprehension iterates: ``range(n)`` / ``range(start, stop)`` (the
    builtin, its bounds numbers the code fixes) or a literal tuple or list of them
    (``for w in (4, 8)``); None for anything else."""
    if isinstance(iterated, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in iterated.elements):
            return None
        return _numbers(ctx, found, [e.value for e in iterated.elements])
    if not (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "range"
        and ctx.ev.lookup("range", found.scope, found.at) is None  # the builtin's name
        and "range" not in ctx.info.defined
        and "range" not in ctx.info.imports.aliases
        and 1 <= len(iterated.args) <= 2
        and all(a.keyword is None and not a.star for a in iterated.args)
    ):
        return None
    bounds = _numbers(ctx, found, [a.value for a in iterated.args])
    return None if bounds is None else list(range(*bounds))


def _targets(ctx: Context, found: Binding, element: cst.BaseExpression) -> int | None:
    """How many names (or attributes) the assignment of ``found`` unpacks its value into:
    its statement is the one the comprehension's element (a call) sits in."""
    site = next((s for s in ctx.info.calls if s.node is element), None)
    statement = site.statement if site is not None else None
    if not (isinstance(statement, cst.Assign) and statement.value is found.value):
        return None
    if len(statement.targets) != 1:
        return None
    target = statement.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or any(
        isinstance(e, cst.StarredElement) for e in target.elements
    ):
        return None
    return len(target.elements)


def repeated_item(ctx: Context, found: Binding) -> cst.BaseExpression | None:
    """The call a name unpacks from a generator or list comprehension over ``range``
    (``wq, wk, wv = (Dense(h) for _ in range(3))``): the element, its loop variable replaced
    by the item's number.  None for any other binding."""
    value, index = found.value, found.index
    if index is None or found.nested is not None:
        return None
    if not isinstance(value, (cst.GeneratorExp, cst.ListComp)):
        return None
    comp = value.for_in
    if comp.inner_for_in is not None or comp.ifs or comp.asynchronous is not None:
        return None
    if not isinstance(comp.target, cst.Name) or not isinstance(value.elt, cst.Call):
        return None  # a layer (or another object) made by a call
    numbers = _iterated(ctx, found, comp.iter)
    if numbers is None or _targets(ctx, found, value.elt) != len(numbers):
        return None
    if index >= len(numbers):
        return None
    element, name = value.elt, comp.target.value
    if not _reads(element, name):
        return element  # each item a new object made by the same code
    nested = (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)
    if any(isinstance(n, nested) for n in descendants(element)) or numbers[index] < 0:
        return None  # a name of its own might shadow the loop variable
    # kept with the module's facts: the evaluator's memo is keyed by the node's id
    made: dict[tuple[int, int], cst.BaseExpression] = ctx.fact("repeated_items", dict)
    key = (id(value), index)
    if key not in made:
        replaced = element.visit(_Replaced(name, numbers[index]))
        if not isinstance(replaced, cst.Call):
            return None
        made[key] = replaced
    return made[key]
