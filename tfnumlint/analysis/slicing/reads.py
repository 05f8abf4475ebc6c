"""What a value the slice cuts is computed from: the names an untraced call, an element or an
item of a call's result reads, a few assignments back, in the caller's names inside an inlined
helper.  The verifier reads them so that a witness does not set two values the code computes
from one source independently (``related.related_inputs_reason``).  Mixed into
:class:`~.slicer.Slicer`; static, no TensorFlow."""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..context import Context
from ..module import Binding, Scope
from ..names import descendants
from ..stopped import constant_made
from .tools import MAX_READS, SHAPE_ATTRS, Argument, attribute_chain, names_read
from .uses import SHAPE_CALLS


class ReadsOfCuts:
    """The reads of cut values, mixed into :class:`~.slicer.Slicer` (before ``SlicesCalls``)."""

    ctx: Context
    _args: dict[int, Argument]

    # the slicer's own, which the reads go back to
    def origin(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        raise NotImplementedError

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None:
        raise NotImplementedError

    def _source(self, node: cst.CSTNode) -> str:
        raise NotImplementedError

    def _cut_origin(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        """The origin of a value the slice cuts, with the values an untraced call or element
        reads: a witness must not set it apart from them (``related.related_inputs_reason``)."""
        origin = self.origin(node, scope, order)
        if self._args and origin["origin"] == "other":
            # cut inside an inlined helper: computed from what it reads, as an untraced call
            origin = {"origin": "call", "source": self._source(node)}
        if origin["origin"] in ("call", "subscript") and not attribute_chain(node):
            reads = self._caller_reads(self._reads(node, scope, order), scope, order)
            if reads:
                origin = {**origin, "reads": reads}
            made = constant_made(self.ctx, node, scope, order)  # no gradient reaches it
            if made:
                origin = {**origin, "constant": made}
        return origin

    def _item_origin(self, found: Binding | cst.Param | None, origin: dict[str, Any]) -> dict:
        """An item of a cut call's result (``a, fa = pick(c, (x, f), (a, fa))``, a loop body's
        select) reads what the call reads, so two items are tied by their common source.  The
        names the assignment rebinds are left out: by then they are the items themselves, not
        the values the call read."""
        if (
            not isinstance(found, Binding)
            or found.index is None
            or found.value is None
            or origin.get("origin") != "call"
            or "reads" in origin
        ):
            return origin
        value = found.value
        rebound = {n for n, bs in found.scope.bindings.items() if any(b.value is value for b in bs)}
        reads = self._caller_reads(self._item_reads(value, found), found.scope, found.at)
        kept = [r for r in reads if r.partition(".")[0] not in rebound]
        return {**origin, "reads": kept} if kept else origin

    def _item_reads(self, call: cst.BaseExpression, found: Binding) -> list[str]:
        """What item ``found.index`` of ``call``'s result reads.  A call given literal
        sequences as long as the unpacking (``cast([w, h], dt)``, ``select(c, (a, b), (b, a))``)
        is read item by item: item i reads the i-th item of each and the other arguments, so
        items of unrelated values stay apart while a shared selector ties them; the items of
        any other call read all it reads."""
        scope, order, index = found.scope, found.at, found.index
        arity = sum(
            1
            for bs in scope.bindings.values()
            for b in bs
            if b.value is call and b.index is not None
        )
        if not isinstance(call, cst.Call) or index is None:
            return self._reads(call, scope, order)
        parts: list[cst.BaseExpression] = []
        itemwise = False
        for arg in call.args:
            items = arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else None
            if items and len(items) == arity and all(isinstance(e, cst.Element) for e in items):
                parts.append(items[index].value)
                itemwise = True
            else:
                parts.append(arg.value)
        if not itemwise:
            return self._reads(call, scope, order)
        if isinstance(call.func, cst.Attribute) and not attribute_chain(call.func):
            parts.append(call.func.value)  # f(x).g(...): reads what f(x) reads
        out = {r for part in parts for r in self._reads(part, scope, order)}
        receiver = self._receiver(call, scope, order)
        return sorted(out | ({receiver} if receiver else set()))

    def _reads(self, node: cst.BaseExpression, scope: Scope, order: int) -> list[str]:
        """The values an untraced expression reads (:func:`names_read`, and the objects whose
        methods it calls: ``area(b.get())`` reads ``b``), and those its local names are
        computed from, a few assignments back: ``f(z)`` with ``z = 2 * y`` reads ``y`` too."""
        found: set[str] = set()
        todo = [(node, scope, order, 0)]
        while todo and len(found) < MAX_READS:
            expr, where, at, depth = todo.pop()
            for name in names_read(expr, SHAPE_CALLS) + self._receivers(expr, where, at):
                if name in found:
                    continue
                found.add(name)
                binding = self.lookup(name, where, at) if "." not in name else None
                if isinstance(binding, Binding) and binding.value is not None and depth < 4:
                    todo.append((binding.value, binding.scope, binding.at, depth + 1))
        return sorted(found)

    def _receivers(self, node: cst.BaseExpression, scope: Scope, order: int) -> list[str]:
        """The local objects whose methods ``node`` calls (``b.get()``): a method's result is
        computed from its object.  A module (an import) is no object of the code, and the
        receiver of the enclosing method is not one either: its attributes are the parameters
        of the object, each its own source."""
        found = (self._receiver(sub, scope, order) for sub in descendants(node))
        return [name for name in found if name is not None]

    def _receiver(self, node: cst.CSTNode, scope: Scope, order: int) -> str | None:
        """The local object whose method the call ``node`` is (``b`` of ``b.get()``), if any."""
        if not (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.attr.value not in SHAPE_ATTRS
        ):
            return None
        name = node.func.value.value
        found = self.lookup(name, scope, order)
        if isinstance(found, cst.Param) and not _own_receiver(name, found, scope):
            return name
        if (
            isinstance(found, Binding)
            and found.value is not None
            and found.scope.kind == "function"  # a value the function computes
        ):
            return name
        return None

    def _caller_reads(self, reads: list[str], scope: Scope, order: int) -> list[str]:
        """Reads of a value cut inside an inlined helper, in the caller's names: a parameter
        stands for what its argument reads (its dtype or shape only for nothing)."""
        if not self._args:
            return reads
        out: set[str] = set()
        for name in reads:
            head, _, attr = name.partition(".")
            found = self.ctx.ev.lookup(head, scope, order)
            arg = self._args.get(id(found)) if isinstance(found, cst.Param) else None
            if arg is None:
                out.add(name)
            elif attr not in SHAPE_ATTRS:
                out.update(
                    self._caller_reads(
                        self._reads(arg.value, arg.scope, arg.order), arg.scope, arg.order
                    )
                )
        return sorted(out)


def _own_receiver(name: str, param: cst.Param, scope: Scope | None) -> bool:
    """Is ``param`` the receiver (``self``, whatever its name) of the method that declares it?"""
    while scope is not None:
        if scope.params.get(name) is param:
            return scope.self_name == name
        scope = scope.parent
    return False
