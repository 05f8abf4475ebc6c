"""The data-recipe evaluator's source, for the training rung's scripts (no TF import)."""

from __future__ import annotations

import inspect


def evaluator_source() -> str:
    """``datagen_eval``'s code, pasted into a script so that the script needs only NumPy."""
    try:
        from . import datagen_eval
    except ImportError:  # no recipe evaluator: every feed is drawn from its range
        return ""
    text = inspect.getsource(datagen_eval)
    return text.split("\nfrom __future__ import annotations\n", 1)[-1]
