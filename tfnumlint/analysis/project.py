"""The project index: what each module of the linted tree makes, across functions, classes
and modules, without importing or running any of it.

Each module is summarised from its own parse into plain, picklable data: module-level
bindings, what each function returns (a value, a parameter, or a parameter applied to a
value), class attributes and bases, and the call sites of project functions with the
abstract values of their arguments.  :class:`ProjectIndex` merges the summaries and answers
*facts* by key (``sym|m|name``, ``ret|m|f``, ``param|m|f|x``, ``attr|m|C|a``).  The evaluator
asks through a :class:`ProjectView`, which records every key it asked about and the digest of
the answer: a file's result is a function of its text and of those facts only, so a file is
re-linted (or served from the cache) exactly when one of them changed.

Data classes (and their cache JSON) are in ``project_model.py``, module names and imports in
``project_imports.py``, the summariser in ``project_summary.py``, the view in
``project_view.py``; this module merges, answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

from .project_imports import (
    importer_table,
    module_imported_elsewhere,
    project_files,
    read_table,
)
from .project_model import (
    MAX_CALL_SITES,
    MAX_DEPTH,
    MAX_HOPS,
    NO_FACT,
    CallSite,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    Symbol,
    T,
)
from .project_summary import (
    informative,
    informative_summary,
    returns_part,
)
from .values import Val, join_vals

# -- the index --------------------------------------------------------------------------------


def digest(fact: object) -> str:
    if fact is None:
        return NO_FACT
    return hashlib.blake2b(repr(fact).encode(), digest_size=10).hexdigest()


@dataclass
class ProjectIndex:
    """Every module's summary, and the facts derived from them (memoised)."""

    summaries: dict[str, ModuleSummary]
    _facts: dict[str, object] = field(default_factory=dict)
    _digests: dict[str, str] = field(default_factory=dict)
    _by_target: dict[tuple[str, str], list[tuple[CallSite, FunctionSummary]]] | None = None
    _opaque_targets: set[tuple[str, str]] | None = None
    _importers: dict[str, tuple[tuple[str, str, str], ...]] | None = None  # importer_table
    _packages: set[str] = field(default_factory=set)
    _read: dict[tuple[str, str], tuple] | None = None  # read_table: the readers
    _nested: set[tuple[str, ...]] | None = None  # a folder and a folder or file in it

    def __post_init__(self) -> None:
        self._functions = {m: dict(s.functions) for m, s in self.summaries.items()}
        self._classes = {m: dict(s.classes) for m, s in self.summaries.items()}
        self._bindings = {m: dict(s.bindings) for m, s in self.summaries.items()}
        self._imports = {m: {k: (t, n) for k, t, n in s.imports} for m, s in self.summaries.items()}
        for m in self.summaries:
            parts = m.split(".")
            for i in range(1, len(parts) + 1):
                self._packages.add(".".join(parts[:i]))

    # -- public ------------------------------------------------------------------------------
    def fact(self, key: str) -> object:
        if key in self._facts:
            return self._facts[key]
        self._facts[key] = None  # a cycle answers "nothing known"
        kind, *rest = key.split("|")
        value: object = None
        if kind == "sym" and len(rest) == 2:
            value = self._dotted(rest[0], rest[1], 0)
            value = value if self._useful(value, 0) else None
        elif kind == "val" and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            value = sym.val if sym is not None and sym.kind == "value" else None
        elif kind in ("call", "callp") and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "function":
                fs = self._functions[sym.module].get(sym.name)
                value = returns_part(fs, passed=kind == "callp")
        elif kind == "pmeth" and len(rest) == 2:
            value = self._pending_method(rest[0], rest[1])
        elif kind == "disc" and len(rest) == 2:  # every return a whole number or a boolean
            sym = self._dotted(rest[0], rest[1], 0)
            fs = self._functions[sym.module][sym.name] if sym and sym.kind == "function" else None
            value = True if fs is not None and fs.discrete else None
        elif kind == "whole" and len(rest) == 2:  # every return a whole number: (lo, why)
            sym = self._dotted(rest[0], rest[1], 0)
            fs = self._functions[sym.module][sym.name] if sym and sym.kind == "function" else None
            value = fs.whole if fs is not None else None
        elif kind == "own" and len(rest) == 2:  # an import of the module's own package
            value = True if self._own_package(rest[0], rest[1]) else None
        elif kind == "ret" and len(rest) == 2:
            value = self._functions.get(rest[0], {}).get(rest[1])
            value = value if informative_summary(value) else None
        elif kind == "meth" and len(rest) == 3:
            value = self._method(rest[0], rest[1], rest[2], 0)
            value = value if informative_summary(value) else None
        elif kind == "attr" and len(rest) == 3:
            value = self._attr(rest[0], rest[1], rest[2], 0)
        elif kind == "ptx" and len(rest) == 3:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "class":
                value = self._declared_bound(sym.module, sym.name, rest[2])
        elif kind == "param" and len(rest) == 3:
            value = self._param(rest[0], rest[1], rest[2])
        elif kind == "prel" and len(rest) == 2:
            value = self._caller_relations(rest[0], rest[1]) or None
        elif kind == "pall" and len(rest) == 3:
            value = True if self._every_site_passes(rest[0], rest[1], rest[2]) else None
        elif kind == "ext" and len(rest) == 2:  # True, or the modules that read the name
            value = self._imported_elsewhere(rest[0], rest[1]) or None
        elif kind in ("imp", "mod") and len(rest) == 1:  # a program slice's modules
            if self._importers is None:
                self._importers = importer_table(self.summaries)
            value = project_files(self.summaries, kind, rest[0], self._importers)
        elif kind == "ancestry" and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "class":
                value = self._ancestry(sym.module, sym.name, 0) or None
        self._facts[key] = value
        return value

    def resolve(self, module: str, dotted: str) -> Symbol | None:
        """What ``dotted`` names in ``module`` (re-exports followed), useful or not."""
        return self._dotted(module, dotted, 0)

    def _own_package(self, module: str, target: str) -> bool:
        """``target`` (an imported module, ``pkg.sub.m``) is in the package ``module``'s file
        sits in: ``pkg`` is a folder of the file's path, and ``pkg/sub`` a folder or file of
        the project (a package, or a namespace package Python finds from the folder above)."""
        summary = self.summaries.get(module)
        head = tuple(target.split(".")[:2])
        if summary is None or not summary.path or len(head) < 2:
            return False
        if head[0] not in Path(summary.path).parent.parts:
            return False
        if self._nested is None:
            self._nested = {
                pair
                for s in self.summaries.values()
                if s.path
                for pair in pairwise(Path(s.path).with_suffix("").parts)
            }
        return head in self._nested

    def _imported_elsewhere(self, module: str, name: str) -> bool | tuple:
        """The modules reading function or class ``name`` of ``module`` (a re-export is none);
        for ``""``, whether one imports the module itself or all of it."""
        if not name:
            return module_imported_elsewhere(self.summaries, module)
        self._read = read_table(self.summaries, self._dotted) if self._read is None else self._read
        return self._read.get((module, name), ())

    def digest(self, key: str) -> str:
        d = self._digests.get(key)
        if d is None:
            d = self._digests[key] = digest(self.fact(key))
        return d

    # -- symbols -----------------------------------------------------------------------------
    def _dotted(self, module: str, dotted: str, depth: int) -> Symbol | None:
        head, *tail = dotted.split(".")
        sym = self._symbol(module, head, depth)
        for part in tail:
            if sym is None or sym.kind != "module":
                return None
            sym = self._symbol(sym.module, part, depth)
        return sym

    def _symbol(self, module: str, name: str, depth: int) -> Symbol | None:
        if depth > MAX_DEPTH:
            return None
        if module not in self.summaries:
            sub = f"{module}.{name}"
            return Symbol("module", sub) if sub in self._packages else None
        if name in self._classes[module]:
            return Symbol("class", module, name)
        if name in self._functions[module]:
            return Symbol("function", module, name)
        if name in self._bindings[module]:
            return Symbol("value", module, name, self._bindings[module][name])
        imported = self._imports[module].get(name)
        if imported is not None:
            target, symbol = imported
            if symbol is None:
                return Symbol("module", target) if target in self._packages else None
            found = self._symbol(target, symbol, depth + 1)
            if found is None and f"{target}.{symbol}" in self._packages:
                return Symbol("module", f"{target}.{symbol}")
            return found
        for star in self.summaries[module].stars:
            found = self._symbol(star, name, depth + 1)
            names = self._imports.get(star, {})  # a star exports a submodule only if imported
            if found is not None and (found.kind != "module" or name in names):
                return found
        sub = f"{module}.{name}"
        return Symbol("module", sub) if sub in self._packages else None

    def _useful(self, sym: Symbol | None, depth: int) -> bool:
        """Whether knowing the symbol can change a value: a function or a class that makes
        something the rules act on.  Anything else answers "unknown", as if unresolved, so
        that resolving it does not make a file stale."""
        if sym is None or depth > MAX_DEPTH:
            return False
        if sym.kind == "value":
            return sym.val is not None
        if sym.kind == "function":
            return informative_summary(self._functions[sym.module].get(sym.name))
        if sym.kind == "class":
            cls = self._classes[sym.module].get(sym.name)
            if cls is None:
                return False
            if cls.attrs or any(
                informative_summary(self._functions[sym.module].get(f"{sym.name}.{m}"))
                for m in cls.methods
            ):
                return True
            return any(
                self._useful(Symbol("class", bm, bc), depth + 1)
                for bm, bc in self._bases(sym.module, sym.name)
            )
        return False

    # -- classes -----------------------------------------------------------------------------
    def _bases(self, module: str, cname: str) -> list[tuple[str, str]]:
        cls = self._classes.get(module, {}).get(cname)
        out = []
        for base in cls.bases if cls else ():
            sym = self._dotted(module, base, 0)
            if sym is not None and sym.kind == "class":
                out.append((sym.module, sym.name))
        return out

    def _ancestry(self, module: str, cname: str, depth: int) -> tuple[str, ...]:
        """The names of a project class's ancestors, as written where each is a base: the
        project's own classes by name, and the bases outside the project (``layers.Layer``)
        at the chain's ends."""
        cls = self._classes.get(module, {}).get(cname)
        if cls is None or depth > MAX_DEPTH:
            return ()
        out: list[str] = []
        for base in cls.bases:
            out.append(base)
            sym = self._dotted(module, base, 0)
            if sym is not None and sym.kind == "class":
                out += self._ancestry(sym.module, sym.name, depth + 1)
        return tuple(out)

    def _pending_method(self, spec: str, name: str) -> FunctionSummary | None:
        module, _, dotted = spec.partition("?")
        sym = self._dotted(module, dotted, 0)
        found = self._method(sym.module, sym.name, name, 0) if sym and sym.kind == "class" else None
        return found if informative_summary(found) else None

    def _method(self, module: str, cname: str, name: str, depth: int) -> FunctionSummary | None:
        if depth > MAX_DEPTH or cname not in self._classes.get(module, {}):
            return None
        for candidate in (name, "call") if name == "__call__" else (name,):
            if (own := self._functions[module].get(f"{cname}.{candidate}")) is not None:
                return own
            for bm, bc in self._bases(module, cname):
                found = self._method(bm, bc, candidate, depth + 1)
                if found is not None:
                    return found
        return None

    def _attr(self, module: str, cname: str, name: str, depth: int) -> Val | None:
        own = lambda cls: next((val for attr, val in cls.attrs if attr == name), None)  # noqa: E731
        return self._nearest(module, cname, own, depth)

    def _assigning(self, module: str, cname: str, name: str, depth: int) -> ClassSummary | None:
        """The nearest class in ``cname``'s hierarchy that assigns attribute ``name``."""
        return self._nearest(
            module, cname, lambda cls: cls if name in cls.assigned else None, depth
        )

    def _nearest(
        self, module: str, cname: str, own: Callable[[ClassSummary], T | None], depth: int
    ) -> T | None:
        """What ``own`` finds on ``cname`` or, failing that, on the nearest base class that has
        it (bases in order, depth-first): one walk up the hierarchy for attributes and the
        classes that assign them."""
        cls = self._classes.get(module, {}).get(cname)
        if cls is None or depth > MAX_DEPTH:
            return None
        if (found := own(cls)) is not None:
            return found
        for bm, bc in self._bases(module, cname):
            found = self._nearest(bm, bc, own, depth + 1)
            if found is not None:
                return found
        return None

    def _derives(self, module: str, cname: str, target: tuple[str, str], depth: int) -> bool:
        return depth <= MAX_DEPTH and any(
            (bm, bc) == target or self._derives(bm, bc, target, depth + 1)
            for bm, bc in self._bases(module, cname)
        )

    def _declared_bound(
        self, module: str, cname: str, name: str
    ) -> tuple[float, bool, float, str] | None:
        """The bound that the declared transform of attribute ``name`` gives every instance of
        ``cname``: the nearest assigning class declares it, and no project subclass assigns
        the attribute otherwise (an instance of one could be passed too)."""
        owner = self._assigning(module, cname, name, 0)
        bound = _declared(owner, name) if owner is not None else None
        if bound is None or owner is None:
            return None
        for m, classes in self._classes.items():
            for c, cls in classes.items():
                if name not in cls.assigned or (m, c) == (module, cname):
                    continue
                if _declared(cls, name) != bound and self._derives(m, c, (module, cname), 0):
                    return None
        lo, lo_open, hi, why = bound
        return lo, lo_open, hi, f"{why} in `{owner.name}`"

    # -- parameters from call sites -----------------------------------------------------------
    def _target(self, site: CallSite) -> FunctionSummary | None:
        if site.callee[0] == "sym":
            sym = self._dotted(site.callee[1], site.callee[2], 0)
            if sym is None:
                return None
            if sym.kind == "function":
                return self._functions[sym.module].get(sym.name)
            if sym.kind == "class":
                return self._method(sym.module, sym.name, "__init__", 0)
            return None
        if site.callee[0] == "method":
            return self._method(site.callee[1], site.callee[2], site.callee[3], 0)
        if site.callee[0] == "pmethod":
            module, _, dotted = site.callee[1].partition("?")
            sym = self._dotted(module, dotted, 0)
            if sym is not None and sym.kind == "class":
                return self._method(sym.module, sym.name, site.callee[2], 0)
        return None

    def _sites(
        self, module: str, qual: str, limit: int | None = MAX_CALL_SITES
    ) -> list[tuple[CallSite, FunctionSummary]]:
        if self._by_target is None:
            by: dict[tuple[str, str], list[tuple[CallSite, FunctionSummary]]] = {}
            for m in sorted(self.summaries):
                for site in self.summaries[m].calls:
                    target = self._target(site)
                    if target is not None:
                        by.setdefault((target.module, target.qualname), []).append((site, target))
            for sites in by.values():
                sites.sort(key=lambda st: st[0].origin[:3])
            self._by_target = by
        return self._by_target.get((module, qual), [])[:limit]

    def _opaque(self) -> set[tuple[str, str]]:
        """The functions some call site calls passing nothing informative."""
        if self._opaque_targets is None:
            targets = set()
            for m in sorted(self.summaries):
                for callee in self.summaries[m].opaque_calls:
                    target = self._target(CallSite(callee, (), (), ("", 0, 0, "", "", "")))
                    if target is not None:
                        targets.add((target.module, target.qualname))
            self._opaque_targets = targets
        return self._opaque_targets

    def _every_site_passes(
        self, module: str, qual: str, name: str, hops: int = 0, seen: frozenset = frozenset()
    ) -> bool:
        """Every call of the function in the project passes a known value for ``name`` (so
        the parameter's fact is the join over all its callers, not over some of them).  A
        caller that passes on its own parameter passes what its callers pass: followed up to
        :data:`MAX_HOPS` out; a cycle or a longer chain is not known."""
        if (module, qual) in self._opaque() or (module, qual, name) in seen:
            return False
        sites = self._sites(module, qual, None)
        if not sites or len(sites) > MAX_CALL_SITES:
            return False
        seen = seen | {(module, qual, name)}
        for site, target in sites:
            val = _argument(site, target, name)
            if val is not None and val.instance_of is None:
                continue
            passed_on = _forward(site, target, name) if val is None else None
            if passed_on is None or hops >= MAX_HOPS:
                return False
            if not self._every_site_passes(*passed_on, hops + 1, seen):
                return False
        return True

    def _param(
        self, module: str, qual: str, name: str, hops: int = 0, seen: frozenset = frozenset()
    ) -> Val | None:
        vals = self._passed_values(module, qual, name, hops, seen)
        if not vals:
            return None
        joined = join_vals(vals)
        if not informative(joined):
            return None
        # a bare guard (neither a hazard nor a bound) only silences a guess by use: the asking
        # evaluator keeps it where it has one (``Evaluator._passed``)
        return replace(joined, desc=f"`{name}`")

    def _caller_relations(self, module: str, qual: str) -> tuple[tuple[str, str, str, str], ...]:
        """Relations between two parameters that every call site passes from attributes its
        class asserts so related (``a < b`` by ``assert_less(self.low, self.high)``)."""
        if (module, qual) in self._opaque():
            return ()
        sites = self._sites(module, qual, None)
        if not sites or len(sites) > MAX_CALL_SITES:
            return ()
        common: dict[tuple[str, str, str], str] | None = None
        for site, target in sites:
            here: dict[tuple[str, str, str], str] = {}
            for sa, op, sb, why in site.relations:
                a, b = _slot_name(target, sa), _slot_name(target, sb)
                if a and b:
                    here.setdefault((a, op, b), why)
            common = here if common is None else {k: v for k, v in common.items() if k in here}
        return tuple((a, op, b, why) for (a, op, b), why in sorted((common or {}).items()))

    def _passed_values(
        self, module: str, qual: str, name: str, hops: int, seen: frozenset
    ) -> list[Val]:
        """The known values the call sites pass for ``name``, each marked with its call
        site; a site that passes on its caller's parameter contributes what that caller's
        callers pass (the outermost known call decides)."""
        if (module, qual, name) in seen:
            return []
        seen = seen | {(module, qual, name)}
        vals: list[Val] = []
        for site, target in self._sites(module, qual):
            val = _argument(site, target, name)
            if val is None:
                passed_on = _forward(site, target, name)
                if passed_on is not None and hops < MAX_HOPS:
                    vals += self._passed_values(*passed_on, hops + 1, seen)
                continue
            path, line, col, text, _, _ = site.origin
            if val.instance_of is not None:
                continue  # objects passed around: dispatch through them is not followed
            if val.kind == "diff" and val.zero is not None:
                val = replace(val, zero=None)  # a - b passed on: unbounded, but no zero source
            vals.append(replace(val, origin=(path, line, col, text, name, _producer(val))))
        return vals


def _producer(val: Val) -> str:
    """How a message names what a call site passes: its description, with its kind when the
    description is only a name (`out`, a softmax output)."""
    desc = val.desc or ""
    kind = val.kind if val.kind not in ("unknown", "arith", "call", "asserted") else ""
    if desc.startswith("`") and " = " in desc and len(desc) > 32:
        desc = desc.split(" = ", 1)[0]  # `hot` = (`y` = matmul(...)) * 0.125: the name will do
    if kind and (not desc or desc.startswith("`")) and kind not in desc:
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{desc}, {article} {kind} output" if desc else f"{article} {kind} output"
    return desc or "a value"


def _argument(site: CallSite, target: FunctionSummary, name: str) -> Val | None:
    for kw, val in site.keywords:
        if kw == name:
            return val
    if name in target.positional:
        i = target.positional.index(name)
        if i < len(site.positional):
            return site.positional[i]
    return None


def _declared(cls: ClassSummary, name: str) -> tuple[float, bool, float, str] | None:
    """The bound the class's own assignments of attribute ``name`` declare."""
    for attr, lo, lo_open, hi, why in cls.transforms:
        if attr == name:
            return lo, lo_open, hi, why
    return None


def _slot_name(target: FunctionSummary, slot: str) -> str | None:
    """The parameter a call's argument slot fills (a position or a keyword)."""
    if slot.isdigit():
        i = int(slot)
        return target.positional[i] if i < len(target.positional) else None
    return slot if slot in target.positional or slot in target.keyword_only else None


def _forward(site: CallSite, target: FunctionSummary, name: str) -> tuple[str, str, str] | None:
    """(module, the caller's qualname, its parameter) when the call passes the caller's own
    parameter on for ``name``."""
    slot = name
    if name in target.positional:
        slot = str(target.positional.index(name))
    for s, module, qual, param in site.forwards:
        if s in (slot, name):
            return module, qual, param
    return None
