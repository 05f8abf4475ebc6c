"""What a rule check is given (``Context``) and what it returns (``Hit``).

Defined here, below the rules, so that the verifier and the fixer can read a check's inputs
and results without depending on the rule registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast

import libcst as cst

from .. import stages
from .layer_policy import LayerDtype, class_scope_dtype, layer_dtype, scope_class
from .module import ModuleInfo, Scope, Site, call_arg
from .provenance import Evaluator
from .values import Val

if TYPE_CHECKING:
    from ..config import Settings

T = TypeVar("T")


@dataclass
class Hit:
    """A rule's raw result: the node to report, and why."""

    node: cst.CSTNode
    message: str
    site: Site
    probe_hint: dict = field(default_factory=dict)
    origin: tuple | None = None  # the call site that passed the value (set by the engine)


class Context:
    """What a check can ask about the module it runs on."""

    def __init__(
        self, info: ModuleInfo, settings: Settings, project=None, package: str | None = None
    ) -> None:
        self.info = info
        info.default_float = (
            settings.float_type or settings.float_packages.get(package or "") or "float32"
        )
        self.ev = Evaluator(info, project)
        if stages.enabled():  # every evaluation, the rules' and the summary's, is provenance
            self.ev.value = stages.timed("provenance", self.ev.value)  # type: ignore[method-assign]
        self.settings = settings
        self._facts: dict[str, object] = {}
        self.seen: set[tuple[str, int]] = set()
        self.path = ""

    def val(self, node: cst.BaseExpression, site: Site) -> Val:
        return self.ev.value(node, site.scope, site.order)

    def dtype(self, site: Site | Scope) -> str:
        """The lowest precision the code at ``site`` computes in: the dtypes its scopes set,
        and in a Keras layer class the layer's own dtype (``layer_policy``), which says
        what a mixed-precision policy does to it."""
        scope = site.scope if isinstance(site, Site) else site
        layer = self.layer_dtype(scope)
        if layer is not None:
            return class_scope_dtype(scope, self.info, layer)
        return self.info.dtype(scope)

    def layer_dtype(self, scope: Scope) -> LayerDtype | None:
        """The dtype of the Keras layer class ``scope`` is code of, when a policy or its
        instances' ``dtype`` decide it (``layer_policy.layer_dtype``)."""
        cls = scope_class(scope)
        if cls is None:
            return None
        table: dict[int, LayerDtype | None] = self.fact("layer_dtypes", dict)
        if id(cls) not in table:
            table[id(cls)] = layer_dtype(cls, self.info)
        return table[id(cls)]

    def op(self, node: cst.CSTNode) -> str | None:
        return self.info.imports.op(node.func) if isinstance(node, cst.Call) else None

    def arg(self, call: cst.Call, index: int, *keywords: str) -> cst.BaseExpression | None:
        return call_arg(call, index, *keywords)

    def fact(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, once per module: a name always stands for one computation, so the
        cached value has the type ``compute`` returns."""
        if name not in self._facts:
            self._facts[name] = compute()
        return cast(T, self._facts[name])

    def once(self, code: str, node: cst.CSTNode) -> bool:
        """True the first time (code, node) is seen: keeps a rule from reporting twice."""
        key = (code, id(node))
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def code(self, node: cst.CSTNode) -> str:
        return self.info.module.code_for_node(node)
