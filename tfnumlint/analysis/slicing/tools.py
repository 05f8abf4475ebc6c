"""The slicer's plain functions and tables: binding a helper's parameters to a call's
arguments (:func:`bind_arguments`, :func:`straight_line`), the Python ``if`` conditions a
statement runs under (:func:`branch_map`), stand-ins for a non-literal axis or depth, and
readings of a finished probe tree (:func:`assumptions`, :func:`scale_inputs`).  Static: no
TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ... import ops
from ..context import Context
from ..driven import WEIGHT_CALLS
from ..module import Binding, Scope, contains
from ..names import children, descendants
from ..recipe_code import BINARY, COMPARE
from .contract import BINARY_OPERATORS, RESHAPE_STAND_IN, STAND_INS, STRUCTURAL, walk
from .signatures import PARAMS

BINOPS = {op: text for op, text in BINARY.items() if text in BINARY_OPERATORS}  # traced ones
CMPOPS = COMPARE
DTYPE_WORDS = frozenset(
    {"float16", "float32", "float64", "bfloat16", "half", "int32", "int64", "bool"}
)
MAX_NODES = 200
DATA_KINDS = ops.DATA_SOURCES  # provenance kinds fed by data: placeholder, variable, input
DATA_CALLS = frozenset({"get_next", "next"})  # iterator.get_next(), next(iterator)
MAX_SOURCE = 120  # characters of a producer's code kept for messages
MAX_EXPANDED = 2000  # nodes of a slice once names read several times are expanded
MAX_DEPTH = 40
MAX_READS = 40  # names an untraced expression is recorded to read
SATURATING = ops.LOGIT_SQUASHING


def jfloat(x: float) -> float | str:
    """JSON has no inf/nan: encode them as strings."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# A hook that slices a node some other way (a fix proof: the node's rewrite), or None to let
# the slicer slice it.  Called with (node, scope, order, depth) before the slicer's own rules.
Substitute = Callable[[cst.BaseExpression, Scope, int, int], dict | None]


SHAPE_ATTRS = frozenset({"dtype", "shape"})


@dataclass(frozen=True)
class Argument:
    """The expression a call gives one parameter of an inlined helper, and where it is."""

    value: cst.BaseExpression
    scope: Scope
    order: int
    callee: int  # id of the helper's scope (no helper is inlined inside itself)
    frame: str  # the caller's inlining frame
    module: Any = None  # the caller's module (context, positions) when the helper is elsewhere


def straight_line(fn: cst.FunctionDef, unpacking: bool = False) -> bool:
    """A plain function whose body is a docstring, local imports, assignments to names and
    one final ``return``: no decorator, no ``*args``, no branch, loop, ``with`` or nested
    definition, so its result is its returned expression whatever the inputs."""
    if fn.decorators or fn.asynchronous is not None:
        return False
    params = fn.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return False
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    if not body:
        return False
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        last = i == len(body) - 1
        if isinstance(small, cst.Return):
            if not last or small.value is None:
                return False
        elif last:
            return False
        elif isinstance(small, cst.Expr):
            if i != 0 or not isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                return False
        elif isinstance(small, cst.Assign):
            if len(small.targets) != 1:
                return False
            target = small.targets[0].target
            names = isinstance(target, cst.Tuple) and all(
                isinstance(e.value, cst.Name) for e in target.elements
            )
            if not isinstance(target, cst.Name) and not (unpacking and names):
                return False
        elif not isinstance(small, (cst.Import, cst.ImportFrom)):
            return False
    return True


def _literal_default(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString))


def bind_arguments(
    fn: cst.FunctionDef,
    call: cst.Call,
    scope: Scope,
    order: int,
    callee: int,
    frame: str,
    method: bool = False,
) -> dict[int, Argument] | None:
    """Each parameter of ``fn`` (by id) and the argument ``call`` gives it, or its literal
    default; None when the binding is not plain (a star argument, an unknown keyword, a
    missing argument, a default that is not a literal).  ``method``: ``self.m(...)`` binds
    the first parameter to the object, which no argument gives."""
    params = [*fn.params.posonly_params, *fn.params.params]
    if method:
        if not params:
            return None
        params = params[1:]
    by_name = {p.name.value: p for p in (*params, *fn.params.kwonly_params)}
    given: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional) > len(params):
        return None
    for p, a in zip(params, positional, strict=False):
        given[p.name.value] = a.value
    for a in call.args:
        if a.keyword is None:
            continue
        name = a.keyword.value
        if name not in by_name or name in given:
            return None
        given[name] = a.value
    out: dict[int, Argument] = {}
    for name, p in by_name.items():
        if name in given:
            out[id(p)] = Argument(given[name], scope, order, callee, frame)
        elif p.default is not None and _literal_default(p.default):
            out[id(p)] = Argument(p.default, scope, order, callee, frame)
        else:
            return None
    return out


def short_label(code: str) -> str:
    """A logit input is named by its code (`pred / temperature`) when that reads as a name."""
    text = " ".join(code.split())
    return text if len(text) <= 32 and "\n" not in code and "(" not in text else "logits"


# One `if` a statement runs under: (id of the `if`, its test's code when the test is a plain
# flag, the polarity the statement needs).
Condition = tuple[int, str | None, bool]


def _flag(test: cst.BaseExpression) -> tuple[str | None, bool]:
    """``x`` / ``self.x`` / ``not x`` -> (code of the flag, polarity); other tests -> None."""
    polarity = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, polarity = test.expression, not polarity
    if isinstance(test, (cst.Name, cst.Attribute)) and attribute_chain(test):
        return cst.Module([]).code_for_node(test.with_changes(lpar=[], rpar=[])), polarity
    return None, polarity


def branch_map(root: cst.CSTNode) -> dict[int, tuple[Condition, ...]]:
    """id(statement or assigned value) -> the ``if`` branches it runs under, in ``root`` (a
    function or module body; nested functions and classes have their own map)."""
    out: dict[int, tuple[Condition, ...]] = {}
    stack: list[tuple[cst.CSTNode, tuple[Condition, ...]]] = [(root, ())]
    while stack:
        node, conds = stack.pop()
        if node is not root and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.If):
            flag, polarity = _flag(node.test)
            stack.append((node.test, conds))
            stack.append((node.body, (*conds, (id(node), flag, polarity))))
            if node.orelse is not None:
                stack.append((node.orelse, (*conds, (id(node), flag, not polarity))))
            out[id(node)] = conds
            continue
        if _is_statement(type(node)):
            out[id(node)] = conds
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            out[id(node.value)] = conds
        stack.extend((child, conds) for child in children(node))
    return out


_STATEMENT_TYPES: dict[type, bool] = {}


def _is_statement(tp: type) -> bool:
    """isinstance against libcst's abstract statement bases, cached per node type."""
    known = _STATEMENT_TYPES.get(tp)
    if known is None:
        known = _STATEMENT_TYPES[tp] = issubclass(tp, (cst.BaseSmallStatement, cst.BaseStatement))
    return known


def excluded(path: tuple[Condition, ...], branch: tuple[Condition, ...]) -> bool:
    """A definition under ``branch`` cannot reach code under ``path``: they need opposite
    outcomes of the same ``if``, or of two ``if``s on the same flag."""
    return any(
        (p_id == b_id or (p_flag is not None and p_flag == b_flag)) and p_pol != b_pol
        for p_id, p_flag, p_pol in path
        for b_id, b_flag, b_pol in branch
    )


BOOLEAN_OPS = ops.BOOLEAN


def const_node(v: float) -> dict:
    return {"k": "const", "v": v}


def stand_in_for(op: str, param: str, what: str) -> dict | None:
    """The probe node that stands in for a non-literal structural argument (``what`` is how
    the code wrote it), marked ``assumed`` so the verdict says so; None when none is faithful."""
    mark = {"param": param, "what": what}
    if param == "shape" and op == "reshape":
        items = [const_node(d) for d in RESHAPE_STAND_IN]
        return {"k": "tuple", "items": items, "assumed": {**mark, "value": RESHAPE_STAND_IN}}
    if param not in STAND_INS:
        return None
    value, others = STAND_INS[param]
    kind = "bool" if isinstance(value, bool) else "const"  # a flag is traced as True/False
    return {"k": kind, "v": value, "assumed": {**mark, "value": value, "others": list(others)}}


# ops whose result depends on their operand's rank: a reshape under one cannot be flattened
_RANK_OPS = ops.RANK_DEPENDENT  # matmul, transpose, expand_dims, squeeze, tile, concat
_RANK_FREE_PARAMS = frozenset({"keepdims", "ord"})


def _rank_dependent(node: dict) -> bool:
    """A call whose result depends on its operand's rank: a rank op, or an axis it names (a
    reshape's own shape keeps the element count, which is all a flattened value has)."""
    if node.get("k") != "call" or node.get("op") == "reshape":
        return False
    if node.get("op") in _RANK_OPS:
        return True
    names = PARAMS.get(str(node.get("op")), ())
    given = dict(zip(names, node.get("args") or [], strict=False))
    given.update(node.get("kw") or {})
    return any(p in STRUCTURAL and p not in _RANK_FREE_PARAMS for p in given)


def assumptions(*trees: Any) -> tuple[list[dict], list[str]]:
    """The stand-ins a probe's trees hold, and the reshapes that cannot take theirs (an op
    above them depends on the rank the flattened shape would change): those stay unsupported."""
    found: list[dict] = []
    refused: list[str] = []
    stack: list[tuple[Any, bool]] = [(t, False) for t in trees]
    while stack:
        t, under_rank_op = stack.pop()
        if isinstance(t, list):
            stack.extend((x, under_rank_op) for x in t)
            continue
        if not isinstance(t, dict):
            continue
        mark = t.get("assumed")
        if isinstance(mark, dict):
            if mark["param"] == "shape" and under_rank_op:
                refused.append(
                    f"{mark['what']}, not a literal (an op above it depends on its rank)"
                )
            elif mark not in found:
                found.append(mark)
        below = under_rank_op or _rank_dependent(t)
        stack.extend((v, below) for k, v in t.items() if k != "assumed")
    return found, refused


def is_newaxis(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "None"
    return isinstance(node, cst.Attribute) and node.attr.value == "newaxis"


def names_read(node: cst.BaseExpression, shape_only: frozenset[str] = frozenset()) -> list[str]:
    """The values an untraced expression reads, as the slicer names inputs: each name and
    attribute chain (``y``, ``self.scale``) among its arguments or indexed value, not the
    function it calls, nor the arguments of a call in ``shape_only`` (``tf.shape(x)``: only
    the shape of ``x``)."""
    found: set[str] = set()
    roots: list[cst.CSTNode] = []
    if isinstance(node, cst.Call):
        roots = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute) and not attribute_chain(node.func):
            roots.append(node.func.value)  # f(x).mean(): reads what f(x) reads
    elif isinstance(node, cst.Subscript):
        roots = [node.value, *node.slice]
    else:
        roots = [node]
    code = cst.Module([])
    while roots:
        sub = roots.pop()
        if isinstance(sub, cst.Attribute) and attribute_chain(sub):
            found.add(code.code_for_node(sub.with_changes(lpar=[], rpar=[])))
            continue
        if isinstance(sub, cst.Name):
            if sub.value not in ("None", "True", "False"):
                found.add(sub.value)
            continue
        if isinstance(sub, cst.Call):
            callee = sub.func.attr if isinstance(sub.func, cst.Attribute) else sub.func
            if isinstance(callee, cst.Name) and callee.value in shape_only:
                continue
            roots.extend(a.value for a in sub.args)
            if isinstance(sub.func, cst.Attribute) and not attribute_chain(sub.func):
                roots.append(sub.func.value)
            continue
        roots.extend(children(sub))
    return sorted(found)


def attribute_chain(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def input_names(*trees: Any) -> set[str]:
    """Inputs a tree reads (a dropped enclosing statement leaves some unread)."""
    names: set[str] = set()
    stack = list(trees)
    while stack:
        t = stack.pop()
        if isinstance(t, dict):
            if t.get("k") == "input":
                names.add(t["name"])
            stack.extend(t.values())
        elif isinstance(t, list):
            stack.extend(t)
    return names


def _divisor_args(tree: dict) -> list[Any]:
    """The operands of a node read as one value across a row: the right of `/`, a
    denominator, and a where's condition (a mask, not a value: held uniform, a row can be kept
    or masked whole, as a row with nothing to keep is)."""
    if tree.get("k") == "bin":
        return [tree.get("r")] if tree.get("op") == "/" else []
    if tree.get("k") != "call":
        return []
    op, args = tree.get("op"), tree.get("args") or []
    if op == "where":
        return [(tree.get("kw") or {}).get("condition", args[0] if args else None)]
    entry = ops.REGISTRY.get(op) if isinstance(op, str) else None
    at = entry.divisor if entry is not None else None  # reciprocal(x), divide(x, y)
    return [args[at]] if at is not None and at < len(args) else []


def scale_inputs(*trees: Any) -> set[str]:
    """Inputs read only inside a divisor (`sigma` in `softmax(-x / (2 * sigma**2))`) or a
    where's condition (`m` in `softmax(where(m, s, -inf))`): scales and masks, not values; none
    when the trees hold no row-coupled op.  A probe with a row-coupled op gives its values a row `[v, 0]`, the reference
    entry 0 against which a logit stands out; a scale set to that 0 divides by zero in every
    probe point, at a value of the scale the code never chose.  Under a softmax-like op's own
    argument the walk reads values again (`x / reduce_sum(softmax(z))`: `z` is a logit)."""
    values: set[str] = set()
    divisors: set[str] = set()
    row_coupled = ops.ops_with(lambda op: op.row_coupled)
    coupled = False
    stack: list[tuple[Any, bool]] = [(t, False) for t in trees]
    while stack:
        t, under = stack.pop()
        if isinstance(t, list):
            stack.extend((x, under) for x in t)
            continue
        if not isinstance(t, dict):
            continue
        if t.get("k") == "input":
            (divisors if under else values).add(t["name"])
            continue
        if t.get("k") == "call" and t.get("op") in row_coupled:
            under, coupled = False, True
        below = [id(d) for d in _divisor_args(t)]
        for child in t.values():
            for item in child if isinstance(child, list) else [child]:
                if isinstance(item, (dict, list)):
                    stack.append((item, under or id(item) in below))
    return divisors - values if coupled else set()


def static_tree(tree: dict) -> bool:
    """A tree the tracer can read as a Python value: numbers, booleans, strings, tuples."""
    kind = tree.get("k")
    if kind in ("const", "bool", "str"):
        return True
    if kind == "src":  # an original operand inside a rewrite (fix proofs)
        return static_tree(tree["x"])
    if kind == "neg":
        return static_tree(tree["x"])
    if kind == "tuple":
        return all(static_tree(t) for t in tree["items"])
    return False


def lambda_body(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    if (
        isinstance(node, cst.Lambda)
        and not any((node.params.params, node.params.kwonly_params, node.params.star_kwarg))
        and not isinstance(node.params.star_arg, cst.Param)
    ):
        return node.body
    return None


def self_binding(node: cst.Attribute, scope: Scope, order: int) -> Binding | None:
    if not isinstance(node.value, cst.Name) or scope.cls is None:
        return None
    s: Scope | None = scope
    while s is not None and s.kind != "function":
        s = s.parent
    if s is None or s.self_name != node.value.value:
        return None
    bindings = scope.cls.attrs.get(node.attr.value)
    if not bindings:
        return None
    same = [b for b in bindings if b.scope is s and b.visible <= order]
    return same[-1] if same else bindings[-1]


def activation_layer_maker(
    ctx: Context, func: cst.BaseExpression, scope: Scope, order: int
) -> cst.Call | None:
    """The call that made the layer a call invokes (``Softmax(axis=-1)(x)``, ``sm(x)``,
    ``self.sm(x)``), when it is a Keras activation layer's, whose input goes straight into its
    activation (not a Dense's); else None."""
    value: cst.BaseExpression | None = func
    if isinstance(func, cst.Name):
        found = ctx.ev.lookup(func.value, scope, order)
        value = found.value if isinstance(found, Binding) and found.index is None else None
    elif isinstance(func, cst.Attribute):
        found = self_binding(func, scope, order)
        value = found.value if found is not None and found.index is None else None
    if not isinstance(value, cst.Call):
        return None
    op = ctx.op(value)
    transfer = ops.REGISTRY[op].transfer if op is not None else None
    return value if transfer is not None and transfer.rule.startswith("activation_layer") else None


def statement_value(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)):
        return stmt.value
    if isinstance(stmt, cst.AugAssign):
        return stmt.value
    return None


def new_axes(node: cst.Subscript) -> list[int] | None:
    """``x[..., tf.newaxis]``, ``x[:, None]``: the axes ``expand_dims`` inserts, in the
    order to insert them; None for any other indexing (it selects values)."""
    kinds = []
    for element in node.slice:
        part = element.slice
        if isinstance(part, cst.Slice):
            if part.lower or part.upper or part.step:
                return None
            kinds.append(":")
        elif isinstance(part, cst.Index) and isinstance(part.value, cst.Ellipsis):
            kinds.append("...")
        elif isinstance(part, cst.Index) and is_newaxis(part.value):
            kinds.append("new")
        else:
            return None
    if "new" not in kinds or kinds.count("...") > 1:
        return None
    n = len(kinds)
    cut = kinds.index("...") if "..." in kinds else n
    front = [i for i in range(cut) if kinds[i] == "new"]
    back = [i - n for i in range(n - 1, cut, -1) if kinds[i] == "new"]
    return front + back


def contains_node(tree: dict, line: int, col: int, file: str = "") -> bool:
    """Whether a slice holds a node made from the code at (line, col)."""
    return subtree_at(tree, line, col, file=file) is not None


def subtree_at(
    tree: dict, line: int, col: int, kind: str | None = None, file: str = ""
) -> dict | None:
    """The node of a slice made from the code at (line, col): the term as the objective
    computes it, its helpers' parameters bound to what the objective passes them.  Nodes that
    start at one place (``log(a) - b`` and its ``log(a)``) are told apart by their kind.
    ``file``: the code is in that imported module, not in the slice's own."""
    at = [
        n
        for n in walk(tree)
        if n.get("line") == line and n.get("col") == col and n.get("file", "") == file
    ]
    same = [n for n in at if kind is None or n.get("k") == kind]
    found = same or at
    return found[0] if found else None


def tree_kind(node: cst.CSTNode) -> str | None:
    """The probe-tree kind a libcst node slices to, where two start at one place."""
    if isinstance(node, cst.Call):
        return "call"
    if isinstance(node, cst.BinaryOperation):
        return "bin"
    return None


def weight_attribute(ctx: Any, node: cst.Attribute, scope: Any, order: int) -> bool:
    """``self.p`` bound to ``tf.Variable(...)`` or a Layer's ``self.add_weight(...)``."""
    binding = self_binding(node, scope, order)
    return binding is not None and makes_weight(ctx, binding.value)


def makes_weight(ctx: Any, value: cst.BaseExpression | None) -> bool:
    """``tf.Variable(...)`` or a Layer's ``self.add_weight(...)``: a trainable weight."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func  # a Layer's weight method (``self.add_weight``), an API name
    method = isinstance(func, cst.Attribute) and func.attr.value in WEIGHT_CALLS
    return method or ctx.op(value) == "variable"


def with_element(
    origin: dict, value: cst.BaseExpression, index: int | cst.Subscript | None
) -> dict:
    """A cut input's origin, with the item of the tuple its source call returns that the input
    is (``_, i = tf.math.top_k(x)``, ``tf.nn.top_k(x)[1]``: ``index`` is the subscript): the
    call's text alone does not say which of its results the input holds."""
    if isinstance(index, cst.Subscript):  # the literal index of ``x[1]``, else None
        one = index.slice[0].slice if len(index.slice) == 1 else None
        at = one.value if isinstance(one, cst.Index) else None
        index = int(at.evaluated_value) if isinstance(at, cst.Integer) else None
    if index is None or not isinstance(value, cst.Call):
        return origin
    return {**origin, "element": index}


def drawn_in_loop(found: Binding) -> bool:
    """Is the name bound inside a loop's body (``states = rng.normal(...)`` in the episode
    loop)?  Such data is drawn afresh each step: replayed once, the run would train on one
    fixed draw instead (REINFORCE on fixed random returns saturates; the program's does not)."""
    value = found.value
    return value is not None and any(
        isinstance(n, (cst.For, cst.While)) and contains(n.body, value)
        for n in descendants(found.scope.node)
    )
