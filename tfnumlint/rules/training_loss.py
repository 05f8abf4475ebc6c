"""The loss a Keras model is compiled with, as the source writes it: the training simulations
(TNL501, TNL502) name it, and say so when they train a stand-in for it."""

from __future__ import annotations

import libcst as cst

from ..analysis.context import Context

MAX_SHOWN = 60  # characters of the loss's source shown in a message


def compiled_loss(ctx: Context) -> str | None:
    """The ``loss=`` argument of the module's first ``compile`` call that passes one."""

    def compute() -> str | None:
        for s in ctx.info.calls:
            func = s.node.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
                continue
            loss = ctx.arg(s.node, 1, "loss")
            if loss is not None:
                code = " ".join(ctx.code(loss).split())
                return code if len(code) <= MAX_SHOWN else code[: MAX_SHOWN - 3] + "..."
        return None

    return ctx.fact("compiled_loss", compute)
