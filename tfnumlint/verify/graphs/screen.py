"""What may be loaded and run: checked on the file's bytes before TensorFlow or Keras sees it.

A model file is data written by someone else.  Its graph is run only on synthetic inputs, and
only when every op type in the functions it would run is a registered TensorFlow op without
side effects (no file writes, no Python callbacks, no summaries).  A Keras config is loaded
only when every object it names is a built-in Keras class (a Lambda or a custom layer would
need the author's code: it is reported as "not loaded: custom object X").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tensorflow.core.framework import graph_pb2
from tensorflow.python.framework import op_def_registry


class NotLoaded(Exception):
    """The model is not loaded; the message says why, for the user."""


# stateful ops a model graph needs and that touch nothing outside the process
SAFE_STATEFUL = frozenset(
    {
        "VarHandleOp", "ReadVariableOp", "VariableV2", "Variable", "StatefulPartitionedCall",
        "PartitionedCall", "NoOp", "Placeholder", "PlaceholderWithDefault", "Assert",
        "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
        "StatelessRandomUniformV2", "StatelessRandomNormalV2", "RngReadAndSkip",
        "HashTableV2", "LookupTableFindV2", "LookupTableImportV2", "MutableHashTableV2",
        "StatelessIf", "StatelessWhile", "If", "While", "Enter", "Exit", "Merge", "Switch",
        "NextIteration", "LoopCond", "AssignVariableOp", "Assign", "AssignAddVariableOp",
        "AssignSubVariableOp", "ResourceGather", "DestroyResourceOp", "VarIsInitializedOp",
        "Print", "PrintV2", "StringFormat",
    }
)  # fmt: skip


def op_types(graph: graph_pb2.GraphDef, functions: Iterable[str] | None = None) -> set[str]:
    """The op types of ``graph`` and of the library functions it reaches (all of them when
    ``functions`` is None, else those reachable from the named ones)."""
    library = {f.signature.name: f for f in graph.library.function}
    found = {n.op for n in graph.node} if functions is None else set()
    todo = list(library) if functions is None else list(functions)
    todo += [] if functions is None else [f for n in graph.node for f in _called(n)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in library:
            continue
        seen.add(name)
        for node in library[name].node_def:
            found.add(node.op)
            todo.extend(_called(node))
    return found


def _called(node: Any) -> Iterator[str]:
    """Names of the functions a node's attributes point at (a call, a branch, a loop body)."""
    for value in node.attr.values():
        if value.HasField("func"):
            yield value.func.name
        for fn in value.list.func:
            yield fn.name


def check_ops(types: Iterable[str], library: Iterable[str] = ()) -> None:
    """Raise NotLoaded unless every op type is registered and free of side effects."""
    known_functions = set(library)
    for t in sorted(set(types)):
        if t in known_functions:
            continue  # a call of a library function, whose own ops are checked
        op_def = op_def_registry.get(t)
        if op_def is None:
            raise NotLoaded(f"not loaded: op type {t!r} is not a TensorFlow op (a custom op)")
        if op_def.is_stateful and t not in SAFE_STATEFUL:
            raise NotLoaded(f"not loaded: op type {t!r} has side effects, so the graph is not run")


# ---------------------------------------------------------------- Keras configs

_CODE_CLASSES = frozenset({"Lambda", "TFOpLambda", "__lambda__", "SlicingOpLambda"})


def check_keras_config(config: Any) -> None:
    """Raise NotLoaded when the config names an object that is not a built-in Keras one."""
    for obj in _objects(config):
        name = str(obj.get("class_name"))
        module = obj.get("module")
        registered = obj.get("registered_name")
        if name in _CODE_CLASSES:
            raise NotLoaded(f"not loaded: custom object {name} (it holds Python code)")
        if module is not None and not _keras_module(str(module)):
            raise NotLoaded(f"not loaded: custom object {registered or name} (module {module})")
        if registered and str(registered) != name and "." not in name:
            raise NotLoaded(f"not loaded: custom object {registered}")


def _keras_module(module: str) -> bool:
    return module == "keras" or module.startswith(("keras.", "builtins"))


def _objects(config: Any) -> Iterator[dict[str, Any]]:
    """Every serialised object (a dict with a ``class_name``) in a Keras config."""
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "class_name" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
