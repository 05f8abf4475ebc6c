"""What a saved model keeps of its training step: the optimizer (a TF1 graph's update ops, a
``.keras`` compile config) and, in a TF1 training graph, the losses its updates' gradients
are of.  Read from the protos (no TensorFlow graph is built here); loader.py calls it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.python.framework import op_def_registry

# optimizer update ops and their family in optimizers.py; their operands (learning rate,
# epsilon, momentum, gradient) are read by name from TensorFlow's definition of the op
OPTIMIZER_OPS = {
    "ApplyAdam": "adam", "ResourceApplyAdam": "adam", "ResourceApplyAdamWithAmsgrad": "adam",
    "ApplyAdaMax": "adamax", "ResourceApplyAdaMax": "adamax",
    "ApplyRMSProp": "rmsprop", "ResourceApplyRMSProp": "rmsprop",
    "ApplyCenteredRMSProp": "rmsprop", "ResourceApplyCenteredRMSProp": "rmsprop",
    "ApplyAdagrad": "adagrad", "ResourceApplyAdagrad": "adagrad",
    "ApplyAdagradV2": "adagrad", "ResourceApplyAdagradV2": "adagrad",
    "ApplyAdadelta": "adadelta", "ResourceApplyAdadelta": "adadelta",
    "ApplyFtrl": "ftrl", "ResourceApplyFtrl": "ftrl", "ApplyFtrlV2": "ftrl",
    "ResourceApplyFtrlV2": "ftrl",
    "ApplyGradientDescent": "sgd", "ResourceApplyGradientDescent": "sgd",
    "ApplyMomentum": "sgd", "ResourceApplyMomentum": "sgd", "ResourceApplyKerasMomentum": "sgd",
}  # fmt: skip


@dataclass
class TrainedLoss:
    """A loss a TF1 training graph differentiates (``minimize``/``compute_gradients``)."""

    tensor: str  # the loss tensor in the graph
    weights: list[str]  # the variables its gradients update (their nodes)
    updates: list[str]  # the optimizer update ops that apply those gradients


def node_name(tensor: str) -> str:
    """The node a tensor name (``x:0``, ``^x``) is an output or control input of."""
    return tensor.lstrip("^").split(":")[0]


def optimizer_facts(
    graph: graph_pb2.GraphDef, trained: list[TrainedLoss] | None = None
) -> list[dict[str, Any]]:
    """The optimizers a training graph keeps, one record per optimizer (its update ops that
    share a learning rate, an epsilon and a variable dtype): family, epsilon, learning rate,
    momentum, the variables it updates, whether their gradients are clipped, and the loss the
    gradients are of."""
    by_name = {n.name: n for n in graph.node}
    trained = trained_losses(graph, by_name) if trained is None else trained
    losses = {node: loss.tensor for loss in trained for node in loss.updates}
    groups: dict[tuple, list[Any]] = {}
    for node in graph.node:
        if node.op not in OPTIMIZER_OPS:
            continue
        operands = [_operand(node, n) for n in (("lr", "alpha"), ("epsilon",), ("momentum",))]
        dtype = tf.dtypes.as_dtype(node.attr["T"].type).name
        groups.setdefault((OPTIMIZER_OPS[node.op], *operands, dtype), []).append(node)
    out = []
    for (family, lr, eps, momentum, dtype), nodes in groups.items():
        grads = [_operand(n, ("grad", "delta")) for n in nodes]
        clipped = [_clipping(by_name, g) for g in grads if g is not None]
        out.append(
            {
                "op": _common_scope([n.name for n in nodes]),
                "family": family,
                "epsilon": _const_number(by_name, eps),
                "dtype": dtype,
                "learning_rate": _const_number(by_name, lr),
                "momentum": _const_number(by_name, momentum) if momentum else None,
                "variables": [node_name(n.input[0]) for n in nodes],
                # the gradients' clipping: only when every update's gradient is clipped
                "clipping": clipped[0] if clipped and all(clipped) else None,
                "loss": next((losses[n.name] for n in nodes if n.name in losses), None),
                "tf1": True,
            }
        )
    return out


def _operand(node: Any, names: tuple[str, ...]) -> str | None:
    """The input tensor of ``node`` that its op's definition names one of ``names``."""
    op_def = op_def_registry.get(node.op)
    args = [a.name for a in op_def.input_arg] if op_def is not None else []
    for name in names:
        if name in args and args.index(name) < len(node.input):
            return str(node.input[args.index(name)])
    return None


def _const_number(by_name: dict[str, Any], tensor: str | None) -> float | None:
    node = _const_source(by_name, tensor) if tensor else None
    if node is None:
        return None
    value = tf.make_ndarray(node.attr["value"].tensor).reshape(-1)
    # the shortest decimal of the stored value: 0.01, not float32's 0.009999999776
    return float(str(value[0])) if value.size else None


def _common_scope(names: list[str]) -> str:
    """The name scope the update ops share (the optimizer's: ``Adam``), else the first op."""
    parts = [n.split("/") for n in names]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    shortest = min(len(p) for p in parts)
    if len(common) >= shortest:  # one op: its scope without the per-variable update scope
        common = common[: max(1, shortest - 2)]
    return "/".join(common) or names[0]


CLIP_SEARCH = 2000  # nodes looked at behind a gradient's scale factor


def _clipping(by_name: dict[str, Any], tensor: str) -> str | None:
    """How the gradient an update applies is clipped, or None: a ClipByValue, or a product or
    quotient whose one operand is computed from the other (the gradient scaled by its own norm,
    as ``clip_by_norm`` and ``clip_by_global_norm`` build it)."""
    node = by_name.get(node_name(tensor))
    while node is not None and node.op == "Identity" and node.input:
        node = by_name.get(node_name(node.input[0]))
    if node is None:
        return None
    if node.op == "ClipByValue":
        return "its gradient is clipped by value"
    if node.op not in ("Mul", "RealDiv"):
        return None
    data = [node_name(i) for i in node.input if not i.startswith("^")]
    for i, a in enumerate(data):
        near = {a, *(node_name(x) for x in by_name[a].input)} if a in by_name else {a}
        for b in data[:i] + data[i + 1 :]:
            if near & _ancestors(by_name, b, CLIP_SEARCH):
                return "its gradient is scaled by its norm"
    return None


def _ancestors(by_name: dict[str, Any], start: str, limit: int) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo and len(seen) < limit:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        todo.extend(node_name(i) for i in by_name[name].input if not i.startswith("^"))
    return seen - {start}


_SEED = re.compile(r"(.+)/grad_ys_\d+")  # tf.gradients' seed: ones shaped like the loss


def trained_losses(graph: graph_pb2.GraphDef, by_name: dict[str, Any]) -> list[TrainedLoss]:
    """The losses the graph's optimizer updates come from.  ``tf.gradients`` seeds the
    backward pass with a ``Fill`` of ones (``<scope>/grad_ys_N``) and names the gradient of an
    op ``<scope>/<op>_grad/...``: the op whose gradient reads the seed is the loss.  Each
    update op belongs to the seed its gradient is computed from."""
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for i in node.input:
            if not i.startswith("^"):
                consumers.setdefault(node_name(i), []).append(node)
    out = []
    for node in graph.node:
        match = _SEED.fullmatch(node.name) if node.op == "Fill" else None
        if match is None:
            continue
        loss = _loss_of_seed(match.group(1), consumers.get(node.name, []), by_name)
        if loss is None:
            continue
        downstream = _descendants(consumers, node.name)
        updates = [
            n
            for n in graph.node
            if n.op in OPTIMIZER_OPS
            and node_name(_operand(n, ("grad", "delta")) or "") in downstream
        ]
        if updates:
            out.append(
                TrainedLoss(
                    f"{loss}:0", [node_name(n.input[0]) for n in updates], [n.name for n in updates]
                )
            )
    return out


def _loss_of_seed(scope: str, readers: list[Any], by_name: dict[str, Any]) -> str | None:
    prefix = f"{scope}/"
    for reader in readers:
        rest = reader.name[len(prefix) :] if reader.name.startswith(prefix) else ""
        at = rest.find("_grad/")
        while at > 0:
            if rest[:at] in by_name:
                return rest[:at]
            at = rest.find("_grad/", at + 1)
    return None


def _descendants(consumers: dict[str, list[Any]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(c.name for c in consumers.get(name, []))
    return seen


def _const_source(by_name: dict[str, Any], tensor: str) -> Any:
    """The Const node a tensor's value comes from, through casts and identities."""
    node = by_name.get(node_name(tensor))
    while node is not None and node.op in ("Cast", "Identity") and node.input:
        node = by_name.get(node_name(node.input[0]))
    return node if node is not None and node.op == "Const" else None


def keras_optimizer(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The optimizer the compile config keeps, with the dtype its variables have."""
    opt = (config.get("compile_config") or {}).get("optimizer")
    if not isinstance(opt, dict):
        return []
    inner = opt.get("config") or {}
    dtype = _variable_dtype(config)
    clips = {k: inner.get(k) for k in ("clipnorm", "global_clipnorm", "clipvalue")}
    clip = next(((k, v) for k, v in clips.items() if _number(v) is not None), None)
    return [
        {
            "op": f"optimizer {opt.get('class_name')}",
            "family": str(opt.get("class_name", "")).lower(),
            "epsilon": _number(inner.get("epsilon")),
            "dtype": dtype,
            "learning_rate": _number(inner.get("learning_rate")),  # a schedule: None
            "momentum": _number(inner.get("momentum")),
            "clipping": f"{clip[0]}={clip[1]:g}" if clip else None,
            "clipnorm": _number(inner.get("clipnorm") or inner.get("global_clipnorm")),
            "tf1": False,
        }
    ]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _variable_dtype(config: dict[str, Any]) -> str:
    """float16 when every layer's policy keeps its variables in float16, else float32."""
    names = []
    stack: list[Any] = [config.get("config")]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            policy = item.get("dtype")
            if isinstance(policy, dict):
                names.append(str((policy.get("config") or {}).get("name")))
            elif isinstance(policy, str):
                names.append(policy)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "float16" if names and all(n == "float16" for n in names) else "float32"
