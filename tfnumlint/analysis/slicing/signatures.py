"""How each allow-listed op takes its arguments, in every spelling the slicer accepts.

TF1, TF2, ``compat.v1``, the Keras backend and ``keras.ops`` name the same parameter
differently (``input_tensor=`` / ``x=``, ``reduction_indices=`` / ``axis=``, ``keep_dims=`` /
``keepdims=``, ``min_value=`` / ``clip_value_min=``).  The slicer binds every argument of a
call to one canonical parameter name, so the tracer sees each op in one form.  An argument
that binds to nothing is never dropped: the slicer reports it as a construct the verifier
does not model.  Plain data, no TensorFlow import.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from ... import ops

# Canonical op -> its canonical parameter names: the op registry's ``params`` (a live view).
PARAMS: Mapping[str, tuple[str, ...]] = ops.PARAMS

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
# Arguments with no numeric effect.
IGNORED = frozenset({"name", "validate_indices", "batch_dims", "use_cudnn_on_gpu"})
# Parameters that name a dtype: a non-literal one (``x.dtype``) means "the probe's dtype".
DTYPE_PARAMS = frozenset({"dtype"})

# Names only the verifier accepts: the registry's probe spellings (comparisons, logical ops,
# a few shape-op spellings) and the control flow the slicer follows into branches.
CONTROL_FLOW: dict[str, str] = {"tf.cond": "cond", "tf.compat.v1.cond": "cond", "tf.case": "case"}
EXTRA_SPELLINGS: Mapping[str, str] = ChainMap(ops.PROBE_SPELLINGS, CONTROL_FLOW)


@dataclass
class Bound:
    """A call's arguments bound to canonical parameter names, in parameter order."""

    params: dict[str, cst.BaseExpression] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # user-facing names of unbound arguments


def bind(op: str, call: cst.Call) -> Bound:
    """Bind ``call``'s arguments to ``op``'s canonical parameters."""
    names = PARAMS.get(op, ())
    out = Bound()
    aliases = {**ALIASES, **ops.param_aliases(op)}  # per-op overrides win
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
