"""Evaluate data recipes (``analysis/datagen.py``) with our own seeded generator.

A recipe is plain data: an allow-list of NumPy calls on random draws.  Evaluating it replays
the program's data generation (shapes, parameters, which values are shared) without running a
line of the program.  Several recipes evaluated in one call share their defs: the inputs and
targets of one program are drawn from the same labels.  NumPy only; anything outside the
allow-list raises ``ValueError``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import numpy as np

from ..analysis.recipe_tables import (
    DRAW_PARAMS,
    DTYPES,
    MAX_ELEMENTS,
    NUMPY_FUNCTIONS,
    NUMPY_KEYWORDS,
)

_BINARY: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
    "@": operator.matmul,
    "//": operator.floordiv,
    "%": operator.mod,
    "&": operator.and_,
    "|": operator.or_,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
# draws with no table entry, with the parameters they take
_OTHER_DRAWS = {"integers": ("low", "high"), "choice": ("a", "replace", "p"), "permutation": ("x",)}


def evaluate(recipes: dict[str, dict], seed: int) -> dict[str, np.ndarray]:
    """Each recipe's array, drawn with ``np.random.default_rng(seed)``; a def shared by
    several recipes is drawn once.  Float arrays come back as float32."""
    run = _Run(_merged_defs(recipes), np.random.default_rng(seed))
    out: dict[str, np.ndarray] = {}
    for name, recipe in recipes.items():
        try:
            value = np.asarray(run.value(recipe["root"]))
        except (
            IndexError,
            KeyError,
            TypeError,
            AttributeError,
            ZeroDivisionError,
            RecursionError,
        ) as e:
            raise ValueError(f"recipe {name!r} cannot be evaluated: {e!r}") from e
        if value.dtype.kind not in "biuf":
            raise ValueError(f"recipe {name!r} is not numeric data ({value.dtype})")
        out[name] = value.astype(np.float32) if value.dtype.kind == "f" else value
    return out


def _merged_defs(recipes: dict[str, dict]) -> dict[str, dict]:
    defs: dict[str, dict] = {}
    for name, recipe in recipes.items():
        if not isinstance(recipe, dict) or "root" not in recipe:
            raise ValueError(f"recipe {name!r} has no root")
        for key, tree in recipe.get("defs", {}).items():
            if key in defs and defs[key] != tree:
                raise ValueError(f"def {key!r} differs between recipes")
            defs[key] = tree
    return defs


def _size(shape) -> int:
    """The element count of a shape (a tuple or an array of its dimensions)."""
    return math.prod(int(d) for d in shape)


def _check(value, what: str):
    if isinstance(value, np.ndarray) and value.size > MAX_ELEMENTS:
        raise ValueError(f"{what} makes {value.size} elements (more than {MAX_ELEMENTS})")
    return value


class _Run:
    """One evaluation: the generator and the defs drawn so far."""

    def __init__(self, defs: dict[str, dict], rng: np.random.Generator) -> None:
        self.defs = defs
        self.rng = rng
        self.done: dict[str, object] = {}
        self.active: set[str] = set()
        self.kinds: dict[str, Callable[[dict], object]] = {
            "const": self._const,
            "array": lambda t: np.asarray(t["v"]),
            "none": lambda t: None,
            "ellipsis": lambda t: Ellipsis,
            "tuple": lambda t: tuple(self.value(i) for i in t["items"]),
            "list": lambda t: [self.value(i) for i in t["items"]],
            "dtype": self._dtype,
            "ref": self._ref,
            "draw": self._draw,
            "bin": self._binary,
            "cmp": self._binary,
            "neg": lambda t: -np.asarray(self.value(t["x"])),
            "call": self._call,
            "index": self._index,
            "setitem": self._setitem,
            "one_hot": self._one_hot,
        }

    def value(self, tree: dict):
        if not isinstance(tree, dict) or tree.get("k") not in self.kinds:
            kind = tree.get("k") if isinstance(tree, dict) else type(tree).__name__
            raise ValueError(f"unsupported recipe node {kind!r}")
        with np.errstate(all="ignore"):
            return _check(self.kinds[tree["k"]](tree), tree["k"])

    def _const(self, tree: dict):
        v = tree["v"]
        if not isinstance(v, (int, float, bool)):
            raise ValueError(f"constant {v!r} is not a number")
        return v

    def _dtype(self, tree: dict) -> np.dtype:
        if tree["v"] not in DTYPES:
            raise ValueError(f"unsupported dtype {tree['v']!r}")
        return np.dtype(tree["v"])

    def _ref(self, tree: dict):
        key = tree["id"]
        if key in self.done:
            return self.done[key]
        if key not in self.defs:
            raise ValueError(f"no def {key!r}")
        if key in self.active:
            raise ValueError(f"def {key!r} refers to itself")
        self.active.add(key)
        try:
            got = self.value(self.defs[key])
        finally:
            self.active.discard(key)
        self.done[key] = got
        return got

    def _binary(self, tree: dict):
        fn = _BINARY.get(tree["op"])
        if fn is None:
            raise ValueError(f"unsupported operator {tree['op']!r}")
        a, b = self.value(tree["a"]), self.value(tree["b"])
        shape_a, shape_b = np.shape(a), np.shape(b)
        if tree["op"] == "@":
            if len(shape_a) >= 2 and len(shape_b) >= 2:
                out = (*shape_a[:-1], shape_b[-1])
                if _size(out) > MAX_ELEMENTS:
                    raise ValueError(f"a matmul makes {_size(out)} elements")
        elif _size(np.broadcast_shapes(shape_a, shape_b)) > MAX_ELEMENTS:
            raise ValueError("a broadcast makes more than the element limit")
        return fn(np.asarray(a) if np.isscalar(a) and np.isscalar(b) else a, b)

    def _draw(self, tree: dict):
        dist = tree["dist"]
        allowed = _OTHER_DRAWS.get(dist) or tuple(n for n, _ in DRAW_PARAMS.get(dist, ()))
        if dist not in DRAW_PARAMS and dist not in _OTHER_DRAWS:
            raise ValueError(f"unsupported draw {dist!r}")
        params = {k: self.value(v) for k, v in tree["p"].items()}
        if set(params) - set(allowed):
            raise ValueError(f"draw {dist!r} given {sorted(set(params) - set(allowed))}")
        size = tuple(int(d) for d in tree["size"]) if tree.get("size") is not None else None
        if size is not None and _size(size) > MAX_ELEMENTS:
            raise ValueError(f"a draw of {_size(size)} elements")
        if dist == "permutation":
            return self.rng.permutation(params["x"])
        if dist == "integers":
            return self.rng.integers(_whole(params["low"]), _whole(params["high"]), size)
        if dist == "choice":
            a = params["a"]
            a = _whole(a) if np.ndim(a) == 0 else a
            return self.rng.choice(a, size, replace=bool(params["replace"]), p=params.get("p"))
        return getattr(self.rng, dist)(**params, size=size)

    def _call(self, tree: dict):
        fn = tree["fn"]
        args = [self.value(a) for a in tree["args"]]
        kw = {k: self.value(v) for k, v in tree.get("kw", {}).items()}
        if fn == "astype":
            if len(args) != 2 or not isinstance(args[1], np.dtype):
                raise ValueError("astype takes an array and a dtype")
            return np.asarray(args[0]).astype(args[1])
        if fn not in NUMPY_FUNCTIONS:
            raise ValueError(f"unsupported NumPy function {fn!r}")
        unknown = set(kw) - NUMPY_KEYWORDS
        if unknown:
            raise ValueError(f"unsupported keywords {sorted(unknown)} of {fn}")
        expected = _made_size(fn, args, kw)
        if expected > MAX_ELEMENTS:
            raise ValueError(f"{fn} makes {expected} elements (more than {MAX_ELEMENTS})")
        return getattr(np, fn)(*args, **kw)

    def _one_hot(self, tree: dict) -> np.ndarray:
        """Keras's ``to_categorical``: a trailing axis of 1 is dropped, classes default to
        the largest label + 1."""
        labels = np.asarray(self.value(tree["x"]))
        if labels.ndim > 1 and labels.shape[-1] == 1:
            labels = labels[..., 0]
        labels = _whole(labels)
        n = tree["n"] if tree["n"] is not None else int(np.max(labels)) + 1
        if labels.size * n > MAX_ELEMENTS:
            raise ValueError(f"a one-hot encoding of {labels.size * n} elements")
        return np.eye(n, dtype=np.float32)[labels]

    def _items(self, tree: dict) -> tuple:
        items = []
        for item in tree["idx"]:
            if isinstance(item, dict) and item.get("k") == "slice":
                items.append(slice(item["start"], item["stop"], item["step"]))
            else:
                items.append(self.value(item))
        return tuple(items)

    def _index(self, tree: dict):
        x = self.value(tree["x"])
        return np.asarray(x)[self._items(tree)]

    def _setitem(self, tree: dict) -> np.ndarray:
        """``x[idx] = v`` on a copy of ``x`` (its def, shared by the reads before the
        change, stays as it was)."""
        x = np.array(self.value(tree["x"]), copy=True)
        x[self._items(tree)] = self.value(tree["v"])
        return x


def _whole(v):
    """An integer bound given as a float literal (``randint(0, 10.0)``) as an int."""
    arr = np.asarray(v)
    if arr.dtype.kind == "f":
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"integer draw bound {v!r} is not whole")
        return arr.astype(np.int64) if arr.ndim else int(arr)
    return v


def _made_size(fn: str, args: list, kw: dict) -> int:
    """How many elements a constructor makes, before it makes them (0 when not one)."""
    rule = NUMPY_FUNCTIONS[fn]
    if rule == "square" and args:
        n = int(args[0])
        m = kw.get("M", args[1] if len(args) > 1 else None)
        return n * (int(m) if m is not None else n)
    if rule == "sized" and args:
        return _size(np.atleast_1d(args[0]))
    if rule == "num":
        return int(kw.get("num", args[2] if len(args) > 2 else 50))
    if rule == "range" and args and all(np.isscalar(a) for a in args):
        lo, hi = (0, args[0]) if len(args) == 1 else (args[0], args[1])
        step = args[2] if len(args) > 2 else kw.get("step", 1)
        return int(abs((hi - lo) / step)) if step else 0
    if rule == "outer" and len(args) == 2:
        return int(np.size(args[0]) * np.size(args[1]))
    if rule == "tile" and len(args) == 2:
        return int(np.size(args[0]) * _size(np.atleast_1d(args[1])))
    if rule == "repeat" and len(args) >= 2:
        return int(np.size(args[0]) * np.max(np.atleast_1d(args[1])))
    return 0
