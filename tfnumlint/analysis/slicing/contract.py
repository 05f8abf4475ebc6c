"""The probe contract shared by the static slicer and the TensorFlow tracer.

The slicer keeps only these ops and binds their arguments to the canonical parameter names
of :mod:`.signatures`; the tracer accepts nothing else.  Plain data, no TensorFlow import.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any

from ... import ops
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


# The Python operators a probe traces as a "bin" node (``//``, ``%`` and the bit operators
# are not traced: the slicer leaves them to a free input)
BINARY_OPERATORS = frozenset({"+", "-", "*", "/", "**", "@"})

# The probe tree as the slicer writes it and the tracer (``trace.Converter``) reads it: each
# node kind and the keys it may carry ("line"/"col" place it in the user's file, "as" names
# the user's spelling, "assumed" marks a stand-in).  The operators a "bin" node may hold are
# :data:`BINARY_OPERATORS`.  A hand-built probe is checked against
# this (``probe_errors``), so a test cannot go on building a shape production no longer uses.
NODE_KEYS: dict[str, frozenset[str]] = {
    "input": frozenset({"k", "name"}),
    "const": frozenset({"k", "v", "assumed"}),
    "bool": frozenset({"k", "v"}),
    "str": frozenset({"k", "v"}),
    "dtype": frozenset({"k", "v", "assumed"}),
    "tuple": frozenset({"k", "items", "assumed"}),
    "neg": frozenset({"k", "x"}),
    "src": frozenset({"k", "x"}),
    "cmp": frozenset({"k", "op", "l", "r", "line", "col"}),
    "bin": frozenset({"k", "op", "l", "r", "line", "col", "as"}),
    "call": frozenset({"k", "op", "args", "kw", "line", "col", "as"}),
}
# A free input's spec: what provenance knows of its value, and where it comes from
# (``element``: the item of the tuple its source call returns, `_, i = tf.math.top_k(x)`).
INPUT_KEYS = frozenset(
    {"name", "producer", "lo", "hi", "prob", "role", "origin", "source", "owner", "drive",
     "drive_why", "batch_of", "row", "declared", "masked_by", "of", "reads", "prob_by_use",
     "stopped", "exponent", "trained", "element", "constant"}
)  # fmt: skip


def probe_errors(probe: dict[str, Any]) -> list[str]:
    """What in an expression probe's trees and input specs the tracer would not read: an
    unknown node kind, a key no node of its kind carries, a call of an op outside the
    contract, an input used but not declared, or an unknown key of an input spec."""
    errors: list[str] = []
    declared = {spec.get("name") for spec in probe.get("inputs") or []}
    for spec in probe.get("inputs") or []:
        extra = set(spec) - INPUT_KEYS
        if extra:
            errors.append(f"input {spec.get('name')!r}: unknown keys {sorted(extra)}")
    for part in ("target", "loss"):
        for node in walk(probe.get(part)):
            if "k" not in node:
                continue  # plain data on a node: an ``assumed`` record, the keywords
            kind = node["k"]
            if kind not in NODE_KEYS:
                errors.append(f"{part}: unknown node kind {kind!r}")
                continue
            extra = set(node) - NODE_KEYS[kind]
            if extra:
                errors.append(f"{part}: {kind} node with unknown keys {sorted(extra)}")
            if kind == "call" and node.get("op") not in ALLOWED_OPS:
                errors.append(f"{part}: call of {node.get('op')!r}, outside the contract")
            if kind == "input" and node.get("name") not in declared:
                errors.append(f"{part}: input {node.get('name')!r} is not declared")
    return errors
