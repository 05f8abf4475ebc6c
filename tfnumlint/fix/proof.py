"""Prove a rewrite: the original and the rewritten expression, compared in TensorFlow.

:func:`build_job` is the static half (no TensorFlow): it slices the original expression and
the rewritten one into probe trees (the verifier's format and slicer, see
``analysis/slicing/slicer.py``) over one shared set of free inputs.  The verification worker
evaluates them with the verifier's own evaluator (``verify/proving.py``); :class:`Prover`
sends the jobs and caches the verdicts like a finding's (``verify/runner.py``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst

from ..analysis.context import Context, Hit
from ..analysis.module import Scope, contains, parent_map
from ..analysis.slicing.slicer import Slicer
from ..analysis.slicing.tools import jfloat
from ..model import Verification
from ..positions import NodePositions as Positions  # every node's position, on demand
from ..rules.recipes import recipe_for
from .ir import IR, Bin, Call, Keep, Neg, Num, Plan, Reuse, Src, walk

Job = dict[str, Any]  # a proof request for the verification worker
Result = dict[str, Any]  # its verdict


class RewriteSlice:
    """The verifier's slicer with original nodes substituted by rewrite IR: it plugs into the
    slicer's ``substitute`` hook (composition), so the proof never depends on its internals."""

    def __init__(self, ctx: Context, positions: Positions) -> None:
        # the rewrite's operands must be reached through the original tree: no logits cut
        self.slicer = Slicer(ctx, positions, substitute=self._substitute, cut_logits=False)
        self.subs: dict[int, IR] = {}
        self.mark: set[int] = set()  # original operands of the rewrite, marked in the original tree

    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        return self.slicer.tree(node, scope, order, depth)

    def _substitute(
        self, node: cst.BaseExpression, scope: Scope, order: int, depth: int
    ) -> dict | None:
        ir = self.subs.get(id(node))
        if ir is not None:
            return self.ir(ir, depth)
        if id(node) in self.mark:
            self.mark.discard(id(node))
            try:
                return {"k": "src", "x": self.slicer.tree(node, scope, order, depth)}
            finally:
                self.mark.add(id(node))
        return None  # the slicer's own rules

    def ir(self, ir: IR, depth: int = 0) -> dict:
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
            return self._reuse(ir, depth)
        raise TypeError(f"no probe for {ir!r}")

    def _reuse(self, ir: Reuse, depth: int) -> dict:
        """The original call's own tree, with its first argument substituted."""
        own = self.subs.pop(id(ir.node), None)
        arg0 = ir.node.args[0].value
        self.subs[id(arg0)] = ir.arg
        try:
            return self.tree(ir.node, ir.scope, ir.order, depth + 1)
        finally:
            self.subs.pop(id(arg0), None)
            if own is not None:
                self.subs[id(ir.node)] = own


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


def build_job(
    ctx: Context,
    positions: Positions,
    hit: Hit,
    plan: Plan,
    verification: Verification | None = None,
) -> Job | None:
    """The proof job for ``plan``: original and rewritten trees over the same inputs."""
    if not plan.edits:
        return None
    dtype = ctx.dtype(hit.site)
    keeps = [e.new for e in plan.edits if isinstance(e.new, Keep)]
    if keeps:
        return _optimizer_job(plan, keeps[0], dtype, hit.probe_hint.get("epsilon"))
    site = hit.site
    parents = parent_map(site.statement)
    top: cst.CSTNode | None = hit.node
    while top is not None and not all(contains(top, e.node) for e in plan.edits):
        top = parents.get(id(top))
    if top is None or not isinstance(top, cst.BaseExpression):
        return None
    rewrite = RewriteSlice(ctx, positions)
    slicer = rewrite.slicer
    rewrite.mark = {id(n.node) for e in plan.edits for n in walk(e.new) if isinstance(n, Src)}
    orig = rewrite.tree(top, site.scope, site.order)
    rewrite.mark = set()
    # The enclosing statement is not probed: its other terms have hazards of their own (the
    # other log of a cross-entropy), which are not this rewrite's to remove.
    rewrite.subs = {id(e.node): e.new for e in plan.edits}
    new = rewrite.tree(top, site.scope, site.order)
    if slicer.truncated or slicer.unsupported:
        return None  # a misread slice proves nothing
    eps: list[float] = []
    _small_consts(orig, eps)
    witness = None
    if verification is not None and isinstance(verification.inputs, dict):
        witness = verification.inputs
    rules = plan.hazards or [plan.rule]  # every rule of the hazard group: their symptoms
    recipes = [recipe_for(r) for r in rules]
    return {
        "rule": plan.rule,
        "rules": rules,
        "dtype": dtype,
        "inputs": list(slicer.inputs.values()),
        "orig": orig,
        "new": new,
        "eps": max(eps) if eps else None,
        "witness": witness,
        "symptom": verification.symptom if verification is not None else None,
        # what the recipes of the group's rules say the rewrite must achieve (any of them)
        "strict": any(r.singular for r in recipes),
        "explosion": any(r.local_gradient for r in recipes),
        "symptoms": sorted({s for r in recipes for s in r.symptoms}),
    }


def _optimizer_job(plan: Plan, keep: Keep, dtype: str, old_eps: float | None) -> Job:
    """An optimizer epsilon: the Adam-style update g / (sqrt(v) + eps), old eps vs new."""
    new_eps = keep.set_kw["epsilon"]
    assert isinstance(new_eps, Num)  # the optimizer-epsilon rewrite sets a literal
    old = 0.0 if old_eps is None else old_eps

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
        "orig": update(old),
        "new": update(new_eps.value),
        "eps": None,
        "witness": None,
        "no_grad": True,
        "strict": True,
    }


def tensorflow_available() -> bool:
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


Prove = Callable[[list[Job | None]], list[Result]]  # jobs -> verdicts, in order
NOTHING_TO_PROBE: Result = {"verdict": "failed", "detail": "nothing to probe"}


class Prover:
    """Proofs go to the verification worker; results are cached on disk like verdicts (and
    in memory across the passes of one run)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache: dict[str, Result] = {}
        self.cache_dir = cache_dir

    def run(self, jobs: list[Job | None]) -> list[Result]:
        from ..verify.runner import run_proofs

        keys = [json.dumps(j, sort_keys=True) if j is not None else None for j in jobs]
        todo = {
            k: j
            for k, j in zip(keys, jobs, strict=True)
            if k is not None and j is not None and k not in self.cache
        }
        if todo:
            results = run_proofs(list(todo.values()), self.cache_dir)
            for k, r in zip(todo, results, strict=True):
                self.cache[k] = r
        return [self.cache[k] if k is not None else dict(NOTHING_TO_PROBE) for k in keys]


def proved(plan: Plan, result: Result) -> None:
    """Record the proof on the plan; a safe rewrite whose values move becomes unsafe."""
    plan.proof = result
    if result.get("verdict") == "unsafe" and plan.applicability == "safe":
        plan.applicability = "unsafe"
