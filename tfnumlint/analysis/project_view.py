"""The evaluator's window on the project index (:class:`ProjectView`): one module's questions
as fact keys, each recorded with the digest of its answer, so that a file is re-linted exactly
when a fact it asked about changed.  Split from ``project.py``, which answers the keys.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from .module import ModuleInfo
from .project_imports import _THIRD_PARTY_ROOTS, import_table
from .project_model import NO_FACT, FunctionSummary, Symbol
from .values import Val

T = TypeVar("T")

if TYPE_CHECKING:
    from .project import ProjectIndex


class ProjectView:
    """The evaluator's window on the index, for one module; records what it asked."""

    def __init__(
        self, index: ProjectIndex | None, module: str, info: ModuleInfo, is_package: bool
    ) -> None:
        self.index = index
        self.module = module
        self.imports, self.stars = import_table(info.import_nodes, module, is_package)
        self.touched: dict[str, str] = {}

    def ask(self, key: str) -> object:
        if self.index is None:
            self.touched[key] = NO_FACT
            return None
        fact = self.index.fact(key)
        self.touched[key] = self.index.digest(key)
        return fact

    def _may_resolve(self, dotted: str) -> bool:
        """Only names imported from elsewhere (or star-imported) are worth a question."""
        root = dotted.split(".")[0]
        if root in self.imports:
            return self.imports[root][0].split(".")[0] not in _THIRD_PARTY_ROOTS
        return bool(self.stars)

    def _imported(self, kind: str, dotted: str, typ: type[T]) -> T | None:
        """The index's ``kind`` fact about the imported name ``dotted`` of this module, when it
        is worth asking about and the fact is a ``typ``."""
        if not self._may_resolve(dotted):
            return None
        fact = self.ask(f"{kind}|{self.module}|{dotted}")
        return fact if isinstance(fact, typ) else None

    def discrete(self, dotted: str) -> bool:
        """Every return of the project function ``dotted`` is a whole number or a boolean."""
        return self._may_resolve(dotted) and self.ask(f"disc|{self.module}|{dotted}") is True

    def own_package(self, dotted: str) -> bool:
        """The import the chain ``dotted`` starts with (``ps`` of ``ps.shape``) is of a package
        this file itself sits in (``from pkg.sub import m`` in ``pkg/other/f.py``, with or
        without ``__init__.py`` files): its functions are the project's code, whatever the
        package is called, never a library's API."""
        found = self.imports.get(dotted.split(".")[0])
        if found is None:
            return False
        target = ".".join(p for p in found if p)
        return self.ask(f"own|{self.module}|{target}") is True

    def whole(self, dotted: str) -> tuple[float, str] | None:
        """(lower bound, why) when every return of the project function ``dotted`` is a whole
        number (a size: >= 0)."""
        return self._imported("whole", dotted, tuple)

    def symbol(self, dotted: str) -> Symbol | None:
        """A name (or dotted chain) of this module that no local binding explains."""
        return self._imported("sym", dotted, Symbol)

    def declared_bound(self, dotted: str, attr: str) -> tuple[float, bool, float, str] | None:
        """What the declared transform of ``attr`` bounds for an instance of the project class
        named ``dotted`` in this module."""
        fact = self.ask(f"ptx|{self.module}|{dotted}|{attr}")
        return fact if isinstance(fact, tuple) else None

    def value(self, dotted: str) -> Val | None:
        """The value of an imported module-level name (a constant, a model)."""
        return self._imported("val", dotted, Val)

    def call(self, dotted: str, passes_values: bool) -> FunctionSummary | None:
        """What calling an imported function gives, when that can matter: the values it
        makes, and (only when this call passes something) the parameters it returns."""
        if not self._may_resolve(dotted):
            return None
        made = self.ask(f"call|{self.module}|{dotted}")
        passed = self.ask(f"callp|{self.module}|{dotted}") if passes_values else None
        parts = [f for f in (made, passed) if isinstance(f, FunctionSummary)]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return replace(parts[0], returns=parts[0].returns + parts[1].returns)

    def instance_method(self, spec: str, name: str) -> FunctionSummary | None:
        """A method of ``spec`` (``module?Dotted``: a class named where it was instantiated),
        asked only when a method is called: instantiating alone asks nothing."""
        fact = self.ask(f"pmeth|{spec}|{name}")
        return fact if isinstance(fact, FunctionSummary) else None

    def function(self, module: str, qual: str) -> FunctionSummary | None:
        fact = self.ask(f"ret|{module}|{qual}")
        return fact if isinstance(fact, FunctionSummary) else None

    def method(self, module: str, cname: str, name: str) -> FunctionSummary | None:
        fact = self.ask(f"meth|{module}|{cname}|{name}")
        return fact if isinstance(fact, FunctionSummary) else None

    def attr(self, module: str, cname: str, name: str) -> Val | None:
        fact = self.ask(f"attr|{module}|{cname}|{name}")
        return fact if isinstance(fact, Val) else None

    def param(self, qual: str, name: str) -> Val | None:
        fact = self.ask(f"param|{self.module}|{qual}|{name}")
        return fact if isinstance(fact, Val) else None

    def ancestry(self, dotted: str) -> tuple[str, ...]:
        """The ancestors of a class this module imports from the project (see
        ``ProjectIndex._ancestry``); empty when it is not a project class."""
        if not self._may_resolve(dotted):
            return ()
        fact = self.ask(f"ancestry|{self.module}|{dotted}")
        return fact if isinstance(fact, tuple) else ()

    def caller_relations(self, qual: str) -> tuple[tuple[str, str, str, str], ...]:
        """(a, op, b, why): every call site passes parameters ``a op b`` (a class invariant)."""
        fact = self.ask(f"prel|{self.module}|{qual}")
        return fact if isinstance(fact, tuple) else ()

    def every_caller_passes(self, qual: str, name: str) -> bool:
        """Every call site of the function in the project passes a known value for ``name``."""
        return self.ask(f"pall|{self.module}|{qual}|{name}") is True
