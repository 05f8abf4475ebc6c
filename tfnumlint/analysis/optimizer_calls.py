"""An optimizer call as the rules and the verifier both read it: its learning rate (Keras's
default when none is given), its epsilon, and the spec the training simulations rebuild it
from.
"""

from __future__ import annotations

import libcst as cst

from ..optimizers import OPTIMIZERS
from .context import Context
from .module import Site


def learning_rate(ctx: Context, call: cst.Call, site: Site) -> float | None:
    """The call's learning rate as a number, else None (a schedule, a variable)."""
    node = ctx.arg(call, 0, "learning_rate", "lr")
    if node is None:  # the Keras defaults: 0.01 for SGD, 0.001 for every other optimizer
        return 0.01 if ctx.op(call) == "optimizer:sgd" else 0.001
    return ctx.val(node, site).const


def optimizer_family(ctx: Context, call: cst.Call) -> str:
    """``sgd`` for a call whose canonical op is ``optimizer:sgd``; empty for any other call."""
    _, _, family = (ctx.op(call) or "").partition(":")
    return family


def optimizer_spec(ctx: Context, call: cst.Call, site: Site) -> dict:
    """The optimizer as the verifier rebuilds it: class, learning rate, momentum, clipping."""
    family = optimizer_family(ctx, call)
    name = ctx.info.imports.resolve(call.func) or ""
    momentum = None
    if family == "sgd" and not name.endswith("GradientDescentOptimizer"):
        node = ctx.arg(call, 1, "momentum")
        momentum = ctx.val(node, site).const if node is not None else None
    clip = ctx.arg(call, -1, "clipnorm", "global_clipnorm")
    return {
        "optimizer": family,
        "tf1": name.startswith("tf.train."),
        "learning_rate": learning_rate(ctx, call, site),
        "momentum": momentum or 0.0,
        "clipnorm": ctx.val(clip, site).const if clip is not None else None,
    }


def optimizer_epsilon(
    ctx: Context, call: cst.Call, site: Site, family: str
) -> tuple[float | None, bool]:
    """The epsilon an optimizer runs with, and whether it was given explicitly."""
    facts = OPTIMIZERS[family]
    name = ctx.info.imports.resolve(call.func) or ""
    tf1 = name.startswith("tf.train.")
    node = ctx.arg(call, facts.epsilon_index, "epsilon")
    if node is not None:
        return ctx.val(node, site).const, True
    return (facts.tf1_epsilon if tf1 else facts.keras_epsilon), False
