"""How each allow-listed op takes its arguments, in every spelling the slicer accepts.

TF1, TF2, ``compat.v1``, the Keras backend and ``keras.ops`` name the same parameter
differently (``input_tensor=`` / ``x=``, ``reduction_indices=`` / ``axis=``, ``keep_dims=`` /
``keepdims=``, ``min_value=`` / ``clip_value_min=``).  The slicer binds every argument of a
call to one canonical parameter name, so the tracer sees each op in one form.  An argument
that binds to nothing is never dropped: the slicer reports it as a construct the verifier
does not model.  Plain data, no TensorFlow import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

_UNARY = """log log1p exp expm1 log_sigmoid sigmoid relu relu6 softplus tanh square sqrt rsqrt
reciprocal abs acos asin atanh negative stop_gradient identity""".split()
_BINARY = "divide divide_no_nan multiply add subtract maximum minimum pow xlogy".split()
COMPARISONS = "greater greater_equal less less_equal equal not_equal".split()
_LOGICAL = "logical_and logical_or".split()
_REDUCTIONS = """reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_std
reduce_variance reduce_logsumexp euclidean_norm""".split()

PARAMS: dict[str, tuple[str, ...]] = {
    **{op: ("x",) for op in _UNARY},
    **{op: ("x", "y") for op in _BINARY + COMPARISONS + _LOGICAL},
    "logical_not": ("x",),
    **{op: ("x", "axis", "keepdims", "name") for op in _REDUCTIONS},
    "softmax": ("x", "axis"),
    "log_softmax": ("x", "axis"),
    "count_nonzero": ("x", "axis", "keepdims", "dtype"),
    "norm": ("x", "ord", "axis", "keepdims"),
    "l2_normalize": ("x", "axis", "epsilon"),
    "clip_by_value": ("x", "clip_value_min", "clip_value_max"),
    "clip_by_norm": ("x", "clip_norm", "axes"),
    "where": ("condition", "x", "y"),
    "cast": ("x", "dtype"),
    "matmul": ("a", "b", "transpose_a", "transpose_b"),
    "one_hot": ("indices", "depth", "on_value", "off_value", "axis", "dtype"),
    "sigmoid_xent": ("labels", "logits"),
    "softmax_xent": ("labels", "logits", "axis"),
    "weighted_xent": ("labels", "logits", "pos_weight"),
    "zeros": ("x", "dtype"),
    "ones": ("x", "dtype"),
    "constant": ("x", "dtype"),
    # shape ops: values move, ranges are kept
    "reshape": ("x", "shape"),
    "tile": ("x", "multiples"),
    "transpose": ("x", "perm"),
    "expand_dims": ("x", "axis"),
    "squeeze": ("x", "axis"),
    "gather": ("x", "indices", "axis"),
    "concat": ("x", "axis"),
}

# Other names of a canonical parameter, across TF1/TF2/Keras spellings.
ALIASES: dict[str, str] = {
    "input_tensor": "x",
    "tensor": "x",
    "input": "x",
    "features": "x",
    "t": "x",
    "params": "x",
    "values": "x",
    "value": "x",
    "x1": "x",
    "x2": "y",
    "reduction_indices": "axis",
    "keep_dims": "keepdims",
    "dim": "axis",
    "squeeze_dims": "axis",
    "min_value": "clip_value_min",
    "max_value": "clip_value_max",
    "x_min": "clip_value_min",
    "x_max": "clip_value_max",
    "then_expression": "x",
    "else_expression": "y",
    "targets": "labels",
    "dtype_hint": "dtype",
    "preferred_dtype": "dtype",
    "a": "y",  # keras.backend.pow(x, a)
}
# Per-op overrides of ALIASES, where a name means something else for that op.
OP_ALIASES: dict[str, dict[str, str]] = {
    "matmul": {"x": "a", "y": "b", "x1": "a", "x2": "b", "a": "a", "b": "b"},
    "softmax": {"logits": "x"},
    "log_softmax": {"logits": "x"},
    "where": {"x1": "x", "x2": "y"},
    "one_hot": {"indices": "indices"},
    "gather": {"indices": "indices"},
    "sigmoid_xent": {"logits": "logits"},
    "softmax_xent": {"logits": "logits", "dim": "axis"},
    "zeros": {"shape": "x", "input": "x"},
    "ones": {"shape": "x", "input": "x"},
}
# Arguments with no numeric effect.
IGNORED = frozenset({"name", "validate_indices", "batch_dims", "use_cudnn_on_gpu"})
# Parameters that name a dtype: a non-literal one (``x.dtype``) means "the probe's dtype".
DTYPE_PARAMS = frozenset({"dtype"})

# Ops the canonical-name table does not carry, by normalised dotted spelling.
EXTRA_SPELLINGS: dict[str, str] = {
    **{f"tf.{n}": n for n in ("reshape", "tile", "transpose", "expand_dims", "squeeze")},
    **{f"tf.{n}": n for n in ("gather", "concat")},
    "tf.compat.v1.squeeze": "squeeze",
    "tf.linalg.transpose": "transpose",
    "tf.math.truediv": "divide",
    **{f"keras.ops.{n}": n for n in ("reshape", "tile", "transpose", "expand_dims", "squeeze")},
    "keras.ops.take": "gather",
    "keras.ops.concatenate": "concat",
    **{f"keras.backend.{n}": n for n in ("reshape", "tile", "expand_dims", "squeeze", "gather")},
    "keras.backend.permute_dimensions": "transpose",
    "keras.backend.concatenate": "concat",
    **{f"tf.{n}": n for n in COMPARISONS + _LOGICAL + ["logical_not"]},
    **{f"tf.math.{n}": n for n in COMPARISONS + _LOGICAL + ["logical_not"]},
    **{f"keras.ops.{n}": n for n in COMPARISONS + _LOGICAL + ["logical_not"]},
    "tf.cond": "cond",
    "tf.compat.v1.cond": "cond",
    "tf.case": "case",
}


@dataclass
class Bound:
    """A call's arguments bound to canonical parameter names, in parameter order."""

    params: dict[str, cst.BaseExpression] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # user-facing names of unbound arguments


def bind(op: str, call: cst.Call) -> Bound:
    """Bind ``call``'s arguments to ``op``'s canonical parameters."""
    names = PARAMS.get(op, ())
    out = Bound()
    aliases = {**ALIASES, **OP_ALIASES.get(op, {})}
    positional = [a for a in call.args if a.keyword is None]
    for i, a in enumerate(positional):
        if a.star:
            out.unknown.append(f"a {a.star}-argument")
            continue
        if i < len(names):
            if names[i] not in IGNORED:
                out.params[names[i]] = a.value
        else:
            out.unknown.append(f"positional argument {i + 1}")
    for a in call.args:
        if a.keyword is None:
            continue
        kw = a.keyword.value
        if kw in IGNORED:
            continue
        name = kw if kw in names else aliases.get(kw)
        if name is None or name not in names:
            out.unknown.append(f"`{kw}=`")
        elif name in out.params:
            out.unknown.append(f"`{kw}=` given twice")
        else:
            out.params[name] = a.value
    return out
