"""The values a TF1 program feeds its placeholders, read from the NumPy code that makes them.

A placeholder is an input of the graph, but the program says what it feeds it:
``sess.run(..., feed_dict={y_ph: y_data[pick]})`` with ``y_data = np.exp(...)``.  When every
feed of a placeholder in its module is NumPy code whose range we can bound (random draws,
arithmetic, ``exp``/``clip``/``eye``..., indexing and reshaping, module helpers' returns), the
placeholder ranges over the hull of those feeds, not over every float.  A witness then stays
inside the data the program really feeds (a positive target is never set to -1).

The bounds come from what each NumPy call can return, never from names.  A normal draw is
bounded at six standard deviations from its mean (a draw beyond has probability < 2e-9), and the
message that uses the range says it is the fed data's range.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Protocol

import libcst as cst

from .in_place import stores
from .module import Binding, ModuleInfo, Scope
from .names import ImportMap, dotted_name
from .values import Val


class Evaluator(Protocol):
    """What the reader asks of :class:`.provenance.Evaluator` (a protocol: provenance reads
    this module's table, so this module does not import it)."""

    info: ModuleInfo
    imports: ImportMap

    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val: ...

    def op(self, call: cst.Call) -> str | None: ...

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None: ...


INF = math.inf
Range = tuple[float, float]
SIGMAS = 6.0  # a normal draw's bound, in standard deviations
MAX_DEPTH = 24

# what a NumPy function returns for the ranges of its (positional) arguments
_SAME = frozenset(
    {
        "asarray",
        "array",
        "copy",
        "ravel",
        "squeeze",
        "transpose",
        "reshape",
        "expand_dims",
        "tile",
        "repeat",
        "flip",
        "sort",
        "float32",
        "float64",
        "take",
        "roll",
    }
)
_HULL = frozenset({"stack", "concatenate", "vstack", "hstack", "column_stack", "dstack"})


def _hull(ranges: list[Range]) -> Range:
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def _mul(a: Range, b: Range) -> Range:
    products = [x * y for x in a for y in b]
    products = [0.0 if math.isnan(p) else p for p in products]  # 0 * inf: the 0 endpoint
    return min(products), max(products)


def _div(a: Range, b: Range) -> Range | None:
    if b[0] <= 0 <= b[1]:
        return None
    return _mul(a, (1 / b[1], 1 / b[0]))


def _monotone(fn, r: Range) -> Range:
    def safe(x: float) -> float:
        try:
            return fn(x)
        except OverflowError:
            return INF
        except ValueError:
            return math.nan

    lo, hi = safe(r[0]), safe(r[1])
    if math.isnan(lo) or math.isnan(hi):
        return (-INF, INF)
    return lo, hi


def _exp(x: float) -> float:
    return 0.0 if x == -INF else (INF if x > 709 else math.exp(x))


class FeedReader:
    """Bounds of NumPy expressions in one module, through its bindings and helpers."""

    def __init__(self, ev: Evaluator) -> None:
        self.ev = ev
        self.aliases = ev.imports.aliases
        # id -> (node, range): the node is kept, so its id is not reused while it is held
        self._memo: dict[int, tuple[cst.BaseExpression, Range | None]] = {}
        self._args: list[dict[str, tuple[cst.BaseExpression, Scope, int]]] = []

    # -- names of NumPy callees -------------------------------------------------------------
    def numpy_path(self, node: cst.BaseExpression) -> str | None:
        """``numpy.random.rand`` for ``np.random.rand`` under ``import numpy as np``."""
        head, _, rest = dotted_name(node).partition(".")
        base = self.aliases.get(head)
        if base is None or base.split(".")[0] != "numpy":
            return None
        return f"{base}.{rest}" if rest else base

    def is_generator(self, node: cst.BaseExpression, scope: Scope, order: int) -> bool:
        """Is ``node`` NumPy's random module or a generator made by it?"""
        path = self.numpy_path(node)
        if path == "numpy.random":
            return True
        if isinstance(node, cst.Call):
            made = self.numpy_path(node.func)
            return made in (
                "numpy.random.RandomState",
                "numpy.random.default_rng",
                "numpy.random.Generator",
            )
        if isinstance(node, cst.Name):
            found = self.ev.lookup(node.value, scope, order)
            if isinstance(found, Binding) and found.value is not None and found.index is None:
                return self.is_generator(found.value, found.scope, found.at)
        return False

    # -- ranges -----------------------------------------------------------------------------
    def range(
        self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0
    ) -> Range | None:
        """Bounds of the values ``node`` holds, or None when the code does not bound them."""
        if depth > MAX_DEPTH:
            return None
        key = id(node)
        held = self._memo.get(key)
        if held is not None and held[0] is node and not self._args:
            return held[1]
        got = self._range(node, scope, order, depth + 1)
        if got is not None and (math.isnan(got[0]) or math.isnan(got[1])):
            got = None
        if not self._args:
            self._memo[key] = (node, got)
        return got

    def _const(self, node: cst.BaseExpression, scope: Scope, order: int) -> float | None:
        if isinstance(node, cst.Name) and self._args and node.value in self._args[-1]:
            arg, s, o = self._args[-1][node.value]
            return self._const(arg, s, o)
        return self.ev.value(node, scope, order).const

    def _range(
        self, node: cst.BaseExpression, scope: Scope, order: int, depth: int
    ) -> Range | None:
        c = self._const(node, scope, order) if not isinstance(node, cst.Call) else None
        if c is not None:
            return (c, c)
        if isinstance(node, cst.Name):
            return self._name(node, scope, order, depth)
        if isinstance(node, cst.Subscript):
            return self.range(node.value, scope, order, depth)
        if isinstance(node, (cst.List, cst.Tuple)):
            items = [self.range(e.value, scope, order, depth) for e in node.elements]
            return _hull(items) if items and None not in items else None  # type: ignore[arg-type]
        if isinstance(node, cst.UnaryOperation):
            inner = self.range(node.expression, scope, order, depth)
            if inner is None:
                return None
            if isinstance(node.operator, cst.Minus):
                return (-inner[1], -inner[0])
            return inner if isinstance(node.operator, cst.Plus) else None
        if isinstance(node, cst.BinaryOperation):
            return self._binary(node, scope, order, depth)
        if isinstance(node, cst.Comparison):
            return (0.0, 1.0)
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, depth)
        return None

    def _name(self, node: cst.Name, scope: Scope, order: int, depth: int) -> Range | None:
        if self._args and node.value in self._args[-1]:
            arg, s, o = self._args[-1][node.value]
            frame = self._args.pop()
            try:
                return self.range(arg, s, o, depth)
            finally:
                self._args.append(frame)
        found = self.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.value is None:
            return None
        changes = stores(self.ev.info, found.scope, node.value)
        if changes is None:  # changed in place in a way not read here
            return None
        value = found.value
        if found.index is not None:  # a, b = ...: the element of a tuple or a helper's return
            got = self._item(value, found.index, found.scope, found.at, depth)
        else:
            got = self.range(value, found.scope, found.at, depth)
        for change in changes:  # x[m] = v: the values stored join the array's
            if got is None or change.start < found.visible:
                continue
            stored = (
                None if change.op else self.range(change.value, found.scope, change.start, depth)
            )
            got = _hull([got, stored]) if stored is not None else None
        return got

    def _item(
        self, value: cst.BaseExpression, index: int, scope: Scope, order: int, depth: int
    ) -> Range | None:
        if isinstance(value, cst.Tuple | cst.List):
            if index < len(value.elements):
                return self.range(value.elements[index].value, scope, order, depth)
            return None
        if isinstance(value, cst.Call):
            returned = self._helper_return(value, scope, order)
            if returned is not None:
                body, fscope, frame = returned
                if isinstance(body, cst.Tuple) and index < len(body.elements):
                    self._args.append(frame)
                    try:
                        return self.range(body.elements[index].value, fscope, 10**9, depth)
                    finally:
                        self._args.pop()
        return None

    def _helper_return(self, call: cst.Call, scope: Scope, order: int):
        """A module function's single return expression, with its parameters bound."""
        if not isinstance(call.func, cst.Name):
            return None
        fscope = self.ev.info.functions.get(call.func.value)
        if (
            fscope is None
            or len(fscope.returns) != 1
            or not isinstance(fscope.node, cst.FunctionDef)
        ):
            return None
        frame: dict[str, tuple[cst.BaseExpression, Scope, int]] = {}
        params = list(fscope.node.params.params)
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for i, p in enumerate(params):
            name = p.name.value
            kw = next((a for a in call.args if a.keyword and a.keyword.value == name), None)
            if kw is not None:
                frame[name] = (kw.value, scope, order)
            elif i < len(positional):
                frame[name] = (positional[i].value, scope, order)
            elif p.default is not None:
                frame[name] = (p.default, fscope.parent or scope, 0)
            else:
                return None
        return fscope.returns[0][1], fscope, frame

    def _binary(
        self, node: cst.BinaryOperation, scope: Scope, order: int, depth: int
    ) -> Range | None:
        a = self.range(node.left, scope, order, depth)
        b = self.range(node.right, scope, order, depth)
        if a is None or b is None:
            return None
        op = node.operator
        if isinstance(op, cst.Add):
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(op, cst.Subtract):
            return (a[0] - b[1], a[1] - b[0])
        if isinstance(op, cst.Multiply):
            return _mul(a, b)
        if isinstance(op, cst.Divide):
            return _div(a, b)
        if isinstance(op, cst.Power) and b[0] == b[1] and b[0] == 2:
            lo = 0.0 if a[0] <= 0 <= a[1] else min(a[0] ** 2, a[1] ** 2)
            return (lo, max(a[0] ** 2, a[1] ** 2))
        return None

    def _call(self, node: cst.Call, scope: Scope, order: int, depth: int) -> Range | None:
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        func = node.func
        if isinstance(func, cst.Attribute) and self.is_generator(func.value, scope, order):
            return self._draw(func.attr.value, args, kw, scope, order)
        path = self.numpy_path(func)
        if path is not None:
            return self._numpy(path.rsplit(".", 1)[-1], args, kw, scope, order, depth)
        if isinstance(func, cst.Attribute):  # array methods
            method = func.attr.value
            if method in (
                "astype",
                "reshape",
                "copy",
                "ravel",
                "flatten",
                "squeeze",
                "transpose",
                "mean",
            ):
                return self.range(func.value, scope, order, depth)
            if method == "clip" and len(args) == 2:
                return self._clip(func.value, args[0], args[1], scope, order, depth)
        if isinstance(func, cst.Name) and func.value == "float" and args:
            return self.range(args[0], scope, order, depth)
        return None

    def _clip(self, x, lo, hi, scope, order, depth) -> Range | None:
        inner = self.range(x, scope, order, depth) or (-INF, INF)
        lo_v, hi_v = self._const(lo, scope, order), self._const(hi, scope, order)
        if lo_v is None or hi_v is None:
            return None
        return (max(inner[0], lo_v), min(inner[1], hi_v))

    def _num(self, args, kw, i: int, name: str, default: float | None, scope, order):
        node = kw.get(name) if name in kw else (args[i] if i < len(args) else None)
        if node is None:
            return default
        return self._const(node, scope, order)

    def _draw(self, method: str, args, kw, scope, order) -> Range | None:
        """What a NumPy random draw can return."""
        if method in ("rand", "random", "random_sample", "sample", "ranf"):
            return (0.0, 1.0)
        if method in ("randn", "standard_normal"):
            return (-SIGMAS, SIGMAS)
        if method == "uniform":
            lo = self._num(args, kw, 0, "low", 0.0, scope, order)
            hi = self._num(args, kw, 1, "high", 1.0, scope, order)
            return None if lo is None or hi is None else (lo, hi)
        if method in ("normal", "lognormal"):
            mu = self._num(args, kw, 0, "loc" if method == "normal" else "mean", 0.0, scope, order)
            sd = self._num(
                args, kw, 1, "scale" if method == "normal" else "sigma", 1.0, scope, order
            )
            if mu is None or sd is None:
                return None
            r = (mu - SIGMAS * abs(sd), mu + SIGMAS * abs(sd))
            return r if method == "normal" else (_exp(r[0]), _exp(r[1]))
        if method in ("randint", "integers"):
            lo = self._num(args, kw, 0, "low", None, scope, order)
            hi = self._num(args, kw, 1, "high", None, scope, order)
            if lo is None:
                return None
            if hi is None:
                return (0.0, lo - 1)
            return (lo, hi - 1 if method == "randint" or not kw.get("endpoint") else hi)
        if method in ("permutation", "choice") and args:
            n = self._const(args[0], scope, order)
            return (0.0, n - 1) if n is not None else None
        if method == "binomial":
            n = self._num(args, kw, 0, "n", None, scope, order)
            return (0.0, n) if n is not None else None
        if method in (
            "poisson",
            "exponential",
            "gamma",
            "chisquare",
            "standard_gamma",
            "geometric",
            "rayleigh",
            "weibull",
        ):
            return (0.0, INF)
        if method == "beta":
            return (0.0, 1.0)
        return None

    def _numpy(self, fn: str, args, kw, scope, order, depth) -> Range | None:
        """What a NumPy function returns, from its arguments' bounds."""
        if fn in ("eye", "identity", "tri"):
            return (0.0, 1.0)
        if fn in ("zeros", "zeros_like", "empty"):  # empty: filled before it is fed (assumed)
            return (0.0, 0.0) if fn != "empty" else None
        if fn in ("ones", "ones_like"):
            return (1.0, 1.0)
        if fn in ("full", "full_like") and len(args) >= 2:
            v = self._const(args[1], scope, order)
            return (v, v) if v is not None else None
        if fn in ("arange", "linspace"):
            if not args:
                return None
            got = [self._const(a, scope, order) for a in args[:2]]
            vals = [v for v in got if v is not None]
            if len(vals) != len(got):
                return None
            if fn == "arange" and len(vals) == 1:
                return (0.0, vals[0])
            return (min(vals), max(vals))
        if not args:
            return None
        if fn in _HULL:
            first = args[0]
            if isinstance(first, cst.List | cst.Tuple):
                return self.range(first, scope, order, depth)
            return None
        if fn == "clip" and len(args) >= 3:
            return self._clip(args[0], args[1], args[2], scope, order, depth)
        inner = self.range(args[0], scope, order, depth)
        if inner is None:
            return None
        if fn in _SAME:
            return inner
        if fn == "exp":
            return (_exp(inner[0]), _exp(inner[1]))
        if fn == "log" and inner[0] > 0:
            return _monotone(math.log, inner)
        if fn == "log1p" and inner[0] > -1:
            return _monotone(math.log1p, inner)
        if fn == "sqrt" and inner[0] >= 0:
            return _monotone(math.sqrt, inner)
        if fn == "tanh":
            return _monotone(math.tanh, inner)
        if fn in ("sin", "cos"):
            return (-1.0, 1.0)
        if fn in ("abs", "absolute", "fabs"):
            lo = 0.0 if inner[0] <= 0 <= inner[1] else min(abs(inner[0]), abs(inner[1]))
            return (lo, max(abs(inner[0]), abs(inner[1])))
        if fn == "square":
            lo = 0.0 if inner[0] <= 0 <= inner[1] else min(inner[0] ** 2, inner[1] ** 2)
            return (lo, max(inner[0] ** 2, inner[1] ** 2))
        if fn in ("floor", "ceil", "round", "rint", "mean", "median"):
            return (
                math.floor(inner[0]) if fn != "mean" else inner[0],
                math.ceil(inner[1]) if fn != "mean" else inner[1],
            )
        if fn in ("maximum", "minimum") and len(args) == 2:
            other = self.range(args[1], scope, order, depth)
            if other is None:
                return None
            pick = max if fn == "maximum" else min
            return (pick(inner[0], other[0]), pick(inner[1], other[1]))
        return None


def _feed_dicts(ev: Evaluator) -> Iterator[tuple[cst.Dict, Scope, int]]:
    """Every ``feed_dict`` of a ``run``/``eval`` call (by keyword, or ``run``'s second
    argument), with where it is evaluated."""
    for site in ev.info.calls:
        call = site.node
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("run", "eval"):
            continue
        fed = next(
            (
                a.value
                for a in call.args
                if a.keyword is not None and a.keyword.value == "feed_dict"
            ),
            None,
        )
        if fed is None and func.attr.value == "run":
            positional = [a for a in call.args if a.keyword is None]
            fed = positional[1].value if len(positional) > 1 else None
        if isinstance(fed, cst.Name):  # feed = {x: ...}; sess.run(..., feed_dict=feed)
            found = ev.lookup(fed.value, site.scope, site.order)
            if isinstance(found, Binding) and isinstance(found.value, cst.Dict):
                yield found.value, found.scope, found.at
            continue
        if isinstance(fed, cst.Dict):
            yield fed, site.scope, site.order


def fed_ranges(ev: Evaluator) -> dict[int, tuple[Range, str] | None]:
    """For each placeholder call (by id) the program feeds in this module: the hull of what it
    feeds, with the fed code, or None when one of its feeds is not bounded."""
    reader = FeedReader(ev)
    out: dict[int, tuple[Range, str] | None] = {}
    for fed, scope, order in _feed_dicts(ev):
        for element in fed.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.Name):
                continue
            found = ev.lookup(element.key.value, scope, order)
            if not isinstance(found, Binding) or not isinstance(found.value, cst.Call):
                continue
            if ev.op(found.value) != "placeholder":
                continue
            key = id(found.value)
            if key in out and out[key] is None:
                continue
            got = reader.range(element.value, scope, order)
            if got is None:
                out[key] = None
                continue
            code = " ".join(ev.info.module.code_for_node(element.value).split())
            before = out.get(key)
            if before is None:
                out[key] = (got, code)
            else:
                (lo, hi), text = before
                out[key] = ((min(lo, got[0]), max(hi, got[1])), text)
    return out


def _keyword(call: cst.Call, name: str, index: int) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def fit_targets(ev: Evaluator) -> dict[str, tuple[Range, str] | None]:
    """For each module function passed as a Keras loss (``compile(loss=fn)``): the hull of the
    targets every ``fit(x, y)`` of the module trains on, which Keras passes as the loss's first
    argument (None when one of them is not bounded NumPy code)."""
    losses: set[str] = set()
    fits: list[tuple[cst.BaseExpression | None, Scope, int]] = []
    for site in ev.info.calls:
        func = site.node.func
        if not isinstance(func, cst.Attribute):
            continue
        if func.attr.value == "compile":
            loss = _keyword(site.node, "loss", 1)
            if isinstance(loss, cst.Name) and loss.value in ev.info.functions:
                losses.add(loss.value)
        elif func.attr.value == "fit":
            fits.append((_keyword(site.node, "y", 1), site.scope, site.order))
    if not losses or not fits:
        return {}
    reader = FeedReader(ev)
    ranges: list[Range] = []
    codes: list[str] = []
    for y, scope, order in fits:
        got = reader.range(y, scope, order) if y is not None else None
        if got is None:  # a dataset, a generator or unbounded data: no claim
            return dict.fromkeys(losses)
        ranges.append(got)
        codes.append(" ".join(ev.info.module.code_for_node(y).split()))  # type: ignore[arg-type]
    hull = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    return dict.fromkeys(losses, (hull, codes[0]))
