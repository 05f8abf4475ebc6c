"""Source positions for the few nodes that are reported, without paying for the whole file.

libcst's PositionProvider re-generates the entire module with per-node tracking: on a
60k-line file with one finding that is most of the run.  Instead, each module-level
statement that holds a finding is wrapped in a one-statement module and resolved on its own;
its line offset comes from the stdlib ``ast`` (a fast C parse) of the same text.  A hit's
own statement can go further (:meth:`Positions.place`): the line that holds it is generated
alone, at the indentation of the blocks around it (:mod:`.statement_path`), so a hit in a
method of a large class does not pay for the class.  When the two parses cannot be matched
up, everything falls back to the full provider.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from .analysis.module import Site, parent_map
from .statement_path import find_statement, pair_statements


class _Hit(Protocol):
    """What placing reads of a rule's hit (``analysis.context.Hit``)."""

    node: cst.CSTNode
    site: Site


class Positions:
    def __init__(self, module: cst.Module, text: str) -> None:
        self.module = module
        self.text = text
        self._map: dict[cst.CSTNode, CodeRange] = {}
        # each resolved statement's ranges in its one-statement module, and the line offset
        # to add: shifted when asked for (most nodes of a statement never are)
        self._parts: list[tuple[Mapping[cst.CSTNode, CodeRange], int]] = []
        self._done: set[int] = set()
        self._starts: dict[int, int] | None = None
        self._tops: dict[int, ast.stmt] | None = None
        self._unparsed = False  # the stdlib parser failed, or the two disagree
        self._full = False

    def get(self, node: cst.CSTNode) -> CodeRange | None:
        pos = self._map.get(node)
        if pos is not None or self._full:
            return pos
        for ranges, offset in self._parts:
            r = ranges.get(node)
            if r is not None:
                pos = self._map[node] = CodeRange(
                    CodePosition(r.start.line + offset, r.start.column),
                    CodePosition(r.end.line + offset, r.end.column),
                )
                return pos
        return None

    def resolve(self, tops: Iterable[cst.CSTNode | None]) -> None:
        """Make positions available for every node inside these module-level statements."""
        if self._full:
            return
        wanted = [t for t in tops if t is None or id(t) not in self._done]
        if not wanted:
            return
        starts = self._first_lines()
        present = [t for t in wanted if t is not None]
        if (
            starts is None
            or len(present) < len(wanted)
            or any(id(t) not in starts for t in present)
        ):
            self._resolve_everything()
            return
        for top in present:
            self._resolve_one(top, starts[id(top)])

    def resolve_statements(
        self, statements: Iterable[tuple[cst.CSTNode, cst.CSTNode | None]]
    ) -> None:
        """Make positions available inside these statements, each given with the module-level
        statement that holds it: ``(statement, top)``.  A statement is a small or compound
        statement (``Site.statement``).  Each is generated on its own, at the indentation of
        the blocks around it, with its first line from the stdlib parser: a hit in a method of
        a 2,000-line class costs its own line, not the class.  A statement the two parses do
        not line up on resolves its module-level statement instead."""
        if self._full:
            return
        fallback: list[cst.CSTNode | None] = []
        for stmt, top in statements:
            if top is None or id(top) in self._done:
                continue
            if stmt is top or not self._resolve_inside(top, stmt):
                fallback.append(top)
        if fallback:
            self.resolve(fallback)

    def place(self, hits: Sequence[tuple[object, _Hit]]) -> None:
        """Positions for the hits' nodes and statements: by their statements, and by the
        module-level statement for a hit reported outside its statement."""
        sites = [hit.site for _check, hit in hits]
        self.resolve_statements({(site.statement, site.top) for site in sites})
        missing = {
            site.top
            for (_check, hit), site in zip(hits, sites, strict=True)
            if self.get(hit.node) is None or self.get(site.statement) is None
        }
        if missing:
            self.resolve(missing)

    # -- internals ----------------------------------------------------------------------------
    def _resolve_inside(self, top: cst.CSTNode, stmt: cst.CSTNode) -> bool:
        """Resolve the line (or compound statement) that holds ``stmt``; False when it is the
        module-level statement itself or the parses do not line up."""
        tops = self._top_statements()
        if tops is None or id(top) not in tops:
            return False
        found = find_statement(top, tops[id(top)], stmt, self.module.default_indent)
        if found is None or id(found.node) in self._done:
            return found is not None
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=provider,
            indent_tokens=list(found.indents),
        )
        found.node._codegen(state)
        ranges = cast("dict[cst.CSTNode, CodeRange]", provider._computed)
        own_start = ranges[found.node].start.line
        self._parts.append((ranges, _first_line(found.tree) - own_start))
        self._done.add(id(found.node))
        return True

    def _resolve_everything(self) -> None:
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self._map = dict(wrapper.resolve(PositionProvider))
        self._parts = []
        self._full = True

    def _resolve_one(self, top: cst.CSTNode, first_code_line: int) -> None:
        mini = self.module.with_changes(body=[top], header=(), footer=())
        ranges = dict(MetadataWrapper(mini, unsafe_skip_copy=True).resolve(PositionProvider))
        del ranges[mini]
        own_start = ranges[top].start.line  # where the code starts, after its leading lines
        self._parts.append((ranges, first_code_line - own_start))
        self._done.add(id(top))

    def _first_lines(self) -> dict[int, int] | None:
        """id(module-level statement) -> its first line, from the stdlib parser."""
        if self._starts is None:
            tops = self._top_statements()
            if tops is not None:
                self._starts = {k: _first_line(t) for k, t in tops.items()}
        return self._starts

    def _top_statements(self) -> dict[int, ast.stmt] | None:
        """id(module-level statement) -> the stdlib parser's statement for it (the first one
        of a line of several); None when the two parsers disagree on the statements."""
        if self._tops is None and not self._unparsed:
            try:
                pairs = pair_statements(self.module.body, ast.parse(self.text).body)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pairs = None
            self._unparsed = pairs is None
            self._tops = {id(n): t for n, t in pairs} if pairs is not None else None
        return self._tops


def _first_line(stmt: ast.stmt) -> int:
    """Where both parsers say the statement starts: for a decorated def, the `def` line."""
    return stmt.lineno


class NodePositions(Positions):
    """Any node's position on demand, as the full provider gives it: ``get`` resolves the
    module-level statement that holds the node the first time one of its nodes is asked for.
    For ``--fix`` and the JSON fix descriptions, which ask for the hits, the rewritten nodes
    and whatever the proof's slicer reads, but rarely for most of a large module."""

    def __init__(self, module: cst.Module, text: str) -> None:
        super().__init__(module, text)
        self._parents: dict[int, cst.CSTNode] | None = None

    @property
    def parents(self) -> dict[int, cst.CSTNode]:
        """id(node) -> its parent, for every node of the module (computed once)."""
        if self._parents is None:
            self._parents = parent_map(self.module)
        return self._parents

    def get(self, node: cst.CSTNode) -> CodeRange | None:
        pos = super().get(node)
        if pos is not None or self._full:
            return pos
        if node is self.module:
            self.resolve([None])
        else:
            top = self._top(node)
            if top is None:
                return None  # not a node of this module
            self.resolve([top])
        return super().get(node)

    def _top(self, node: cst.CSTNode) -> cst.CSTNode | None:
        parents = self.parents
        cur = node
        while True:
            parent = parents.get(id(cur))
            if parent is None:
                return None
            if parent is self.module:
                return cur
            cur = parent
