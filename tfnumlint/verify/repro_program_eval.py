"""The data-recipe evaluator's source, for the training rung's scripts (no TF import).

A reproducer needs only TensorFlow and NumPy, so the evaluator of ``datagen_eval.py`` and the
tables it reads (``analysis/recipe_tables.py``) are pasted into each script, as they are.
"""

from __future__ import annotations

import inspect
import re

_FUTURE = "\nfrom __future__ import annotations\n"
_RELATIVE = re.compile(
    r"^from \.\.?[\w.]* import \((?:.|\n)*?\)\n|^from \.\.?[\w.]* import .*\n", re.M
)


def evaluator_source() -> str:
    """The tables and the evaluator, as one block of module-level code."""
    from ..analysis import recipe_tables
    from . import datagen_eval

    parts = []
    for module in (recipe_tables, datagen_eval):
        text = inspect.getsource(module).split(_FUTURE, 1)[-1]
        parts.append(_RELATIVE.sub("", text).strip("\n"))
    return "\n\n\n".join(parts)
