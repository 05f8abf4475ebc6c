"""TNL303: a softmax over scores masked with -inf, NaN in every row the mask leaves empty.

softmax subtracts the row maximum first; in a row where every entry is -inf that maximum is
-inf too, and exp(-inf - (-inf)) = exp(NaN).  What makes a fill -inf, what makes a mask, and
what keeps a row from being empty are read from producers (a ``-inf`` literal or constant, a
``tf.where``, a ``band_part`` of ones), never from names.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.epsilons import first_arg
from ..analysis.module import Scope, Site
from ..analysis.names import children as child_nodes
from ..analysis.slicing.tools import activation_layer_maker
from ..analysis.values import number
from .overflow import max_shifted
from .recipes import Recipe
from .registry import rule

# The value symptom a fully masked row shows (its gradient is NaN too, but the value first).
RECIPE = Recipe(symptoms=("nan-value", "nan-gradient"), only_listed=True)
# libraries whose `inf`/`NINF` constants (and `tril`, `triu`, `fill`, `full` functions) are
# the array API's, not user names: numpy, math, jax.numpy, tf.experimental.numpy, keras.ops
_ARRAY_ROOTS = ("numpy", "math", "jax", "tf", "keras", "tensorflow")
_DEPTH = 8


@dataclass(frozen=True)
class _At:
    """Where an expression is read: the scope and walk order a name lookup uses."""

    scope: Scope
    order: int


@dataclass(frozen=True)
class Fill:
    """A -inf fill under a softmax: the expression that writes it, where it is read, the mask
    condition (None for an additive ``(1 - mask) * -inf``) and which side keeps the scores."""

    node: cst.BaseExpression
    at: _At
    cond: cst.BaseExpression | None = None
    keep_when: bool = True


# ---------------------------------------------------------------- what is -inf


def _api(ctx: Context, func: cst.BaseExpression) -> tuple[str, str]:
    """(library root, last name) of an imported function or constant (``np.inf`` ->
    ("numpy", "inf")); ("", "") for a local."""
    dotted = ctx.info.imports.resolve(func) or ctx.info.imports.path(func)
    if not dotted:
        return "", ""
    root, _, rest = dotted.partition(".")
    return (root if root in _ARRAY_ROOTS else ""), rest.rsplit(".", 1)[-1]


def _binding(ctx: Context, name: str, at: _At) -> tuple[cst.BaseExpression, _At] | None:
    """The one expression a local name is bound to where it is read, and where that is read."""
    found = ctx.ev.lookup(name, at.scope, at.order)
    value = getattr(found, "value", None)
    if not isinstance(value, cst.BaseExpression) or getattr(found, "index", None) is not None:
        return None
    return value, _At(found.scope, found.at)  # type: ignore[union-attr]


def infinity(ctx: Context, node: cst.BaseExpression, at: _At, depth: int = 0) -> int:
    """+1 or -1 when the expression is +inf or -inf everywhere (a literal, a constant, a filled
    tensor, a name bound to one), 0 otherwise."""
    if depth > _DEPTH:
        return 0
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return -infinity(ctx, node.expression, at, depth + 1)
    if isinstance(node, (cst.Name, cst.Attribute)):
        root, last = _api(ctx, node)
        if root in ("numpy", "math", "jax", "tf"):
            word = last.lower()
            return 1 if word in ("inf", "infinity", "infty", "pinf") else -(word == "ninf")
        bound = _binding(ctx, node.value, at) if isinstance(node, cst.Name) else None
        return infinity(ctx, bound[0], bound[1], depth + 1) if bound else 0
    if isinstance(node, cst.BinaryOperation):
        return _uniform_arith(ctx, node, at, depth)
    if not isinstance(node, cst.Call) or not node.args:
        return 0
    if isinstance(node.func, cst.Name) and node.func.value == "float":
        text = node.args[0].value
        literal = text.evaluated_value if isinstance(text, cst.SimpleString) else None
        if not isinstance(literal, str):
            return 0
        word = literal.strip().lower()
        sign = -1 if word.startswith("-") else 1
        return sign if word.lstrip("+-") in ("inf", "infinity") else 0
    op = ctx.op(node)
    if op is not None and (ops.REGISTRY[op].conversion or op == "constant"):
        return infinity(ctx, node.args[0].value, at, depth + 1)  # tf.constant(-np.inf), a cast
    root, last = _api(ctx, node.func)
    if root and last in ("fill", "full", "full_like") and len(node.args) >= 2:
        value = ctx.arg(node, 1, "value", "fill_value")
        return infinity(ctx, value, at, depth + 1) if value is not None else 0
    if root and last in ("broadcast_to", "float32", "float16", "float64", "asarray", "array"):
        return infinity(ctx, node.args[0].value, at, depth + 1)
    return 0


def _ones(ctx: Context, node: cst.BaseExpression) -> bool:
    """``tf.ones(...)``, ``tf.ones_like(x)``, ``np.ones(...)``: every entry is 1."""
    if not isinstance(node, cst.Call):
        return number(node) == 1
    return ctx.op(node) == "ones" or _api(ctx, node.func)[1] in ("ones", "ones_like")


def _uniform_arith(ctx: Context, node: cst.BinaryOperation, at: _At, depth: int) -> int:
    """``tf.ones_like(s) * -np.inf``, ``tf.zeros_like(s) - np.inf``: a uniform -inf tensor."""
    left = infinity(ctx, node.left, at, depth + 1)
    right = infinity(ctx, node.right, at, depth + 1)
    if isinstance(node.operator, cst.Multiply) and (left or right):
        other = node.right if left else node.left
        factor = number(other)
        if factor is not None and factor != 0:
            return (left or right) * (1 if factor > 0 else -1)
        return (left or right) if _ones(ctx, other) else 0
    if isinstance(node.operator, (cst.Add, cst.Subtract)) and bool(left) != bool(right):
        other = node.right if left else node.left
        finite = number(other) is not None or (
            isinstance(other, cst.Call) and ctx.op(other) in ops.LITERAL_SOURCES
        )  # zeros_like(s) - inf; a tensor that may itself be inf could make inf - inf
        if finite:
            return left or (right if isinstance(node.operator, cst.Add) else -right)
    return 0


# ---------------------------------------------------------------- the fill under a softmax


def masked_fill(ctx: Context, node: cst.BaseExpression, at: _At, depth: int = 0) -> Fill | None:
    """The -inf fill a softmax input carries in: a ``tf.where`` with a -inf branch, or an
    additive ``mask * -inf``, through names, entry-keeping ops (a cast, a reshape) and the
    arithmetic that keeps -inf (a bias added, a temperature divided)."""
    if depth > _DEPTH:
        return None
    if isinstance(node, cst.Name):
        bound = _binding(ctx, node.value, at)
        return masked_fill(ctx, bound[0], bound[1], depth + 1) if bound else None
    sides: tuple[cst.BaseExpression | None, ...] = ()
    if isinstance(node, cst.BinaryOperation):
        symbol = _ARITH.get(type(node.operator))
        if symbol == "*" and _additive(ctx, node.left, node.right, at):
            return Fill(node, at)
        sides = (node.left, node.right) if symbol in ("+", "*") else (node.left,)
        sides = sides if symbol else ()
    elif isinstance(node, cst.Call):
        op = ctx.op(node)
        if op == "where":
            return _where_fill(ctx, node, at, depth)
        symbol = ops.OPERATORS.get(op or "")
        if symbol == "*" and _additive(ctx, ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y"), at):
            return Fill(node, at)
        if symbol in ("+", "*"):
            sides = (ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y"))
        elif symbol in ("-", "/") or op in ops.ENTRY_KEEPING:
            sides = (first_arg(node, "x", "tensor", "input"),)
    for side in sides:
        found = masked_fill(ctx, side, at, depth + 1) if side is not None else None
        if found is not None:
            return found
    return None


_ARITH = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/"}


def _additive(
    ctx: Context, a: cst.BaseExpression | None, b: cst.BaseExpression | None, at: _At
) -> bool:
    """``(1 - mask) * -inf``: -inf times a factor that is not one number (0 * -inf = NaN)."""
    if a is None or b is None:
        return False
    for inf_side, other in ((a, b), (b, a)):
        if infinity(ctx, inf_side, at) < 0 and number(other) is None and not _ones(ctx, other):
            return True
    return False


def _where_fill(ctx: Context, call: cst.Call, at: _At, depth: int) -> Fill | None:
    """A where with a -inf branch is the fill; else a fill under one of its branches, unless
    the where's condition reads that fill's mask (it selects a finite value for those rows)."""
    cond = ctx.arg(call, 0, "condition")
    x, y = ctx.arg(call, 1, "x", "x1"), ctx.arg(call, 2, "y", "x2")
    if cond is None or x is None or y is None:
        return None
    if infinity(ctx, y, at) < 0:
        return Fill(call, at, cond, True)
    if infinity(ctx, x, at) < 0:
        return Fill(call, at, cond, False)
    for inner in (x, y):
        found = masked_fill(ctx, inner, at, depth + 1)
        if found is None:
            continue
        if found.cond is not None and _reads(ctx, cond, at) & _reads(ctx, found.cond, found.at):
            return None  # `where(any_kept, masked, 0)`: a select on the mask refills the rows
        return found
    return None


# ---------------------------------------------------------------- rows that keep an entry

_COMPARE = {
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}
_HOLDS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def on_diagonal(ctx: Context, node: cst.BaseExpression, at: _At, depth: int = 0) -> float | None:
    """The value a mask takes on the diagonal of its last two axes, when its producer fixes
    it: a ``band_part`` of ones keeps the diagonal (1), ``triu(ones, k=1)`` does not (0),
    ``range(n)[:, None] >= range(n)[None, :]`` holds there; through casts, comparisons with a
    number, negation and ``1 - m``.  None when the producer does not say."""
    if depth > _DEPTH:
        return None
    literal = number(node)
    if literal is not None:
        return literal
    if isinstance(node, cst.Name):
        bound = _binding(ctx, node.value, at)
        return on_diagonal(ctx, bound[0], bound[1], depth + 1) if bound else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.BitInvert, cst.Not)):
        inner = on_diagonal(ctx, node.expression, at, depth + 1)
        return None if inner is None else float(not inner)
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        part = node.comparisons[0]
        return _compared(
            ctx, _COMPARE.get(type(part.operator)), node.left, part.comparator, at, depth
        )
    if isinstance(node, cst.BinaryOperation):
        return _combined(ctx, node.operator, node.left, node.right, at, depth)
    if not isinstance(node, cst.Call) or not node.args:
        return None
    op = ctx.op(node)
    if op in ops.ENTRY_KEEPING:
        return on_diagonal(ctx, node.args[0].value, at, depth + 1)
    if op in ops.LITERAL_SOURCES:
        return 1.0 if _ones(ctx, node) else None
    _root, last = _api(ctx, node.func)
    if last in ops.OPERATORS and len(node.args) == 2:
        a, b = node.args[0].value, node.args[1].value
        return _compared(ctx, ops.OPERATORS[last], a, b, at, depth)
    if last == "logical_not":
        inner = on_diagonal(ctx, node.args[0].value, at, depth + 1)
        return None if inner is None else float(not inner)
    if last in ops.BOOLEAN and len(node.args) == 2:  # the comparisons are read above
        op_node = cst.BitAnd() if last == "logical_and" else cst.BitOr()
        return _combined(ctx, op_node, node.args[0].value, node.args[1].value, at, depth)
    return _band(ctx, node, last)


def _band(ctx: Context, call: cst.Call, last: str) -> float | None:
    """``band_part(ones, lower, upper)`` always keeps the diagonal; ``tril(ones, k)`` keeps it
    for k >= 0 and ``triu(ones, k)`` for k <= 0."""
    if not _ones(ctx, call.args[0].value):
        return None
    if last in ("band_part", "matrix_band_part"):
        return 1.0
    k = ctx.arg(call, 1, "k", "diagonal")
    offset = 0.0 if k is None else number(k)
    if offset is None or last not in ("tril", "triu"):
        return None
    return float(offset >= 0) if last == "tril" else float(offset <= 0)


def _index_range(ctx: Context, node: cst.BaseExpression, at: _At, depth: int) -> bool:
    """``tf.range(n)`` (one argument: 0, 1, ..., n - 1), indexed or expanded to a row or a
    column: its value is its position along one axis."""
    if depth > _DEPTH:
        return False
    if isinstance(node, cst.Subscript):
        return _index_range(ctx, node.value, at, depth + 1)
    if isinstance(node, cst.Name):
        bound = _binding(ctx, node.value, at)
        return _index_range(ctx, bound[0], bound[1], depth + 1) if bound else False
    if not isinstance(node, cst.Call) or not node.args:
        return False
    if ctx.op(node) in ops.ENTRY_KEEPING:
        return _index_range(ctx, node.args[0].value, at, depth + 1)
    root, last = _api(ctx, node.func)
    return bool(root) and last in ("range", "arange") and len(node.args) == 1


def _compared(ctx: Context, symbol, left, right, at: _At, depth: int) -> float | None:
    if symbol not in _HOLDS:
        return None
    if _index_range(ctx, left, at, depth + 1) and _index_range(ctx, right, at, depth + 1):
        return float(symbol in (">=", "<=", "=="))  # row index vs column index: equal there
    a, b = on_diagonal(ctx, left, at, depth + 1), on_diagonal(ctx, right, at, depth + 1)
    return None if a is None or b is None else float(_HOLDS[symbol](a, b))


def _combined(ctx: Context, operator, left, right, at: _At, depth: int) -> float | None:
    a, b = on_diagonal(ctx, left, at, depth + 1), on_diagonal(ctx, right, at, depth + 1)
    if isinstance(operator, (cst.BitAnd, cst.Multiply)):
        if a == 0 or b == 0:
            return 0.0
        return None if a is None or b is None else a * b
    if isinstance(operator, cst.BitOr):
        if a or b:
            return 1.0
        return None if a is None or b is None else 0.0
    if a is None or b is None:
        return None
    symbol = _ARITH.get(type(operator))
    return {"+": a + b, "-": a - b}.get(symbol or "")


def rows_kept(ctx: Context, fill: Fill) -> bool:
    """Every row keeps at least one score: the mask keeps the diagonal (a causal mask)."""
    if fill.cond is None:
        return False
    diagonal = on_diagonal(ctx, fill.cond, fill.at)
    return diagonal is not None and bool(diagonal) == fill.keep_when


# ---------------------------------------------------------------- rows zeroed downstream


def _local_names(ctx: Context, node: cst.CSTNode | None) -> set[str]:
    """The local values an expression reads (names and ``self.attr``, not imported modules)."""
    out: set[str] = set()
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name):
            if n.value.value not in ctx.info.imports.aliases:
                out.add(f"{n.value.value}.{n.attr.value}")
            continue
        if isinstance(n, cst.Name) and n.value not in ctx.info.imports.aliases:
            out.add(n.value)
        stack.extend(child_nodes(n))
    return out - {"self", "True", "False", "None"}


def _reads(ctx: Context, node: cst.CSTNode | None, at: _At, depth: int = 0) -> set[str]:
    """The local values an expression reads, and those the names it reads are computed from
    (``any_kept = tf.reduce_any(mask, -1)``: ``any_kept`` reads ``mask``)."""
    names = _local_names(ctx, node)
    for name in list(names) if depth < 3 else []:
        bound = _binding(ctx, name, at) if "." not in name else None
        if bound is not None:
            names |= _reads(ctx, bound[0], bound[1], depth + 1)
    return names


def _zeroing(ctx: Context, call: cst.Call, at: _At, mask: set[str]) -> bool:
    """A call that replaces what a fully masked row holds: a ``where`` whose condition reads
    the mask (``reduce_any(mask, -1, keepdims=True)``) or tests for NaN, or a
    ``multiply_no_nan`` by the mask (0 where the mask is 0, whatever the other factor)."""
    _root, last = _api(ctx, call.func)
    if ctx.op(call) == "where":
        cond = ctx.arg(call, 0, "condition")
        calls = {_api(ctx, n.func)[1] for n in _calls_in(cond)}
        return bool(_reads(ctx, cond, at) & mask) or bool(calls & {"is_nan", "is_finite"})
    return last == "multiply_no_nan" and bool(_reads(ctx, ctx.arg(call, 1, "y"), at) & mask)


def _calls_in(node: cst.CSTNode | None) -> list[cst.Call]:
    out, stack = [], [node] if node is not None else []
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            out.append(n)
        stack.extend(child_nodes(n))
    return out


def rows_zeroed(ctx: Context, site: Site, node: cst.CSTNode, fill: Fill) -> bool:
    """The NaN rows are replaced before anything reads them: a zeroing call around the softmax
    in its statement, or one reading the name the softmax is assigned to later in the scope."""
    mask = _reads(ctx, fill.cond, fill.at)
    here = _At(site.scope, site.order)
    for call in _calls_in(site.statement):
        if call is not node and _contains(call, node) and _zeroing(ctx, call, here, mask):
            return True
    target = _assigned_name(site.statement, node)
    if target is None:
        return False
    return any(
        use.scope is site.scope
        and use.order > site.order
        and target in _local_names(ctx, use.node)
        and _zeroing(ctx, use.node, _At(use.scope, use.order), mask)
        for use in ctx.info.calls
    )


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    return any(n is inner for n in _calls_in(outer))


def _assigned_name(statement: cst.CSTNode, node: cst.CSTNode) -> str | None:
    """``p = tf.nn.softmax(...)`` (or an expression of it): the name bound."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        statement = statement.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign):
        target = statement.target
    else:
        return None
    value = statement.value
    if value is None or not (value is node or _contains(value, node)):
        return None
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        return f"{target.value.value}.{target.attr.value}"
    return target.value if isinstance(target, cst.Name) else None


# ---------------------------------------------------------------- the checks


def _masked_rows(ctx: Context, site: Site, x: cst.BaseExpression | None, node, subject: str):
    """A hit on ``node`` (a softmax of ``x``, or its shift by the row maximum) when ``x``
    carries a -inf fill whose rows can all be masked and nothing downstream replaces them."""
    fill = masked_fill(ctx, x, _At(site.scope, site.order)) if x is not None else None
    if fill is None:
        return
    shown = " ".join(ctx.code(fill.node).split())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    finite = "-1e4 (-1e9 is -inf in float16)" if ctx.dtype(site) == "float16" else "-1e9"
    if fill.cond is None:
        yield Hit(
            node,
            f"{subject} scores masked additively with -inf (`{shown}`) is NaN in every row: "
            "0 * -inf = NaN wherever the mask keeps an entry; fill with "
            f"tf.where(mask, scores, {finite}) instead",
            site,
            {"keep_logits": True},
        )
        return
    if rows_kept(ctx, fill) or rows_zeroed(ctx, site, node, fill):
        return
    yield Hit(
        node,
        f"{subject} scores masked with -inf (`{shown}`) is NaN in every row the mask leaves "
        "empty (-inf - (-inf) = NaN): a row with nothing to attend to, such as an empty "
        f"history or a padding-only sequence; fill with {finite}, or zero those rows: "
        "tf.where(tf.reduce_any(mask, -1, keepdims=True), p, 0)",
        site,
        {"keep_logits": True},
    )


@rule("TNL303", ops={"softmax"}, recipe=RECIPE)
def softmax_of_masked_row(site: Site[cst.Call], ctx: Context):
    x = first_arg(site.node, "logits", "x")
    yield from _masked_rows(ctx, site, x, site.node, "softmax of")


@rule("TNL303", module=True)
def softmax_layer_of_masked_row(ctx: Context):
    """``keras.layers.Softmax()(x)``, ``self.softmax(x)``, an ``Activation("softmax")`` layer:
    a layer whose input goes straight into a softmax (not a Dense with a softmax activation)."""
    for site in ctx.info.calls:
        constructor = activation_layer_maker(ctx, site.node.func, site.scope, site.order)
        if constructor is None:
            continue
        layer = ctx.val(constructor, site)
        if layer.kind == "layer" and layer.activation == "softmax":
            x = first_arg(site.node, "inputs")
            yield from _masked_rows(ctx, site, x, site.node, "a softmax layer of")


@rule("TNL303", binops=(cst.Subtract,), ops={"subtract"})
def row_max_shift_of_masked_row(site: Site, ctx: Context):
    """``x - reduce_max(x, -1, keepdims=True)`` (a softmax or logsumexp written by hand) with
    ``x`` masked with -inf: in a fully masked row the shift itself is -inf - (-inf) = NaN."""
    node = site.node
    if not max_shifted(node, ctx, site):
        return
    x = node.left if isinstance(node, cst.BinaryOperation) else ctx.arg(node, 0, "x")
    yield from _masked_rows(ctx, site, x, node, "the shift by the row maximum of")
