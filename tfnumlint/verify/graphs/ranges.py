"""Interval propagation over a frozen model graph, with its real weights.

Each tensor gets a box: one interval per channel (the last axis) where the op keeps channels
apart (a dense or conv layer with constant weights, a bias, an elementwise activation), else
one interval for all its elements.  Elementwise ops use the transfers the op registry names
(verify/intervals.py); the weighted ops are computed from the weight tensors themselves, so a
layer with small weights gives a narrow range and one with large weights a wide one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from .. import intervals as iv

INF = math.inf
MAX_CHANNELS = 4096


@dataclass
class Box:
    lo: np.ndarray  # shape () or (channels,)
    hi: np.ndarray

    @classmethod
    def of(cls, lo: float, hi: float) -> Box:
        return cls(np.asarray(lo, np.float64), np.asarray(hi, np.float64))

    @property
    def hull(self) -> iv.Interval:
        return (float(np.min(self.lo)), float(np.max(self.hi)))

    @property
    def channels(self) -> int:
        return int(self.lo.size) if self.lo.ndim else 0


TOP = Box.of(-INF, INF)
_SPATIAL_SAME = frozenset(
    {"MaxPool", "AvgPool", "MaxPoolV2", "Identity", "StopGradient", "BroadcastTo", "Tile",
     "ResizeNearestNeighbor", "ResizeBilinear", "SpaceToBatchND", "BatchToSpaceND",
     "StridedSlice", "Slice", "GatherV2", "Squeeze", "ExpandDims"}
)  # fmt: skip
_HULL_SAME = frozenset({"Reshape", "Transpose", "Pack", "Unpack", "Split", "SplitV", "Max", "Min"})


def const_value(op: tf.Operation) -> np.ndarray | None:
    if op.type != "Const":
        return None
    try:
        value = tf.make_ndarray(op.get_attr("value"))
    except (ValueError, TypeError):
        return None
    return value if np.issubdtype(value.dtype, np.number) else None


def topological(graph: tf.Graph) -> list[tf.Operation]:
    """The graph's ops, each after every op it reads."""
    order: list[tf.Operation] = []
    done: set[str] = set()
    for start in graph.get_operations():
        stack = [(start, False)]
        while stack:
            op, expanded = stack.pop()
            if op.name in done:
                continue
            if expanded:
                done.add(op.name)
                order.append(op)
                continue
            stack.append((op, True))
            stack.extend((t.op, False) for t in op.inputs if t.op.name not in done)
    return order


def analyse(graph: tf.Graph, inputs: dict[str, iv.Interval], dtype: str) -> dict[str, Box]:
    """Box of every tensor by name; inputs by placeholder name."""
    rounder = iv.Rounder(dtype)
    out: dict[str, Box] = {}
    for op in topological(graph):
        box = _op_box(op, out, inputs, rounder)
        for t in op.outputs:
            out[t.name] = box
    return out


def _last_dim(op: tf.Operation) -> int | None:
    if not op.outputs or op.outputs[0].shape.rank in (None, 0):
        return None
    return op.outputs[0].shape.as_list()[-1]


def _op_box(op: tf.Operation, out: dict[str, Box], inputs, rounder: iv.Rounder) -> Box:
    ins = [out.get(t.name, TOP) for t in op.inputs]
    t = op.type
    if t == "Placeholder":
        return Box.of(*inputs.get(op.name, iv.TOP))
    value = const_value(op)
    if value is not None:
        return _const_box(value)
    special = _SPECIAL.get(t)
    if special is not None:
        box = special(op, ins, out)
    elif t in _SPATIAL_SAME and ins:
        box = ins[0]
    elif t in _HULL_SAME and ins:
        box = Box.of(*ins[0].hull) if t != "Pack" else Box.of(*iv.hull(*(b.hull for b in ins)))
    else:
        box = _registry_box(op, ins, out, rounder)
    box = _fit(box, _last_dim(op))
    if op.outputs and op.outputs[0].dtype.is_floating and np.all(box.lo <= box.hi):
        box = _rounded(box, rounder)
    return box


def _const_box(value: np.ndarray) -> Box:
    arr = np.asarray(value, np.float64)
    if arr.size == 0 or np.isnan(arr).any():
        return TOP
    if arr.ndim >= 1 and 1 < arr.shape[-1] <= MAX_CHANNELS:
        flat = arr.reshape(-1, arr.shape[-1])
        return Box(flat.min(axis=0), flat.max(axis=0))
    return Box.of(float(arr.min()), float(arr.max()))


def _fit(box: Box, channels: int | None) -> Box:
    """Per-channel intervals only when they line up with the output's last axis."""
    if box.channels and box.channels != channels:
        return Box.of(*box.hull)
    return box


def _rounded(box: Box, rounder: iv.Rounder) -> Box:
    if not box.channels:
        return Box.of(*rounder.interval(*box.hull))
    if rounder.dtype in ("float16", "float32", "float64"):
        return Box(_down(box.lo, rounder.dtype), -_down(-box.hi, rounder.dtype))
    pairs = [rounder.interval(float(a), float(b)) for a, b in zip(box.lo, box.hi, strict=True)]
    return Box(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


def _down(v: np.ndarray, dtype: str) -> np.ndarray:
    """iv.Rounder.down on an array: the largest value of the dtype <= v, flushed to 0 below
    the smallest normal, -inf for NaN."""
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    v = np.where(np.isnan(v), -INF, v)
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(dt)
        over = r.astype(np.float64) > v
        r = np.where(over, np.nextafter(r, np.asarray(-INF, dt)), r).astype(np.float64)
    r = np.where(v > float(info.max), float(info.max), r)
    r = np.where(v < -float(info.max), -INF, r)
    return np.where((r > 0) & (r < float(info.smallest_normal)), 0.0, r)


def _registry_box(op: tf.Operation, ins: list[Box], out, rounder) -> Box:
    """Elementwise ops: the registry's interval transfer, per channel when channels line up."""
    if op.type in ("Select", "SelectV2") and len(ins) == 3:
        hulls = {k: b.hull for k, b in out.items()}
        return Box.of(*iv.select_interval(op, hulls, rounder))
    table = iv.tables()
    entry = table.ops.get(op.type)
    name = entry.interval if entry is not None else None
    if op.type in table.unary and ins:
        fast = _VECTOR_UNARY.get(name or "")
        if fast is not None and ins[0].channels:
            return Box(*fast(ins[0].lo, ins[0].hi))
        return _map(lambda a: table.unary[op.type](a), ins[0])
    if op.type in table.binary and len(ins) >= 2:
        fn = table.binary[op.type]
        fast2 = _VECTOR_BINARY.get(name or "")
        if fast2 is not None and _aligned(ins[0], ins[1]):
            return Box(*fast2(ins[0].lo, ins[0].hi, ins[1].lo, ins[1].hi))
        if op.type in ("MatMul", "BatchMatMulV2", "BatchMatMulV3"):
            return _contract(op, ins) or Box.of(*_clean(fn(ins[0].hull, ins[1].hull)))
        return _map2(fn, ins[0], ins[1])
    return Box.of(*iv._op_interval(op, [b.hull for b in ins], {}, rounder))


def _aligned(x: Box, y: Box) -> bool:
    """Some channels, and the same number on both sides when both have them."""
    if not (x.channels or y.channels):
        return False
    return not (x.channels and y.channels and x.channels != y.channels)


def _vmul(a_lo, a_hi, b_lo, b_hi):
    """Interval product per channel, 0 * inf = 0 as in intervals.mul."""
    with np.errstate(invalid="ignore"):
        products = [np.nan_to_num(a * b, nan=0.0) for a in (a_lo, a_hi) for b in (b_lo, b_hi)]
    return np.minimum.reduce(products), np.maximum.reduce(products)


def _vsigmoid(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-v))


# per-channel transfers on arrays, by the registry's interval name (the scalar ones are in
# intervals.py; these agree with them and save a Python call per channel)
_VECTOR_UNARY: dict[str, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
    "same": lambda lo, hi: (lo, hi),
    "neg": lambda lo, hi: (-hi, -lo),
    "relu": lambda lo, hi: (np.maximum(lo, 0.0), np.maximum(hi, 0.0)),
    "relu6": lambda lo, hi: (np.clip(lo, 0.0, 6.0), np.clip(hi, 0.0, 6.0)),
    "monotone:sigmoid": lambda lo, hi: (_vsigmoid(lo), _vsigmoid(hi)),
    "monotone:tanh": lambda lo, hi: (np.tanh(lo), np.tanh(hi)),
}
_VECTOR_BINARY = {
    "add": lambda a, b, c, d: (a + c, b + d),
    "sub": lambda a, b, c, d: (a - d, b - c),
    "mul": _vmul,
    "maximum": lambda a, b, c, d: (np.maximum(a, c), np.maximum(b, d)),
    "minimum": lambda a, b, c, d: (np.minimum(a, c), np.minimum(b, d)),
}


def _clean(i: iv.Interval) -> iv.Interval:
    return iv.TOP if math.isnan(i[0]) or math.isnan(i[1]) else i


def _map(fn: Callable[[iv.Interval], iv.Interval], box: Box) -> Box:
    if not box.channels:
        return Box.of(*_clean(fn(box.hull)))
    pairs = [_clean(fn((float(a), float(b)))) for a, b in zip(box.lo, box.hi, strict=True)]
    return Box(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


def _map2(fn, x: Box, y: Box) -> Box:
    if x.channels and y.channels and x.channels != y.channels:
        return Box.of(*_clean(fn(x.hull, y.hull)))
    n = x.channels or y.channels
    if not n:
        return Box.of(*_clean(fn(x.hull, y.hull)))

    def at(b: Box, i: int) -> iv.Interval:
        return (float(b.lo[i]), float(b.hi[i])) if b.channels else b.hull

    pairs = [_clean(fn(at(x, i), at(y, i))) for i in range(n)]
    return Box(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


# ---------------------------------------------------------------- weighted ops


def _weights(t: tf.Tensor) -> np.ndarray | None:
    while t.op.type == "Identity" and t.op.inputs:
        t = t.op.inputs[0]
    return const_value(t.op)


def _term_bounds(x: Box, w: np.ndarray, in_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise min/max of w * x over x's box, x's channels along w's ``in_axis``."""
    shape = [1] * w.ndim
    shape[in_axis] = w.shape[in_axis]
    if x.channels == w.shape[in_axis]:
        lo, hi = x.lo.reshape(shape), x.hi.reshape(shape)
    else:
        lo, hi = np.full(shape, x.hull[0]), np.full(shape, x.hull[1])
    with np.errstate(invalid="ignore", over="ignore"):
        a, b = w * lo, w * hi
    a = np.where(w == 0, 0.0, a)
    b = np.where(w == 0, 0.0, b)
    return np.minimum(a, b), np.maximum(a, b)


def _channel_bounds(x: Box, n: int, padded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """x's bounds as two vectors of ``n`` (its channels, else its hull); a padded window may
    read zeros instead, so then 0 is inside every bound."""
    if x.channels == n:
        lo, hi = x.lo.astype(np.float64), x.hi.astype(np.float64)
    else:
        lo, hi = np.full(n, x.hull[0]), np.full(n, x.hull[1])
    if padded:
        lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    return lo, hi


def _linear(
    lo: np.ndarray, hi: np.ndarray, w: np.ndarray, w_abs: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Bounds of sum_i w_ij x_i for x_i in [lo_i, hi_i], as two matrix products: the centre
    times W, plus or minus the radius times |W| (``w_abs``: sum |w| where w summed several
    terms per i).  None when a bound is infinite (0 * inf needs the term-by-term form)."""
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    centre, radius = (lo + hi) / 2.0, (hi - lo) / 2.0
    mid, spread = centre @ w, radius @ w_abs
    with np.errstate(invalid="ignore", over="ignore"):
        return np.nan_to_num(mid - spread, nan=-INF), np.nan_to_num(mid + spread, nan=INF)


def _contract(op: tf.Operation, ins: list[Box]) -> Box | None:
    """x @ W with W constant: out_j in [sum_i min(W_ij x_i), sum_i max(W_ij x_i)]."""
    w = _weights(op.inputs[1])
    if w is None or w.ndim != 2:
        return None
    if _attr(op, "transpose_b") or _attr(op, "adj_y"):
        w = w.T
    if _attr(op, "transpose_a") or _attr(op, "adj_x"):
        return None
    w = w.astype(np.float64)
    fast = _linear(*_channel_bounds(ins[0], w.shape[0]), w, np.abs(w))
    if fast is not None:
        return Box(*fast)
    lo, hi = _term_bounds(ins[0], w, 0)
    with np.errstate(invalid="ignore"):
        return Box(np.nan_to_num(lo.sum(axis=0), nan=-INF), np.nan_to_num(hi.sum(axis=0), nan=INF))


def _attr(op: tf.Operation, name: str) -> bool:
    try:
        return bool(op.get_attr(name))
    except ValueError:
        return False


def _conv(op: tf.Operation, ins: list[Box], out) -> Box:
    w = _weights(op.inputs[1])
    if w is None or w.ndim != 4:
        return Box.of(*iv.sum_of(iv.mul(ins[0].hull, ins[1].hull)))
    w = w.astype(np.float64)
    padded = op.get_attr("padding") != b"VALID"  # a border window reads zeros
    depthwise = op.type == "DepthwiseConv2dNative"  # [kh, kw, cin, mult]: cin * mult channels
    lo, hi = _channel_bounds(ins[0], w.shape[2], padded)
    if np.isfinite(lo).all() and np.isfinite(hi).all():
        total, total_abs = w.sum(axis=(0, 1)), np.abs(w).sum(axis=(0, 1))  # [cin, cout]
        if depthwise:
            centre, radius = ((lo + hi) / 2.0)[:, None], ((hi - lo) / 2.0)[:, None]
            mid, spread = centre * total, radius * total_abs
            return Box((mid - spread).reshape(-1), (mid + spread).reshape(-1))
        fast = _linear(lo, hi, total, total_abs)
        if fast is not None:
            return Box(*fast)
    t_lo, t_hi = _term_bounds(ins[0], w, 2)
    if padded:
        t_lo, t_hi = np.minimum(t_lo, 0.0), np.maximum(t_hi, 0.0)
    if depthwise:
        return Box(t_lo.sum(axis=(0, 1)).reshape(-1), t_hi.sum(axis=(0, 1)).reshape(-1))
    return Box(t_lo.sum(axis=(0, 1, 2)), t_hi.sum(axis=(0, 1, 2)))


def _bias(op: tf.Operation, ins: list[Box], out) -> Box:
    x, b = ins[0], ins[1]
    if x.channels and b.channels and x.channels != b.channels:
        return Box.of(*iv.BINARY_TRANSFERS["add"](x.hull, b.hull))
    return Box(x.lo + b.lo, x.hi + b.hi)


def _batch_norm(op: tf.Operation, ins: list[Box], out) -> Box:
    """Inference batch norm: (x - mean) * scale / sqrt(var + eps) + offset, per channel."""
    scale, offset, mean, var = (_weights(t) for t in op.inputs[1:5])
    if any(v is None for v in (scale, offset, mean, var)) or _attr(op, "is_training"):
        return TOP
    eps = float(op.get_attr("epsilon"))
    k = scale / np.sqrt(var + eps)  # type: ignore[operator]
    shift = offset - mean * k  # type: ignore[operator]
    x = (
        ins[0]
        if ins[0].channels == k.size
        else Box(ins[0].lo * np.ones(k.size), ins[0].hi * np.ones(k.size))
    )
    a, b = x.lo * k, x.hi * k
    return Box(np.minimum(a, b) + shift, np.maximum(a, b) + shift)


def _softmax(op: tf.Operation, ins: list[Box], out) -> Box:
    """p_j >= 1 / (1 + sum_{k != j} exp(hi_k - lo_j)); p_j <= 1 / (1 + sum exp(lo_k - hi_j))."""
    x = ins[0]
    n = _last_dim(op)
    if not n or n < 2:
        return Box.of(0.0, 1.0) if not n else Box.of(1.0, 1.0)
    if x.channels != n:
        lo, hi = x.hull
        gap = hi - lo
        p_lo = 1 / (1 + (n - 1) * iv._exp(gap)) if math.isfinite(gap) else 0.0
        return Box.of(p_lo, 1.0)
    lows = np.where(np.isnan(x.lo), -INF, x.lo)
    highs = np.where(np.isnan(x.hi), INF, x.hi)
    # log sum_{k != j} exp(hi_k) - lo_j bounds the others against the j-th logit from below
    floor = _inv_one_plus_vec(_lse_without_each(highs) - lows)
    p_hi = _inv_one_plus_vec(_lse_without_each(lows) - highs)
    return Box(floor, p_hi)


def _lse_without_each(v: np.ndarray) -> np.ndarray:
    """log sum_{k != j} exp(v_k) for every j (prefix and suffix sums: no cancellation)."""
    with np.errstate(invalid="ignore", over="ignore"):
        prefix = np.concatenate([[-INF], np.logaddexp.accumulate(v)[:-1]])
        suffix = np.concatenate([np.logaddexp.accumulate(v[::-1])[::-1][1:], [-INF]])
        return np.nan_to_num(np.logaddexp(prefix, suffix), nan=INF)


def _inv_one_plus_vec(log_s: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(log_s)) per element, without overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(
            log_s > 0,
            np.exp(-np.minimum(log_s, 745.0)) / (1 + np.exp(-np.minimum(log_s, 745.0))),
            1 / (1 + np.exp(np.minimum(log_s, 0.0))),
        )


def _log_softmax(op: tf.Operation, ins: list[Box], out) -> Box:
    return Box.of(-INF, 0.0)


def _mean(op: tf.Operation, ins: list[Box], out) -> Box:
    return ins[0] if op.type == "Mean" else Box.of(*iv.sum_of(ins[0].hull))


def _sum(op: tf.Operation, ins: list[Box], out) -> Box:
    """A sum over axes whose sizes the graph fixes: n terms, each in the input's box, give
    [n * lo, n * hi] (widened by n roundings); otherwise a sum of unknown length."""
    count = _reduced_count(op)
    if count is None:
        return Box.of(*iv.sum_of(ins[0].hull))
    dtype = op.outputs[0].dtype
    slack = 1.0 + count * float(np.finfo(dtype.as_numpy_dtype).eps) if dtype.is_floating else 1.0
    x = ins[0] if _keeps_last_axis(op) else Box.of(*ins[0].hull)
    with np.errstate(invalid="ignore"):
        lo = np.where(x.lo < 0, x.lo * count * slack, x.lo * count / slack)
        hi = np.where(x.hi > 0, x.hi * count * slack, x.hi * count / slack)
    return Box(np.nan_to_num(lo, nan=-INF), np.nan_to_num(hi, nan=INF))


def _reduced_count(op: tf.Operation) -> int | None:
    axes = _weights(op.inputs[1])
    shape = op.inputs[0].shape
    if axes is None or shape.rank is None:
        return None
    dims = shape.as_list()
    count = 1
    for axis in np.asarray(axes).reshape(-1):
        size = dims[int(axis)] if -len(dims) <= int(axis) < len(dims) else None
        if size is None:
            return None
        count *= size
    return count if count >= 1 else None


def _keeps_last_axis(op: tf.Operation) -> bool:
    axes = _weights(op.inputs[1])
    rank = op.inputs[0].shape.rank
    return (
        axes is not None
        and bool(rank)
        and all(int(a) % rank != rank - 1 for a in np.asarray(axes).reshape(-1))
    )


def _pad(op: tf.Operation, ins: list[Box], out) -> Box:
    return Box(np.minimum(ins[0].lo, 0.0), np.maximum(ins[0].hi, 0.0))


def _concat(op: tf.Operation, ins: list[Box], out) -> Box:
    parts = ins[:-1]
    axis = _weights(op.inputs[-1])
    rank = op.outputs[0].shape.rank
    last = axis is not None and rank is not None and int(axis) in (-1, rank - 1)
    if last and all(b.channels for b in parts):
        return Box(np.concatenate([b.lo for b in parts]), np.concatenate([b.hi for b in parts]))
    return Box.of(*iv.hull(*(b.hull for b in parts)))


def _add_n(op: tf.Operation, ins: list[Box], out) -> Box:
    total = ins[0]
    for b in ins[1:]:
        total = _map2(iv.BINARY_TRANSFERS["add"], total, b)
    return total


def _cast(op: tf.Operation, ins: list[Box], out) -> Box:
    return ins[0]


_SPECIAL: dict[str, Callable[[tf.Operation, list[Box], dict[str, Box]], Box]] = {
    "Conv2D": _conv,
    "DepthwiseConv2dNative": _conv,
    "BiasAdd": _bias,
    "FusedBatchNorm": _batch_norm,
    "FusedBatchNormV3": _batch_norm,
    "Softmax": _softmax,
    "LogSoftmax": _log_softmax,
    "Mean": _mean,
    "Sum": _sum,
    "Pad": _pad,
    "PadV2": _pad,
    "MirrorPad": _pad,
    "ConcatV2": _concat,
    "AddN": _add_n,
    "Cast": _cast,
}
