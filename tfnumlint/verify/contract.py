"""The probe contract shared by the static slicer and the TensorFlow tracer.

The slicer keeps only these ops and binds their arguments to the canonical parameter names
of :mod:`.signatures`; the tracer accepts nothing else.  Plain data, no TensorFlow import.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any

from .. import ops
from .signatures import IGNORED, PARAMS

# the ops of the registry that have a probe signature (a live view: a registered op joins)
ALLOWED_OPS: Set[str] = ops.TRACEABLE
KEEP_KWARGS = frozenset(n for op in ALLOWED_OPS for n in PARAMS[op] if n not in IGNORED)
# Parameters that shape the computation: the slice must see their value (a literal, or a name
# bound to one); anything else is reported, never guessed.
STRUCTURAL = frozenset(
    "axis keepdims ord axes perm shape multiples depth transpose_a transpose_b".split()
)

# Structural parameters a probe may bind to a stand-in when the code's value is not a literal
# (`axis=self.axis`, `depth=self.num_classes`): (the stand-in, others tried before confirming).
# Every probe input is filled with one value per point, so a reduction over any valid axis
# gives the same per-entry values: -1 is valid for every rank.  A class count changes what a
# one-hot row holds, so a confirmation or refutation must hold for each depth tried.  A flag
# (`keepdims=keepdims`, `transpose_a=adjoint`) changes a result's shape, so both ways are tried.
STAND_INS: dict[str, tuple[int | bool, tuple[int | bool, ...]]] = {
    "axis": (-1, ()),
    "axes": (-1, ()),
    "depth": (4, (2, 16)),
    "keepdims": (False, (True,)),
    "transpose_a": (False, (True,)),
    "transpose_b": (False, (True,)),
}
# `shape=` of a reshape: flatten each point's value, when nothing above depends on its rank
RESHAPE_STAND_IN = [-1]


def walk(tree: Any) -> Iterator[dict]:
    """Every dict node of a probe tree, depth first (static: the slicer, the reproducers and
    the worker all read trees with it)."""
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from walk(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from walk(item)
