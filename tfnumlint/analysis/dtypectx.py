"""Low-precision dtype context from real dtype positions only.

float16 changes every threshold (exp overflows past 11.09, 1e-8 is 0), so the context must come
from code that really sets a dtype: a ``dtype=`` argument, the dtype of ``tf.cast``,
``x.astype(...)``, ``tf.Variable(..., dtype=...)``, or the mixed-precision policy
(``set_global_policy("mixed_float16")``, ``Policy(...)``), including a name bound to a dtype
(``dt = tf.float16; tf.cast(x, dt)``).  A dtype used as a dict key, in ``np.finfo(np.float16)``
or a local that happens to be called ``half`` says nothing about the dtype the code runs in.
"""

from __future__ import annotations

import libcst as cst

LOW_PRECISION = frozenset({"float16", "half", "bfloat16", "mixed_float16", "mixed_bfloat16"})
_DTYPE_KEYWORDS = frozenset({"dtype", "compute_dtype", "variable_dtype", "policy", "dtype_policy"})
# Calls whose N-th positional argument is a dtype or a policy name.
_POSITIONAL = {
    "cast": 1,
    "saturate_cast": 1,
    "astype": 0,
    "set_global_policy": 0,
    "set_policy": 0,
    "Policy": 0,
    "DTypePolicy": 0,
    "set_floatx": 0,
    "as_dtype": 0,
    "placeholder": 0,
    "zeros": 1,
    "ones": 1,
    "zeros_like": 1,
    "ones_like": 1,
    "constant": 1,
    "convert_to_tensor": 1,
    "TensorSpec": 1,
    "get_variable": 2,
    "random_normal": 3,
    "random_uniform": 3,
    "normal": 3,
    "uniform": 3,
    "range": 3,
    "Input": 3,
    "eye": 3,
}


def _callee(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _bound_word(name: str, scope) -> str | None:
    """``dt = tf.float16`` (the latest binding in the scope chain) -> ``float16``."""
    s = scope
    while s is not None:
        bindings = s.bindings.get(name)
        if bindings:
            value = bindings[-1].value
            return _literal_word(value) if value is not None else None
        s = s.parent
    return None


def _literal_word(value: cst.BaseExpression) -> str | None:
    if isinstance(value, cst.Attribute):
        return value.attr.value
    if isinstance(value, cst.SimpleString):
        return value.value.strip("'\"")
    return None


def dtype_word(value: cst.BaseExpression, scope) -> str | None:
    """The dtype an argument names, following one assignment for a plain name."""
    word = _literal_word(value)
    if word is None and isinstance(value, cst.Name):
        word = value.value if value.value in ("float16", "bfloat16") else None
        word = word or _bound_word(value.value, scope)
    return word


def low_precision_words(node: cst.Call, scope) -> set[str]:
    """Low-precision dtypes this call really sets (an empty set for a bare mention)."""
    position = _POSITIONAL.get(_callee(node))
    words: set[str] = set()
    positional = 0
    for arg in node.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            at_dtype = arg.keyword.value in _DTYPE_KEYWORDS
        else:
            at_dtype = positional == position
            positional += 1
        if at_dtype:
            word = dtype_word(arg.value, scope)
            if word in LOW_PRECISION:
                words.add(word)
    return words
