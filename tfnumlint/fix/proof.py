"""Prove a rewrite: the original and the rewritten expression, compared in TensorFlow.

This is the static half (no TensorFlow): :func:`build_job` slices the original expression and
the rewritten one into probe trees (the verifier's format and slicer, see
``verify/slicer.py``) over one shared set of free inputs.  The verification worker evaluates
them with the verifier's own evaluator (``verify/proving.py``) and returns the verdict; the
parent caches it like a verdict (``verify/runner.py``).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..analysis.module import contains
from ..rules.recipes import recipe_for
from ..verify.slicer import Slicer, jfloat
from .rewrites import Bin, Call, Keep, Neg, Num, Plan, Reuse, Src


# -- static half ---------------------------------------------------------------------------
class _SubSlicer(Slicer):
    """The verifier's slicer, with original nodes substituted by rewrite IR."""

    subs: dict[int, Any]
    cut_logits = False  # the rewrite's operands must be reached through the original tree

    def __init__(self, ctx, positions) -> None:
        super().__init__(ctx, positions)
        self.memo = None  # substitutions change what a name slices to: never share subtrees
        self.subs = {}
        self.mark: set[int] = set()  # original operands of the rewrite, marked in the original tree

    def tree(self, node, scope, order, depth: int = 0) -> dict:
        ir = self.subs.get(id(node))
        if ir is not None:
            return self.ir(ir, depth)
        if id(node) in self.mark:
            self.mark.discard(id(node))
            try:
                return {"k": "src", "x": super().tree(node, scope, order, depth)}
            finally:
                self.mark.add(id(node))
        return super().tree(node, scope, order, depth)

    def ir(self, ir, depth: int = 0) -> dict:
        if isinstance(ir, Src):
            own = self.subs.pop(id(ir.node), None)  # the replaced node itself, inside its rewrite
            try:
                return {"k": "src", "x": self.tree(ir.node, ir.scope, ir.order, depth + 1)}
            finally:
                if own is not None:
                    self.subs[id(ir.node)] = own
        if isinstance(ir, Num):
            return {"k": "const", "v": jfloat(ir.value)}
        if isinstance(ir, Neg):
            return {"k": "neg", "x": self.ir(ir.x, depth + 1)}
        if isinstance(ir, Bin):
            return {
                "k": "bin",
                "op": ir.op,
                "l": self.ir(ir.left, depth + 1),
                "r": self.ir(ir.right, depth + 1),
            }
        if isinstance(ir, Call):
            return {
                "k": "call",
                "op": ir.op,
                "args": [self.ir(a, depth + 1) for a in ir.args],
                "kw": {k: self.ir(v, depth + 1) for k, v in ir.kw},
            }
        if isinstance(ir, Reuse):
            own = self.subs.pop(id(ir.node), None)
            arg0 = ir.node.args[0].value
            self.subs[id(arg0)] = ir.arg
            try:
                return self.tree(ir.node, ir.scope, ir.order, depth + 1)
            finally:
                self.subs.pop(id(arg0), None)
                if own is not None:
                    self.subs[id(ir.node)] = own
        raise TypeError(f"no probe for {ir!r}")


def _small_consts(tree: Any, out: list[float]) -> None:
    if isinstance(tree, dict):
        if tree.get("k") == "const" and isinstance(tree.get("v"), float | int):
            v = float(tree["v"])
            if 0 < v <= 1e-3:
                out.append(v)
        for v in tree.values():
            _small_consts(v, out)
    elif isinstance(tree, list):
        for v in tree:
            _small_consts(v, out)


def _src_nodes(ir) -> list:
    if isinstance(ir, Src):
        return [ir.node]
    if isinstance(ir, Call):
        return [n for a in [*ir.args, *(v for _, v in ir.kw)] for n in _src_nodes(a)]
    if isinstance(ir, Bin):
        return _src_nodes(ir.left) + _src_nodes(ir.right)
    if isinstance(ir, Neg):
        return _src_nodes(ir.x)
    if isinstance(ir, Reuse):
        return _src_nodes(ir.arg)
    return []


def build_job(ctx, positions, hit, plan: Plan, verification=None) -> dict[str, Any] | None:
    """The proof job for ``plan``: original and rewritten trees over the same inputs."""
    if not plan.edits:
        return None
    dtype = ctx.dtype(hit.site)
    if any(isinstance(e.new, Keep) for e in plan.edits):
        return _optimizer_job(plan, dtype, hit.probe_hint.get("epsilon"))
    site = hit.site
    parents: dict[int, cst.CSTNode] = {}
    stack = [site.statement]
    while stack:
        n = stack.pop()
        for c in n.children:
            parents[id(c)] = n
            stack.append(c)
    top: cst.CSTNode | None = hit.node
    while top is not None and not all(contains(top, e.node) for e in plan.edits):
        top = parents.get(id(top))
    if top is None or not isinstance(top, cst.BaseExpression):
        return None
    slicer = _SubSlicer(ctx, positions)
    slicer.mark = {id(n) for e in plan.edits for n in _src_nodes(e.new)}
    orig = slicer.tree(top, site.scope, site.order)
    slicer.mark = set()
    # The enclosing statement is not probed: its other terms have hazards of their own (the
    # other log of a cross-entropy), which are not this rewrite's to remove.
    slicer.subs = {id(e.node): e.new for e in plan.edits}
    new = slicer.tree(top, site.scope, site.order)
    if slicer.truncated or slicer.unsupported:
        return None  # a misread slice proves nothing
    eps: list[float] = []
    _small_consts(orig, eps)
    witness = None
    if verification is not None and isinstance(getattr(verification, "inputs", None), dict):
        witness = verification.inputs
    return {
        "rule": plan.rule,
        "dtype": dtype,
        "inputs": list(slicer.inputs.values()),
        "orig": orig,
        "new": new,
        "eps": max(eps) if eps else None,
        "witness": witness,
        "symptom": getattr(verification, "symptom", None),
        # what the rule's recipe says the rewrite must achieve
        "strict": recipe_for(plan.rule).singular,
        "explosion": recipe_for(plan.rule).local_gradient,
    }


def _optimizer_job(plan: Plan, dtype: str, old_eps: float | None) -> dict[str, Any]:
    """An optimizer epsilon: the Adam-style update g / (sqrt(v) + eps), old eps vs new."""
    keep = plan.edits[0].new
    new_eps = keep.set_kw["epsilon"].value
    old_eps = 0.0 if old_eps is None else old_eps

    def update(eps: float) -> dict:
        return {
            "k": "bin",
            "op": "/",
            "l": {"k": "input", "name": "g"},
            "r": {
                "k": "bin",
                "op": "+",
                "l": {"k": "call", "op": "sqrt", "args": [{"k": "input", "name": "v"}], "kw": {}},
                "r": {"k": "const", "v": eps},
            },
        }

    return {
        "rule": plan.rule,
        "dtype": dtype,
        "inputs": [
            {
                "name": "g",
                "producer": "gradient",
                "lo": -1.0,
                "hi": 1.0,
                "prob": False,
                "role": "value",
            },
            {
                "name": "v",
                "producer": "square",
                "lo": 0.0,
                "hi": 1.0,
                "prob": False,
                "role": "value",
            },
        ],
        "orig": update(old_eps),
        "new": update(new_eps),
        "eps": None,
        "witness": None,
        "no_grad": True,
        "strict": True,
    }


def tensorflow_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False
