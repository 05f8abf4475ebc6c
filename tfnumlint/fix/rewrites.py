"""The rewrites by name, and what a rule's module needs to declare one (pure libcst).

A rewrite turns one rule hit into a :class:`Plan`: a list of edits (an original node and the
IR that replaces it, :mod:`.ir`), the applicability the rewrite has by construction, and the
assignments it may make dead.  A rule's recipe names its rewrite (``Recipe(fixer="name")``);
a family module may declare a new one beside its check with ``@rewrite("name")``, building
its plan from the IR re-exported here.

Applicability by construction: rewrites to a mathematically identical fused op are ``safe``
(the proof may still downgrade or drop them); rewrites that move values on purpose
(clipping, ``maximum(x, eps)``, ``divide_no_nan``, a larger optimizer epsilon) are ``unsafe``;
advice that cannot be applied mechanically is a ``suggestion`` (no edits, never applied).

The built-in rewrites live in :mod:`.logs` (logs, exponentials, probabilities) and
:mod:`.domain` (divisions, roots, norms, where, optimizer epsilons); the suggestions are here.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..analysis.context import Context, Hit
from ..rules.recipes import RECIPES, recipe_for
from . import domain, logs
from .ir import IR, Bin, Call, Edit, Keep, Neg, Num, Plan, Reuse, Src

Rewrite = Callable[[Context, Hit], Plan | None]


def suggest_lower_learning_rate(ctx: Context, hit: Hit) -> Plan:
    return Plan(
        "",
        "suggestion",
        "lower the learning rate (e.g. 1e-3), or make the output layer linear and use "
        "from_logits=True / *_with_logits; never applied automatically",
    )


def suggest_from_logits(ctx: Context, hit: Hit) -> Plan:
    return Plan(
        "",
        "suggestion",
        "make the last layer linear and pass from_logits=True (or pass the pre-activation "
        "logits to *_with_logits); it changes the model's outputs, so it is never applied",
    )


FIXERS: dict[str, Rewrite] = {
    "log_of_probability": logs.fix_log_of_probability,
    "log_epsilon": logs.fix_log_epsilon,
    "cross_entropy": logs.fix_cross_entropy,
    "log1p_expm1": logs.fix_log1p_expm1,
    "logsumexp": logs.fix_logsumexp,
    "divide_no_nan": domain.fix_divide_no_nan,
    "clamped_sqrt": domain.fix_clamped_sqrt,
    "safe_norm": domain.fix_safe_norm,
    "fused_softmax": logs.fix_fused_softmax,
    "double_where": domain.fix_double_where,
    "optimizer_epsilon": domain.fix_optimizer_epsilon,
    "lower_learning_rate": suggest_lower_learning_rate,
    "from_logits": suggest_from_logits,
}


def rewrite(name: str) -> Callable[[Rewrite], Rewrite]:
    """Register a rewrite under the name a recipe gives (``Recipe(fixer=name)``): a rule's
    family module can declare its rewrite beside its check."""

    def register(fn: Rewrite) -> Rewrite:
        if FIXERS.get(name, fn) is not fn:
            raise ValueError(f"two rewrites named {name!r}")
        FIXERS[name] = fn
        return fn

    return register


def fixable(code: str) -> bool:
    """The rule's recipe (rules/recipes.py) names a registered rewrite."""
    return recipe_for(code).fixer in FIXERS


def fixable_codes() -> frozenset[str]:
    return frozenset(code for code in RECIPES if fixable(code))


def plan_for(ctx: Context, hit: Hit, code: str) -> Plan | None:
    """The rewrite the rule's recipe names, applied to ``hit``; the plan carries ``code``.
    A rewrite that trips over a shape it did not expect offers nothing."""
    fn = FIXERS.get(recipe_for(code).fixer)
    if fn is None:
        return None
    try:
        plan = fn(ctx, hit)
    except (
        RecursionError,
        cst.ParserSyntaxError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
    ):
        return None
    if plan is not None:
        plan.rule = code
    return plan


__all__ = [
    "FIXERS",
    "IR",
    "Bin",
    "Call",
    "Edit",
    "Keep",
    "Neg",
    "Num",
    "Plan",
    "Reuse",
    "Rewrite",
    "Src",
    "fixable",
    "fixable_codes",
    "plan_for",
    "rewrite",
]
