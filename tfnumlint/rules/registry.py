"""Registered checks and the :func:`rule` decorator the family modules register them with.

Apart from the package ``__init__`` (which loads the families), so that a family module
importing the decorator does not import the package that imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..analysis.context import Context, Hit
from ..analysis.module import Site
from .recipes import Recipe, declare_recipe


@dataclass
class Check:
    code: str
    fn: Callable[..., Iterable[Hit]]
    ops: frozenset[str] = frozenset()
    binops: tuple[type, ...] = ()
    methods: frozenset[str] = frozenset()
    module: bool = False


CHECKS: list[Check] = []


def rule(
    code: str,
    *,
    ops: Iterable[str] = (),
    binops: tuple[type, ...] = (),
    methods: Iterable[str] = (),
    module: bool = False,
    recipe: Recipe | None = None,
    host_values: bool = False,
):
    """Register a check.  ``recipe`` (how the verifier checks the rule, and the name of its
    rewrite) may be declared here, beside the check, instead of in ``rules/recipes.py``.
    ``host_values``: the rule is about Python/numpy numbers too (an epsilon literal, an
    optimizer argument), so its arithmetic hits are kept whatever the values' origin."""
    if recipe is not None:
        declare_recipe(code, recipe)

    def register(fn):
        checked = fn if module or host_values else _tensorflow_only(fn)
        CHECKS.append(Check(code, checked, frozenset(ops), binops, frozenset(methods), module))
        return fn

    return register


def _tensorflow_only(fn: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
    """Drop arithmetic hits on Python/numpy values (issue #11; see analysis/tfvalues.py)."""
    from ..analysis.tfvalues import host_reason

    @functools.wraps(fn)
    def checked(site: Site, ctx: Context) -> Iterable[Hit]:
        for hit in fn(site, ctx):
            try:
                host = host_reason(ctx, hit.node, hit.site.scope, hit.site.order)
            except (AttributeError, KeyError, TypeError, ValueError):
                host = None  # unsure: keep the finding
            if host is None:
                yield hit

    return checked
