"""The rule registry.  Each family module registers checks with :func:`rule`.

A check is a function ``(site, ctx) -> Iterable[Hit]`` subscribed to canonical ops (calls),
binary operators, method names, or the whole module; the engine walks the tree once and
dispatches each node to the checks that asked for it.  Metadata (name, severity, default)
comes from ``rules/TNLxxx.md``; what a check is given and returns (``Context``, ``Hit``) is
defined in :mod:`tfnumlint.analysis.context`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..analysis.context import Context, Hit
from ..analysis.module import Site


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
):
    def register(fn):
        checked = fn if module else _tensorflow_only(code, fn)
        CHECKS.append(Check(code, checked, frozenset(ops), binops, frozenset(methods), module))
        return fn

    return register


def _tensorflow_only(code: str, fn: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
    """Drop arithmetic hits on Python/numpy values (issue #11; see analysis/tfvalues.py)."""
    from ..analysis.tfvalues import host_reason

    def checked(site: Site, ctx: Context) -> Iterable[Hit]:
        for hit in fn(site, ctx):
            try:
                host = host_reason(ctx, code, hit.node, hit.site.scope, hit.site.order)
            except (AttributeError, KeyError, TypeError, ValueError):
                host = None  # unsure: keep the finding
            if host is None:
                yield hit

    return checked


def load_all() -> list[Check]:
    """Import every family module so that its checks register."""
    from . import domain, logs, overflow, precision, training  # noqa: F401

    return CHECKS
