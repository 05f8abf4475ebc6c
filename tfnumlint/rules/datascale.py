"""The scale of training data, read from the source where it is literal.

Curvature, and so the largest stable learning rate, depends on the features' second moment.
When the features come from an allow-listed numpy constructor with literal arguments
(``np.linspace(-8, 8, 100)``, ``np.random.rand(200, 784)``, ``np.array([[1., 2.], ...])``),
their mean and second moment follow from the arguments alone: nothing is imported or run.
A visible normalisation (``x / 255.``, ``(x - x.mean()) / x.std()``, a scaler) means the scale
is not the constructor's.  Everything else is unknown, and the rules say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import libcst as cst

from .. import ops
from ..analysis.context import Context
from ..analysis.feeds import FeedReader
from ..analysis.module import Scope, Site
from ..analysis.names import descendants, target_path, zip_row_source
from ..analysis.values import literal_number

MAX_LITERAL_VALUES = 4096
PASS_THROUGH_METHODS = frozenset({"reshape", "astype", "copy", "flatten", "ravel", "squeeze"})
PASS_THROUGH_CALLS = frozenset(
    {"numpy.array", "numpy.asarray", "numpy.float32", "numpy.float64", "numpy.expand_dims"}
)
PASS_THROUGH_OPS = ops.CONVERSIONS  # constant, cast, identity
LOADERS = frozenset({"loadtxt", "genfromtxt", "fromfile", "read_csv", "read_table", "read_excel"})


@dataclass(frozen=True)
class Scale:
    """Features drawn as ``dist`` with ``params``; ``rows`` x ``cols`` values when known."""

    dist: str  # linspace | uniform | normal | values
    params: tuple[float, ...]
    rows: int | None
    cols: int
    mean: float
    mean_sq: float
    text: str

    @property
    def rms(self) -> float:
        return math.sqrt(self.mean_sq)

    def to_spec(self) -> dict:
        return {
            "dist": self.dist,
            "params": list(self.params),
            "rows": self.rows,
            "cols": self.cols,
            "text": self.text,
        }


@dataclass(frozen=True)
class DataScale:
    """What the source says about one feature expression."""

    status: str  # literal | normalised | unknown
    scale: Scale | None
    name: str  # how to name the data in a message
    loaded: bool = False  # read from a file in this module (np.loadtxt, pd.read_csv, ...)
    one_row: bool = False  # fed one row a step (``for x, y in zip(xs, ys)``)


def numpy_name(ctx: Context, func: cst.BaseExpression) -> str | None:
    """``np.random.rand`` -> ``numpy.random.rand`` when ``np`` is an import of numpy."""
    parts: list[str] = []
    node = func
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    base = ctx.info.imports.aliases.get(node.value)
    if base is None or base.split(".")[0] != "numpy":
        return None
    return ".".join([base, *reversed(parts)])


def resolve(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int):
    """Follow plain names to the expression last assigned to them (a few hops at most)."""
    for _ in range(8):
        if not isinstance(node, cst.Name):
            break
        binding = None
        s: Scope | None = scope
        while s is not None and binding is None:
            found = s.bindings.get(node.value)
            if found:
                visible = [b for b in found if b.visible <= order and b.scope is scope]
                binding = (visible or found)[-1]
            s = s.parent
        if binding is None or binding.value is None or binding.index is not None:
            break
        node, scope, order = binding.value, binding.scope, binding.visible
    return node, scope, order


def data_scale(ctx: Context, expr: cst.BaseExpression, site: Site) -> DataScale:
    """The scale of ``expr`` as the source shows it."""
    name = ctx.code(expr) if not isinstance(expr, cst.Name) else expr.value
    node, scope, order = resolve(ctx, expr, site.scope, site.order)
    one_row = isinstance(node, cst.Name) and node.value in loop_sources(ctx)
    if one_row:
        node = cst.Name(loop_sources(ctx)[name])  # a row of the array it loops over
        name = node.value  # the features are that array's rows
        node, scope, order = resolve(ctx, node, scope, order)
    status, scale = _scale_of(ctx, node, scope, order, 0)
    loaded = status == "unknown" and _loader(ctx, node, scope, order)
    return DataScale(status, scale, name, loaded, one_row)


def _loader(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> bool:
    """A call that reads raw data from a file: its scale is whatever the file holds."""
    for _ in range(8):
        node, scope, order = resolve(ctx, node, scope, order)
        if isinstance(node, cst.Subscript) or (
            isinstance(node, cst.Attribute) and node.attr.value == "values"
        ):
            node = node.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in (*PASS_THROUGH_METHODS, "to_numpy")
        ):
            node = node.func.value
        else:
            break
    if not isinstance(node, cst.Call) or ctx.op(node) is not None:
        return False
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return name in LOADERS


def _scale_of(ctx: Context, node, scope: Scope, order: int, depth: int):
    if depth > 12:
        return "unknown", None
    node, scope, order = resolve(ctx, node, scope, order)
    if isinstance(node, cst.BinaryOperation):
        return _affine(ctx, node, scope, order, depth)
    if not isinstance(node, cst.Call):
        if isinstance(node, (cst.List, cst.Tuple)):
            return _literal_values(ctx, node)
        return "unknown", None
    func = node.func
    np_name = numpy_name(ctx, func) or _generator_draw(ctx, func, scope, order)
    if np_name is not None:
        if np_name in PASS_THROUGH_CALLS and node.args:
            inner = node.args[0].value
            if isinstance(inner, (cst.List, cst.Tuple)):
                return _literal_values(ctx, inner)
            return _scale_of(ctx, inner, scope, order, depth + 1)
        scale = _constructor(ctx, np_name, node)
        if scale is not None:
            return "literal", scale
    if ctx.op(node) in PASS_THROUGH_OPS and node.args:
        return _scale_of(ctx, node.args[0].value, scope, order, depth + 1)
    if isinstance(func, cst.Attribute) and func.attr.value in PASS_THROUGH_METHODS:
        status, scale = _scale_of(ctx, func.value, scope, order, depth + 1)
        if scale is not None and func.attr.value == "reshape":
            scale = _reshaped(ctx, scale, node)
        return status, scale
    if _returns_normalised(ctx, node, depth):
        return "normalised", None
    return "unknown", None


GENERATOR_METHODS = {"integers": "randint"}  # a Generator's name for the same draw


def _generator_draw(ctx: Context, func: cst.BaseExpression, scope: Scope, order: int):
    """``rng.uniform`` where ``rng = np.random.RandomState(0)`` (or ``default_rng``): the
    numpy draw it makes, ``numpy.random.uniform``; None for anything else."""
    if not isinstance(func, cst.Attribute):
        return None
    if not FeedReader(ctx.ev).is_generator(func.value, scope, order):
        return None
    method = func.attr.value
    return f"numpy.random.{GENERATOR_METHODS.get(method, method)}"


def loop_sources(ctx: Context) -> dict[str, str]:
    """Name -> the array a ``for`` loop takes it from, a row an iteration: ``xs`` for ``x`` in
    ``for x, y in zip(xs, ys)`` (``for xb in batches`` may take whole batches, so only a zip
    of arrays counts).  A name two loops take from different arrays has none."""

    def compute() -> dict[str, str]:
        found: dict[str, set[str]] = {}
        for loop in (n for n in descendants(ctx.info.module) if isinstance(n, cst.For)):
            target = loop.target
            for element in target.elements if isinstance(target, (cst.Tuple, cst.List)) else []:
                if not isinstance(element.value, cst.Name):
                    continue
                name = element.value.value
                array = zip_row_source(loop.iter, target_path(target, name) or [])
                if isinstance(array, cst.Name):
                    found.setdefault(name, set()).add(array.value)
        return {name: arrays.pop() for name, arrays in found.items() if len(arrays) == 1}

    return ctx.fact("loop_sources", compute)


def _returns_normalised(ctx: Context, call: cst.Call, depth: int) -> bool:
    """A call of a function of this module whose every return normalises (``(x - m) / s``):
    what the body does, not what the function is called (issue 22)."""
    func = call.func
    fn = ctx.info.functions.get(func.value) if isinstance(func, cst.Name) else None
    if fn is None:
        return False
    return bool(fn.returns) and all(
        _scale_of(ctx, value, fn, order, depth + 1)[0] == "normalised"
        for order, value in fn.returns
    )


def _affine(ctx: Context, node: cst.BinaryOperation, scope: Scope, order: int, depth: int):
    """``x * c``, ``x + c``: move the distribution; ``x / s``, ``x - m`` normalise it."""
    op = node.operator
    left_c = _const(ctx, node.left, scope, order)
    right_c = _const(ctx, node.right, scope, order)
    if isinstance(op, (cst.Divide, cst.Subtract)) and right_c is None:
        return "normalised", None  # (x - mean) / std, x / x.max(), x - x.mean()
    if isinstance(op, cst.Divide) and right_c is not None:
        if abs(right_c) > 1.0:
            return "normalised", None  # x / 255.
        right_c, op = 1.0 / right_c if right_c else None, cst.Multiply()
        if right_c is None:
            return "unknown", None
    data, const = (node.left, right_c) if left_c is None else (node.right, left_c)
    if const is None:
        return "unknown", None
    status, scale = _scale_of(ctx, data, scope, order, depth + 1)
    if scale is None:
        return status, None
    if isinstance(op, cst.Multiply):
        return status, _scaled(scale, const, 0.0, f"{scale.text} * {const:g}")
    if isinstance(op, cst.Add):
        return status, _scaled(scale, 1.0, const, f"{scale.text} + {const:g}")
    if isinstance(op, cst.Subtract):
        return status, _scaled(scale, 1.0, -const, f"{scale.text} - {const:g}")
    return "unknown", None


def _scaled(scale: Scale, a: float, c: float, text: str) -> Scale:
    """The distribution of ``a * x + c``."""
    p = scale.params
    if scale.dist in ("linspace", "uniform"):
        lo, hi = sorted((a * p[0] + c, a * p[1] + c))
        params = (lo, hi, *p[2:])
    elif scale.dist == "normal":
        params = (a * p[0] + c, abs(a) * p[1])
    else:
        params = tuple(a * v + c for v in p)
    mean = a * scale.mean + c
    var = a * a * max(scale.mean_sq - scale.mean**2, 0.0)
    return replace(scale, params=params, mean=mean, mean_sq=var + mean * mean, text=text)


def _const(ctx: Context, node, scope: Scope, order: int) -> float | None:
    return ctx.ev.value(node, scope, order).const


def _ints(node: cst.BaseExpression | None) -> list[int] | None:
    """A literal size: ``3`` or ``(200, 784)``."""
    if node is None:
        return None
    if isinstance(node, (cst.Tuple, cst.List)):
        return _all_ints([e.value for e in node.elements])
    v = _int(node)
    return None if v is None else [v]


def _all_ints(nodes: list[cst.BaseExpression]) -> list[int] | None:
    """Each node's integer literal, or None when one is not an integer literal."""
    out = [v for v in (_int(n) for n in nodes) if v is not None]
    return out if len(out) == len(nodes) else None


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        v = literal_number(node)
        return int(v) if v is not None else None
    return None


def _num(ctx: Context, node: cst.BaseExpression | None, default: float | None) -> float | None:
    if node is None:
        return default
    if isinstance(node, (cst.Integer, cst.Float)):
        return literal_number(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _num(ctx, node.expression, None)
        return -inner if inner is not None else None
    return None


def _shape(dims: list[int] | None) -> tuple[int | None, int]:
    if not dims:
        return None, 1
    return dims[0], math.prod(dims[1:]) if len(dims) > 1 else 1


def _constructor(ctx: Context, name: str, call: cst.Call) -> Scale | None:
    """Mean and second moment of an allow-listed numpy constructor on literal arguments."""
    arg = ctx.arg
    text = ctx.code(call)
    short = name.removeprefix("numpy.")
    if short == "linspace":
        lo, hi = _num(ctx, arg(call, 0, "start"), None), _num(ctx, arg(call, 1, "stop"), None)
        n = _num(ctx, arg(call, 2, "num"), 50.0)
        if lo is None or hi is None or n is None or n < 1:
            return None
        return _even(lo, hi, int(n), "linspace", text)
    if short == "arange":
        a, b = _num(ctx, arg(call, 0, "start"), None), _num(ctx, arg(call, 1, "stop"), None)
        step = _num(ctx, arg(call, 2, "step"), 1.0)
        if a is not None and b is None:
            a, b = 0.0, a
        if a is None or b is None or not step:
            return None
        n = max(math.ceil((b - a) / step), 0)
        if n < 1:
            return None
        return _even(a, a + (n - 1) * step, n, "linspace", text)
    if short in ("random.rand", "random.randn"):
        dims = _all_ints([a.value for a in call.args if a.keyword is None])
        if dims is None:
            return None
        rows, cols = _shape(dims)
        if short == "random.rand":
            return Scale("uniform", (0.0, 1.0), rows, cols, 0.5, 1 / 3, text)
        return Scale("normal", (0.0, 1.0), rows, cols, 0.0, 1.0, text)
    if short in ("random.random", "random.random_sample", "random.sample"):
        rows, cols = _shape(_ints(arg(call, 0, "size")))
        return Scale("uniform", (0.0, 1.0), rows, cols, 0.5, 1 / 3, text)
    if short == "random.uniform":
        lo, hi = _num(ctx, arg(call, 0, "low"), 0.0), _num(ctx, arg(call, 1, "high"), 1.0)
        if lo is None or hi is None:
            return None
        rows, cols = _shape(_ints(arg(call, 2, "size")))
        mean_sq = (lo * lo + lo * hi + hi * hi) / 3
        return Scale(
            "uniform", (min(lo, hi), max(lo, hi)), rows, cols, (lo + hi) / 2, mean_sq, text
        )
    if short == "random.normal":
        loc, sd = _num(ctx, arg(call, 0, "loc"), 0.0), _num(ctx, arg(call, 1, "scale"), 1.0)
        if loc is None or sd is None:
            return None
        rows, cols = _shape(_ints(arg(call, 2, "size")))
        return Scale("normal", (loc, abs(sd)), rows, cols, loc, loc * loc + sd * sd, text)
    if short == "random.randint":
        lo, hi = _num(ctx, arg(call, 0, "low"), None), _num(ctx, arg(call, 1, "high"), None)
        if lo is not None and hi is None:
            lo, hi = 0.0, lo
        if lo is None or hi is None or hi - lo < 1:
            return None
        rows, cols = _shape(_ints(arg(call, 2, "size")))
        scale = _even(lo, hi - 1, int(hi - lo), "linspace", text)
        return replace(scale, dist="uniform", params=(lo, hi - 1), rows=rows, cols=cols)
    return None


def _even(lo: float, hi: float, n: int, dist: str, text: str) -> Scale:
    """n evenly spaced values from lo to hi (inclusive)."""
    mean = (lo + hi) / 2
    var = (hi - lo) ** 2 * (n + 1) / (12 * (n - 1)) if n > 1 else 0.0
    return Scale(dist, (lo, hi, float(n)), n, 1, mean, mean * mean + var, text)


def _literal_values(ctx: Context, node: cst.BaseExpression):
    """A literal (nested) list of numbers: its exact moments."""
    rows: list[list[float]] = []
    elements = node.elements if isinstance(node, (cst.List, cst.Tuple)) else []
    for e in elements:
        v = e.value
        cells = [x.value for x in v.elements] if isinstance(v, (cst.List, cst.Tuple)) else [v]
        row = _all_nums(ctx, cells)
        if row is None:
            return "unknown", None
        rows.append(row)
    flat = [x for row in rows for x in row]
    if not flat or len(flat) > MAX_LITERAL_VALUES or len({len(r) for r in rows}) != 1:
        return "unknown", None
    mean = sum(flat) / len(flat)
    mean_sq = sum(x * x for x in flat) / len(flat)
    text = ctx.code(node)
    text = text if len(text) <= 40 else text[:37] + "..."
    return "literal", Scale("values", tuple(flat), len(rows), len(rows[0]), mean, mean_sq, text)


def _all_nums(ctx: Context, nodes: list[cst.BaseExpression]) -> list[float] | None:
    """Each node's number, or None when one is not a literal number."""
    out = [v for v in (_num(ctx, n, None) for n in nodes) if v is not None]
    return out if len(out) == len(nodes) else None


def _reshaped(ctx: Context, scale: Scale, call: cst.Call) -> Scale:
    """``x.reshape(-1, 1)`` / ``reshape(n, d)``: the same values in a new shape."""
    nodes = [a.value for a in call.args]
    if len(nodes) == 1 and isinstance(nodes[0], cst.Tuple):
        nodes = [e.value for e in nodes[0].elements]
    dims = _all_nums(ctx, nodes)
    total = (scale.rows or 0) * scale.cols
    if dims is None or len(dims) != 2 or not total:
        return scale
    r, c = int(dims[0]), int(dims[1])
    if r == -1 and c > 0:
        r = total // c
    if c == -1 and r > 0:
        c = total // r
    return replace(scale, rows=r, cols=c) if r * c == total else scale


def curvature(scale: Scale, features: int | None = None) -> float:
    """Largest eigenvalue of the Hessian of mean((x @ w + b - y)**2) for iid features.

    E[z z^T] with z = [x_1..x_d, 1] has eigenvalue var(x) on the directions orthogonal to
    the all-ones vector, and the larger root of [[var + d mean^2, mean sqrt(d)],
    [mean sqrt(d), 1]] on the rest; the Hessian is twice that.
    """
    d = features or scale.cols
    var = max(scale.mean_sq - scale.mean**2, 0.0)
    a, b, c = var + d * scale.mean**2, scale.mean * math.sqrt(d), 1.0
    top = (a + c) / 2 + math.sqrt(((a - c) / 2) ** 2 + b * b)
    return 2.0 * max(top, var)
