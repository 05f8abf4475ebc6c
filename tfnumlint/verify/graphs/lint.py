"""The worker's model job: ``{"graph": {"path", "input_ranges"}}`` -> hazards with verdicts.

Load (loader.py, after screen.py), propagate ranges with the weights (ranges.py) from the
input boxes (inputs.py), find the hazards (patterns.py), refute by range or confirm with a
witness (search.py).  No rule codes: the parent maps each hazard to its rule.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from .. import intervals as iv
from .inputs import input_boxes
from .layers import weight_scopes
from .loader import Loaded, load
from .patterns import Hazard, find
from .ranges import analyse
from .screen import NotLoaded
from .search import Searcher, Witness, describe_feed
from .stack import training_facts
from .training import training_losses

_WRAPPERS = ("StatefulPartitionedCall/", "PartitionedCall/")


def lint_model(job: dict[str, Any]) -> dict[str, Any]:
    """Never raises: a model that cannot be loaded gives ``{"error": reason}``."""
    start = time.perf_counter()
    try:
        loaded = load(Path(job["path"]))
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(loaded.graph_def, name="")
    except NotLoaded as exc:
        return {"error": str(exc)}
    except (ValueError, TypeError, tf.errors.OpError) as exc:
        return {
            "error": f"not loaded: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__}"
        }
    if loaded.layers.kind == "none":  # no layer tree in the file: the weights' name scopes
        loaded.layers = weight_scopes(graph.get_operations(), display_name, loaded.layers)
    hazards, optimizers = _checked(graph, loaded, job.get("input_ranges") or {})
    return {
        "kind": loaded.kind,
        "hazards": hazards,
        "optimizers": [optimizer_verdict(o) for o in optimizers],
        "inputs": [i.label for i in loaded.inputs],
        "seconds": round(time.perf_counter() - start, 3),
    }


def optimizer_verdict(opt: dict[str, Any]) -> dict[str, Any]:
    """The number check of an optimizer's epsilon in its variables' dtype."""
    eps, dtype = opt.get("epsilon"), str(opt.get("dtype"))
    out = dict(opt)
    if eps is None and opt.get("family") in ("sgd", "ftrl"):
        return dict(out, status="refuted", detail=f"{opt.get('family')} has no epsilon")
    if eps is None or dtype not in ("float16", "bfloat16", "float32", "float64"):
        return dict(out, status="inconclusive", detail="the epsilon is not a constant of the graph")
    info = iv.finfo(dtype)
    stored = float(np.asarray(eps, iv.np_dtype(dtype)))
    if stored == 0 or stored < float(info.smallest_normal):
        state = (
            "0"
            if stored == 0
            else f"subnormal ({stored:.3g}, below {float(info.smallest_normal):.3g})"
        )
        return dict(
            out,
            status="confirmed",
            symptom="underflow",
            dtype=dtype,
            detail=f"epsilon {eps:g} is {state} in {dtype}, the dtype of the variables it updates",
        )
    return dict(
        out,
        status="refuted",
        dtype=dtype,
        detail=f"epsilon {eps:g} is {stored:.3g} in {dtype}, a normal number",
    )


def graph_dtype(graph: tf.Graph) -> str:
    """The float type most of the graph computes in (the interval rounding uses it)."""
    counts: dict[str, int] = {}
    for op in graph.get_operations():
        for t in op.outputs:
            if t.dtype.is_floating:
                counts[t.dtype.name] = counts.get(t.dtype.name, 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else "float32"


def _checked(
    graph: tf.Graph, loaded: Loaded, given: dict[str, list[float]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The hazards with their verdicts, and the optimizer records with what the training
    rules read of the model they train (stack.py)."""
    dtype = graph_dtype(graph)
    own = graph.get_operations()  # the file's ops: a rebuilt Keras loss is not linted
    trainings = training_losses(graph, loaded, given)
    labels = {t.tensor.op.name: t.box for tr in trainings for t in tr.targets}
    first = input_boxes(graph, loaded.inputs, given, None)
    boxes = analyse(graph, {**labels, **{n: b for n, (b, _) in first.items()}}, dtype)
    chosen = input_boxes(graph, loaded.inputs, given, boxes)
    if chosen != first:
        boxes = analyse(graph, {**labels, **{n: b for n, (b, _) in chosen.items()}}, dtype)
    box_text = _box_text(loaded, chosen)
    optimizers = [
        dict(o, **training_facts(graph, o, loaded.inputs, trainings, chosen, boxes))
        for o in loaded.optimizers
    ]
    searcher = Searcher(graph, loaded.inputs, {n: b for n, (b, _) in chosen.items()}, trainings)
    order = {op.name: i + 1 for i, op in enumerate(graph.get_operations())}
    try:
        hazards = [
            dict(
                _verdict(h, searcher, loaded, box_text, dtype),
                node=order[h.op.name],
                **where_from(h, loaded),
            )
            for h in find(own, boxes)
        ]
        return hazards, optimizers
    finally:
        searcher.close()


def where_from(h: Hazard, loaded: Loaded) -> dict[str, Any]:
    """The op's Keras layer (and its producer's), and the author's line that created it."""
    name = display_name(h.op.name)
    out: dict[str, Any] = {}
    layer = loaded.layers.layer_of(name)
    if layer:
        out.update(layer=layer, layer_kind=loaded.layers.kind)
        if loaded.layers.model:
            out["model"] = loaded.layers.model
    if h.producer_op:
        producer = loaded.layers.layer_of(display_name(h.producer_op))
        if producer:
            out["producer_layer"] = producer
    origin = loaded.debug.origin(name) if loaded.debug is not None else None
    if origin:
        out["origin"] = origin
    return out


def _box_text(loaded: Loaded, chosen) -> str:
    parts = []
    for inp in loaded.inputs:
        (lo, hi), why = chosen[inp.name]
        parts.append(f"{inp.label} in [{lo:g}, {hi:g}] ({why})")
    return "; ".join(parts) or "no inputs"


def display_name(name: str) -> str:
    """The op's name without the call wrappers a SavedModel adds."""
    for prefix in _WRAPPERS:
        while name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def _fmt(iv_: iv.Interval) -> str:
    return f"[{iv_[0]:.4g}, {iv_[1]:.4g}]"


def _verdict(
    h: Hazard, searcher: Searcher, loaded: Loaded, box_text: str, dtype: str
) -> dict[str, Any]:
    name = display_name(h.op.name)
    out: dict[str, Any] = {
        "pattern": h.pattern,
        "op": name,
        "op_type": h.op.type,
        "scope": name.rsplit("/", 1)[0] if "/" in name else "",
        "canonical": h.canonical,
        "producer": h.producer,
        "producer_op": display_name(h.producer_op) if h.producer_op else None,
        "guarded": display_name(h.guarded.name) if h.guarded is not None else None,
        "range": [h.range[0], h.range[1]],
        "zone": h.zone,
        "what": h.what,
        "facts": h.facts,
        "dtype": dtype,
        "box": box_text,
    }
    if h.pattern == "absorbed":
        f = h.facts
        out.update(
            status="confirmed",
            symptom="absorbed-epsilon",
            detail=(
                f"in {f['dtype']}, {f['smallest']:.6g} + {f['epsilon']:g} == {f['smallest']:.6g}: the "
                f"other operand's range {_fmt(h.range)} rounds the epsilon away for every value"
            ),
        )
        return out
    if h.pattern == "underflow":
        f = h.facts
        out.update(
            status="confirmed",
            symptom="underflow",
            detail=(
                f"{f['value']:g} is exactly 0 in {f['dtype']} (smallest subnormal {f['smallest']:.3g})"
            ),
        )
        return out
    if not h.reaches:
        out.update(
            status="refuted",
            detail=(
                f"refuted by range: with {box_text} and the model's weights, the {h.what} stays in "
                f"{_fmt(h.range)}, away from {h.zone}"
            ),
        )
        return out
    witness = searcher.confirm(h)
    if witness is None:
        searched = (
            "; the loss gradient was searched too"
            if any(t.reads(h.op) for t in searcher.trainings)
            else ""
        )
        out.update(
            status="inconclusive",
            detail=(
                f"conditional: the {h.what} range {_fmt(h.range)} reaches {h.zone} for {box_text}, "
                f"but no input tried (corners, random points, gradient climb) made it non-finite{searched}"
            ),
        )
        return out
    inputs = describe_feed(witness.feed, loaded.inputs, searcher.trainings)
    out["repro"] = repro_record(h, witness)
    target = name if h.guarded is None else display_name(h.guarded.name)
    observed: dict[str, Any] = {"op": target, witness.symptom: witness.value}
    if witness.symptom == "value":
        what = f"{name} = {witness.value:g}"
    elif witness.symptom == "gradient":
        what = f"the gradient of {name} = {witness.value:g}"
    elif witness.symptom == "loss-gradient":
        observed["by"] = display_name(h.checked.name) if h.checked is not None else None
        what = _loss_gradient_text(h, witness)
    else:
        observed["weight"] = display_name(witness.weight or "")
        what = _training_text(witness, loaded)
    if witness.training is not None:
        observed["loss"] = witness.training.name
        observed["targets"] = {t.label: t.describe() for t in witness.training.targets}
    symptom = (
        f"{'nan' if np.isnan(witness.value) else 'inf'}-"
        f"{'value' if witness.symptom == 'value' else 'gradient'}"
    )
    if witness.off_loss:  # a trained graph, and no loss it keeps reads the op
        losses = ", ".join(t.name for t in searcher.trainings)
        out.update(
            status="inconclusive",
            symptom=symptom,
            inputs=inputs,
            observed=observed,
            detail=(
                f"conditional: at {_inputs_text(inputs)} ({dtype}), {what}; but no loss the "
                f"model keeps ({losses}) reads {name}, so no training step computes that "
                f"gradient: it needs a loss differentiated through the op"
            ),
        )
        return out
    out.update(
        status="confirmed",
        symptom=symptom,
        inputs=inputs,
        observed=observed,
        detail=f"at {_inputs_text(inputs)} ({dtype}), {what}; searched inside {box_text}",
    )
    return out


def _training_text(witness: Witness, loaded: Loaded) -> str:
    """The training symptom: which loss, which weight (its layer where the file records it)."""
    weight = display_name(witness.weight or "")
    layer = loaded.layers.layer_of(weight)
    whose = f"a weight of layer `{layer}` (`{weight}`)" if layer else f"the weight `{weight}`"
    loss = witness.training.name if witness.training is not None else "the loss"
    return f"a training step makes the gradient of {loss} with respect to {whose} {witness.value:g}"


def _loss_gradient_text(h: Hazard, witness: Witness) -> str:
    """The backward pass through an op no trainable weight is upstream of."""
    loss = witness.training.name if witness.training is not None else "the loss"
    by = display_name(h.checked.name) if h.checked is not None else "its input"
    return (
        f"the gradient of {loss} with respect to the op's input `{by}` is {witness.value:g} (no "
        "trainable weight is upstream of the op: a training step does not compute it, a "
        "gradient with respect to the inputs does)"
    )


REPRO_MAX_VALUES = 65536  # a larger witness is not written into a reproducer


def repro_record(h: Hazard, witness: Any) -> dict[str, Any] | None:
    """What ``--emit-repro`` needs to show the witness again: every input's exact value, the
    op's output tensor and, for a gradient symptom, the input it is differentiated by."""
    feed = {}
    for name, value in witness.feed.items():
        arr = np.asarray(value)
        if arr.size > REPRO_MAX_VALUES:
            return None
        feed[name] = {
            "dtype": arr.dtype.name,
            "shape": list(arr.shape),
            "values": arr.reshape(-1).tolist(),
        }
    return {
        "rung": "graph",
        "feed": feed,
        "target": h.op.outputs[0].name,
        "checked": h.checked.name
        if witness.symptom == "loss-gradient" and h.checked is not None
        else _gradient_input(h),
        "symptom": witness.symptom,
        "weight": f"{witness.weight}:0" if witness.weight else None,
        "loss": witness.training.loss.name if witness.training is not None else None,
    }


def _gradient_input(h: Hazard) -> str | None:
    """The input the search differentiated the op by (as ``Searcher._fetches`` chooses)."""
    x, target = h.checked, h.op.outputs[0]
    if x is None or not x.dtype.is_floating or x.dtype != target.dtype:
        return None
    return str(x.name)


def _inputs_text(inputs: dict[str, Any]) -> str:
    parts = []
    for label, value in inputs.items():
        if isinstance(value, list):
            shown = ", ".join(f"{v:.4g}" for v in value)
            parts.append(f"{label} = [{shown}]")
        else:
            parts.append(
                f"{label} in [{value['min']:.4g}, {value['max']:.4g}] (shape {value['shape']})"
            )
    return "; ".join(parts)
