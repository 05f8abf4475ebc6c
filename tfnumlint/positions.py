"""Source positions for the few nodes that are reported, without paying for the whole file.

libcst's PositionProvider re-generates the entire module with per-node tracking: on a
60k-line file with one finding that is most of the run.  Instead, each module-level
statement that holds a finding is wrapped in a one-statement module and resolved on its own;
its line offset comes from the stdlib ``ast`` (a fast C parse) of the same text.  When the
two parses cannot be matched up, everything falls back to the full provider.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from .analysis.module import parent_map


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

    # -- internals ----------------------------------------------------------------------------
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
        if self._starts is not None:
            return self._starts
        try:
            tree = ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        lines = [_first_line(s) for s in tree.body]
        starts: dict[int, int] = {}
        i = 0
        for stmt in self.module.body:
            width = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
            if i >= len(lines):
                return None
            starts[id(stmt)] = lines[i]
            i += width
        if i != len(lines):
            return None  # the two parsers disagree on the statements: do not guess
        self._starts = starts
        return starts


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
