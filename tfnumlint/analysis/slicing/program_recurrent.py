"""A sequence model's layers, read for the training rung (static side, no TF import).

``Embedding(vocab, dim)`` is a table weight whose rows whole-number ids pick; ``Conv1D`` slides
its kernel along the steps (channels last, as Keras's default).  ``LSTM(units)``,
``GRU(units)`` and ``SimpleRNN(units)`` run over the steps of what reaches them ([rows, steps,
features]) as Keras runs them with their defaults: a kernel (Glorot-uniform), a recurrent
kernel (orthogonal) and a bias (zeros; an LSTM's forget gate starts at 1, ``unit_forget_bias``;
a GRU keeps an input and a recurrent bias, ``reset_after``), ``tanh`` for the state and
``sigmoid`` for the gates; the last step's output, or every step's with
``return_sequences=True``.  Any other keyword (a dropout, another activation, ``go_backwards``,
``stateful``, an initializer) makes the layer one the slice does not reproduce: None.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..context import Context
from ..module import Scope
from .program_layers import _keras_layer, lookup

# the cells, and how many blocks of ``units`` columns their kernels have (gates and state)
CELLS = {"LSTM": ("lstm", 4), "GRU": ("gru", 3), "SimpleRNN": ("rnn", 1)}
_DEFAULTS = {"activation": "tanh", "recurrent_activation": "sigmoid"}
_KEYWORDS = frozenset({"units", "return_sequences", "name", "input_shape", "input_dim",
                       "input_length", "unroll", *_DEFAULTS})  # fmt: skip


def recurrent_layer(ctx: Context, call: cst.Call, number, scope: Scope, order: int) -> dict | None:
    """``LSTM(64)`` / ``GRU(32, return_sequences=True)`` / ``SimpleRNN(16)`` with Keras's
    defaults: ``{"recurrent": cell, "units": n, "sequences": bool}``, or None."""
    cell = CELLS.get(_keras_layer(ctx, call))
    if cell is None or len(call.args) < 1:
        return None
    for arg in call.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if name is not None and name not in _KEYWORDS:
            return None
        if name in _DEFAULTS and not (
            isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == _DEFAULTS[name]
        ):
            return None
    if any(a.keyword is None for a in call.args[1:]):
        return None  # a second positional argument: an activation not read here
    units = number(ctx.arg(call, 0, "units"), scope, order)
    sequences = ctx.arg(call, -1, "return_sequences")
    if units is None or not (sequences is None or isinstance(sequences, cst.Name)):
        return None
    flag = isinstance(sequences, cst.Name) and sequences.value == "True"
    if isinstance(sequences, cst.Name) and sequences.value not in ("True", "False"):
        return None
    return {"recurrent": cell[0], "units": int(units), "sequences": flag}


def sequence_layer(
    weights: dict[str, dict], at: str, layer: dict, out: dict, fan_in: Any
) -> tuple[dict | None, Any]:
    """``out`` through an Embedding or a recurrent layer named ``at``, its weights added to
    ``weights``; with the width of what it gives.  None when the input's width is unknown."""
    if "embedding" in layer:  # a table whose rows the ids pick
        table = f"{at}.embeddings"
        weights[table] = {**layer["init"], "shape": [layer["embedding"], layer["dim"]]}
        return lookup({"k": "input", "name": table}, out, layer["embedding"]), layer["dim"]
    if not isinstance(fan_in, int):
        return None, None
    if "conv1d" in layer:
        return _conv1d(weights, at, layer, out, fan_in), layer["conv1d"]["filters"]
    cell, units = layer["recurrent"], layer["units"]
    blocks = next(n for kind, n in CELLS.values() if kind == cell)
    kernel, recurrent, bias = f"{at}.kernel", f"{at}.recurrent_kernel", f"{at}.bias"
    weights[kernel] = {"init": "glorot_uniform", "shape": [fan_in, blocks * units]}
    weights[recurrent] = {"init": "orthogonal", "shape": [units, blocks * units]}
    if cell == "lstm":  # unit_forget_bias: the forget gate's block starts at 1
        start = [0.0] * units + [1.0] * units + [0.0] * (2 * units)
        weights[bias] = {"init": "literal", "value": start, "shape": [4 * units]}
    else:  # a GRU's input and recurrent biases (reset_after), a SimpleRNN's one
        weights[bias] = {"init": "zeros", "shape": [2, 3 * units] if cell == "gru" else [units]}
    args = [out, *({"k": "input", "name": n} for n in (kernel, recurrent, bias))]
    args += [{"k": "str", "v": cell}, {"k": "bool", "v": layer["sequences"]}]
    return {"k": "call", "op": "recurrent", "args": args, "kw": {}}, units


def _conv1d(weights: dict[str, dict], at: str, layer: dict, out: dict, fan_in: int) -> dict:
    """``Conv1D(filters, k)`` over the steps (channels last): a [k, fan_in, filters] kernel, a
    bias, the layer's activation."""
    geo = layer["conv1d"]
    kernel, bias = f"{at}.kernel", f"{at}.bias"
    weights[kernel] = {"init": layer["kernel_initializer"], **layer.get("kernel_params", {}),
                       "shape": [geo["kernel"][0], fan_in, geo["filters"]]}  # fmt: skip
    stride, padding = (
        {"k": "const", "v": float(geo["strides"][0])},
        {"k": "str", "v": geo["padding"]},
    )
    out = {"k": "call", "op": "conv1d_nwc", "args": [out, {"k": "input", "name": kernel}, stride,
                                                      padding], "kw": {}}  # fmt: skip
    if layer["use_bias"]:
        weights[bias] = {**layer["bias"], "shape": [geo["filters"]]}
        out = {"k": "bin", "op": "+", "l": out, "r": {"k": "input", "name": bias}}
    act = layer["activation"]
    return out if act in (None, "linear") else {"k": "call", "op": act, "args": [out], "kw": {}}
