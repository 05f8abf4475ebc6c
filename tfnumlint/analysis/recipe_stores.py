"""An array's item assignments in its recipe: ``setitem`` defs after the binding's own def.

``hist = rng.integers(1, V, (N, L))`` then ``hist[np.arange(L)[None, :] >= seen[:, None]] = 0``:
a read of ``hist`` after the assignment is ``{"k": "setitem", "x": <hist's def>, "idx": [mask],
"v": 0}``, a def of its own, so that every read after it shares one array.  Which changes are
replayed, and which leave the name with no recipe, is ``in_place.py``'s to say; this module
orders them against the read.  The index and the value are read where the statement is, so a
mask of the array itself (``x[x < 0] = 0``) sees the array before the change.
"""

from __future__ import annotations

from typing import Any, Protocol

import libcst as cst

from .feeds import Evaluator
from .in_place import Store, stores
from .module import Binding, Scope
from .recipe_tables import Tree, Unknown

Frames = Any  # recipe.Frames (the inlined calls around a read)


class Builder(Protocol):
    """What this module asks of :class:`.recipe.Builder` (which imports this module)."""

    ev: Evaluator
    defs: dict[str, Tree | None]

    def index(self, sl: Any, scope: Scope, order: int, frames: Frames) -> Tree: ...

    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames) -> Tree: ...


def applied(
    builder: Builder, name: str, binding: Binding, read: tuple[Scope, int] | None
) -> list[Store]:
    """The item assignments of ``binding``'s array that run before the read ``read`` (its
    scope and walk order).  Raises :class:`Unknown` when the array changes in a way the
    recipes do not replay, or when the read may run before or after a change (a function
    defined before it reads the array)."""
    found = stores(builder.ev.info, binding.scope, name)
    if found is None:
        raise Unknown("changed in place in a way the recipes do not replay")
    mine = [s for s in found if s.start >= binding.visible]
    if not mine:
        return []
    if read is None:
        raise Unknown("changed in place, read from an unknown place")
    scope, order = read
    if scope is not binding.scope and any(s.start >= order for s in mine):
        raise Unknown("changed in place after a function that reads it is defined")
    return [s for s in mine if s.end <= order]


def replayed(
    builder: Builder, key: str, binding: Binding, frames: Frames, changes: list[Store]
) -> Tree:
    """The binding's def ``key`` with ``changes`` applied, one def per change."""
    tree: Tree = {"k": "ref", "id": key}
    for i, change in enumerate(changes, 1):
        step = f"{key}+{i}"
        if step not in builder.defs:
            builder.defs[step] = None
            builder.defs[step] = _setitem(builder, tree, change, binding.scope, frames)
        elif builder.defs[step] is None:
            raise Unknown("a value defined by itself")
        tree = {"k": "ref", "id": step}
    return tree


def _setitem(builder: Builder, x: Tree, change: Store, scope: Scope, frames: Frames) -> Tree:
    at = change.start
    idx = [builder.index(e.slice, scope, at, frames) for e in change.target.slice]
    value = builder.tree(change.value, scope, at, frames)
    if change.op is not None:  # a[i] += v is a[i] = a[i] + v (NumPy buffers it alike)
        value = {"k": "bin", "op": change.op, "a": {"k": "index", "x": x, "idx": idx}, "b": value}
    return {"k": "setitem", "x": x, "idx": idx, "v": value}
