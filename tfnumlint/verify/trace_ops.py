"""The op table a traced probe may call: one batch-aware wrapper per allow-listed op, built from
the registry (``ops.py``'s ``trace`` field) plus the few internal ones.  Every input is shaped
``[N, 1, K]`` (axis 0 the probe point), so the wrappers shift the user's axes by one and
reductions never mix points; shape ops move values without creating any, so ranges are kept.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops
from ..analysis.slicing.contract import KEEP_KWARGS  # walk: read as trace.walk too

_unsafe: list[tuple[int, frozenset[str]]] = []


def unsafe_types() -> frozenset[str]:
    """TF graph op types that can produce NaN/Inf: those of the registry's ops with a danger
    zone (recomputed when an op is registered)."""
    if not _unsafe or _unsafe[0][0] != ops.version():
        types = frozenset(t for op in ops.REGISTRY.values() if op.danger for t in op.graph)
        _unsafe[:] = [(ops.version(), types)]
    return _unsafe[0][1]


DTYPES = {
    "float16": tf.float16,
    "bfloat16": tf.bfloat16,
    "float32": tf.float32,
    "float64": tf.float64,
}
# dtypes a cast may name inside a float probe; "same" is the probe's own dtype
CAST_DTYPES = {**DTYPES, "int32": tf.int32, "int64": tf.int64, "bool": tf.bool}
# roles of ops, from their registry flags (snapshots taken at import)
SOFTMAX_OPS = ops.ops_with(lambda op: op.row_coupled)
LOGIT_OPS = ops.ops_with(lambda op: op.logits_input)
PROB_OPS = ops.ops_with(lambda op: op.probability)


class UnsupportedProbe(Exception):
    """The probe cannot be traced: an op outside the table, a bad shape, a malformed tree."""


# ---------------------------------------------------------------- batch-aware op wrappers


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (tf.Tensor, tf.Variable))


def _rank(x: Any) -> int:
    return x.shape.rank if _is_tensor(x) and x.shape.rank is not None else 0


def _shift_axis(axis: Any, rank: int) -> Any:
    """Map a user axis onto the batched tensor: the batch axis 0 is never reduced."""
    if isinstance(axis, tf.Tensor):
        static = axis.numpy().tolist() if tf.executing_eagerly() else tf.get_static_value(axis)
        # An axis the slice could not see (self.axis, an argument): reduce every non-point
        # axis.  Element-wise hazards do not depend on which axis is reduced.
        axis = static
    if axis is None:
        return list(range(1, rank))
    if isinstance(axis, (list, tuple)):
        return [_shift_axis(a, rank) for a in axis]
    axis = int(axis)
    if rank and not -rank < axis < rank - 1 + int(axis < 0):
        # TF would reject it on the user's value; on the batched one it would reach the point
        # axis (mixing probe points) or past the end
        raise UnsupportedProbe(f"axis {axis} of a rank-{rank - 1} value")
    return axis + 1 if axis >= 0 else axis


def align(*values: Any) -> list[Any]:
    """Broadcast batched operands as their user shapes broadcast: user shapes align on the
    right, so a lower-rank operand gets its new axes after the point axis, never before it
    (a per-point scalar [N] against [N, 1, K] must not meet another point's row)."""
    values = _same_dtype(values)
    ranks = [_rank(v) for v in values if _is_tensor(v) and _rank(v) >= 1]
    if not ranks:
        return list(values)
    top = max(ranks)
    out = []
    for v in values:
        r = _rank(v)
        if _is_tensor(v) and 1 <= r < top:
            v = tf.reshape(v, tf.concat([tf.shape(v)[:1], [1] * (top - r), tf.shape(v)[1:]], 0))
        out.append(v)
    return out


def _same_dtype(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Operands of one elementwise op in one dtype.  The probe chose every input's dtype (the
    code's own may differ: a float32 constant next to a float16 activation, an int count), so
    a mismatch is the probe's, never a finding: use the widest float among them."""
    floats = [v.dtype for v in values if _is_tensor(v) and v.dtype.is_floating]
    ints = any(_is_tensor(v) and v.dtype.is_integer for v in values)
    if not floats and not (ints and any(isinstance(v, float) for v in values)):
        return values
    target = max(floats, key=lambda d: d.size) if floats else tf.float32
    return tuple(
        tf.cast(v, target)
        if _is_tensor(v) and v.dtype != target and (v.dtype.is_floating or v.dtype.is_integer)
        else v
        for v in values
    )


def _elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kw: Any) -> Any:
        names = list(kw)
        values = align(*args, *kw.values())
        return fn(*values[: len(args)], **dict(zip(names, values[len(args) :], strict=True)))

    return wrapped


def _add(x: Any, y: Any) -> Any:
    return x + y


def _subtract(x: Any, y: Any) -> Any:
    return x - y


def _multiply(x: Any, y: Any) -> Any:
    return x * y


def _compare(op: str) -> Callable[..., Any]:
    import operator

    fn = {
        ">": operator.gt,
        "<": operator.lt,
        ">=": operator.ge,
        "<=": operator.le,
        "==": tf.math.equal,
        "!=": tf.math.not_equal,
    }[op]

    def wrapped(x: Any, y: Any) -> Any:
        x, y = align(x, y)
        if op in ("==", "!=") and not _is_tensor(x) and not _is_tensor(y):
            return x == y if op == "==" else x != y
        return fn(x, y)

    return wrapped


def _reduction(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(x: Any, axis: Any = None, keepdims: Any = False, **kw: Any) -> Any:
        x = tf.convert_to_tensor(x)
        keepdims = _static_bool(keepdims)
        return fn(x, axis=_shift_axis(axis, _rank(x)), keepdims=keepdims, **kw)

    return wrapped


def _axis_op(fn: Callable[..., Any], default: Any = -1, name: str = "axis") -> Callable[..., Any]:
    def wrapped(x: Any, *args: Any, **kw: Any) -> Any:
        x = tf.convert_to_tensor(x)
        axis = kw.pop(name, args[0] if args else default)
        return fn(x, **{name: _shift_axis(axis, _rank(x))}, **kw)

    return wrapped


def _norm(x: Any, ord: Any = "euclidean", axis: Any = None, keepdims: bool = False) -> Any:
    """tf.norm per point.  With no axis TF takes the vector norm of the flattened tensor (for
    every ``ord``), so each point is flattened on its own, never across points."""
    x = tf.convert_to_tensor(x)
    if ord is None:
        ord = "euclidean"  # keras.ops.norm's default
    if axis is None:
        flat = tf.reshape(x, tf.concat([tf.shape(x)[:1], [-1]], 0))
        out = tf.norm(flat, ord=ord, axis=-1)
        if keepdims:
            out = tf.reshape(out, tf.concat([tf.shape(x)[:1], [1] * (_rank(x) - 1)], 0))
        return out
    return tf.norm(x, ord=ord, axis=_shift_axis(axis, _rank(x)), keepdims=keepdims)


def _matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
    """Matmul on per-point [1, K] tensors: transpose b when the inner dims do not match."""
    a, b = tf.convert_to_tensor(a), tf.convert_to_tensor(b)
    # a constant whose shape the probe dropped (tf.ones([5, 1])): a square matrix of its value
    if _rank(b) < 2 <= _rank(a):
        b = tf.fill([a.shape[-1], a.shape[-1]], tf.cast(tf.reshape(b, [-1])[0], a.dtype))
    if _rank(a) < 2 <= _rank(b):
        a = tf.fill([b.shape[-2], b.shape[-2]], tf.cast(tf.reshape(a, [-1])[0], b.dtype))
    a, b = _same_dtype((a, b))
    if not transpose_b and a.shape[-1] != b.shape[-2] and a.shape[-1] == b.shape[-1]:
        transpose_b = True
    return tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)


def _clip_by_norm(t: Any, clip_norm: Any, axes: Any = None) -> Any:
    t = tf.convert_to_tensor(t)
    return tf.clip_by_norm(t, clip_norm, axes=_shift_axis(axes, _rank(t)))


def _static_bool(flag: Any) -> bool:
    """keepdims given as an opaque input: use its static value, else False."""
    if _is_tensor(flag):
        value = tf.get_static_value(flag)
        return bool(value) if value is not None else False
    return bool(flag)


def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if _is_tensor(condition) and condition.dtype != tf.bool:
        condition = tf.not_equal(condition, 0)  # an opaque condition input: non-zero is true
    if x is None and y is None:
        raise UnsupportedProbe("tf.where with only a condition (the indices form)")
    condition, x, y = align(condition, x, y)
    if _is_tensor(x) and _is_tensor(y) and x.dtype != y.dtype:  # a bool/int branch: as float
        target = x.dtype if x.dtype.is_floating else y.dtype
        x, y = tf.cast(x, target), tf.cast(y, target)
    elif _is_tensor(x) and not _is_tensor(y):
        y = tf.cast(y, x.dtype)
    elif _is_tensor(y) and not _is_tensor(x):
        x = tf.cast(x, y.dtype)
    return tf.where(condition, x, y)


def _cast(x: Any, dtype: Any = None) -> Any:
    return tf.cast(x, dtype) if isinstance(dtype, tf.DType) else tf.convert_to_tensor(x)


def _divide(x: Any, y: Any) -> Any:
    x, y = align(x, y)
    return x / y


def _pow(x: Any, y: Any) -> Any:
    x, y = align(x, y)
    return x**y


def _constant(x: Any, dtype: Any = None) -> Any:
    """tf.constant / tf.convert_to_tensor: of a tensor, the tensor itself (cast if asked)."""
    if _is_tensor(x):
        return tf.cast(x, dtype) if isinstance(dtype, tf.DType) else x
    return tf.constant(x, dtype=dtype)


def _like(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(x: Any, dtype: Any = None) -> Any:
        if not _is_tensor(x):  # tf.ones(shape): the values are all the same, a scalar says it
            return fn(tf.constant(0.0), dtype=dtype if isinstance(dtype, tf.DType) else None)
        return fn(x, dtype=dtype if isinstance(dtype, tf.DType) else x.dtype)

    return wrapped


# -- shape ops: values move but are never created, so ranges are kept
def _reshape(x: Any, shape: Any = None) -> Any:
    """Reshape each point's value; a shape the probe's small tensors cannot take keeps the
    value as it is (same elements, so the same range)."""
    x = tf.convert_to_tensor(x)
    if isinstance(shape, (list, tuple)) and all(isinstance(d, (int, float)) for d in shape):
        dims = [int(d) for d in shape]
        size = int(np.prod(x.shape[1:])) if x.shape[1:].is_fully_defined() else None
        known = int(np.prod([d for d in dims if d != -1])) if dims else 1
        if size is not None and (
            (-1 not in dims and known == size) or (-1 in dims and known and size % known == 0)
        ):
            return tf.reshape(x, tf.concat([tf.shape(x)[:1], dims], 0))
    return x


def _transpose(x: Any, perm: Any = None) -> Any:
    x = tf.convert_to_tensor(x)
    user = _rank(x) - 1
    if perm is None:
        perm = list(range(user))[::-1]
    if not isinstance(perm, (list, tuple)) or len(perm) != user:
        raise UnsupportedProbe(f"a transpose perm {perm!r} for a rank-{user} value")
    return tf.transpose(x, [0, *[int(p) % user + 1 for p in perm]])


def _expand_dims(x: Any, axis: Any = -1) -> Any:
    x = tf.convert_to_tensor(x)
    axis = int(axis)
    return tf.expand_dims(x, axis + 1 if axis >= 0 else axis)


def _squeeze(x: Any, axis: Any = None) -> Any:
    x = tf.convert_to_tensor(x)
    axes = [axis] if isinstance(axis, (int, float)) else list(axis or [])
    shifted = [int(a) + 1 if a >= 0 else int(a) for a in axes]
    if not shifted or any(x.shape[a] != 1 for a in shifted):
        return x  # nothing of size 1 to drop in the probe's shapes: the values are unchanged
    return tf.squeeze(x, shifted)


def _dropout(x: Any, rate: Any = 0.0) -> Any:
    """A probe point is one where the unit is kept: ``x / (1 - rate)``."""
    return tf.convert_to_tensor(x) / (1.0 - float(rate))


def _embedding_lookup(params: Any, ids: Any, depth: Any = None) -> Any:
    """A Keras Embedding's lookup: the rows of ``params`` the whole-number ``ids`` pick."""
    return tf.gather(params, tf.cast(ids, tf.int32))


def _einsum_pair(equation: Any, a: Any, b: Any) -> Any:
    """``tf.einsum`` of two operands, in one dtype."""
    a, b = _same_dtype((tf.convert_to_tensor(a), tf.convert_to_tensor(b)))
    return tf.einsum(str(equation), a, b)


def _conv1d_nwc(x: Any, *_: Any) -> Any:
    """A probe point has no steps to slide a kernel along (training runs do: ``repro_code``)."""
    raise UnsupportedProbe("a 1-D convolution on a probe point (it has no steps axis)")


def _recurrent(x: Any, *_: Any) -> Any:
    """A probe point has no steps to run a recurrent layer over (training runs do:
    ``repro_code``)."""
    raise UnsupportedProbe("a recurrent layer on a probe point (it has no steps axis)")


def _normal_draw(x: Any, mean: Any = 0.0, stddev: Any = 1.0, width: Any = None) -> Any:
    """A probe point takes the draw at its mean (training runs draw it: ``repro_code``); with
    ``width``, ``x``'s last axis is that many entries."""
    x = tf.convert_to_tensor(x)
    shape = tf.shape(x) if width is None else tf.concat([tf.shape(x)[:-1], [int(width)]], 0)
    return tf.zeros(shape, x.dtype) + float(mean)


def _per_point(fn: Callable[..., Any], x: Any, *weights: Any) -> Any:
    """``fn`` on each probe point's own images and weights: a training rung's image op has
    image axes that a finding's per-point rows ([N, 1, K]) do not have."""
    x = tf.convert_to_tensor(x)
    if _rank(x) != 5:
        raise UnsupportedProbe(f"an image op on a rank-{_rank(x) - 1} value (not NHWC images)")
    if not weights:
        return tf.map_fn(fn, x)
    ws = [tf.broadcast_to(tf.cast(w, x.dtype), [tf.shape(x)[0], *w.shape[1:]]) for w in weights]
    return tf.map_fn(lambda t: fn(t[0], *t[1:]), (x, *ws), fn_output_signature=x.dtype)


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def _conv2d_nhwc(x: Any, filters: Any, strides: Any, padding: Any) -> Any:
    """``tf.nn.conv2d`` of NHWC images, per probe point (``conv2d`` in a rung's slice)."""
    step, pad = _ints(strides), str(padding)
    return _per_point(lambda a, w: tf.nn.conv2d(a, w, step, pad), x, filters)


def _pool2d_nhwc(x: Any, window: Any, pooling: Any, strides: Any, padding: Any) -> Any:
    """``tf.nn.pool`` of NHWC images, per probe point (``max_pool``/``avg_pool`` in a rung's
    slice)."""
    size, step, kind, pad = _ints(window), _ints(strides), str(pooling), str(padding)
    return _per_point(lambda a: tf.nn.pool(a, size, kind, strides=step, padding=pad), x)


def _values_kept(x: Any, *_: Any, **__: Any) -> Any:
    """tile / gather: every output element is one of the input's elements."""
    return tf.convert_to_tensor(x)


def _concat(x: Any, axis: Any = 0) -> Any:
    if _is_tensor(x):  # concat of one stacked tensor: the same elements, rearranged
        return x
    values = align(*[tf.convert_to_tensor(v) for v in x])
    return tf.concat(values, _shift_axis(axis, _rank(values[0])))


def _xent(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kw: Any) -> Any:
        names = ("labels", "logits")
        kw.update({n: a for n, a in zip(names, args, strict=False) if n not in kw})
        if "axis" in kw:
            logits = tf.convert_to_tensor(kw["logits"])
            kw["axis"] = _shift_axis(kw["axis"], _rank(logits))
        return fn(**kw)

    return wrapped


def _weighted_xent(labels: Any, logits: Any, pos_weight: Any) -> Any:
    return tf.nn.weighted_cross_entropy_with_logits(
        labels=labels, logits=logits, pos_weight=pos_weight
    )


def _sparse_xent(labels: Any, logits: Any) -> Any:
    """``sparse_softmax_cross_entropy_with_logits``: the dense op on one-hot rows of the ids,
    which is what it computes for every valid id (a probe's row holds its id first)."""
    logits, labels = tf.convert_to_tensor(logits), tf.convert_to_tensor(labels)
    if labels.shape.rank == logits.shape.rank:
        labels = labels[..., 0]
    rows = tf.one_hot(tf.cast(labels, tf.int32), tf.shape(logits)[-1], dtype=logits.dtype)
    return tf.nn.softmax_cross_entropy_with_logits(labels=rows, logits=logits)


def _one_hot(indices: Any, depth: Any, **kw: Any) -> Any:
    if isinstance(depth, float) and depth.is_integer():  # probe constants are floats
        depth = int(depth)
    if "axis" in kw:
        kw["axis"] = _shift_axis(kw["axis"], _rank(tf.convert_to_tensor(indices)) + 1)
    return tf.one_hot(tf.cast(indices, tf.int32), depth, **kw)


def _count_nonzero(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = tf.int64) -> Any:
    x = tf.convert_to_tensor(x)
    return tf.math.count_nonzero(
        x, axis=_shift_axis(axis, _rank(x)), keepdims=keepdims, dtype=dtype
    )


def _l2_normalize(x: Any, *args: Any, **kw: Any) -> Any:
    return _axis_op(tf.math.l2_normalize, default=None)(x, *args, **kw)


def _logical(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A logical op given a number (an opaque mask input the probe fills with floats): as
    ``tf.where`` reads a condition, non-zero is true."""

    def wrapped(*args: Any) -> Any:
        values = align(*args)
        return fn(
            *(tf.not_equal(v, 0) if _is_tensor(v) and v.dtype != tf.bool else v for v in values)
        )

    return wrapped


# the wrappers a registry trace spec may name: "reduction(math.reduce_sum)"
_WRAPPERS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "reduction": _reduction,
    "axis_op": _axis_op,
    "elementwise": _elementwise,
    "xent": _xent,
    "like": _like,
    "compare": _compare,
    "logical": _logical,
}
_SPEC = re.compile(r"(\w+)\((.+)\)")


def builder(spec: str) -> Callable[..., Any]:
    """The TF function a registry entry's ``trace`` names: ``"math.log"`` is ``tf.math.log``,
    ``"_pow"`` a wrapper of this module, ``"reduction(math.reduce_sum)"`` a wrapped one (the
    argument of ``compare(...)`` is an operator)."""
    m = _SPEC.fullmatch(spec)
    if m is None:
        return _resolve(spec)
    wrapper, arg = m.groups()
    return _WRAPPERS[wrapper](arg if wrapper == "compare" else _resolve(arg))


def _resolve(name: str) -> Callable[..., Any]:
    if name.startswith("_"):
        fn: Callable[..., Any] = globals()[name]
        return fn
    obj: Any = tf
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def _op_function(op: ops.Op) -> Callable[..., Any]:
    fn = builder(op.trace or "")
    return _float_operand(fn) if op.float_only else fn


def _internal_ops() -> dict[str, Callable[..., Any]]:
    """The probe's operators (``a + b``, ``a > b``), which no spelling names."""
    return {
        **{
            f"bin{op}": _elementwise(fn)
            for op, fn in (("+", _add), ("-", _subtract), ("*", _multiply))
        },
        **{f"cmp{op}": _compare(op) for op in (">", "<", ">=", "<=", "==", "!=")},
    }


def _float_operand(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A float-only op given a bool or int tensor (a mask, a count): keras.ops casts it to
    float, and the value it computes is the same."""

    def wrapped(x: Any, *args: Any, **kw: Any) -> Any:
        if _is_tensor(x) and (x.dtype == tf.bool or x.dtype.is_integer):
            x = tf.cast(x, tf.float32)
        return fn(x, *args, **kw)

    return wrapped


# Canonical op -> TF function: the only callables a probe can reach.  The traced ops of the
# registry, resolved once and again whenever an op is registered (op_table() keeps it in step).
OP_TABLE: dict[str, Callable[..., Any]] = _internal_ops()
_REGISTERED: set[str] = set()  # the OP_TABLE keys that came from the registry
_synced = [-1]  # the registry version OP_TABLE reflects


def op_table() -> dict[str, Callable[..., Any]]:
    """OP_TABLE, in step with the op registry (an entry set by hand, as a test does, stays)."""
    if _synced[0] != ops.version():
        for name in _REGISTERED - set(ops.REGISTRY):
            OP_TABLE.pop(name, None)
        _REGISTERED.intersection_update(ops.REGISTRY)
        for op in ops.REGISTRY.values():
            if op.trace and op.name not in _REGISTERED:
                OP_TABLE[op.name] = _op_function(op)
                _REGISTERED.add(op.name)
        _synced[0] = ops.version()
    return OP_TABLE


_IDENT = str.maketrans({"+": "add", "-": "sub", "*": "mul", ">": "gt", "<": "lt", "=": "e"})


def op_ident(name: str) -> str:
    """The namespace identifier of an op ("bin+" is not an identifier)."""
    return "op_" + (
        name.replace(">=", "ge")
        .replace("<=", "le")
        .replace("==", "eq")
        .replace("!=", "ne")
        .translate(_IDENT)
    )


op_table()
CALL_BINOPS = {"+": "bin+", "-": "bin-", "*": "bin*", "/": "divide", "**": "pow", "@": "matmul"}
CMPOPS: dict[str, ast.cmpop] = {
    ">": ast.Gt(),
    "<": ast.Lt(),
    ">=": ast.GtE(),
    "<=": ast.LtE(),
    "==": ast.Eq(),
    "!=": ast.NotEq(),
}
KWARGS = KEEP_KWARGS
