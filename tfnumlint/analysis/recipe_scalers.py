"""scikit-learn's ``StandardScaler`` and ``MinMaxScaler`` in recipes.

The scale of the fed data decides whether training reaches a NaN, and scripts scale it with
``scaler.fit_transform(X_train)`` then ``scaler.transform(X_test)``.  Both are NumPy
arithmetic on the statistics of the data the scaler was fitted on: one def per fit (the fitted
data is drawn once), read from the one ``fit``/``fit_transform`` call of that scaler.
"""

from __future__ import annotations

import libcst as cst

from .draws import Builder, Frames, keywords, positional
from .module import Binding, Scope
from .recipe_libs import library_path
from .recipe_tables import Tree, Unknown

SCALERS = {
    "sklearn.preprocessing.StandardScaler": "standard",
    "sklearn.preprocessing.MinMaxScaler": "minmax",
}
_FITS = ("fit", "fit_transform")


def scaled(
    builder: Builder, call: cst.Call, scope: Scope, order: int, frames: Frames
) -> Tree | None:
    """``scaler.fit_transform(A)``, ``scaler.transform(B)``, ``StandardScaler().fit_transform(A)``
    as arithmetic on the fitted data's statistics; None when the call is no scaler's."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("fit_transform", "transform"):
        return None
    made = _constructor(builder, func.value, scope, order)
    if made is None:
        return None
    kind, options, receiver = made
    args = positional(call)
    if len(args) != 1 or keywords(call):
        raise Unknown("a scaler call with more than the data")
    if func.attr.value == "fit_transform":
        fitted = (args[0], scope, order, frames)
    else:
        fitted = _fitted(builder, receiver)
    key = f"fit@{builder.call_ids.get(id(call), id(call))}"
    if func.attr.value == "transform":
        key = f"fit@{_fit_site_id(builder, receiver)}"
    builder.defs[key] = builder.tree(*fitted)
    ref = {"k": "ref", "id": key}
    if func.attr.value == "fit_transform":  # the fitted data itself, drawn once
        return _formula(kind, options, ref, ref)
    return _formula(kind, options, builder.tree(args[0], scope, order, frames), ref)


def _constructor(builder: Builder, node, scope: Scope, order: int):
    """(kind, options, the binding of the scaler) of ``StandardScaler(...)`` here or bound to
    the receiver's name (``scaler = StandardScaler()``, ``scaler = MinMaxScaler().fit(A)``)."""
    binding = None
    if isinstance(node, cst.Name):
        found = builder.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.index is not None or found.value is None:
            return None
        binding, node = found, found.value
        if _is_fit(node):  # scaler = StandardScaler().fit(A)
            node = node.func.value  # type: ignore[union-attr]
    if not isinstance(node, cst.Call):
        return None
    kind = SCALERS.get(library_path(builder, node.func) or "")
    if kind is None:
        return None
    return kind, _options(builder, kind, node, scope, order), binding


def _options(builder: Builder, kind: str, made: cst.Call, scope: Scope, order: int) -> dict:
    if positional(made):
        raise Unknown("a scaler made with positional options")
    options: dict = {"with_mean": True, "with_std": True, "range": (0.0, 1.0)}
    for name, value in keywords(made).items():
        if name in ("with_mean", "with_std") and isinstance(value, cst.Name):
            options[name] = value.value == "True"
        elif name == "feature_range" and isinstance(value, (cst.Tuple, cst.List)):
            ends = [builder.number(e.value, scope, order, ()) for e in value.elements]
            if len(ends) != 2 or None in ends:
                raise Unknown("feature_range")
            options["range"] = tuple(ends)
        else:
            raise Unknown(f"scaler option {name}")
    return options


def _fit_sites(builder: Builder, binding: Binding | None) -> list:
    """The ``fit``/``fit_transform`` calls on the scaler bound by ``binding``."""
    if binding is None:
        return []
    sites = []
    value = binding.value
    if _is_fit(value):  # scaler = StandardScaler().fit(A)
        sites.append((value, binding.scope, binding.at))
    for site in builder.ev.info.calls:
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _FITS:
            receiver = func.value
            if isinstance(receiver, cst.Name):
                found = builder.ev.lookup(receiver.value, site.scope, site.order)
                if found is binding:
                    sites.append((site.node, site.scope, site.order))
    return sites


def _is_fit(node: cst.BaseExpression | None) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "fit"
    )


def _fitted(builder: Builder, binding: Binding | None):
    sites = _fit_sites(builder, binding)
    if len(sites) != 1:
        raise Unknown("a scaler fitted more than once, or never")
    call, scope, order = sites[0]
    args = positional(call)
    if len(args) != 1:
        raise Unknown("a fit of no data")
    return args[0], scope, order, ()


def _fit_site_id(builder: Builder, binding: Binding | None) -> int:
    call = _fit_sites(builder, binding)[0][0]
    return builder.call_ids.get(id(call), id(call))


def _call(fn: str, *args: Tree, **kw: Tree) -> Tree:
    return {"k": "call", "fn": fn, "args": list(args), "kw": kw}


def _bin(op: str, a: Tree, b: Tree) -> Tree:
    return {"k": "bin", "op": op, "a": a, "b": b}


def _const(v: float) -> Tree:
    return {"k": "const", "v": v}


def _nonzero(scale: Tree) -> Tree:
    """scikit-learn's guard: a constant feature is divided by 1, not 0."""
    return _call(
        "where", {"k": "cmp", "op": "==", "a": scale, "b": _const(0.0)}, _const(1.0), scale
    )


def _formula(kind: str, options: dict, data: Tree, fitted: Tree) -> Tree:
    axis = {"axis": _const(0)}
    if kind == "standard":
        out = data
        if options["with_mean"]:
            out = _bin("-", out, _call("mean", fitted, **axis))
        if options["with_std"]:
            out = _bin("/", out, _nonzero(_call("std", fitted, **axis)))
        return out
    low, high = options["range"]
    least = _call("min", fitted, **axis)
    spread = _nonzero(_bin("-", _call("max", fitted, **axis), least))
    unit = _bin("/", _bin("-", data, least), spread)
    return _bin("+", _bin("*", unit, _const(high - low)), _const(low))
