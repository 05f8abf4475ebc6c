"""Keras's binary cross-entropy and mean squared error, as the training rung's slice computes
them (static side, no TF import).

``compile(loss=...)`` with ``keras.losses.BinaryCrossentropy()`` (``from_logits`` either way),
``MeanSquaredError()``, the functions, or the strings Keras resolves to them (``"mse"``,
``"binary_crossentropy"``), and the same objects or functions called in a training step: each
is written as the ops Keras runs (Keras 3, TensorFlow backend), so the reproducer computes
what the program does:

- the targets take the predictions' rank (``squeeze_or_expand_to_same_rank``: rows of one
  output get their trailing axis): here reshaped to ``[-1, width]``, the model's output width;
- binary cross-entropy from probabilities clips them to ``[eps, 1 - eps]`` (``eps`` Keras's
  ``backend.epsilon()``, 1e-7) and takes ``-(y log p + (1 - y) log(1 - p))``; from logits, or
  when the predictions are a sigmoid's output in a compiled step (Keras then takes the
  sigmoid's input, ``_get_logits``), it is ``sigmoid_cross_entropy_with_logits``;
- squared error is ``square(y - p)``;
- each row's mean over the last axis, then (a loss object, or ``compile``) the batch mean.

A sigmoid's output in a step the slice does not know to be compiled (Keras takes its logits
only from a graph op or a Keras activation) is not read: None.  So is an argument that
changes the loss (label smoothing, a reduction, a sample weight).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..context import Context
from ..module import Scope
from .program_models import width
from .program_objectives import _bound_call

# Keras's names of the two losses: its classes, functions and the strings ``losses.get``
# resolves (an API table)
_FORMS = {
    "BinaryCrossentropy": "binary",
    "binary_crossentropy": "binary",
    "bce": "binary",
    "BCE": "binary",
    "MeanSquaredError": "squared",
    "mean_squared_error": "squared",
    "mse": "squared",
    "MSE": "squared",
}
EPSILON = 1e-7  # keras.backend.epsilon(), its default
_OBJECT_KEYWORDS = frozenset({"from_logits", "name"})
_FUNCTION_KEYWORDS = frozenset({"y_true", "y_pred", "from_logits"})


def _flag(node: cst.BaseExpression | None) -> bool | None:
    """A literal ``True``/``False`` (None: absent, False; another value: not read)."""
    if node is None:
        return False
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _keras_name(ctx: Context, node: cst.BaseExpression) -> str | None:
    """The loss's Keras name, for a name Keras's ``losses`` module exports."""
    dotted = ctx.info.imports.resolve(node) or ""
    module, _, leaf = dotted.rpartition(".")
    return leaf if module == "keras.losses" and leaf in _FORMS else None


def compiled_keras_loss(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> tuple[str, bool, bool] | None:
    """compile's ``loss=``: (the form, from_logits, whether a batch mean follows) of a loss
    object (made in place or bound to a name), a Keras loss function or its string; None for
    anything else."""
    return keras_loss_form(ctx, _bound_call(ctx, node, scope, order) or node)


def keras_loss_form(ctx: Context, node: cst.BaseExpression) -> tuple[str, bool, bool] | None:
    """:func:`compiled_keras_loss` of a loss already followed to the call that makes it."""
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        form = _FORMS.get(text) if isinstance(text, str) else None
        return (form, False, True) if form is not None else None
    if not isinstance(node, cst.Call):  # ``loss=keras.losses.binary_crossentropy``
        name = _keras_name(ctx, node)
        return (_FORMS[name], False, True) if name is not None and name.islower() else None
    name = _keras_name(ctx, node.func)
    if name is None or name.islower() or any(a.star or a.keyword is None for a in node.args):
        return None  # a loss function's value, or positional arguments of a class
    if {a.keyword.value for a in node.args if a.keyword} - _OBJECT_KEYWORDS:
        return None
    logits = _flag(ctx.arg(node, -1, "from_logits"))
    return (_FORMS[name], logits, True) if logits is not None else None


def called_keras_loss(
    ctx: Context, call: cst.Call, scope: Scope, order: int
) -> tuple[str, bool, bool] | None:
    """A loss called in a step: ``keras.losses.binary_crossentropy(y, p)`` of a function
    (each row's loss, no batch mean), or ``bce(y, p)`` of a loss object (as
    :func:`compiled_keras_loss` reads it)."""
    args = call.args
    name = _keras_name(ctx, call.func)
    if name is not None:
        if not name.islower() or any(a.star for a in args):
            return None  # ``BinaryCrossentropy(...)`` makes the object: no loss yet
        given = {a.keyword.value if a.keyword else i for i, a in enumerate(args)}
        if not given <= {0, 1, 2, *_FUNCTION_KEYWORDS}:
            return None
        if _FORMS[name] == "squared" and (2 in given or "from_logits" in given):
            return None  # the squared error has no ``from_logits``
        logits = _flag(ctx.arg(call, 2, "from_logits"))
        return (_FORMS[name], logits, False) if logits is not None else None
    if len(args) != 2 or any(a.star or a.keyword is not None for a in args):
        return None
    if not isinstance(call.func, (cst.Name, cst.Call)):
        return None
    return compiled_keras_loss(ctx, call.func, scope, order)


def _call(op: str, *args: Any) -> dict:
    return {"k": "call", "op": op, "args": list(args), "kw": {}}


def _const(v: float) -> dict:
    return {"k": "const", "v": v}


def keras_loss(
    form: str,
    from_logits: bool,
    batch_mean: bool,
    y_true: dict,
    y_pred: dict,
    compiled: bool,
    weights: dict[str, dict],
    data: dict[str, dict],
) -> dict | None:
    """The loss's tree on ``y_true`` and ``y_pred`` (see the module docstring), or None."""
    wide = width(y_pred, weights, data)
    if not isinstance(wide, int):
        return None  # the predictions' width, which the targets' shape follows
    shape = {"k": "tuple", "items": [_const(-1), _const(wide)]}
    labels = _call("reshape", y_true, shape)
    if form == "squared":
        each = _call("square", {"k": "bin", "op": "-", "l": labels, "r": y_pred})
    elif y_pred.get("k") == "call" and y_pred.get("op") == "sigmoid":
        if not compiled:
            return None  # Keras takes its logits in a graph (or from its own activation)
        each = _call("sigmoid_xent", labels, y_pred["args"][0])
    elif from_logits:
        each = _call("sigmoid_xent", labels, y_pred)
    else:
        p = _call("clip_by_value", y_pred, _const(EPSILON), _const(1.0 - EPSILON))
        one_minus = {"k": "bin", "op": "-", "l": _const(1.0), "r": labels}
        bce = {
            "k": "bin",
            "op": "+",
            "l": {"k": "bin", "op": "*", "l": labels, "r": _call("log", p)},
            "r": {
                "k": "bin",
                "op": "*",
                "l": one_minus,
                "r": _call("log", {"k": "bin", "op": "-", "l": _const(1.0), "r": p}),
            },
        }
        each = {"k": "neg", "x": bce}
    rows = _call("reduce_mean", each, _const(-1))
    return _call("reduce_mean", rows) if batch_mean else rows
