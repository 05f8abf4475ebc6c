"""Backward slice of a finding into a probe program: a tree of allow-listed ops only.

This is the static half of verification and never imports TensorFlow.  The slice follows
names through their assignments (function, module, ``self.attr``), keeps calls whose
canonical op is on the allow-list plus arithmetic, and turns everything else (a
non-allow-listed call, a placeholder, a variable, a parameter, ``model(x)``) into a free
input that keeps what provenance knows about it.  Nothing here executes user code: the
output is plain data.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import libcst as cst

from ..analysis.module import Binding, Scope, contains
from ..analysis.provenance import Val, literal_number
from ..rules import Context, Hit
from .contract import ALLOWED_OPS, KEEP_KWARGS

_BINOPS = {
    cst.Add: "+",
    cst.Subtract: "-",
    cst.Multiply: "*",
    cst.Divide: "/",
    cst.Power: "**",
    cst.MatrixMultiply: "@",
}
_CMPOPS = {
    cst.GreaterThan: ">",
    cst.LessThan: "<",
    cst.GreaterThanEqual: ">=",
    cst.LessThanEqual: "<=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}
_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "int32", "int64", "bool"})
_SOURCES = frozenset({"placeholder", "variable", "random", "keras_input"})
MAX_NODES = 200
MAX_DEPTH = 40
TRAIN_RULES = frozenset({"TNL403", "TNL501", "TNL502"})
SATURATING = frozenset({"sigmoid", "softmax", "log_softmax", "log_sigmoid"})
# Semantic rules with no numeric symptom to probe: their findings stay "skipped".
NOT_PROBED = frozenset({"TNL503", "TNL504"})


def jfloat(x: float) -> float | str:
    """JSON has no inf/nan: encode them as strings."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


class Slicer:
    cut_logits = True  # stop at a sigmoid/softmax input (the fix proofs need the full tree)

    def __init__(self, ctx: Context, positions) -> None:
        self.ctx = ctx
        self.positions = positions
        self.inputs: dict[str, dict[str, Any]] = {}
        self._input_keys: dict[str, str] = {}
        self.count = 0
        self.truncated = False

    # -- inputs ---------------------------------------------------------------------------
    def _input(self, label: str, val: Val, key: str) -> dict:
        name = self._input_keys.get(key)
        if name is None:
            base = re.sub(r"\W+", "_", label).strip("_")[:32] or "x"
            if base[0].isdigit():
                base = "x_" + base
            name, n = base, 1
            while name in self.inputs:
                n += 1
                name = f"{base}_{n}"
            self._input_keys[key] = name
            self.inputs[name] = {
                "name": name,
                "producer": val.kind,
                "lo": jfloat(val.lo),
                "hi": jfloat(val.hi),
                "prob": bool(val.prob),
                "role": "value",
            }
        return {"k": "input", "name": name}

    def _where(self, node: cst.CSTNode, out: dict) -> dict:
        pos = self.positions.get(node)
        if pos is not None:
            out["line"], out["col"] = pos.start.line, pos.start.column + 1
        return out

    # -- tree -----------------------------------------------------------------------------
    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        self.count += 1
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            self.truncated = True
            return self._input(
                self.ctx.code(node), self.ctx.ev.value(node, scope, order), f"cut:{id(node)}"
            )
        ev = self.ctx.ev
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                value = literal_number(node)
                return {"k": "const", "v": jfloat(value) if value is not None else "inf"}
            except (ValueError, OverflowError):
                return {"k": "const", "v": "inf"}
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return {"k": "bool", "v": node.value == "True"}
            return self._name(node, scope, order, depth)
        if isinstance(node, cst.Attribute):
            if node.attr.value in _DTYPES and ev.imports.resolve(node) is not None:
                return {
                    "k": "dtype",
                    "v": "float16" if node.attr.value == "half" else node.attr.value,
                }
            return self._attribute(node, scope, order, depth)
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str) and value in _DTYPES:
                return {"k": "dtype", "v": value}
            return {"k": "str", "v": value if isinstance(value, str) else ""}
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, depth)
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in _BINOPS:
            return self._where(
                node,
                {
                    "k": "bin",
                    "op": _BINOPS[type(node.operator)],
                    "l": self.tree(node.left, scope, order, depth + 1),
                    "r": self.tree(node.right, scope, order, depth + 1),
                },
            )
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Minus):
                return {"k": "neg", "x": self.tree(node.expression, scope, order, depth + 1)}
            if isinstance(node.operator, cst.Plus):
                return self.tree(node.expression, scope, order, depth + 1)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            comp = node.comparisons[0]
            if type(comp.operator) in _CMPOPS:
                return {
                    "k": "cmp",
                    "op": _CMPOPS[type(comp.operator)],
                    "l": self.tree(node.left, scope, order, depth + 1),
                    "r": self.tree(comp.comparator, scope, order, depth + 1),
                }
        if isinstance(node, (cst.Tuple, cst.List)):
            return {
                "k": "tuple",
                "items": [self.tree(e.value, scope, order, depth + 1) for e in node.elements],
            }
        return self._opaque(node, scope, order)

    def _opaque(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        return self._input(
            self.ctx.code(node), self.ctx.ev.value(node, scope, order), f"node:{id(node)}"
        )

    def _name(self, node: cst.Name, scope: Scope, order: int, depth: int) -> dict:
        ev = self.ctx.ev
        found = ev.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.value is not None and found.index is None:
            value = ev.value(found.value, found.scope, found.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            if self._is_opaque(found.value):  # P = tf.placeholder(...): the input is `P`
                return self._input(node.value, value, f"name:{node.value}:{id(found)}")
            return self.tree(found.value, found.scope, found.at, depth + 1)
        if isinstance(found, cst.Param) and found.default is not None:
            default = ev.value(found.default, scope, order)
            if default.const is not None:
                return {"k": "const", "v": jfloat(default.const)}
        return self._input(
            node.value, ev.value(node, scope, order), f"name:{node.value}:{id(found)}"
        )

    def _is_opaque(self, node: cst.BaseExpression) -> bool:
        """An expression the slice cannot enter: a call that is not on the allow-list."""
        if isinstance(node, cst.Call):
            op = self.ctx.op(node)
            return op is None or op not in ALLOWED_OPS
        return isinstance(node, (cst.Subscript, cst.Await, cst.Yield))

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int, depth: int) -> dict:
        ev = self.ctx.ev
        binding = _self_binding(node, scope, order)
        if binding is not None and binding.value is not None:
            value = ev.value(binding.value, binding.scope, binding.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            if value.kind not in ("layer", "model"):
                return self.tree(binding.value, binding.scope, binding.at, depth + 1)
        return self._opaque(node, scope, order)

    def _call(self, node: cst.Call, scope: Scope, order: int, depth: int) -> dict:
        op = self.ctx.op(node)
        if op is None or op not in ALLOWED_OPS or any(a.star for a in node.args):
            return self._opaque(node, scope, order)
        args = []
        kwargs = {}
        for i, a in enumerate(node.args):
            if op == "cast" and (i == 1 or (a.keyword is not None and a.keyword.value == "dtype")):
                if not self._is_dtype(a.value):
                    continue  # x.dtype and the like: the probe keeps its own dtype
                dtype = self.tree(a.value, scope, order, depth + 1)
                if a.keyword is None:
                    args.append(dtype)
                else:
                    kwargs["dtype"] = dtype
                continue
            if a.keyword is None:
                if i == 0 and op in SATURATING and self.cut_logits:
                    args.append(self._logits(a.value, scope, order))
                else:
                    args.append(self.tree(a.value, scope, order, depth + 1))
            elif a.keyword.value in KEEP_KWARGS:
                kwargs[a.keyword.value] = self.tree(a.value, scope, order, depth + 1)
        return self._where(node, {"k": "call", "op": op, "args": args, "kw": kwargs})

    def _is_dtype(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute):
            return node.attr.value in _DTYPES and self.ctx.ev.imports.resolve(node) is not None
        return isinstance(node, cst.SimpleString) and node.evaluated_value in _DTYPES

    def _logits(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        """The stable cut at a sigmoid/softmax: its input is a free logit.  Whatever computed
        the logits (a matmul chain, a layer), any real value can reach the activation, and
        the hazards downstream depend only on that value."""
        ev = self.ctx.ev
        label = node.value if isinstance(node, cst.Name) else "logits"
        val = replace(
            ev.value(node, scope, order), kind="logits", lo=-math.inf, hi=math.inf, prob=False
        )
        return self._input(label, val, f"logits:{id(node)}")


def _self_binding(node: cst.Attribute, scope: Scope, order: int) -> Binding | None:
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


def _statement_value(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)):
        return stmt.value
    if isinstance(stmt, cst.AugAssign):
        return stmt.value
    return None


def slice_finding(ctx: Context, hit: Hit, code: str, positions) -> dict[str, Any] | None:
    """The probe for one finding, or None when there is nothing to probe."""
    site = hit.site
    pos = positions.get(hit.node)
    line = pos.start.line if pos else 0
    dtype = ctx.dtype(site)
    path = getattr(ctx, "path", "")
    if hit.probe_hint.get("kind") == "train":  # a training spec declared next to its rule
        return {**hit.probe_hint, "rule": code, "dtype": dtype, "path": path, "line": line}
    if code in TRAIN_RULES:
        return train_probe(ctx, hit, code, dtype, line)
    if not isinstance(hit.node, cst.BaseExpression):
        return None
    if code in NOT_PROBED:
        return None
    slicer = Slicer(ctx, positions)
    target = slicer.tree(hit.node, site.scope, site.order)
    if target.get("k") == "input":
        return None  # nothing numeric in the slice (a policy call, a compile argument)
    loss = None
    value = _statement_value(site.statement)
    if value is not None and value is not hit.node and contains(value, hit.node):
        loss = slicer.tree(value, site.scope, site.order)
    return {
        "kind": "expr",
        "rule": code,
        "dtype": dtype,
        "path": path,
        "line": line,
        "target": target,
        "loss": loss,
        "inputs": list(slicer.inputs.values()),
        "eps": hit.probe_hint.get("eps"),
        "truncated": slicer.truncated,
    }


def train_probe(ctx: Context, hit: Hit, code: str, dtype: str, line: int) -> dict[str, Any] | None:
    from ..rules.common import split_eps
    from ..rules.precision import _OPT_EPS, optimizer_epsilon
    from ..rules.training import learning_rate

    call = hit.node
    if not isinstance(call, cst.Call):
        return None
    op = ctx.op(call) or ""
    if not op.startswith("optimizer:"):
        return None
    family = op.split(":")[1]
    site = hit.site
    resolved = ctx.info.imports.resolve(call.func) or ""
    eps = None
    if family in _OPT_EPS:
        eps, _explicit = optimizer_epsilon(ctx, call, site, family)
    clip = ctx.arg(call, -1, "clipnorm", "global_clipnorm")
    clipnorm = ctx.val(clip, site).const if clip is not None else None
    output = None
    loss_eps = None
    for s in ctx.info.calls:
        o = ctx.op(s.node)
        if o in ("sigmoid", "softmax") and output is None:
            output = o
        if o == "dense":
            act = ctx.arg(s.node, 1, "activation")
            if isinstance(act, cst.SimpleString) and act.evaluated_value in ("sigmoid", "softmax"):
                output = output or act.evaluated_value
        if o == "log" and loss_eps is None and s.node.args:
            _, e = split_eps(ctx, s.node.args[0].value, s)
            loss_eps = e
    return {
        "kind": "train",
        "rule": code,
        "dtype": dtype,
        "path": getattr(ctx, "path", ""),
        "line": line,
        "optimizer": family,
        "tf1": resolved.startswith("tf.train."),
        "learning_rate": learning_rate(ctx, call, site),
        "epsilon": eps,
        "clipnorm": clipnorm,
        "output": output,
        "loss_eps": loss_eps,
    }
