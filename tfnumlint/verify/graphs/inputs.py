"""The box each model input is checked in.

In order: ``--input-range NAME=LO:HI``; a Rescaling right after the input (``x * s + o``
maps the input onto [0, 1] or [-1, 1], so the input is [0, (1 - o) / s]); a Normalization
right after it (``(x - mean) / std``: the input is mean ± 6 std); the dtype (uint8 is
[0, 255], int8 [-128, 127]); else the default box [-10, 10].
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from .loader import Input
from .ranges import Box, const_value

DEFAULT_BOX = (-10.0, 10.0)
DEFAULT_WHY = "the default box"  # how a box no fact of the model gives is named
NORMAL_SIGMAS = 6.0
_INT_BOXES = {"uint8": (0.0, 255.0), "int8": (-128.0, 127.0), "bool": (0.0, 1.0)}


def consumers(t: tf.Tensor) -> list[tf.Operation]:
    """The ops reading ``t``, through casts and identities."""
    out = []
    for op in t.consumers():
        if op.type in ("Cast", "Identity") and op.outputs:
            out.extend(consumers(op.outputs[0]))
        else:
            out.append(op)
    return out


def _scalar(t: tf.Tensor) -> float | None:
    while t.op.type == "Identity" and t.op.inputs:
        t = t.op.inputs[0]
    value = const_value(t.op)
    if value is None or value.size == 0 or np.ptp(value) != 0:
        return None
    return float(value.reshape(-1)[0])


def _first_scalar(op: tf.Operation) -> float | None:
    """The value of the op's constant scalar operand (a Rescaling's scale or offset)."""
    for t in op.inputs:
        value = _scalar(t)
        if value is not None:
            return value
    return None


def rescaling_box(x: tf.Tensor) -> tuple[tuple[float, float], str] | None:
    for op in consumers(x):
        if op.type != "Mul":
            continue
        scale = _first_scalar(op)
        if scale is None or not 0 < scale < 1:
            continue
        offset = 0.0
        for after in consumers(op.outputs[0]):
            if after.type in ("Add", "AddV2"):
                o = _first_scalar(after)
                offset = o if o is not None else 0.0
        if offset > 0:
            continue
        hi = (1.0 - offset) / scale
        return (0.0, hi), f"a Rescaling by {scale:.6g} (offset {offset:g}) reads it"
    return None


def normalization_box(
    x: tf.Tensor, boxes: dict[str, Box]
) -> tuple[tuple[float, float], str] | None:
    for op in consumers(x):
        if op.type != "Sub" or op.inputs[0].op.type in ("Const",):
            continue
        mean = const_value(op.inputs[1].op) if op.inputs[1].op.type == "Const" else None
        if mean is None:
            continue
        for after in consumers(op.outputs[0]):
            if after.type != "RealDiv":
                continue
            std = boxes.get(after.inputs[1].name)
            if std is None or not np.isfinite(std.hull[1]) or std.hull[0] <= 0:
                continue
            spread = NORMAL_SIGMAS * std.hull[1]
            box = (float(np.min(mean)) - spread, float(np.max(mean)) + spread)
            return (
                box,
                f"a Normalization (stored mean and variance) reads it: mean ± {NORMAL_SIGMAS:g} std",
            )
    return None


def input_boxes(
    graph: tf.Graph,
    inputs: list[Input],
    given: dict[str, list[float]],
    boxes: dict[str, Box] | None,
) -> dict[str, tuple[tuple[float, float], str]]:
    """Placeholder name -> (box, where it comes from)."""
    out = {}
    for inp in inputs:
        user = given.get(inp.label) or given.get(inp.name)
        x = graph.get_tensor_by_name(f"{inp.name}:0")
        if user is not None:
            out[inp.name] = ((float(user[0]), float(user[1])), "--input-range")
        elif inp.dtype in _INT_BOXES:
            out[inp.name] = (_INT_BOXES[inp.dtype], f"its dtype {inp.dtype}")
        elif (found := rescaling_box(x)) is not None or (
            boxes is not None and (found := normalization_box(x, boxes)) is not None
        ):
            out[inp.name] = found
        elif tf.as_dtype(inp.dtype).is_unsigned:
            out[inp.name] = ((0.0, DEFAULT_BOX[1]), f"{DEFAULT_WHY}, unsigned")
        else:
            out[inp.name] = (DEFAULT_BOX, DEFAULT_WHY)
    return out
