"""Where a statement sits inside a module-level statement, by both parsers at once.

:mod:`tfnumlint.positions` generates one line (or compound statement) of a large class on its
own to place a hit in it.  For that it needs the line's first line number and the indentation
of the blocks around it.  This walks the libcst statement and the stdlib ``ast`` statement
together, block by block, down to the statement that holds the target: libcst gives the
indentation tokens, ``ast`` the line.  Only statements are visited, not expressions.  Where
the two trees do not line up (a statement count or kind differs) the answer is None, and the
caller falls back to generating the whole module-level statement.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst


@dataclass(frozen=True)
class Found:
    """The line or compound statement that holds a target, and how to generate it in place."""

    node: cst.CSTNode  # a SimpleStatementLine or a compound statement
    tree: ast.stmt  # the stdlib parser's statement for it (the first one of a line)
    indents: tuple[str, ...]  # indentation tokens of the blocks around it, outermost first


@dataclass(frozen=True)
class _Block:
    statements: Sequence[cst.CSTNode]  # for a one-line body, its small statements
    trees: Sequence[ast.stmt]
    indent: str | None  # None: not indented (an `elif` continues its `if`; a one-line body)
    one_line: bool = False  # `if x: return y`: generated with its header


# libcst compound statement -> the stdlib statement types it may parse as
_KINDS: dict[type, tuple[type, ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
    cst.TryStar: (getattr(ast, "TryStar", ast.Try),),
    cst.Match: (getattr(ast, "Match", ast.stmt),),
}


def find_statement(
    top: cst.CSTNode, top_tree: ast.stmt, target: cst.CSTNode, default_indent: str
) -> Found | None:
    """The innermost line or compound statement under ``top`` that holds ``target`` (a small
    or compound statement), or None."""
    stack: list[tuple[cst.CSTNode, ast.stmt, tuple[str, ...], Found | None]] = [
        (top, top_tree, (), None)
    ]
    while stack:
        node, tree, indents, elif_of = stack.pop()
        here = elif_of or Found(node, tree, indents)  # an `elif` is generated with its `if`
        if node is target:
            return here
        if isinstance(node, cst.SimpleStatementLine):
            if any(s is target for s in node.body):
                return here
            continue
        kinds = _KINDS.get(type(node))
        if kinds is None or not isinstance(tree, kinds):
            return None
        for block in _blocks(node, tree):
            if block is None:
                return None
            if block.one_line:
                if any(s is target for s in block.statements):
                    return here
                continue
            pairs = pair_statements(block.statements, block.trees)
            if pairs is None:
                return None
            if block.indent is None:
                stack.extend((n, t, indents, here) for n, t in pairs)
            else:
                inner = (*indents, block.indent or default_indent)
                stack.extend((n, t, inner, None) for n, t in pairs)
    return None


def _blocks(node: cst.CSTNode, tree: ast.stmt) -> Iterator[_Block | None]:
    """The bodies of a compound statement with the stdlib's statement lists, in order."""
    if isinstance(node, cst.Match):
        cases = tree.cases  # type: ignore[attr-defined]
        if len(cases) != len(node.cases):
            yield None
            return
        for c, tc in zip(node.cases, cases, strict=True):
            yield _body(c.body, tc.body)
        return
    yield _body(node.body, tree.body)  # type: ignore[attr-defined]
    if isinstance(node, cst.If):
        if isinstance(node.orelse, cst.If):
            yield _Block([node.orelse], tree.orelse, None)  # type: ignore[attr-defined]
        elif isinstance(node.orelse, cst.Else):
            yield _body(node.orelse.body, tree.orelse)  # type: ignore[attr-defined]
    elif isinstance(node, (cst.For, cst.While)) and node.orelse is not None:
        yield _body(node.orelse.body, tree.orelse)  # type: ignore[attr-defined]
    elif isinstance(node, (cst.Try, cst.TryStar)):
        handlers = tree.handlers  # type: ignore[attr-defined]
        if len(handlers) != len(node.handlers):
            yield None
            return
        for h, th in zip(node.handlers, handlers, strict=True):
            yield _body(h.body, th.body)  # type: ignore[attr-defined]
        if node.orelse is not None:
            yield _body(node.orelse.body, tree.orelse)  # type: ignore[attr-defined]
        if node.finalbody is not None:
            yield _body(node.finalbody.body, tree.finalbody)  # type: ignore[attr-defined]


def _body(block: cst.BaseSuite | cst.CSTNode, trees: Sequence[ast.stmt]) -> _Block | None:
    if isinstance(block, cst.IndentedBlock):
        return _Block(block.body, trees, block.indent or "")
    if isinstance(block, cst.SimpleStatementSuite):
        return _Block(block.body, trees, None, one_line=True)
    return None


def pair_statements(
    statements: Sequence[cst.CSTNode], trees: Sequence[ast.stmt]
) -> list[tuple[cst.CSTNode, ast.stmt]] | None:
    """Each libcst statement with the stdlib's (the first, for a line of several); None when
    the counts disagree."""
    out = []
    i = 0
    for s in statements:
        if i >= len(trees):
            return None
        out.append((s, trees[i]))
        i += len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1
    return out if i == len(trees) else None
