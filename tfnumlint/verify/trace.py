"""Turn a probe tree into a traced TensorFlow graph, without ever executing user code.

The tree is converted into a Python ``ast.Expression`` whose nodes carry the user's line
numbers, compiled with the user's path as filename, and evaluated with no builtins and a
namespace holding only the op table (``trace_ops.py``) and the input tensors.  So every graph op's
``op.traceback`` points back at the user's source line, and nothing but allow-listed
TensorFlow functions can run.  Any op outside the table is refused.

The probe is evaluated on a batch of points at once: every input is shaped ``[N, 1, K]``, where
axis 0 indexes the probe point.  The op wrappers shift the user's axes by one so that reductions
never mix points (``axis=None`` reduces every axis but the batch axis).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from .. import ops
from ..analysis.slicing.contract import STRUCTURAL, walk  # walk: read as trace.walk too
from ..analysis.slicing.signatures import PARAMS as PARAM_NAMES
from .trace_ops import (
    CALL_BINOPS,
    CAST_DTYPES,
    CMPOPS,
    KWARGS,
    LOGIT_OPS,
    PROB_OPS,
    UnsupportedProbe,
    op_ident,
    op_table,
    unsafe_types,
)

# ---------------------------------------------------------------- tree -> ast


def parse_float(v: Any) -> float:
    """JSON floats: numbers, or the strings "inf", "-inf", "nan"."""
    return float(v)


@dataclass
class Converter:
    """Converts probe trees into AST nodes that reference only namespace names."""

    input_ids: dict[str, str]
    ops_used: set[str] = field(default_factory=set)
    # proofs: record the rewrite's own operands ("src") and the probabilities on the way
    hooks: bool = False

    def node(self, tree: Any, line: int) -> ast.expr:
        if not isinstance(tree, dict) or "k" not in tree:
            raise UnsupportedProbe(f"malformed probe tree node {tree!r:.60}")
        line = int(tree.get("line") or line)
        col = int(tree.get("col") or 1)
        out = self._convert(tree, line)
        for sub in ast.walk(out):
            if isinstance(sub, (ast.expr, ast.keyword)) and not hasattr(sub, "lineno"):
                sub.lineno, sub.end_lineno = line, line
                sub.col_offset, sub.end_col_offset = max(col - 1, 0), max(col - 1, 0)
        return out

    def _convert(self, tree: dict[str, Any], line: int) -> ast.expr:
        kind = tree["k"]
        if kind == "input":
            name = tree.get("name")
            if name not in self.input_ids:
                raise UnsupportedProbe(f"input {name!r} is not declared in the probe")
            return ast.Name(id=self.input_ids[name], ctx=ast.Load())
        if kind == "const":
            return ast.Constant(value=parse_float(tree["v"]))
        if kind == "src":
            inner = self.node(tree["x"], line)
            return self._hook("hook_src", inner) if self.hooks else inner
        if kind == "bool":
            return ast.Constant(value=bool(tree["v"]))
        if kind == "str":
            return ast.Constant(value=str(tree["v"]))
        if kind == "dtype":
            if tree.get("v") != "same" and tree.get("v") not in CAST_DTYPES:
                raise UnsupportedProbe(f"unsupported dtype {tree.get('v')!r}")
            return ast.Name(id=f"dtype_{tree['v']}", ctx=ast.Load())
        if kind == "tuple":
            return ast.Tuple(elts=[self.node(t, line) for t in tree["items"]], ctx=ast.Load())
        if kind == "neg":
            return ast.UnaryOp(op=ast.USub(), operand=self.node(tree["x"], line))
        if kind == "cmp":
            if tree.get("op") not in CMPOPS:
                raise UnsupportedProbe(f"unsupported comparison {tree.get('op')!r}")
            return ast.Call(
                func=ast.Name(id=op_ident(f"cmp{tree['op']}"), ctx=ast.Load()),
                args=[self.node(tree["l"], line), self.node(tree["r"], line)],
                keywords=[],
            )
        if kind == "bin":
            return self._binop(tree, line)
        if kind == "call":
            return self._call(tree, line)
        raise UnsupportedProbe(f"unsupported probe node kind {kind!r}")

    def _binop(self, tree: dict[str, Any], line: int) -> ast.expr:
        op = tree.get("op")
        left, right = self.node(tree["l"], line), self.node(tree["r"], line)
        if op in CALL_BINOPS:
            canonical = CALL_BINOPS[op]
            self.ops_used.add(canonical)
            return ast.Call(
                func=ast.Name(id=op_ident(canonical), ctx=ast.Load()),
                args=[left, right],
                keywords=[],
            )
        raise UnsupportedProbe(f"unsupported operator {op!r}")

    def _call(self, tree: dict[str, Any], line: int) -> ast.expr:
        op = tree.get("op")
        if not isinstance(op, str) or op not in op_table():
            raise UnsupportedProbe(f"op {op!r} is not in the verifier's allow-list")
        self.ops_used.add(op)
        args = [self.node(a, line) for a in tree.get("args") or []]
        keywords = []
        for name, value in (tree.get("kw") or {}).items():
            if name not in KWARGS:
                raise UnsupportedProbe(f"keyword {name!r} of {op} is not supported")
            keywords.append(ast.keyword(arg=name, value=self.node(value, line)))
        out = ast.Call(func=ast.Name(id=op_ident(op), ctx=ast.Load()), args=args, keywords=keywords)
        return self._hook("hook_prob", out) if self.hooks and op in PROB_OPS else out

    @staticmethod
    def _hook(name: str, value: ast.expr) -> ast.expr:
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[value], keywords=[])


def compile_tree(
    tree: Any, input_ids: dict[str, str], path: str, line: int, hooks: bool = False
) -> tuple[Any, set[str]]:
    """Compile a tree into a code object whose frames carry the user's path and lines."""
    conv = Converter(input_ids, hooks=hooks)
    body = conv.node(tree, line)
    expr = ast.Expression(body=body)
    ast.fix_missing_locations(expr)
    return compile(expr, filename=path, mode="eval"), conv.ops_used


def namespace(inputs: dict[str, Any]) -> dict[str, Any]:
    """The complete evaluation namespace: op table, dtype names, input tensors; nothing else."""
    ns: dict[str, Any] = {op_ident(name): fn for name, fn in op_table().items()}
    ns.update({f"dtype_{name}": dt for name, dt in CAST_DTYPES.items()})
    ns.update(inputs)
    return ns


def evaluate(code: Any, inputs: dict[str, Any]) -> Any:
    """Evaluate compiled probe code: no builtins, only the op table and the inputs."""
    return eval(code, {"__builtins__": {}}, namespace(inputs))


# ---------------------------------------------------------------- tree inspection


def logit_inputs(tree: Any) -> set[str]:
    """Inputs that feed a sigmoid/softmax-like op: the logits whose gradient can die."""
    names: set[str] = set()
    for node in walk(tree):
        if node.get("k") == "call" and node.get("op") in LOGIT_OPS | ops.FUSED_XENT:
            for sub in walk(node.get("args")):
                if sub.get("k") == "input":
                    names.add(sub["name"])
            logits = (node.get("kw") or {}).get("logits")
            for sub in walk(logits):
                if sub.get("k") == "input":
                    names.add(sub["name"])
    return names


def render(tree: Any) -> str:
    """The expression as the user wrote it, for witness lines: their names, parentheses where
    precedence needs them, never cut."""
    if isinstance(tree, dict) and "as" in tree:
        tree = {k: v for k, v in tree.items() if k != "as"}  # the root itself is spelled out
    return _render(tree)


NAMED_PARAMS = STRUCTURAL | {"dtype"}  # shown as name=value in witnesses
# binding strength of the rendered operators (Python's own order)
_PRECEDENCE = {"cmp": 1, "+": 2, "-": 2, "*": 3, "/": 3, "@": 3, "neg": 4, "**": 5}


def _strength(t: Any) -> int:
    if not isinstance(t, dict) or "as" in t:
        return 9
    if t.get("k") == "bin":
        return _PRECEDENCE.get(str(t.get("op")), 9)
    if t.get("k") in ("cmp", "neg"):
        return _PRECEDENCE[t["k"]]
    if t.get("k") == "const" and parse_float(t["v"]) < 0:
        return _PRECEDENCE["neg"]
    return 9


def _operand(t: Any, parent: int, right: bool = False, op: str = "") -> str:
    """An operand, in parentheses when it binds less tightly than its operator (or equally,
    on the right of a non-associative one: a - (b - c), a / (b * c); on the left of **)."""
    inner = _strength(t)
    text = _render(t)
    tight = inner < parent or (inner == parent and (right != (op == "**")) and op not in "+*")
    return f"({text})" if tight else text


def _render(t: Any) -> str:
    if not isinstance(t, dict):
        return "?"
    if "as" in t:  # a value the user named: show the name, as in their code
        return str(t["as"])
    k = t.get("k")
    if k == "input":
        return str(t.get("name"))
    if k == "const":
        return format_number(parse_float(t["v"]))
    if k == "dtype":
        return "dtype" if t.get("v") == "same" else f"tf.{t.get('v')}"
    if k == "str":
        return repr(t.get("v"))
    if k == "bool":
        return str(t.get("v"))
    if k == "neg":
        return f"-{_operand(t['x'], _PRECEDENCE['neg'])}"
    if k in ("bin", "cmp"):
        op = str(t.get("op"))
        level = _PRECEDENCE["cmp"] if k == "cmp" else _PRECEDENCE.get(op, 9)
        left = _operand(t["l"], level, False, op)
        right = _operand(t["r"], level, True, op)
        return f"{left} {op} {right}"
    if k == "tuple":
        items = [_render(i) for i in t.get("items") or []]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if k == "call":
        args = [_render(a) for a in t.get("args") or []]
        names = PARAM_NAMES.get(str(t.get("op")), ())
        shown = [
            f"{names[i]}={a}" if i < len(names) and names[i] in NAMED_PARAMS else a
            for i, a in enumerate(args)
        ]
        shown += [f"{n}={_render(v)}" for n, v in (t.get("kw") or {}).items()]
        return f"{t.get('op')}({', '.join(shown)})"
    return "?"


def format_number(v: float) -> str:
    """Compact, honest number formatting: -100, 23.03, 1e-10, -inf, nan."""
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.4g}"


# ---------------------------------------------------------------- graph -> user lines


def user_line(op: tf.Operation, path: str) -> int | None:
    """The user's source line an op came from: the innermost traceback frame in ``path``."""
    line = None
    for frame in op.traceback:
        if frame.filename == path:
            line = frame.lineno
    return line


def unsafe_ops(graph: tf.Graph, path: str, scope: str = "") -> list[tf.Operation]:
    """Forward unsafe ops built from the user's expression (optionally under a name scope)."""
    found = []
    for op in graph.get_operations():
        if (
            op.type in unsafe_types()
            and op.name.startswith(scope)
            and user_line(op, path) is not None
        ):
            found.append(op)
    return found
