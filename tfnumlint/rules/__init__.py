"""The rule registry.  Each family module registers checks with :func:`rule`.

A check is a function ``(site, ctx) -> Iterable[Hit]`` subscribed to canonical ops (calls),
binary operators, method names, or the whole module; the engine walks the tree once and
dispatches each node to the checks that asked for it.  Metadata (name, severity, default)
comes from ``rules/TNLxxx.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.module import ModuleInfo, Scope, Site, call_arg
from ..analysis.provenance import Evaluator, Val


@dataclass
class Hit:
    """A rule's raw result: the node to report, and why."""

    node: cst.CSTNode
    message: str
    site: Site
    probe_hint: dict = field(default_factory=dict)
    origin: tuple | None = None  # the call site that passed the value (set by the engine)


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


@dataclass
class Settings:
    """Rule thresholds, configurable under ``[tool.tfnumlint]``."""

    # learning rate above which an optimizer family counts as "high"
    lr_thresholds: dict[str, float] = field(
        default_factory=lambda: {
            "adam": 0.003,
            "adamw": 0.003,
            "adamax": 0.003,
            "nadam": 0.003,
            "rmsprop": 0.003,
            "adagrad": 0.1,
            "adadelta": 10.0,
            "ftrl": 0.1,
            "sgd": 1.0,
        }
    )
    exploding_gradient: float = 1e6


class Context:
    """What a check can ask about the module it runs on."""

    def __init__(self, info: ModuleInfo, settings: Settings, project=None) -> None:
        self.info = info
        self.ev = Evaluator(info, project)
        self.settings = settings
        self._facts: dict[str, object] = {}
        self.seen: set[tuple[str, int]] = set()
        self.path = ""

    def val(self, node: cst.BaseExpression, site: Site) -> Val:
        return self.ev.value(node, site.scope, site.order)

    def dtype(self, site: Site | Scope) -> str:
        scope = site.scope if isinstance(site, Site) else site
        return self.info.dtype(scope)

    def op(self, node: cst.CSTNode) -> str | None:
        return self.info.imports.op(node.func) if isinstance(node, cst.Call) else None

    def arg(self, call: cst.Call, index: int, *keywords: str) -> cst.BaseExpression | None:
        return call_arg(call, index, *keywords)

    def fact(self, name: str, compute: Callable[[], object]) -> object:
        if name not in self._facts:
            self._facts[name] = compute()
        return self._facts[name]

    def once(self, code: str, node: cst.CSTNode) -> bool:
        """True the first time (code, node) is seen: keeps a rule from reporting twice."""
        key = (code, id(node))
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def code(self, node: cst.CSTNode) -> str:
        return self.info.module.code_for_node(node)


def load_all() -> list[Check]:
    """Import every family module so that its checks register."""
    from . import domain, logs, overflow, precision, training  # noqa: F401

    return CHECKS
