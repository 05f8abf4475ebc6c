"""Stable finding identities for baselines and SARIF ``partialFingerprints``.

A fingerprint is rule + project-relative path + the flagged expression's source with comments
and layout removed + an occurrence index among identical (rule, path, expression) triples.  It
contains no line number, so it survives code moving up or down and edits elsewhere in the file.

The baseline also keeps the group (the fingerprint without the index) and the enclosing
function or class, so that when one more copy of a common expression appears it is the new
copy that is reported, not whichever copy comes last in the file.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .model import Finding
from .source import Source

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

_SKIP = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def normalise(expression: str) -> str:
    """The expression's tokens joined by single spaces: layout and comments do not count."""
    try:
        tokens = [
            t.string
            for t in tokenize.generate_tokens(io.StringIO(expression.strip()).readline)
            if t.type not in _SKIP
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return " ".join(expression.split())
    return " ".join(tokens)


def _text_line(source: Source, cell: int | None, line: int) -> int:
    """The line in ``source.text`` that the user's (cell, line) refers to."""
    if cell is None or not source.cell_map:
        return line
    for text_line, where in source.cell_map.items():
        if where == (cell, line):
            return text_line
    return line


def expression_text(finding: Finding, source: Source | None) -> str:
    """The source of the flagged range (the reported line is enough for one-line ranges)."""
    if finding.end_line == finding.line or source is None:
        line = finding.source_line.rstrip("\r\n")
        end = finding.end_column - 1 if finding.end_line == finding.line else len(line)
        return line[finding.column - 1 : end]
    lines = _LINE_BREAK.split(source.text)  # as the engine counts lines
    first = _text_line(source, finding.cell, finding.line)
    last = _text_line(source, finding.cell, finding.end_line)
    if not 1 <= first <= last <= len(lines):
        return finding.source_line
    chunk = lines[first - 1 : last]
    chunk[-1] = chunk[-1][: finding.end_column - 1]
    chunk[0] = chunk[0][finding.column - 1 :]
    return "\n".join(chunk)


def project_path(display: str, root: Path) -> str:
    """The path as the project knows it (relative to its root), whatever the working directory."""
    absolute = Path(os.path.abspath(display))
    if absolute.is_relative_to(root):
        return absolute.relative_to(root).as_posix()
    return Path(display).as_posix()


@dataclass(frozen=True)
class Identity:
    fingerprint: str  # hash of rule, path, expression and occurrence index
    group: str  # hash of rule, path and expression
    scope: str  # dotted name of the enclosing functions and classes ("" at module level)


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def scopes(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, dotted name) of every function and class (stdlib parse only)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                out.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _scope_of(spans: list[tuple[int, int, str]], line: int) -> str:
    inner = [s for s in spans if s[0] <= line <= s[1]]
    return max(inner, key=lambda s: s[0])[2] if inner else ""


def assign(
    findings: list[Finding],
    root: Path,
    source_of: Callable[[str], Source | None],
    scoped: bool = False,
) -> dict[str, Identity]:
    """Set ``finding.fingerprint`` on every finding (in place); identities by fingerprint.

    Files are read again only for multi-line expressions and, when ``scoped`` (baselines),
    for the enclosing function names."""
    seen: dict[str, int] = {}
    sources: dict[str, Source | None] = {}
    spans: dict[str, list[tuple[int, int, str]]] = {}
    paths: dict[str, str] = {}
    out: dict[str, Identity] = {}

    def source(path: str) -> Source | None:
        if path not in sources:
            sources[path] = source_of(path)
        return sources[path]

    for f in sorted(findings, key=lambda f: f.sort_key):
        if f.path not in paths:
            paths[f.path] = project_path(f.path, root)
        src = source(f.path) if f.end_line != f.line else None
        group = _hash(f.rule, paths[f.path], normalise(expression_text(f, src)))
        index = seen.get(group, 0)
        seen[group] = index + 1
        f.fingerprint = _hash(group, str(index))
        scope = ""
        if scoped:
            src = source(f.path)
            if f.path not in spans:
                spans[f.path] = scopes(src.text) if src is not None else []
            line = _text_line(src, f.cell, f.line) if src is not None else f.line
            scope = _scope_of(spans[f.path], line)
        out[f.fingerprint] = Identity(f.fingerprint, group, scope)
    return out
