"""Operations of an objective that read the spread of a batch (static side, no TF import).

A steered run trains on copies of one example (``repro_program.steered``): its batch has no
spread, so a standard deviation, a variance or a value minus its batch mean is exactly 0 there,
whatever the program's own batches hold.  A break that starts at an operation reading such a
statistic shows what copies do, not what the program does (a loss divided by the batch's
``reduce_std`` breaks on copies and never on 4096 distinct rows).
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..analysis.slicing.contract import walk
from .preconditions import axis_argument, literal_axes

# reductions that measure a spread: 0 over a batch of copies
_DISPERSIONS = frozenset(
    name for name, op in ops.REGISTRY.items() if op.reduction in ("std", "variance", "moments")
)
_MEANS = frozenset(name for name, op in ops.REGISTRY.items() if op.reduction == "mean")


def reads_batch_spread(tree: Any) -> bool:
    """Does the tree compute a spread over the batch axis: a dispersion reduced over axis 0
    (or over every axis), or a value minus its own mean over that axis?"""
    for node in walk(tree):
        if node.get("k") == "call" and node.get("op") in _DISPERSIONS and _over_batch(node):
            return True
        if node.get("k") == "bin" and node.get("op") == "-" and _centred(node):
            return True
    return False


def _centred(node: dict[str, Any]) -> bool:
    """``x - reduce_mean(x, axis=0)``: 0 in every entry when the rows are copies."""
    mean = node.get("r")
    if not (isinstance(mean, dict) and mean.get("k") == "call" and mean.get("op") in _MEANS):
        return False
    args = mean.get("args") or []
    return bool(args) and args[0] == node.get("l") and _over_batch(mean)


def _over_batch(call: dict[str, Any]) -> bool:
    """The reduction's axes include the batch axis 0 (no axis: every axis, 0 among them)."""
    axis = axis_argument(call)
    if axis is None or (isinstance(axis, dict) and axis.get("k") == "none"):
        return True
    return 0 in (literal_axes(axis) or [])
