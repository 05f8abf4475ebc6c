"""Load a saved model as a frozen graph: its ops, its weights as constants, its inputs.

Nothing of the author's runs: a SavedModel's proto is parsed and screened (screen.py) before
TensorFlow loads its functions (no Python is revived: ``tf.saved_model.load`` rebuilds
graphs), a TF1 SavedModel is frozen here from its checkpoint (``tf.train.load_checkpoint``
only reads tensors), a ``.keras``/``.h5`` config is screened and then loaded with
``safe_mode=True``, and a ``.pb``/``.pbtxt`` is parsed as a GraphDef.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tensorflow as tf
from google.protobuf import message, text_format
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import convert_to_constants

from .layers import (
    DebugInfo,
    Layers,
    called_functions,
    from_config,
    from_object_graph,
    read_debug_info,
)
from .screen import NotLoaded, check_keras_config, check_ops, op_types
from .training_step import (
    OPTIMIZER_OPS,
    TrainedLoss,
    keras_optimizer,
    optimizer_facts,
    trained_losses,
)
from .training_step import (
    node_name as _node,
)

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})


@dataclass
class Input:
    name: str  # the placeholder op's name in the frozen graph
    label: str  # as the user names it (the signature key), for --input-range
    dtype: str
    shape: list[int | None]


@dataclass
class Loaded:
    kind: str  # saved_model | keras | graph_def
    graph_def: graph_pb2.GraphDef  # frozen: weights are constants
    inputs: list[Input]
    outputs: list[str]  # tensor names
    optimizers: list[dict[str, Any]] = field(default_factory=list)  # what the file keeps of it
    layers: Layers = field(default_factory=Layers)  # the Keras layers the file records
    debug: DebugInfo | None = None  # creation stacks (a SavedModel with save_debug_info)
    loss: Any = None  # the training loss the file keeps (a .keras compile config's), or None
    trainable: list[str] = field(default_factory=list)  # the trainable weights' Const nodes
    trained: list[TrainedLoss] = field(default_factory=list)  # a TF1 graph's own losses


def load(path: Path) -> Loaded:
    """The frozen graph of the model at ``path``, or NotLoaded with the reason."""
    if path.is_dir():
        return load_saved_model(path)
    suffix = path.suffix.lower()
    if suffix in (".keras", ".h5", ".hdf5"):
        return load_keras(path)
    if suffix in (".pb", ".pbtxt"):
        return load_graph_def(path)
    raise NotLoaded(f"not a model file: {path.name}")


# ---------------------------------------------------------------- SavedModel


def read_saved_model(path: Path) -> saved_model_pb2.SavedModel:
    proto = saved_model_pb2.SavedModel()
    pb, pbtxt = path / "saved_model.pb", path / "saved_model.pbtxt"
    try:
        if pb.is_file():
            proto.ParseFromString(pb.read_bytes())
        elif pbtxt.is_file():
            text_format.Parse(pbtxt.read_text(encoding="utf-8"), proto)
        else:
            raise NotLoaded("not a SavedModel: no saved_model.pb")
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError, RuntimeWarning):
        raise NotLoaded(
            "not a SavedModel: saved_model.pb is truncated or not a SavedModel proto"
        ) from None
    if not proto.meta_graphs or not proto.meta_graphs[0].graph_def.node:
        raise NotLoaded("not a SavedModel: saved_model.pb holds no graph")
    return proto


def _meta_graph(proto: saved_model_pb2.SavedModel):
    for mg in proto.meta_graphs:
        if "serve" in mg.meta_info_def.tags:
            return mg
    return proto.meta_graphs[0]


def _signature(mg) -> tuple[str, Any]:
    sigs = mg.signature_def
    if not sigs:
        raise NotLoaded("not loaded: the SavedModel has no signature to lint")
    key = "serving_default" if "serving_default" in sigs else sorted(sigs)[0]
    return key, sigs[key]


def needed_nodes(graph: graph_pb2.GraphDef, outputs: list[str]) -> set[str]:
    """Names of the nodes the outputs depend on (data and control inputs)."""
    by_name = {n.name: n for n in graph.node}
    todo = [_node(t) for t in outputs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        todo.extend(_node(i) for i in by_name[name].input)
    return seen


def _screen_signature(graph: graph_pb2.GraphDef, outputs: list[str]) -> None:
    keep = needed_nodes(graph, outputs)
    sub = graph_pb2.GraphDef()
    sub.node.extend(n for n in graph.node if n.name in keep)
    sub.library.CopyFrom(graph.library)
    nodes = {n.op for n in sub.node}
    reached = op_types(sub, functions=[])
    check_ops(nodes | reached, {f.signature.name for f in graph.library.function})


def load_saved_model(path: Path) -> Loaded:
    proto = read_saved_model(path)
    mg = _meta_graph(proto)
    key, sig = _signature(mg)
    outputs = [t.name for t in sig.outputs.values()]
    tf1 = not mg.object_graph_def.nodes  # no object graph: a TF1 SavedModel
    trained = trained_losses(mg.graph_def, {n.name: n for n in mg.graph_def.node}) if tf1 else []
    _screen_signature(mg.graph_def, outputs + [t.tensor for t in trained])
    has_variables = any(n.op in VARIABLE_OPS for n in mg.graph_def.node)
    if has_variables and not (path / "variables" / "variables.index").is_file():
        raise NotLoaded("not a SavedModel: its variables/variables.index is missing")
    optimizers = optimizer_facts(mg.graph_def, trained if tf1 else None)
    if tf1:  # a TF1 SavedModel: freeze it from its checkpoint, with the losses it trains
        frozen = _tf1_saved_model(path, mg, sig, optimizers, trained)
        frozen.debug = read_debug_info(path, set())
        return frozen
    try:
        loaded = tf.saved_model.load(str(path), tags=list(mg.meta_info_def.tags) or None)
        fn = loaded.signatures[key]
        graph_def, frozen_inputs, outputs, _ = freeze(fn)
    except (ValueError, KeyError, tf.errors.OpError, TypeError) as exc:
        raise NotLoaded(f"not loaded: {_first_line(exc)}") from None
    specs = fn.structured_input_signature[1]
    labels = {spec.name: label for label, spec in specs.items()}
    del fn, loaded  # the weights now live in graph_def only
    inputs = [_input(t.op.name, labels.get(t.op.name, t.op.name), t) for t in frozen_inputs]
    functions = _signature_functions(mg.graph_def, key)
    return Loaded(
        "saved_model",
        graph_def,
        inputs,
        outputs,
        optimizers,
        from_object_graph(mg, functions),
        read_debug_info(path, functions),
    )


def freeze(fn: Any) -> tuple[graph_pb2.GraphDef, list[Any], list[str], dict[str, Any]]:
    """A concrete function's graph with its variables as constants: (graph, the inputs that
    stay placeholders, the output tensor names, each weight constant's node name -> the
    variable handle it froze).

    ``convert_variables_to_constants_v2`` does the same and then imports the frozen graph
    back into a new concrete function, which costs as much again as the freezing on a large
    model (every weight is copied twice more); the linter imports the graph itself, once.
    """
    try:
        data = convert_to_constants._FunctionConverterDataInEager(
            func=fn, lower_control_flow=True, aggressive_inlining=False
        )
        graph_def, converted = convert_to_constants._replace_variables_by_constants(
            converter_data=data
        )
    except AttributeError:  # another TensorFlow: its public, slower path
        frozen = convert_to_constants.convert_variables_to_constants_v2(fn)
        outputs = [t.name for t in frozen.outputs]
        return frozen.graph.as_graph_def(), list(frozen.inputs), outputs, {}
    captured = fn.graph.internal_captures
    gone = {id(captured[i]) for i in converted}
    inputs = [t for t in fn.inputs if id(t) not in gone]
    handles = {internal.op.name: external for external, internal in fn.graph.captures}
    weights = {name: handles[name] for name in data.tensor_data if name in handles}
    return graph_def, inputs, [t.name for t in fn.outputs], weights


def _signature_functions(graph: graph_pb2.GraphDef, key: str) -> set[str]:
    """The library functions the signature's wrapper calls (every one when none is named so)."""
    names = [f.signature.name for f in graph.library.function]
    wrapper = re.compile(rf"__inference_signature_wrapper_{re.escape(key)}_\d+")
    roots = [n for n in names if wrapper.fullmatch(n)]
    return called_functions(graph, roots) if roots else set(names)


def _input(name: str, label: str, tensor: Any) -> Input:
    shape = tensor.shape.as_list() if tensor.shape.rank is not None else []
    return Input(name, label, tensor.dtype.name, shape)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _tf1_saved_model(path: Path, mg, sig, optimizers, trained: list[TrainedLoss]) -> Loaded:
    outputs = [t.name for t in sig.outputs.values()]
    try:
        reader = tf.train.load_checkpoint(str(path / "variables" / "variables"))
    except (tf.errors.OpError, ValueError) as exc:
        raise NotLoaded(f"not loaded: the checkpoint does not read ({_first_line(exc)})") from None
    graph_def = freeze_with(mg.graph_def, reader, outputs + [t.tensor for t in trained])
    inputs = [
        Input(_node(t.name), label, tf.dtypes.as_dtype(t.dtype).name, _dims(t.tensor_shape))
        for label, t in sig.inputs.items()
    ]
    return Loaded("saved_model", graph_def, inputs, outputs, optimizers, trained=trained)


def _dims(shape) -> list[int | None]:
    return [None if d.size < 0 else int(d.size) for d in shape.dim]


def freeze_with(graph: graph_pb2.GraphDef, reader, outputs: list[str]) -> graph_pb2.GraphDef:
    """The subgraph the outputs need, each variable replaced by its checkpoint value."""
    keep = needed_nodes(graph, outputs)
    values = {}
    out = graph_pb2.GraphDef()
    for node in graph.node:
        if node.name not in keep:
            continue
        new = out.node.add()
        if node.op in VARIABLE_OPS:
            key = node.attr["shared_name"].s.decode() if node.op == "VarHandleOp" else ""
            key = key or node.name
            if not reader.has_tensor(key):
                raise NotLoaded(f"not loaded: variable {key!r} is not in the checkpoint")
            values[node.name] = reader.get_tensor(key)
            new.CopyFrom(_const_node(node.name, values[node.name]))
        elif node.op == "ReadVariableOp":
            new.name, new.op = node.name, "Identity"
            new.input.extend(node.input)
            new.attr["T"].type = node.attr["dtype"].type
        else:
            new.CopyFrom(node)
    out.library.CopyFrom(graph.library)
    out.versions.CopyFrom(graph.versions)
    return out


def _const_node(name: str, value) -> Any:
    node = tf.compat.v1.NodeDef(name=name, op="Const")
    tensor = tf.make_tensor_proto(value)
    node.attr["value"].tensor.CopyFrom(tensor)
    node.attr["dtype"].type = tensor.dtype
    return node


# ---------------------------------------------------------------- GraphDef


def read_graph_def(path: Path) -> graph_pb2.GraphDef:
    graph = graph_pb2.GraphDef()
    try:
        if path.suffix.lower() == ".pbtxt":
            text_format.Parse(path.read_text(encoding="utf-8"), graph)
        else:
            graph.ParseFromString(path.read_bytes())
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError, RuntimeWarning):
        raise NotLoaded("not a GraphDef: the file is truncated or not a GraphDef proto") from None
    if not graph.node or not all(n.op for n in graph.node):
        raise NotLoaded("not a GraphDef: the file holds no graph nodes")
    return graph


def load_graph_def(path: Path) -> Loaded:
    graph = read_graph_def(path)
    check_ops(op_types(graph), {f.signature.name for f in graph.library.function})
    variables = [n.name for n in graph.node if n.op in VARIABLE_OPS]
    optimizers = optimizer_facts(graph)
    consumed = {_node(i) for n in graph.node for i in n.input}
    sinks = [
        n.name
        for n in graph.node
        if n.name not in consumed
        and n.op not in ("NoOp", "Const", "Assert", *VARIABLE_OPS)
        and n.op not in OPTIMIZER_OPS
        and not n.op.startswith(("Assign", "Save", "Restore"))
    ]
    if variables:
        if not sinks:
            raise NotLoaded("not loaded: the GraphDef has variables and no output to lint")
        raise NotLoaded(
            f"not loaded: the GraphDef holds {len(variables)} variables without values "
            "(freeze it, or lint the SavedModel with its checkpoint)"
        )
    inputs = [
        Input(n.name, n.name, tf.dtypes.as_dtype(n.attr["dtype"].type).name, _shape(n))
        for n in graph.node
        if n.op == "Placeholder"
    ]
    return Loaded("graph_def", graph, inputs, [f"{s}:0" for s in sinks], optimizers)


def _shape(node) -> list[int | None]:
    shape = node.attr["shape"].shape
    return [] if shape.unknown_rank else _dims(shape)


# ---------------------------------------------------------------- Keras


def keras_config(path: Path) -> dict[str, Any]:
    """The model config of a .keras (zip) or .h5 file, read without Keras."""
    try:
        if path.suffix.lower() == ".keras":
            with zipfile.ZipFile(path) as archive:
                return json.loads(archive.read("config.json"))
        import h5py

        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
            if raw is None:
                raise NotLoaded("not loaded: the .h5 file holds weights only (no model config)")
            return json.loads(raw if isinstance(raw, str) else raw.decode("utf-8"))
    except NotLoaded:
        raise
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise NotLoaded(f"not a Keras model file: {_first_line(exc)}") from None


def load_keras(path: Path) -> Loaded:
    config = keras_config(path)
    check_keras_config(config)
    import keras

    try:
        model = keras.models.load_model(str(path), safe_mode=True, compile=False)
    except Exception as exc:  # Keras raises many kinds; each one means "not loaded"
        raise NotLoaded(f"not loaded: {_first_line(exc)}") from None
    specs = [
        tf.TensorSpec(t.shape, t.dtype, name=_input_name(t, i)) for i, t in enumerate(model.inputs)
    ]
    single = len(specs) == 1

    def call(*xs):
        return model(xs[0] if single else list(xs), training=False)

    try:
        fn = tf.function(call).get_concrete_function(*specs)
        graph_def, frozen_inputs, outputs, weights = freeze(fn)
    except (ValueError, TypeError, tf.errors.OpError) as exc:
        raise NotLoaded(f"not loaded: the model does not trace ({_first_line(exc)})") from None
    inputs = [_input(t.op.name, spec.name, t) for t, spec in zip(frozen_inputs, specs, strict=True)]
    trainable = {
        id(getattr(getattr(v, "value", v), "handle", v)) for v in model.trainable_variables
    }
    return Loaded(
        "keras",
        graph_def,
        inputs,
        outputs,
        keras_optimizer(config),
        from_config(config),
        loss=(config.get("compile_config") or {}).get("loss"),
        trainable=[name for name, handle in weights.items() if id(handle) in trainable],
    )


def _input_name(tensor: Any, index: int) -> str:
    name = str(getattr(tensor, "name", "") or f"input_{index}")
    return name.split(":")[0].replace("/", "_")
