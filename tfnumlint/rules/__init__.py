"""The rules: each family module registers checks with :func:`rule` (``registry.py``).

A check is a function ``(site, ctx) -> Iterable[Hit]`` subscribed to canonical ops (calls),
binary operators, method names, or the whole module; the engine walks the tree once and
dispatches each node to the checks that asked for it.  Metadata (name, severity, default)
comes from ``rules/TNLxxx.md``; what a check is given and returns (``Context``, ``Hit``) is
defined in :mod:`tfnumlint.analysis.context`.
"""

from __future__ import annotations

from ..analysis.context import Hit
from .graph import GRAPH_RULES, GraphRule, Hazard
from .registry import CHECKS, Check, rule

__all__ = ["CHECKS", "Check", "Hit", "load_all", "rule", "rules_for"]


def load_all() -> list[Check]:
    """Import every family module so that its checks register."""
    from . import domain, logs, masking, overflow, precision, training, training_batch, training_sgd  # noqa: F401

    return CHECKS


def rules_for(hazard: Hazard) -> list[GraphRule]:
    """Every declared graph rule that covers the hazard (the families are loaded first)."""
    load_all()
    return [r for r in GRAPH_RULES if r.matches(hazard)]
