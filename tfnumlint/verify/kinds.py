"""The kind of value a probe input holds, read from how the probe's code uses it.

A witness or a generic trial that gives an input a value of the wrong kind (a binary label of
2.1, a class index of 0.5) describes a point no program reaches.  The kind comes from the
structure of the flagged statement, never from a name:

- **binary**: a label of a binary cross-entropy (the input weighs one term and ``1 - input``
  the other: ``y * log(p) + (1 - y) * log(1 - p)``), or a value a ``one_hot`` produced.  It
  stays in {0, 1}.
- **index**: the indices of a ``one_hot``: whole and non-negative.
- **whole**: a non-negative count (an input a counting op produced).

Plain Python over the probe's JSON trees: the verdict side reads it too.
"""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..analysis.slicing.contract import walk

# ops taking a log entry by entry (log, log1p, xlogy, log_sigmoid): a binary xent's terms
_ELEMENTWISE_LOGS = ops.ops_with(lambda op: op.log_space and not op.row_coupled)

BINARY = "binary"
INDEX = "index"
WHOLE = "whole"
CLASSES = "classes"  # a class distribution: one row of a softmax cross-entropy's target
INDICES = "indices"  # whole numbers in [0, depth): the indices of a one-hot
BINARY_SET = (0.0, 1.0)
INDEX_VALUES = (0.0, 1.0, 2.0)  # class indices a generic trial or a replacement may take
WHOLE_VALUES = (1.0, 2.0, 3.0)  # an ordinary count
COUNT_PRODUCERS = frozenset({"count_nonzero", "bincount", "size", "shape", "num_elements"})


# the probe last asked about and its kinds: the witness search asks once per candidate point
# (thousands of times on a large slice), and the worker verifies one probe at a time
_LAST: list[Any] = [None, None]


def input_kinds(probe: dict[str, Any]) -> dict[str, str]:
    """Input name -> its kind, for the inputs whose kind the code shows (see the docstring).
    The verifier never edits a probe, so the kinds of the same probe object are reused."""
    if _LAST[0] is probe:
        return dict(_LAST[1])
    out = _input_kinds(probe)
    _LAST[:] = [probe, out]
    return dict(out)


def _input_kinds(probe: dict[str, Any]) -> dict[str, str]:
    trees = [probe.get("target"), probe.get("loss")]
    out: dict[str, str] = {}
    for spec in probe.get("inputs") or []:
        producer = str(spec.get("producer") or "")
        if producer == "one_hot" or spec.get("one_hot"):
            out[str(spec["name"])] = BINARY
        elif producer in COUNT_PRODUCERS:
            out[str(spec["name"])] = WHOLE
    for name in _one_hot_indices(trees):
        out.setdefault(name, INDEX)
    for name in _binary_labels(trees):
        out.setdefault(name, BINARY)
    return out


def allowed(kind: str | None, v: float) -> bool:
    """Whether ``v`` is a value of this kind (any value when the kind is not known)."""
    if kind == BINARY:
        return v in BINARY_SET
    if kind in (INDEX, WHOLE):
        return math.isfinite(v) and v >= 0 and v == math.floor(v)
    return True


def values_of(kind: str) -> tuple[float, ...]:
    """The ordinary values of a kind, for replacements and generic trials."""
    return {BINARY: BINARY_SET, INDEX: INDEX_VALUES, WHOLE: WHOLE_VALUES}[kind]


def wrong_kind(probe: dict[str, Any], point: dict[str, float], names: list[str]) -> list[str]:
    """Why inputs of a point hold values their kind cannot take (a label of 2, the index 7 of
    a one_hot of depth 4)."""
    kinds = input_kinds(probe)
    out = []
    for name in names:
        kind, v = kinds.get(name), point.get(name)
        if kind is not None and isinstance(v, float) and not allowed(kind, v):
            out.append(f"`{name}` = {v:g} is not a value of a {_described(kind)}")
    return out + past_depth(probe, point, names)


def past_depth(probe: dict[str, Any], point: dict[str, Any], names: list[str]) -> list[str]:
    """Why indices of a one_hot at or past its depth are no witness: such an index selects no
    class (its row is all 0), which no index the program computes over that axis does."""
    depths = one_hot_depths([probe.get("target"), probe.get("loss")])
    out = []
    for name in names:
        v, depth = point.get(name), depths.get(name)
        if depth is not None and isinstance(v, (int, float)) and depth <= v < math.inf:
            out.append(
                f"needs `{name}` = {v:g}, past the depth {depth:g} of the one_hot it indexes "
                f"(a class index is a whole number in [0, {depth:g}); this one selects no class)"
            )
    return out


def _described(kind: str) -> str:
    return {
        BINARY: "binary label (0 or 1)",
        INDEX: "class index (a whole number >= 0)",
        WHOLE: "count (a whole number >= 0)",
    }[kind]


def _one_hot_indices(trees: list[Any]) -> dict[str, int | None]:
    """Inputs read directly as the indices of a ``one_hot``: name -> the smallest depth a
    literal gives such a ``one_hot`` (None when no literal does)."""
    out: dict[str, int | None] = {}
    for node in walk(trees):
        looks_up = node.get("op") == "embedding_lookup"  # (table, ids, vocabulary size)
        if node.get("k") != "call" or not (looks_up or node.get("op") == "one_hot"):
            continue
        args, kw = node.get("args") or [], node.get("kw") or {}
        args = args[1:] if looks_up else args
        first = args[0] if args else kw.get("indices")
        if not (isinstance(first, dict) and first.get("k") == "input"):
            continue
        depth = args[1] if len(args) > 1 else kw.get("depth")
        literal = depth.get("v") if isinstance(depth, dict) and depth.get("k") == "const" else None
        value, name = _number(literal), str(first["name"])
        known = out.get(name)
        if value is not None and value.is_integer() and value >= 1:
            out[name] = int(value) if known is None else min(known, int(value))
        else:
            out.setdefault(name, None)
    return out


def _binary_labels(trees: list[Any]) -> set[str]:
    """Inputs read both as ``y`` weighing a log term and as ``1 - y``: binary labels."""
    complemented = set()
    for node in walk(trees):
        left, right = node.get("l"), node.get("r")
        if node.get("k") == "bin" and node.get("op") == "-" and _is_one(left):
            complemented.add(_input_name(right))
    weighing = {name for name, _ in _weighing_a_log(trees)}
    return {n for n in weighing & complemented if n}


def _weighing_a_log(trees: Any) -> list[tuple[str, Any]]:
    """(input name, the factor it multiplies) for each product of an input and a term with
    an entry-by-entry log in it: ``y * log(p)``."""
    out = []
    for node in walk(trees):
        if node.get("k") != "bin" or node.get("op") != "*":
            continue
        left, right = node.get("l"), node.get("r")
        for a, b in ((left, right), (right, left)):
            name = _input_name(a)
            if name and _has_log(b):
                out.append((name, b))
    return out


def class_targets(trees: Any) -> set[str]:
    """Inputs weighing the log of a softmax output (``y * log(softmax(z))``): a cross-entropy's
    target, a distribution over the softmax's classes (one-hot rows, for labelled data).  Not a
    witness kind: any entry in [0, 1] is a value such a target takes."""
    out = {
        name
        for name, factor in _weighing_a_log(trees)
        if any(n.get("k") == "call" and n.get("op") == "softmax" for n in walk(factor))
    }
    return out - _binary_labels(trees)


def label_kinds(trees: Any) -> dict[str, str]:
    """Input name -> ``binary``, ``classes`` or ``indices`` for the labels a loss reads (see
    above; :func:`one_hot_depths` for the indices)."""
    out = {name: INDICES for name in one_hot_depths(trees)}
    out.update({name: CLASSES for name in class_targets(trees)})
    out.update({name: BINARY for name in _binary_labels(trees)})
    return out


def one_hot_depths(trees: Any) -> dict[str, int]:
    """Inputs read directly as the indices of ``tf.one_hot(x, depth)`` with a literal depth
    (a chosen action, a class id): name -> depth.  Their values are whole numbers in
    [0, depth), which a draw in [-1, 1] is not."""
    return {k: v for k, v in _one_hot_indices([trees]).items() if v is not None}


def looked_up(trees: Any) -> set[str]:
    """Inputs read directly as the ids of an Embedding's lookup (whole numbers below its
    row count, as :func:`one_hot_depths` gives them)."""
    return {
        _input_name((node.get("args") or [None, None])[1])
        for node in walk([trees])
        if node.get("k") == "call" and node.get("op") == "embedding_lookup"
    } - {""}


def _input_name(tree: Any) -> str:
    return str(tree["name"]) if isinstance(tree, dict) and tree.get("k") == "input" else ""


def _is_one(tree: Any) -> bool:
    return isinstance(tree, dict) and tree.get("k") == "const" and _number(tree.get("v")) == 1.0


def _number(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _has_log(tree: Any) -> bool:
    return any(n.get("k") == "call" and n.get("op") in _ELEMENTWISE_LOGS for n in walk(tree))
