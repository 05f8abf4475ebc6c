"""The layers a model stacks besides Dense and Dropout, read for the training rung (static side,
no TF import).

In a ``keras.Sequential([...])`` or a functional ``keras.Model``, a Keras activation layer
(``ReLU()``, ``Softmax()``, ``Activation("tanh")``) applies its activation op to what reaches
it; a layer made by a class the program defines (``MyNorm()``, a subclass of
``keras.layers.Layer``) is an entry that the program slice follows as that object's ``call``,
its weights those of its ``build``/``__init__`` (``program_weights.py``).  Whether such a class
can be followed is decided where it is followed (``program.py``): here it is only a
constructor call of the program's own code, not of TensorFlow or Keras.
"""

from __future__ import annotations

import libcst as cst

from ... import ops
from ..context import Context
from ..module import Scope


def _activation_of(op: str | None) -> str | None:
    """The activation op a Keras activation layer (``ReLU``, ``Softmax``) applies, as the
    registry's transfer for the layer names it."""
    entry = ops.REGISTRY.get(op or "")
    transfer = entry.transfer if entry is not None else None
    if transfer is None or transfer.rule != "activation_layer_of":
        return None
    return transfer.kind


def _traceable(name: str) -> bool:
    op = ops.REGISTRY.get(name)
    return op is not None and bool(op.trace)


def stack_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int) -> dict | None:
    """A stacked layer other than Dense and Dropout as plain data: ``{"act": op}`` for a Keras
    activation layer with its defaults, ``{"layer": call, ...}`` for an object of a class of the
    program's own (the call, where it is made), None for anything else."""
    op = ctx.op(layer)
    if (act := _activation_of(op)) is not None:
        # ReLU(max_value=6), Softmax(axis=1): not the plain activation
        return None if layer.args or not _traceable(act) else {"act": act}
    if op == "activation_layer":
        given = ctx.arg(layer, 0, "activation")
        if len(layer.args) != 1 or not isinstance(given, cst.SimpleString):
            return None
        name = str(given.evaluated_value)
        if name == "linear":
            return {"act": None}
        return {"act": name} if _traceable(name) else None
    if op is not None or not isinstance(layer.func, (cst.Name, cst.Attribute)):
        return None
    resolved = ctx.info.imports.resolve(layer.func) or ""
    if resolved.split(".", 1)[0] in ("tf", "keras"):
        return None  # a Keras layer the slice does not read (Conv1D, BatchNormalization...)
    return {"layer": layer, "scope": scope, "order": order}
