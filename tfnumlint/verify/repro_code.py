"""A probe tree as plain TensorFlow source, for reproducer scripts (no TensorFlow import here).

The verifier evaluates a tree through ``trace.py``'s op wrappers on batched inputs (a point
axis in front); a reproducer evaluates the same tree once, at the user's own shapes, so the
user's axes apply as written.  Each op is written from its registry ``trace`` name: a TF path
(``"math.log"``) or a wrapped one (``"reduction(math.reduce_sum)"``) is the TF call itself; an
operator wrapper is the operator; a wrapper of ``trace.py`` is a small helper that does what it
does without the point axis, defined in the script only when used.
"""

from __future__ import annotations

import keyword
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import ops
from ..analysis.slicing.contract import BINARY_OPERATORS, STRUCTURAL

if TYPE_CHECKING:
    from ..model import Finding

INFIX = {"_add": "+", "_subtract": "-", "_multiply": "*", "_divide": "/", "_pow": "**"}
BINOPS = BINARY_OPERATORS
RESERVED = {"tf", "np", "sys", "math", "dtype", "DTYPE", "xs", "tape", "target", "loss", "values"}
RESERVED |= {"forward", "evaluate", "main", "witness", "shows", "FORMS", "THRESHOLD"}
INT_PARAMS = STRUCTURAL | {"depth"}

# What each trace.py wrapper does, without the point axis (its docstring there says why).
HELPERS = {
    "_where": """def _where(condition, x, y):
    if condition.dtype != tf.bool:
        condition = tf.not_equal(condition, 0)
    x, y = tf.convert_to_tensor(x), tf.convert_to_tensor(y)
    if x.dtype != y.dtype:
        target = x.dtype if x.dtype.is_floating else y.dtype
        x, y = tf.cast(x, target), tf.cast(y, target)
    return tf.where(condition, x, y)""",
    "_matmul": """def _matmul(a, b, transpose_a=False, transpose_b=False):
    a, b = tf.convert_to_tensor(a), tf.convert_to_tensor(b)
    if b.shape.rank < 2 <= a.shape.rank:
        b = tf.fill([a.shape[-1], a.shape[-1]], tf.cast(tf.reshape(b, [-1])[0], a.dtype))
    if a.shape.rank < 2 <= b.shape.rank:
        a = tf.fill([b.shape[-2], b.shape[-2]], tf.cast(tf.reshape(a, [-1])[0], b.dtype))
    if not transpose_b and a.shape[-1] != b.shape[-2] and a.shape[-1] == b.shape[-1]:
        transpose_b = True
    return tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)""",
    "_norm": """def _norm(x, ord="euclidean", axis=None, keepdims=False):
    return tf.norm(x, ord=ord or "euclidean", axis=axis, keepdims=keepdims)""",
    "_sparse_xent": """def _sparse_xent(labels, logits):
    logits, labels = tf.convert_to_tensor(logits), tf.convert_to_tensor(labels)
    if labels.shape.rank == logits.shape.rank:  # one id per row, in a row's first entry
        labels = labels[..., 0]
    rows = tf.one_hot(tf.cast(labels, tf.int32), tf.shape(logits)[-1], dtype=logits.dtype)
    return tf.nn.softmax_cross_entropy_with_logits(labels=rows, logits=logits)""",
    "_one_hot": """def _one_hot(indices, depth, **kw):
    return tf.one_hot(tf.cast(indices, tf.int32), int(depth), **kw)""",
    "_reshape": """def _reshape(x, shape=None):
    x = tf.convert_to_tensor(x)
    dims = [int(d) for d in shape] if isinstance(shape, (list, tuple)) else None
    known = int(np.prod([d for d in dims if d != -1])) if dims else 1
    size = int(np.prod(x.shape))
    if dims and ((-1 not in dims and known == size) or (-1 in dims and size % known == 0)):
        return tf.reshape(x, dims)
    return x  # a shape this small slice cannot take: the same values""",
    "_transpose": """def _transpose(x, perm=None):
    x = tf.convert_to_tensor(x)
    return tf.transpose(x, None if perm is None else [int(p) % x.shape.rank for p in perm])""",
    "_expand_dims": """def _expand_dims(x, axis=-1):
    return tf.expand_dims(x, int(axis))""",
    "_squeeze": """def _squeeze(x, axis=None):
    x = tf.convert_to_tensor(x)
    axes = [axis] if isinstance(axis, (int, float)) else list(axis or [])
    if not axes or any(x.shape[int(a)] != 1 for a in axes):
        return x
    return tf.squeeze(x, [int(a) for a in axes])""",
    "_values_kept": """def _values_kept(x, *_, **__):
    return tf.convert_to_tensor(x)  # tile / gather: every element is one of the input's""",
    "_dropout": """def _dropout(x, rate):
    # Keras's Dropout as it trains: an entry kept with probability 1 - rate, scaled by
    # 1 / (1 - rate), else 0; the masks come from one seeded generator that each run resets
    keep = MASKS.uniform(tf.shape(x), dtype=x.dtype) >= rate
    return tf.where(keep, x / (1 - rate), tf.zeros_like(x))""",
    "_conv2d_nhwc": """def _conv2d_nhwc(x, filters, strides, padding):
    # tf.nn.conv2d of channels-last images: strides [1, sh, sw, 1], "SAME" or "VALID"
    x = tf.convert_to_tensor(x)
    out = tf.nn.conv2d(x, tf.cast(filters, x.dtype), [int(s) for s in strides], padding)
    if out.shape[1:3].is_fully_defined():  # each kernel weight is used at every position
        KERNEL_USES.append((int(np.prod(filters.shape)), int(np.prod(out.shape[1:3]))))
    return out""",
    "_pool2d_nhwc": """def _pool2d_nhwc(x, window, pooling, strides, padding):
    # tf.nn.max_pool / avg_pool of channels-last images, as tf.nn.pool computes them
    return tf.nn.pool(
        x, [int(k) for k in window], pooling, strides=[int(s) for s in strides], padding=padding
    )""",
    "_embedding_lookup": """def _embedding_lookup(params, ids, depth=None):
    return tf.gather(params, tf.cast(ids, tf.int32))""",
    "_einsum_pair": """def _einsum_pair(equation, a, b):
    a = tf.convert_to_tensor(a)
    return tf.einsum(equation, a, tf.cast(b, a.dtype))""",
    "_conv1d_nwc": """def _conv1d_nwc(x, filters, stride, padding):
    # Keras's Conv1D over the steps of x [rows, steps, channels]
    x = tf.convert_to_tensor(x)
    out = tf.nn.conv1d(x, tf.cast(filters, x.dtype), int(stride), padding)
    KERNEL_USES.append((int(np.prod(filters.shape)), int(out.shape[1])))  # at every step
    return out""",
    "_recurrent": """def _recurrent(x, kernel, recurrent_kernel, bias, cell, sequences=False):
    # Keras's LSTM (gates i, f, c, o), GRU (z, r, h; reset_after) or SimpleRNN with their
    # defaults (tanh, sigmoid gates), over the steps of x [rows, steps, features]
    x = tf.convert_to_tensor(x)
    kernel, recurrent_kernel, bias = (tf.cast(w, x.dtype) for w in (kernel, recurrent_kernel, bias))
    fed = tf.matmul(x, kernel) + (bias[0] if cell == "gru" else bias)  # every step's at once

    def step(state, xt):
        h, c = state
        if cell == "lstm":
            i, f, g, o = tf.split(xt + tf.matmul(h, recurrent_kernel), 4, axis=-1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            return tf.sigmoid(o) * tf.tanh(c), c
        if cell == "gru":
            xz, xr, xh = tf.split(xt, 3, axis=-1)
            hz, hr, hh = tf.split(tf.matmul(h, recurrent_kernel) + bias[1], 3, axis=-1)
            z, r = tf.sigmoid(xz + hz), tf.sigmoid(xr + hr)
            return z * h + (1 - z) * tf.tanh(xh + r * hh), c
        return tf.tanh(xt + tf.matmul(h, recurrent_kernel)), c

    start = tf.zeros([tf.shape(x)[0], recurrent_kernel.shape[0]], x.dtype)
    hs, _ = tf.scan(step, tf.transpose(fed, [1, 0, 2]), initializer=(start, start))
    size = int(np.prod(kernel.shape)) + int(np.prod(recurrent_kernel.shape))
    KERNEL_USES.append((size, int(x.shape[1])))  # each step uses both kernels again
    return tf.transpose(hs, [1, 0, 2]) if sequences else hs[-1]""",
    "_normal_draw": """def _normal_draw(x, mean=0.0, stddev=1.0, width=None):
    # tf.random.normal(tf.shape(x), mean, stddev), or [rows of x, width]: a fresh draw at each
    # step, from the same seeded generator as dropout's masks (each run resets it)
    x = tf.convert_to_tensor(x)
    shape = tf.shape(x) if width is None else tf.concat([tf.shape(x)[:-1], [int(width)]], 0)
    return MASKS.normal(shape, mean, stddev, dtype=x.dtype)""",
    "_concat": """def _concat(x, axis=0):
    return x if tf.is_tensor(x) else tf.concat(list(x), int(axis))""",
    "_clip_by_norm": """def _clip_by_norm(t, clip_norm, axes=None):
    return tf.clip_by_norm(t, clip_norm, axes=axes)""",
    "_count_nonzero": """def _count_nonzero(x, axis=None, keepdims=False, dtype=tf.int64):
    return tf.math.count_nonzero(x, axis=axis, keepdims=keepdims, dtype=dtype)""",
    "_l2_normalize": """def _l2_normalize(x, axis=None, epsilon=1e-12):
    return tf.math.l2_normalize(x, axis=axis, epsilon=epsilon)""",
    "_weighted_xent": """def _weighted_xent(labels, logits, pos_weight):
    return tf.nn.weighted_cross_entropy_with_logits(
        labels=labels, logits=logits, pos_weight=pos_weight
    )""",
    "_cast": """def _cast(x, dtype=None):
    return tf.cast(x, dtype) if isinstance(dtype, tf.DType) else tf.convert_to_tensor(x)""",
    "_constant": """def _constant(x, dtype=None):
    if tf.is_tensor(x):
        return tf.cast(x, dtype) if isinstance(dtype, tf.DType) else x
    return tf.constant(x, dtype=dtype)""",
    "_like": """def _like(fn, x, dtype=None):
    if not tf.is_tensor(x):  # tf.ones(shape): every value is the same, a scalar says it
        return fn(tf.constant(0.0), dtype=dtype if isinstance(dtype, tf.DType) else None)
    return fn(x, dtype=dtype if isinstance(dtype, tf.DType) else x.dtype)""",
    "_float": '''def _float(x):
    """A float-only op given a bool/int tensor (a mask, a count) computes on it as float."""
    if tf.is_tensor(x) and (x.dtype == tf.bool or x.dtype.is_integer):
        return tf.cast(x, tf.float32)
    return x''',
}


class NotRenderable(Exception):
    """A tree node with no source form (the verifier would have refused it too)."""


def identifier(name: str, taken: set[str]) -> str:
    """A Python name for a probe input, close to the user's (``self.w`` -> ``self_w``)."""
    base = re.sub(r"\W+", "_", name).strip("_") or "x"
    if base[0].isdigit() or keyword.iskeyword(base) or base in RESERVED:
        base = f"{base}_"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out)
    return out


def number(v: Any, as_int: bool = False) -> str:
    x = float(v)
    if math.isnan(x):
        return 'float("nan")'
    if math.isinf(x):
        return 'float("inf")' if x > 0 else '-float("inf")'
    if as_int and x.is_integer():
        return str(int(x))
    return repr(x)


@dataclass
class Renderer:
    """Writes trees over named inputs; ``helpers`` collects the helper functions used."""

    names: dict[str, str]  # probe input name -> script identifier
    helpers: set[str] = field(default_factory=set)

    def expr(self, tree: Any, as_int: bool = False) -> str:
        if not isinstance(tree, dict) or "k" not in tree:
            raise NotRenderable(f"malformed node {tree!r:.60}")
        kind = tree["k"]
        if kind == "input":
            if tree.get("name") not in self.names:
                raise NotRenderable(f"undeclared input {tree.get('name')!r}")
            return self.names[tree["name"]]
        if kind == "const":
            return number(tree["v"], as_int)
        if kind == "src":
            return self.expr(tree["x"], as_int)
        if kind == "bool":
            return repr(bool(tree["v"]))
        if kind == "str":
            return repr(str(tree["v"]))
        if kind == "dtype":
            return "dtype" if tree.get("v") == "same" else f"tf.{tree.get('v')}"
        if kind == "tuple":
            items = [self.expr(t, as_int) for t in tree.get("items") or []]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind == "neg":
            return f"(-{self.expr(tree['x'], as_int)})"
        if kind in ("cmp", "bin"):
            op = str(tree.get("op"))
            if kind == "bin" and op not in BINOPS:
                raise NotRenderable(f"operator {op!r}")
            if op == "@":
                self.helpers.add("_matmul")
                return f"_matmul({self.expr(tree['l'])}, {self.expr(tree['r'])})"
            return f"({self.expr(tree['l'])} {op} {self.expr(tree['r'])})"
        if kind == "call":
            return self.call(tree)
        raise NotRenderable(f"node kind {kind!r}")

    def call(self, tree: dict[str, Any]) -> str:
        name = str(tree.get("op"))
        op = ops.REGISTRY.get(name)
        if op is None or not op.trace:
            raise NotRenderable(f"op {name!r}")
        params = op.params or ()
        args = [
            self.expr(a, i < len(params) and params[i] in INT_PARAMS)
            for i, a in enumerate(tree.get("args") or [])
        ]
        kws = {k: self.expr(v, k in INT_PARAMS) for k, v in (tree.get("kw") or {}).items()}
        if op.float_only and args:
            self.helpers.add("_float")
            args[0] = f"_float({args[0]})"
        return self.apply(op.trace, args, kws)

    def apply(self, spec: str, args: list[str], kws: dict[str, str]) -> str:
        m = re.fullmatch(r"(\w+)\((.+)\)", spec)
        wrapper, inner = (m.group(1), m.group(2)) if m else ("", spec)
        if wrapper == "compare":
            return f"({args[0]} {inner} {args[1]})"
        if inner in INFIX:
            return f"({args[0]} {INFIX[inner]} {args[1]})"
        if wrapper == "xent":  # labels and logits given by position
            kws = {**dict(zip(("labels", "logits"), args, strict=False)), **kws}
            args = []
        if wrapper == "like":
            self.helpers.add("_like")
            return (
                f"_like({', '.join([f'tf.{inner}', *args, *(f'{k}={v}' for k, v in kws.items())])})"
            )
        if inner.startswith("_"):
            if inner not in HELPERS:
                raise NotRenderable(f"wrapper {inner!r}")
            self.helpers.add(inner)
            fn = inner
        else:
            fn = f"tf.{inner}"
        given = [*args, *(f"{k}={v}" for k, v in kws.items())]
        return f"{fn}({', '.join(given)})"

    def helper_source(self) -> str:
        used = [HELPERS[h] for h in sorted(self.helpers)]
        shared = [KERNEL_USES_LINE] if any("KERNEL_USES" in text for text in used) else []
        return "\n\n\n".join([*shared, *used])


# the weights a helper uses many times for each row (a conv kernel at every position, a
# recurrent kernel at every step), filled as the step is traced: the work of a row, counted
# once for every helper that appends to it
KERNEL_USES_LINE = "KERNEL_USES = []  # (kernel size, uses per row) of each weight used many times"


# The script header both reproducers share (repro.py and repro_training.py).
def header(finding: Finding, how: str) -> str:
    v = finding.verification
    detail = doc_safe("\n".join(textwrap.wrap(v.detail, 92)) or "confirmed")
    where = doc_safe(f"{finding.path}:{finding.line} {finding.rule} ({finding.name})")
    return f'''#!/usr/bin/env python3
"""Reproducer for {where}.

Written by tfnumlint --emit-repro.  The verifier confirmed:

{textwrap.indent(detail, "    ")}

{how}
Exit status 1: the symptom ({v.symptom}) shows; 0: it does not (as after a fix).
Needs only TensorFlow and NumPy; it never imports tfnumlint nor the analysed code.
"""

import sys

import numpy as np
import tensorflow as tf
'''


def doc_safe(text: str) -> str:
    """Text that cannot end or escape the script's docstring."""
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
