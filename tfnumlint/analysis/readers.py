"""Whether the other modules that read a function can differentiate it (issue 22: a gradient
symptom needs a path to a differentiation root, across modules too).

The project index knows which modules read a function (``ext`` facts, ``read_table``), not
what they do with it.  For a finding whose function another module reads, this module opens
each reader (only for the verifier, and only when a finding asks) and looks at every place it
names the function.  When each one is a call whose statement has no path to a
differentiation root in the reader (``roots.reach``: a test method, a statistic that is only
fetched), no reader differentiates the function, and its reach is decided by its own module.
A module that star-imports the function is read for its bare name (a package ``__init__`` that
only re-exports it calls nothing).  Anything else keeps the reach unknown, as before: the
function passed or stored as a value, named only where the walk cannot see (a string), a
reader that changed or does not parse, or a reader function that other modules read in turn
(followed one hop only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path as FilePath

import libcst as cst

from ..parsing import parse_module
from ..source import SourceError, read_source
from .module import ModuleInfo, Scope, build
from .names import children, dotted_name
from .project_imports import STAR, text_digest
from .roots import Path, reach

# (file, text hash) -> the reader's walk; None when it cannot be read as the index saw it.
# The most recent few are kept: a module's findings ask about the same readers.
_WALKS: dict[tuple[str, str], ModuleInfo | None] = {}
_KEEP = 32


@dataclass
class Readers:
    """The ``imported`` test :func:`roots.reach` takes, for the findings of ``module``: does
    another module read the name in a way that may differentiate it?  ``quiet`` keeps the
    names whose readers were each followed to no root, with those readers, for the message."""

    module: str
    ask: Callable[[str], object]  # a project fact by key (``ProjectView.ask``)
    quiet: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __call__(self, name: str) -> bool:
        found = self.ask(f"ext|{self.module}|{name}")
        if not found:
            return False
        if not name or not isinstance(found, tuple):
            return True  # the module itself is imported: its module-level code runs there
        quiet = []
        for reader in found:
            calls = self._quiet_calls(reader, name)
            if calls is None:
                return True
            if calls:
                quiet.append(reader[0])
        self.quiet[name] = tuple(sorted(quiet))
        return False

    def shown(self, names: set[str]) -> str:
        """The modules that read these names only where nothing is differentiated."""
        modules = sorted({m for n in names for m in self.quiet.get(n, ())})
        return ", ".join(f"`{m}`" for m in modules)

    def _quiet_calls(self, reader: tuple, name: str) -> int | None:
        """How many calls of ``name`` the reader makes, each on no path to a root; None when
        it may differentiate it (or reads it where this cannot follow)."""
        module, file, text_hash, names = reader
        info = _walk(file, text_hash) if file else None
        if info is None:
            return None
        star = tuple(names) == STAR  # a star import: the reader may use the bare name
        sites = _call_sites(info, frozenset((name,) if star else names))
        if sites is None or (not sites and not star):
            return None  # named otherwise than called, or only where the walk cannot see

        def imported(name: str) -> bool:  # one hop: the reader's own readers are not followed
            return bool(self.ask(f"ext|{module}|{name}"))

        if all(reach(scope, stmt, imported).path is Path.UNREACHED for scope, stmt in sites):
            return len(sites)
        return None


def _walk(file: str, text_hash: str) -> ModuleInfo | None:
    key = (file, text_hash)
    if key not in _WALKS:
        info = None
        try:
            source = read_source(FilePath(file), file)
            if text_digest(source.text) == text_hash:  # as the index saw it
                info = build(parse_module(source.text))
        except (SourceError, OSError, cst.ParserSyntaxError, RecursionError, ValueError):
            info = None
        if len(_WALKS) >= _KEEP:
            del _WALKS[next(iter(_WALKS))]
        _WALKS[key] = info
    return _WALKS[key]


def _call_sites(info: ModuleInfo, names: frozenset[str]) -> list[tuple[Scope, cst.CSTNode]] | None:
    """(scope, statement) of each call of the function (none: a star import that only
    re-exports it); None when the reader also names it anywhere else than as what a call
    calls (passed, stored, returned: not followed)."""
    calls = [s for s in info.calls if dotted_name(s.node.func) in names]
    if _mentions(info.module, names) != len(calls):
        return None
    return [(s.scope, s.statement) for s in calls]


def _mentions(module: cst.Module, names: frozenset[str]) -> int:
    """How many names or attribute chains outside import statements spell one of ``names``."""
    count = 0
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) in names:
            count += 1
            continue
        stack.extend(children(node))
    return count
