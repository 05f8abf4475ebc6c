"""Where an op of a saved model comes from: its Keras layer, and its Python line.

An op's name is a path of name scopes; the Keras layer is recovered only from what the file
itself records, never guessed from the scope's words:
- a ``.keras``/``.h5`` config lists the functional model's layers (nested models too): a scope
  component is that layer when it is the layer's name, or the name with the ``_N`` that TF adds
  when a scope is entered again;
- a SavedModel of a subclassed model keeps its attribute tree in the object graph: a layer's
  variable is read by a ``ReadVariableOp`` of the serving function, whose captured input is
  that variable's node, so the scope of that read is the attribute layer's scope.
A SavedModel written by ``Model.export``, a frozen ``.pb`` and a TF1 graph keep neither, but
their node names still say where the weights are: the name scope of an op that reads a weight
constant as its weight operand (a ``MatMul``'s matrix, a convolution's filter, a bias, a batch
norm's scale) is a layer's scope (``hazards_1/energy_1``, TF1's ``dense``); where the SavedModel's
object graph names its variables by their Keras paths (``energy/kernel``, as ``Model.export``
writes them), the scope is reported as that layer (``energy``).  An op belongs to the longest
such scope its name starts with; a layer without weights (a bare Softmax) is not recovered.
With ``save_debug_info=True`` the SavedModel's ``debug/saved_model_debug_info.pb`` holds each
op's creation stack: the innermost frame outside TensorFlow, Keras and the standard library is
the author's line.  Nothing here runs the model's code: it reads protos and JSON.
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import message
from tensorflow.core.framework import graph_debug_info_pb2

# object-graph children that list variables or functions, not attribute layers
_CONTAINERS = frozenset(
    {
        "variables",
        "trainable_variables",
        "non_trainable_variables",
        "keras_api",
        "signatures",
        "layers",
        "submodules",
    }
)
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\](?:tensorflow|keras|tf_keras|absl)[/\\]")
_STDLIB = sysconfig.get_paths().get("stdlib", "\0")


@dataclass
class Layers:
    """The layers a model file records: a functional config's name tree, or attribute scopes."""

    model: str | None = None  # the functional model's name
    tree: dict[str, Any] = field(default_factory=dict)  # layer name -> its sub-layers' tree
    scopes: dict[str, str] = field(default_factory=dict)  # scope prefix -> attribute path
    kind: str = "none"  # functional | attribute | scope (weights' name scopes) | none
    variable_layers: set[str] = field(default_factory=set)  # Keras paths of the variables' layers

    def layer_of(self, op_name: str) -> str | None:
        """The layer path of the op (``dense_1``, ``inner/dense``, ``block.proj``) or None."""
        comps = op_name.split("/")[:-1]
        if self.scopes:
            for n in range(len(comps), 0, -1):
                hit = self.scopes.get("/".join(comps[:n]))
                if hit:
                    return hit
            return None
        if not self.tree or not comps:
            return None
        if self.model and _matches(comps[0], self.model):
            comps = comps[1:]
        names: list[str] = []
        tree = self.tree
        for comp in comps:
            name = comp if comp in tree else next((n for n in tree if _matches(comp, n)), None)
            if name is None:
                break
            names.append(name)
            tree = tree[name]
        return "/".join(names) or None


def _matches(comp: str, name: str) -> bool:
    return comp == name or re.fullmatch(re.escape(name) + r"_\d+", comp) is not None


# ---------------------------------------------------------------- a Keras config


def from_config(config: dict[str, Any]) -> Layers:
    root: dict[str, Any] = config["config"] if isinstance(config.get("config"), dict) else {}
    name = root.get("name") if isinstance(root.get("name"), str) else None
    tree = _tree(root)
    return Layers(model=name, tree=tree, kind="functional" if tree else "none")


def _tree(cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in cfg.get("layers") or []:
        if not isinstance(layer, dict) or layer.get("class_name") == "InputLayer":
            continue
        if str(layer.get("module", "")).startswith("keras.src.ops"):
            continue  # a keras.ops call in a functional graph opens no name scope
        inner: dict[str, Any] = layer["config"] if isinstance(layer.get("config"), dict) else {}
        name = layer.get("name") or inner.get("name")
        if isinstance(name, str):
            out[name] = _tree(inner)
    return out


# ---------------------------------------------------------------- the weights' name scopes

# op type -> the operand that holds its weights (a layer's kernel, filter, bias or scale)
WEIGHT_OPERANDS = {
    "MatMul": 1, "BatchMatMulV2": 1, "BatchMatMulV3": 1, "Conv2D": 1, "Conv3D": 1,
    "DepthwiseConv2dNative": 1, "Conv2DBackpropInput": 1, "BiasAdd": 1, "FusedBatchNorm": 1,
    "FusedBatchNormV3": 1,
}  # fmt: skip
_READS = frozenset({"Identity", "Cast", "ReadVariableOp"})


def weight_scopes(ops: Iterable[Any], display: Callable[[str], str], known: Layers) -> Layers:
    """Layers from the name scopes of the ops that read weight constants (``ops``: the frozen
    graph's operations; ``display``: an op name as findings show it).  ``known.variable_layers``
    (the Keras paths of a SavedModel's variables) turns a scope into its layer path."""
    scopes: dict[str, str] = {}
    for op in ops:
        index = WEIGHT_OPERANDS.get(op.type)
        if index is None or len(op.inputs) <= index:
            continue
        src = op.inputs[index].op
        while src.type in _READS and src.inputs:
            src = src.inputs[0].op
        name = display(op.name)
        if src.type != "Const" or "/" not in name:
            continue
        scope = name.rsplit("/", 1)[0]
        scopes[scope] = _keras_path(scope.split("/"), known.variable_layers) or scope
    if not scopes:
        return known
    return Layers(scopes=scopes, kind="scope", variable_layers=known.variable_layers)


def _keras_path(comps: list[str], paths: set[str]) -> str | None:
    """The variable's layer path the scope ends with (each component the layer's name or
    that name with TF's ``_N`` re-entry suffix), or None."""
    for path in sorted(paths, key=lambda p: -p.count("/")):
        names = path.split("/")
        tail = comps[len(comps) - len(names) :] if len(comps) >= len(names) else []
        if tail and all(_matches(c, n) for c, n in zip(tail, names, strict=True)):
            return path
    return None


def variable_layers(mg: Any) -> set[str]:
    """The layers (Keras paths) of the variables an object graph names (``energy/kernel``)."""
    out = set()
    for node in mg.object_graph_def.nodes:
        if node.WhichOneof("kind") == "variable" and "/" in node.variable.name:
            out.add(node.variable.name.rsplit("/", 1)[0])
    return out


# ---------------------------------------------------------------- a SavedModel's object graph


def from_object_graph(mg: Any, functions: set[str]) -> Layers:
    """Attribute layers of the object graph, by the scopes of the reads of their variables in
    ``functions`` (the ones the frozen signature inlines)."""
    og = mg.object_graph_def
    paths = _attribute_paths(og)
    library = {f.signature.name: f for f in mg.graph_def.library.function}
    found: dict[str, str | None] = {}
    for fn_name in sorted(functions):
        fdef, saved = library.get(fn_name), og.concrete_functions.get(fn_name)
        if fdef is None or saved is None or not saved.bound_inputs:
            continue
        args = [a.name for a in fdef.signature.input_arg]
        bound = list(saved.bound_inputs)
        captured = dict(zip(args[len(args) - len(bound) :], bound, strict=False))
        for node in fdef.node_def:
            if node.op != "ReadVariableOp" or not node.input:
                continue
            owner = paths.get(captured.get(node.input[0].split(":")[0], -1), "")
            if "." not in owner:
                continue
            layer = owner.rsplit(".", 1)[0]  # the variable's owner
            comps = node.name.split("/")
            parts = layer.split(".")
            if len(comps) <= len(parts) + 1:
                continue
            for depth in range(1, len(parts) + 1):  # each attribute level opens one scope
                prefix, path = "/".join(comps[: depth + 1]), ".".join(parts[:depth])
                if found.setdefault(prefix, path) != path:
                    found[prefix] = None  # two layers claim one scope: name neither
    scopes = {k: v for k, v in found.items() if v}
    return Layers(
        scopes=scopes, kind="attribute" if scopes else "none", variable_layers=variable_layers(mg)
    )


def _attribute_paths(og: Any) -> dict[int, str]:
    """Node id -> dotted attribute path from the root (the first path found)."""
    paths: dict[int, str] = {0: ""}
    todo = [0]
    while todo:
        nid = todo.pop(0)
        for child in og.nodes[nid].children:
            name, cid = child.local_name, child.node_id
            if cid in paths or name in _CONTAINERS or cid >= len(og.nodes):
                continue
            is_var = og.nodes[cid].WhichOneof("kind") == "variable"
            if name.startswith("_") and not is_var:
                continue
            paths[cid] = f"{paths[nid]}.{name}".lstrip(".")
            todo.append(cid)
    return paths


def called_functions(graph_def: Any, roots: list[str]) -> set[str]:
    """The library functions the roots call, transitively (through ``f`` attributes)."""
    library = {f.signature.name: f for f in graph_def.library.function}
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in library:
            continue
        seen.add(name)
        for node in library[name].node_def:
            for attr in node.attr.values():
                if attr.func.name:
                    todo.append(attr.func.name)
    return seen


# ---------------------------------------------------------------- debug info


@dataclass
class DebugInfo:
    """The creation stacks of a SavedModel saved with ``save_debug_info=True``."""

    proto: Any
    functions: set[str]

    def origin(self, op_name: str) -> dict[str, Any] | None:
        """The author's frame that created the op: {"path", "line", "function"}."""
        d = self.proto
        keys = [f"{op_name}@{fn}" for fn in sorted(self.functions)] + [op_name, f"{op_name}@"]
        for key in keys:
            if key in d.name_to_trace_id:
                trace = d.traces_by_id.get(d.name_to_trace_id[key])
                frames = [d.frames_by_id[i] for i in trace.frame_id] if trace else []
            elif key in d.traces:
                frames = list(d.traces[key].file_line_cols)
            else:
                continue
            for frame in reversed(frames):  # innermost first
                if frame.file_index >= len(d.files):
                    continue
                path = d.files[frame.file_index]
                if not _library(path):
                    return {"path": path, "line": int(frame.line), "function": frame.func}
        return None


def _library(path: str) -> bool:
    return bool(_LIBRARY.search(path)) or (path.startswith(_STDLIB) and "-packages" not in path)


def read_debug_info(saved_model: Path, functions: set[str]) -> DebugInfo | None:
    """The debug info beside the SavedModel, or None (absent or unreadable: no origin)."""
    file = saved_model / "debug" / "saved_model_debug_info.pb"
    if not file.is_file():
        return None
    proto = graph_debug_info_pb2.GraphDebugInfo()
    try:
        proto.ParseFromString(file.read_bytes())
    except (message.DecodeError, OSError, RuntimeWarning):
        return None
    return DebugInfo(proto, functions)
