"""Resolve TensorFlow/Keras names from a module's own import statements.

libcst's QualifiedNameProvider costs about 12x the parse on large trees, so imports are
resolved by hand: every import form binds a local name to a dotted path, and a call's
callee is resolved by walking its attribute chain back to such a name.  The dotted path is
then normalised (TF1 / compat / keras.src spellings collapse onto one form) and looked up
among the spellings of the op registry (:mod:`tfnumlint.ops`) to get a canonical operation
name such as ``"log"`` or ``"sigmoid"``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import libcst as cst

from ..ops import SPELLINGS

# Prefix rewrites, applied in order, that collapse every spelling onto ``tf.`` / ``keras.``.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.compat.v1.keras.", "keras."),
    ("tensorflow.compat.v2.keras.", "keras."),
    ("tensorflow.compat.v1.", "tf."),
    ("tensorflow.compat.v2.", "tf."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tensorflow.python.ops.gen_math_ops.", "tf.math."),
    ("tensorflow.python.ops.math_ops.", "tf.math."),
    ("tensorflow.python.ops.special_math_ops.", "tf.math."),
    ("tensorflow.python.ops.gen_nn_ops.", "tf.nn."),
    ("tensorflow.python.ops.nn_ops.", "tf.nn."),
    ("tensorflow.python.ops.nn_impl.", "tf.nn."),
    ("tensorflow.python.ops.nn.", "tf.nn."),
    ("tensorflow.python.ops.clip_ops.", "tf."),
    ("tensorflow.python.ops.array_ops.", "tf."),
    ("tensorflow.python.ops.gen_array_ops.", "tf."),
    ("tensorflow.python.ops.linalg_ops.", "tf.linalg."),
    ("tensorflow.python.ops.variables.", "tf."),
    ("tensorflow.python.ops.", "tf."),
    ("tensorflow.python.framework.constant_op.", "tf."),
    ("tensorflow.", "tf."),
    ("tf_keras.", "keras."),
    ("keras.src.ops.numpy.", "keras.ops."),
    ("keras.src.ops.nn.", "keras.ops."),
    ("keras.src.ops.math.", "keras.ops."),
    ("keras.src.", "keras."),
    ("keras.api.", "keras."),
    ("keras._tf_keras.keras.", "keras."),
)

_ROOTS = ("tensorflow", "keras", "tf_keras")


def normalise(dotted: str) -> str:
    """Collapse a fully qualified TF/Keras path onto the ``tf.``/``keras.`` spelling."""
    dotted += "."
    for old, new in _PREFIXES:
        if dotted.startswith(old):
            dotted = new + dotted[len(old) :]
            break
    else:
        if dotted == "tensorflow.":
            dotted = "tf."
    return dotted[:-1]


# normalised name -> canonical op: the op registry's spellings (and the optimizers'), one
# live dict, so an op registered later is recognised at once
OPS: dict[str, str] = SPELLINGS

# String activations / losses as Keras accepts them.
PROBABILITY_LOSSES = frozenset(
    {
        "binary_crossentropy",
        "categorical_crossentropy",
        "sparse_categorical_crossentropy",
        "bce",
        "BinaryCrossentropy",
        "CategoricalCrossentropy",
        "SparseCategoricalCrossentropy",
    }
)


class ImportMap:
    """Local name -> dotted module path, from every import statement in a module."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = dotted_name(alias.name)
            if not dotted:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = dotted
            else:
                root = dotted.split(".")[0]
                self.aliases[root] = root

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted_name(node.module)
        if not base:
            return
        for name, local in imported_names(node.names):
            self.aliases[local] = f"{base}.{name}"

    def add_module_alias(self, node: cst.Assign) -> None:
        """``tf1 = tf.compat.v1`` at module level: ``tf1`` names that module from then on,
        as an ``import tensorflow.compat.v1 as tf1`` would."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        if not isinstance(node.value, cst.Attribute):
            return
        parts: list[str] = []
        value: cst.BaseExpression = node.value
        while isinstance(value, cst.Attribute):
            parts.append(value.attr.value)
            value = value.value
        if not isinstance(value, cst.Name) or value.value not in self.aliases:
            return
        base = self.aliases[value.value]
        if base.split(".")[0] in _ROOTS:
            self.aliases[node.targets[0].target.value] = ".".join([base, *reversed(parts)])

    @property
    def uses_tensorflow(self) -> bool:
        return any(v.split(".")[0] in _ROOTS for v in self.aliases.values())

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Dotted, normalised path of a Name/Attribute chain rooted at a TF/Keras import."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        base = self.aliases.get(node.value)
        if base is None or base.split(".")[0] not in _ROOTS:
            return None
        parts.append(base)
        return normalise(".".join(reversed(parts)))

    def path(self, node: cst.BaseExpression) -> str:
        """Dotted path of a Name/Attribute chain through the imports of any package (`np.pi`
        -> `numpy.pi`, `special_math.ndtr` -> its module's path); "" when its root is not an
        import (a local, `self`, a call)."""
        dotted = dotted_name(node)
        root, _, rest = dotted.partition(".")
        base = self.aliases.get(root) if root else None
        if base is None:
            return ""
        return f"{base}.{rest}" if rest else base

    def op(self, func: cst.BaseExpression) -> str | None:
        """Canonical op for a callee expression, or None when it is not a known TF/Keras op."""
        name = self.resolve(func)
        return OPS.get(name) if name else None


def imported_names(aliases) -> list[tuple[str, str]]:
    """(imported name, local name) of each alias of a `from m import a, b as c`."""
    out = []
    for alias in aliases:
        name = dotted_name(alias.name)
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        if name and local:
            out.append((name, local))
    return out


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node and everything below it, without a libcst visitor (no metadata, no copies)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` in the same order, read from the fields: libcst's property rebuilds
    the node (a visitor pass with validation) on every call.  Each node type gets a reader
    compiled once from the fields its ``_visit_and_replace_children`` visits."""
    read = _READERS.get(type(node))
    if read is None:
        read = _READERS[type(node)] = _reader(type(node))
    return read(node)


_NODE_TYPES: dict[type, bool] = {}


def _is_node(tp: type) -> bool:
    """isinstance(x, cst.CSTNode) goes through ABC machinery; cache it per type."""
    known = _NODE_TYPES.get(tp)
    if known is None:
        known = _NODE_TYPES[tp] = issubclass(tp, cst.CSTNode)
    return known


_READERS: dict[type, Callable[[cst.CSTNode], list[cst.CSTNode]]] = {}
_VISITED_FIELD = re.compile(r"\bvisit_(\w+)\(\s*self,\s*\"(\w+)\",\s*self\.(\w+),")
_SEQUENCES = frozenset({"sequence", "iterable", "body_sequence", "body_iterable"})


def _reader(tp: type) -> Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """A function returning a node's children of type ``tp``: its fields in libcst's visiting
    order, a sequence's elements, an optional or sentinel field only when it holds a node.
    When the visiting code is not the plain one-call-per-field form, libcst's property."""
    fields = _child_fields(tp)
    if fields is None:
        return lambda node: list(node.children)
    lines = ["def read(n):", "    out = []"]
    for kind, name in fields:
        if kind in _SEQUENCES:  # libcst validates a sequence field: nodes only
            lines.append(f"    out += n.{name}")
        elif kind == "required":
            lines.append(f"    out.append(n.{name})")
        else:  # optional (None when absent), sentinel (MaybeSentinel when absent)
            lines += [f"    v = n.{name}", "    if is_node(type(v)):", "        out.append(v)"]
    lines.append("    return out")
    space: dict[str, Any] = {"is_node": _is_node}
    exec("\n".join(lines), space)  # code built from libcst's own field names
    return space["read"]


def _child_fields(tp: type) -> list[tuple[str, str]] | None:
    """(visit kind, field) of each field libcst's ``_visit_and_replace_children`` visits, in its
    order; None when its code is not the plain one-call-per-field form."""
    code = _method_source(getattr(tp, "_visit_and_replace_children", None))
    if code is None:
        return None
    found = _VISITED_FIELD.findall(code)
    if any(field != attr or not field.isidentifier() for _, field, attr in found) or re.search(
        r"\b(if|for|while)\b", code
    ):
        return None
    if code.count("visit_") - code.count("def _visit_and_replace_children") != len(found):
        return None
    return [(kind, field) for kind, field, _ in found]


def _method_source(fn: object) -> str | None:
    """The source of a method, cut from its file by indentation.  ``inspect.getsource``
    tokenizes the file again for every method it is asked for: 30 ms of a one-file run."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    lines = _file_lines(code.co_filename)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    indent = _indent(lines[start])
    end = start
    while end < len(lines) and not lines[end].rstrip().endswith(":"):
        end += 1  # decorators and the signature, to the colon that opens the body
    end += 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return "\n".join(lines[start:end])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


@functools.cache
def _file_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except OSError:
        return []


def dotted_name(node: cst.BaseExpression | None) -> str:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""


def tokens(name: str) -> list[str]:
    """The words of an identifier or dotted name: `self.logVar_scale` -> self, log, Var, scale."""
    return [t for t in re.split(r"[\W_]+|(?<=[a-z])(?=[A-Z])", name) if t]


def literal_axes(node: cst.BaseExpression | None) -> list[int]:
    """The axes a literal ``axis``/``axes`` argument names (``0``, ``[0, 1]``, ``(-1,)``)."""
    if isinstance(node, cst.Integer):
        return [int(node.evaluated_value)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return [-a for a in literal_axes(node.expression)]
    if isinstance(node, (cst.List, cst.Tuple)):
        return [a for e in node.elements for a in literal_axes(e.value)]
    return []


def target_path(target: cst.BaseExpression, name: str) -> list[int] | None:
    """Where ``name`` sits in a loop target: ``i, (xb, yb)`` gives [1, 0] for ``xb``."""
    if isinstance(target, cst.Name):
        return [] if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for i, e in enumerate(target.elements):
            sub = target_path(e.value, name)
            if sub is not None:
                return [i, *sub]
    return None


def zip_row_source(iterable: cst.BaseExpression, path: list[int]) -> cst.BaseExpression | None:
    """The array a loop target takes its rows from: ``xs`` of ``x`` in ``for x, y in
    zip(xs, ys)``; None for any other loop (``for xb in batches`` may take whole batches)."""
    zipped = isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "zip"
    if not zipped or len(path) != 1:
        return None
    assert isinstance(iterable, cst.Call)
    args = [a for a in iterable.args if a.keyword is None and not a.star]
    return args[path[0]].value if path[0] < len(args) == len(iterable.args) else None
