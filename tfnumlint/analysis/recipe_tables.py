"""The allow-lists of the data recipes (``datagen.py``): which NumPy calls a recipe may hold.

Plain data (no libcst): the evaluator (``verify/datagen_eval.py``) reads the same tables, so
what a recipe may hold and what the evaluator replays cannot drift apart.
"""

from __future__ import annotations

import math

Tree = dict  # a JSON-able recipe node: {"k": kind, ...}
MAX_ELEMENTS = 20_000_000  # a larger array is not replayed
MAX_DEPTH = 60

# NumPy functions the evaluator replays by their own name (``getattr(numpy, fn)``), each with
# the rule its result's shape follows (``recipe_shapes``), so a function allowed here has a shape
NUMPY_FUNCTIONS: dict[str, str] = {
    "exp": "elementwise", "expm1": "elementwise", "log": "elementwise", "log1p": "elementwise",
    "log2": "elementwise", "log10": "elementwise", "sqrt": "elementwise", "square": "elementwise",
    "abs": "elementwise", "absolute": "elementwise", "tanh": "elementwise", "sin": "elementwise",
    "cos": "elementwise", "arctan": "elementwise", "floor": "elementwise", "ceil": "elementwise",
    "sign": "elementwise", "round": "elementwise", "copy": "elementwise",
    "asarray": "elementwise", "array": "elementwise", "sort": "elementwise",
    "ones_like": "elementwise", "zeros_like": "elementwise", "full_like": "elementwise",
    "clip": "broadcast", "maximum": "broadcast", "minimum": "broadcast", "where": "broadcast",
    "power": "broadcast",
    "mean": "reduce", "std": "reduce", "var": "reduce", "sum": "reduce", "max": "reduce",
    "min": "reduce", "argmax": "reduce", "argmin": "reduce", "all": "reduce", "any": "reduce",
    "stack": "join", "concatenate": "join", "vstack": "join", "hstack": "join",
    "column_stack": "join",
    "ones": "sized", "zeros": "sized", "full": "sized",
    "eye": "square", "identity": "square",
    "arange": "range",
    "linspace": "num",
    "reshape": "reshape",
    "ravel": "flat",
    "cumsum": "scan",
    "transpose": "permute",
    "squeeze": "squeeze",
    "expand_dims": "expand",
    "dot": "product", "matmul": "product",
    "outer": "outer",
    "tile": "tile",
    "repeat": "repeat",
}  # fmt: skip
# keyword arguments those functions may be given
NUMPY_KEYWORDS = frozenset(
    {"axis", "keepdims", "dtype", "ddof", "num", "endpoint", "decimals", "repeats", "reps",
     "a_min", "a_max", "k", "M", "axes", "newshape", "shape", "fill_value"}
)  # fmt: skip
# methods and functions that change an array or list in place (x.sort(), rng.shuffle(x))
MUTATORS = frozenset(
    {"append", "extend", "insert", "fill", "sort", "shuffle", "resize", "put", "itemset",
     "partition", "pop", "remove", "clear", "update"}
)  # fmt: skip
# NumPy functions that change their first argument in place (np.random.shuffle(x), a ufunc's
# np.add.at(x, i, 1))
FIRST_ARGUMENT_MUTATORS = frozenset(
    {"shuffle", "copyto", "place", "putmask", "put", "at", "fill_diagonal"}
)
DTYPES = frozenset(
    {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
)
BUILTIN_DTYPES = {"float": "float64", "int": "int64", "bool": "bool"}
NUMPY_CONSTANTS = {"pi": math.pi, "e": math.e}

# a draw's parameters in NumPy's positional order with their defaults (None: required);
# the size follows them.  Generator and RandomState agree on these.
DRAW_PARAMS: dict[str, tuple[tuple[str, float | None], ...]] = {
    "uniform": (("low", 0.0), ("high", 1.0)),
    "normal": (("loc", 0.0), ("scale", 1.0)),
    "lognormal": (("mean", 0.0), ("sigma", 1.0)),
    "laplace": (("loc", 0.0), ("scale", 1.0)),
    "gamma": (("shape", None), ("scale", 1.0)),
    "exponential": (("scale", 1.0),),
    "poisson": (("lam", 1.0),),
    "binomial": (("n", None), ("p", None)),
    "beta": (("a", None), ("b", None)),
    "standard_normal": (),
}
UNIT_DRAWS = frozenset({"random", "random_sample", "sample", "ranf"})  # uniform [0, 1), size
# array methods that are a NumPy function of the array (x.mean(axis) is numpy.mean(x, axis))
ARRAY_METHODS = frozenset(
    {"mean", "std", "var", "sum", "max", "min", "cumsum", "round", "clip", "squeeze", "dot",
     "argmax", "argmin", "repeat", "all", "any"}
)  # fmt: skip


class Unknown(Exception):
    """A part of the expression the recipe cannot replay (a file, pandas, an unknown call)."""
