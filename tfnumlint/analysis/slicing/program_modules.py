"""The other modules of the project a program slice reads, loaded on demand (static, no TF).

A training step in ``train.py`` that calls ``Encoder``, ``kl_divergence`` and
``reparameterize`` imported from ``parts.py`` trains the code of ``parts.py``: the program
slice follows the call into that module's own context (its tree, scopes, imports and
evaluator), as the project index resolves the import.  A finding in ``parts.py`` is in turn
watched in the objectives of the modules that import it, directly or through other modules.

A module is loaded from its file when the index's summary of it matches the file's text, and
kept for the findings that follow (a few at a time).  Each module a slice read is a fact the
finding's result depends on (``mod|m``, ``imp|m``: the module's path and text digest), so the
incremental run lints it again when one of them changes.

``Where`` is a module's context with its positions: nodes sliced in a module other than the
one the slice started in carry that module's path (``"file"``) next to their line.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import libcst as cst

from ...parsing import parse_module
from ...positions import NodePositions
from ...source import decode_python
from ..context import Context
from ..dtypectx import float_package
from ..module import ClassInfo, Scope, build
from ..names import dotted_name
from ..project_imports import _THIRD_PARTY_ROOTS, imported_module, text_digest
from ..project_view import ProjectView

Where = tuple[Context, Any]  # a module's context and its positions

MAX_LOADED = 8  # modules kept loaded (each holds its tree and walk)
MAX_IMPORTERS = 8  # the modules importing a finding's module that are looked at
MAX_HOPS = 3  # ... importing it, or a module that does (and so on), this far out

# path -> (the index it was loaded against, the module): a new index (a new round) reloads
_LOADED: OrderedDict[str, tuple[object, Where]] = OrderedDict()


def _view(ctx: Context) -> ProjectView | None:
    """The module's view of the project (without an index, the first round: a question asked
    is recorded all the same, and the next round answers it)."""
    view = ctx.ev.project
    return view if isinstance(view, ProjectView) else None


def forget() -> None:
    """Drop the loaded modules (the run is over)."""
    _LOADED.clear()
    _UNTRAINED.clear()


def _keep(path: str, index: object, where: Where) -> Where:
    _LOADED[path] = (index, where)
    _LOADED.move_to_end(path)
    while len(_LOADED) > MAX_LOADED:
        _LOADED.popitem(last=False)
    return where


@contextmanager
def seeded(ctx: Context, positions) -> Iterator[None]:
    """While inside, the slices of the other modules read the module a finding is in as the
    finding's own tree (their nodes' positions are the finding's).  Only while inside: the
    engine frees that tree's walk once the file is linted."""
    view = _view(ctx)
    if view is None or view.index is None or not ctx.path:
        yield
        return
    before = _LOADED.get(ctx.path)
    entry = (view.index, (ctx, NodePositions(positions.module, positions.text)))
    _LOADED[ctx.path] = entry
    try:
        yield
    finally:
        if _LOADED.get(ctx.path) is entry:
            del _LOADED[ctx.path]
            if before is not None:
                _LOADED[ctx.path] = before


# The method calls an objective is made of (``program_objectives.objectives``: ``minimize``,
# ``compute_gradients``, a tape's ``gradient``; ``fit_objectives``: ``compile``).  A module whose
# text has none has no objective: an importer without one is not parsed.
_TRAINING_CALL = re.compile(r"\.[\s\\]*(?:minimize|compute_gradients|gradient|compile)[\s\\]*\(")
_UNTRAINED: set[str] = set()  # text digests of modules read and found without such a call


def load(ctx: Context, module: str, training: bool = False) -> Where | None:
    """The project module ``module`` as ``ctx``'s slice reads it: its context, over the same
    index and settings; None when it is not in the index or its file is not the text the
    index summarised (``training``: or when its text calls no optimizer, tape or compile)."""
    view = _view(ctx)
    if view is None:
        return None
    fact = view.ask(f"mod|{module}")  # the finding now depends on that module's text
    summary = view.index.summaries.get(module) if view.index is not None else None
    if summary is None or not summary.path or not isinstance(fact, tuple):
        return None
    held = _LOADED.get(summary.path)
    if held is not None and held[0] is view.index:
        _LOADED.move_to_end(summary.path)
        return held[1]
    if training and summary.text_hash in _UNTRAINED:
        return None
    path = Path(summary.file or summary.path)
    if path.suffix != ".py":
        return None
    try:
        text = decode_python(path.read_bytes())
        if text_digest(text) != summary.text_hash:
            return None  # changed since it was summarised
        if training and not _TRAINING_CALL.search(text):
            _UNTRAINED.add(summary.text_hash)
            return None
        tree = parse_module(text)
    except Exception:  # unreadable, undecodable or unparsable: not followed
        return None
    is_package = path.stem == "__init__"
    info = build(tree)
    other = Context(
        info,
        ctx.settings,
        ProjectView(view.index, module, info, is_package),
        float_package(module, is_package),
    )
    other.path = summary.path
    return _keep(summary.path, view.index, (other, NodePositions(tree, text)))


def _imported(ctx: Context, func: cst.BaseExpression) -> tuple[Where, str] | None:
    """The module of the project a callee of ``ctx`` comes from, loaded, and its name there:
    ``f`` of ``from parts import f``, ``parts.f`` of ``import parts`` or ``from pkg import
    parts`` (re-exports followed, as the project index resolves them)."""
    view = _view(ctx)
    dotted = dotted_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else ""
    head, _, rest = dotted.partition(".")
    if view is None or head not in view.imports:
        return None
    target, symbol = view.imports[head]
    named = ".".join(p for p in (symbol, rest) if p)  # what it is called in ``target``
    if not named or target.split(".")[0] in _THIRD_PARTY_ROOTS:
        return None
    if view.index is None:
        view.ask(f"mod|{target}")  # the first round: the next one, with the index, answers
        return None
    module = imported_module(view.index.summaries, view.module, target) or target
    found = view.index.resolve(module, named)
    if found is None or found.kind not in ("function", "class") or found.module == view.module:
        return None
    where = load(ctx, found.module)
    return (where, found.name) if where is not None else None


def imported_function(ctx: Context, func: cst.BaseExpression) -> tuple[Scope, Where] | None:
    """The module-level function another module of the project defines, that ``func`` calls
    in ``ctx``: its scope in that module, and the module."""
    found = _imported(ctx, func)
    if found is None:
        return None
    where, name = found
    fn = where[0].info.functions.get(name)
    if fn is None or fn.parent is None or fn.parent.kind != "module":
        return None
    return fn, where


def imported_class(ctx: Context, func: cst.BaseExpression) -> tuple[ClassInfo, Where] | None:
    """The class another module of the project defines, that ``func`` names in ``ctx``."""
    found = _imported(ctx, func)
    if found is None:
        return None
    where, name = found
    cls = where[0].info.classes.get(name)
    return (cls, where) if cls is not None else None


def importers(ctx: Context) -> list[Where]:
    """The modules of the project that import ``ctx``'s module, loaded, nearest first: those
    that import it (``train.py`` importing ``model.py``), then those that import them (the
    ``train.py`` of a ``model.py`` that imports ``layers.py``), at most ``MAX_HOPS`` away.
    Their objectives may train its code."""
    view = _view(ctx)
    if view is None:
        return []
    out: list[Where] = []
    seen, frontier = {view.module}, [view.module]
    for _ in range(MAX_HOPS):
        ahead = []
        for module in frontier:
            found = view.ask(f"imp|{module}")
            for name, _path, _digest in found if isinstance(found, tuple) else ():
                if name in seen or len(seen) > MAX_IMPORTERS:
                    continue
                seen.add(name)
                ahead.append(name)
                where = load(ctx, name, training=True)  # one without a training call: unread
                if where is not None:
                    out.append(where)
        frontier = ahead
    return out
