"""Random draws of a recipe, in the terms of NumPy's ``Generator``.

``rng.rand(n, 3)``, ``np.random.randn(n)``, ``rs.randint(0, 10, n)`` and ``gen.integers(0, 6, N)``
become ``{"k": "draw", "dist", "p", "size"}`` with the parameters named as the Generator names
them, so the evaluator calls one generator of ours for every spelling.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import libcst as cst

from .feeds import Evaluator
from .module import Scope
from .recipe_tables import DRAW_PARAMS, MAX_ELEMENTS, UNIT_DRAWS, Tree, Unknown

Frames = Any  # recipe.Frames: the inlined calls a node is read in


class Builder(Protocol):
    """What the draws and the library calls ask of :class:`.recipe.Builder` (a protocol:
    the builder imports them, so they do not import it)."""

    ev: Evaluator
    defs: dict[str, Tree | None]
    stand_ins: dict[str, str]
    call_ids: dict[int, int]

    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames) -> Tree: ...

    def number(
        self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames
    ) -> int | float | None: ...

    def integer(
        self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames
    ) -> int: ...

    def shape(
        self, node: cst.BaseExpression | None, scope: Scope, order: int, frames: Frames
    ) -> list[int] | None: ...

    def shape_of(
        self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames
    ) -> tuple[int, ...] | None: ...


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    """The positional arguments (a ``*args`` call is not read: its arguments are unknown)."""
    if any(a.star for a in call.args):
        raise Unknown("star arguments")
    return [a.value for a in call.args if a.keyword is None]


def keywords(call: cst.Call) -> dict[str, cst.BaseExpression]:
    return {a.keyword.value: a.value for a in call.args if a.keyword is not None}


def argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    """The argument given by keyword ``name``, else the ``index``-th positional one."""
    kw = keywords(call)
    if name in kw:
        return kw[name]
    args = positional(call)
    return args[index] if index < len(args) else None


def draw(
    builder: Builder, method: str, node: cst.Call, scope: Scope, order: int, frames: Frames
) -> Tree:
    """A random draw, in the Generator's terms: ``{"k": "draw", "dist", "p", "size"}``."""
    args, kw = positional(node), keywords(node)

    def param(i: int, name: str) -> cst.BaseExpression | None:
        return kw.get(name) if name in kw else (args[i] if i < len(args) else None)

    def p(value) -> Tree:
        return builder.tree(value, scope, order, frames)

    def out(dist: str, params: dict, size: list[int] | None) -> Tree:
        return {"k": "draw", "dist": dist, "p": params, "size": size}

    if method in ("rand", "randn"):
        if kw:
            raise Unknown("rand with keywords")
        size = [builder.integer(a, scope, order, frames) for a in args] or None
        if _product(size) > MAX_ELEMENTS:
            raise Unknown("too large")
        if method == "randn":
            return out("standard_normal", {}, size)
        return out("uniform", {"low": _const(0.0), "high": _const(1.0)}, size)
    if method in UNIT_DRAWS:
        size = builder.shape(param(0, "size"), scope, order, frames)
        return out("uniform", {"low": _const(0.0), "high": _const(1.0)}, size)
    if method in ("randint", "integers"):
        return _integers(builder, method, param, p, out, scope, order, frames)
    if method == "choice":
        a = param(0, "a")
        if a is None:
            raise Unknown("choice of nothing")
        params = {"a": p(a), "replace": _const(True)}
        if param(2, "replace") is not None:
            params["replace"] = p(param(2, "replace"))
        if param(3, "p") is not None:
            params["p"] = p(param(3, "p"))
        return out("choice", params, builder.shape(param(1, "size"), scope, order, frames))
    if method == "permutation" and len(args) == 1 and not kw:
        return out("permutation", {"x": p(args[0])}, None)
    spec = DRAW_PARAMS.get(method)
    if spec is None:
        raise Unknown(f"draw {method}")
    params = {}
    for i, (name, default) in enumerate(spec):
        given = param(i, name)
        if given is not None:
            params[name] = p(given)
        elif default is not None:
            params[name] = _const(default)
        else:
            raise Unknown(f"{method} without {name}")
    size = builder.shape(param(len(spec), "size"), scope, order, frames)
    return out(method, params, size)


def _integers(
    builder: Builder, method: str, param, p, out, scope: Scope, order: int, frames: Frames
) -> Tree:
    low, high = param(0, "low"), param(1, "high")
    if low is None:
        raise Unknown("integers without a bound")
    lo, hi = (_const(0), p(low)) if high is None else (p(low), p(high))
    endpoint = param(4, "endpoint") if method == "integers" else None
    if endpoint is not None:
        if not (isinstance(endpoint, cst.Name) and endpoint.value in ("True", "False")):
            raise Unknown("endpoint")
        if endpoint.value == "True":
            hi = {"k": "bin", "op": "+", "a": hi, "b": _const(1)}
    size = builder.shape(param(2, "size"), scope, order, frames)
    return out("integers", {"low": lo, "high": hi}, size)


def _const(v: float | int | bool) -> Tree:
    return {"k": "const", "v": v}


def _product(shape: list[int] | None) -> int:
    return math.prod(shape) if shape else 1
