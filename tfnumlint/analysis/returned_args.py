"""What a function's return keeps of its arguments (static, libcst only): read for its summary's
return candidates (:mod:`.project_summary`) and put back at each call (:mod:`.provenance_calls`).

- A parameter returned as it is, or through conversions that keep its values (``tf.cast`` to a
  float dtype, ``tf.convert_to_tensor``, ``tf.identity``), also when a local name holds it
  (``c = tf.cast(c, dtype); return c``): the call's value is the argument passed for it.
- A tuple of such values (``return m, s, c``): each item that returns a parameter is the
  argument passed for it, also through the items of another helper's tuple that does the same
  (``m, s, c = _prepare(m, s, c)``).
- A uniform draw whose bounds are parameters (``return tf.random.stateless_uniform(shape, seed,
  minval=minval, maxval=maxval)``): the call's value lies between the bounds it passes (or the
  parameters' defaults).

Only the code decides: what the function or its parameters are called is never read.
"""

from __future__ import annotations

import math
from typing import Any

import libcst as cst

from .. import ops
from .draw_range import bound_args, end_of, is_none, uniform_draw
from .dtypectx import FLOAT_WORDS, dtype_word
from .module import Binding, Scope, call_arg
from .values import INF, Val, revalue

MAX_MOVES = 8  # conversions and local names followed back to a parameter


def _keeps_values(ev: Any, call: cst.Call, scope: Scope) -> bool:
    """A conversion that returns its first argument's values: cast (to a float dtype, or one
    not named by a literal), identity, ``convert_to_tensor``."""
    op = ev.op(call)
    if op == "cast":
        target = call_arg(call, 1, "dtype")
        word = dtype_word(target, scope) if target is not None else None
        # a cast to a whole-number or boolean dtype rounds; a dtype read from a value (`x.dtype`)
        # is taken to be the float the code computes in
        return word is None or word in FLOAT_WORDS or not word.startswith(("int", "uint", "bool"))
    if op in ops.CONVERSIONS and op != "constant":
        return True
    resolved = ev.imports.resolve(call.func) or ""
    return resolved.endswith("convert_to_tensor")


def passed_param(ev: Any, expr: cst.BaseExpression, scope: Scope, at: int) -> str | None:
    """The parameter of the function around ``scope`` that ``expr`` returns, as it was
    passed, or None."""
    for _ in range(MAX_MOVES):
        if isinstance(expr, cst.Call):
            if not expr.args or expr.args[0].keyword or expr.args[0].star:
                return None
            if not _keeps_values(ev, expr, scope):
                return None
            expr = expr.args[0].value
            continue
        if not isinstance(expr, cst.Name):
            return None
        found = ev.lookup(expr.value, scope, at)
        if isinstance(found, cst.Param):
            return found.name.value if found in scope.params.values() else None
        if not isinstance(found, Binding) or found.value is None:
            return None
        if found.index is not None:
            inner = _item_argument(ev, found)
            if inner is None:
                return None
            expr, scope, at = inner
            continue
        expr, scope, at = found.value, found.scope, found.at
    return None


def _item_argument(ev: Any, found: Binding) -> tuple[cst.BaseExpression, Scope, int] | None:
    """``a, c = helper(x, c)``: the argument the call passes for the parameter that item
    ``found.index`` of the helper's tuple returns."""
    call, index = found.value, found.index
    if not isinstance(call, cst.Call) or not isinstance(index, int):
        return None
    summary = ev._callee(call, ev.value(call.func, found.scope, found.at), found.scope, found.at)
    returns = getattr(summary, "returns", None)
    if not returns or len(returns) != 1 or returns[0].items is None:
        return None
    items = returns[0].items
    param = items[index] if 0 <= index < len(items) else None
    if param is None:
        return None
    arg = bound_arguments(summary, call).get(param)
    return (arg, found.scope, found.at) if arg is not None else None


def tuple_params(ev: Any, expr: cst.BaseExpression, scope: Scope, at: int) -> tuple | None:
    """For a returned tuple literal, the parameter each item returns (None for the others);
    None when no item returns one."""
    if not isinstance(expr, (cst.Tuple, cst.List)):
        return None
    items = []
    for el in expr.elements:
        if isinstance(el, cst.StarredElement):
            return None
        items.append(passed_param(ev, el.value, scope, at))
    return tuple(items) if any(p is not None for p in items) else None


def draw_params(ev: Any, expr: cst.BaseExpression, scope: Scope, at: int) -> tuple | None:
    """``(minval parameter, maxval parameter)`` of a returned uniform draw whose bounds are
    parameters (None for a bound that is not one); None when neither is."""
    if isinstance(expr, cst.Name):  # ``x = tf.random.uniform(...); return x``
        found = ev.lookup(expr.value, scope, at)
        if isinstance(found, Binding) and found.index is None and found.value is not None:
            expr, scope, at = found.value, found.scope, found.at
    if not isinstance(expr, cst.Call):
        return None
    found_args = bound_args(expr, ev.op(expr))
    if found_args is None:
        return None
    params = tuple(
        passed_param(ev, a, scope, at) if a is not None and not is_none(a) else None
        for a in found_args
    )
    return params if any(p is not None for p in params) else None


def bound_arguments(summary: Any, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """Parameter name -> the argument node this call passes for it."""
    bound: dict[str, cst.BaseExpression] = {}
    for i, a in enumerate(x for x in call.args if x.keyword is None):
        if a.star:
            break
        if i < len(summary.positional):
            bound[summary.positional[i]] = a.value
    for a in call.args:
        if a.keyword is not None:
            bound[a.keyword.value] = a.value
    return bound


def argument_value(ev: Any, summary: Any, bound: dict, param: str, scope: Scope, order: int):
    """(the value this call gives ``param``, whether it is None or left out with a None
    default); the value is None when nothing is known."""
    arg = bound.get(param)
    if arg is not None:
        return (None, True) if is_none(arg) else (ev.value(arg, scope, order), False)
    default = summary.default(param)
    if default is None:
        return None, False
    return default[0], bool(default[1])


def drawn_between(ev: Any, cand: Any, summary: Any, bound: dict, scope: Scope, order: int) -> Val:
    """A returned draw with this call's bounds put in: each parameter bound takes the value
    its argument (or default) has; a bound the helper fixes keeps its own end."""
    base = cand.val
    ends = [base.lo if base is not None else -INF, base.hi if base is not None else INF]
    for i, param in enumerate(cand.bounds):
        if param is None:
            continue
        v, none = argument_value(ev, summary, bound, param, scope, order)
        ends[i] = end_of(v, i == 0, none)
    lo, hi = ends
    shown = [f"{e:g}" if math.isfinite(e) else "?" for e in (lo, hi)]
    return uniform_draw(lo, hi, f"a uniform draw in [{shown[0]}, {shown[1]})")


def with_items(ev: Any, cand: Any, summary: Any, bound: dict, scope: Scope, order: int) -> Val:
    """A returned tuple with this call's arguments put in for the items that return one."""
    base = cand.val
    own = list(base.tuple_items or ()) if base is not None else []
    items = []
    for i, param in enumerate(cand.items):
        mine = own[i] if i < len(own) else Val()
        if param is None:
            items.append(mine)
            continue
        v, none = argument_value(ev, summary, bound, param, scope, order)
        items.append(v if v is not None and not none else mine)
    if base is None:
        return Val("tuple", tuple_items=tuple(items))
    return revalue(base, tuple_items=tuple(items))
