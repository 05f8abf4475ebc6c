"""``--add-noqa``: suppress today's findings in place, as ruff does.

The directive goes on the first line of the finding's statement, which is where the engine
looks for it too.  Existing ``# noqa: CODES`` comments are extended, never duplicated; a bare
``# noqa`` is left alone.  Every edited file is re-parsed and must give the same syntax tree,
so a directive can never break the code (a line that ends inside a string or with a
backslash cannot take a comment; such findings are counted as skipped).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from .model import Finding
from .source import SourceError, decode_python

_NOQA = re.compile(r"#\s*noqa(?P<colon>:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)


@dataclass
class NoqaResult:
    added: int = 0
    files: int = 0
    skipped: list[str] = field(default_factory=list)  # "path:line: why"
    edited: list[str] = field(default_factory=list)  # display paths of the files written


def statement_lines(tree: ast.Module) -> list[tuple[int, int]]:
    """(first line, last line) of every statement; a decorated one starts at ``def``/``class``,
    where the engine looks (a finding in a decorator is on its own line, which works too)."""
    return [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
    ]


def first_line_of_statement(spans: list[tuple[int, int]], line: int) -> int:
    """The first line of the innermost statement that contains ``line``."""
    best: tuple[int, int] | None = None
    for first, last in spans:
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, last)
    return best[0] if best else line


def _comment_free_ends(text: str) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """Per line: where its comment starts and its text; and the lines a comment cannot end."""
    comments: dict[int, tuple[int, str]] = {}
    blocked: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.start[1], tok.string)
        elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            blocked.update(range(tok.start[0], tok.end[0]))  # inside a multi-line string
    return comments, blocked


def _with_codes(comment: str, codes: list[str]) -> str | None:
    """``comment`` with ``codes`` added to its noqa directive; None when nothing changes."""
    m = _NOQA.search(comment)
    if m is None:
        return f"{comment}  # noqa: {', '.join(codes)}"
    if m.group("codes") is None:
        return None  # a bare noqa already covers everything
    have = [c.upper() for c in re.split(r"[\s,]+", m.group("codes")) if c]
    missing = [c for c in codes if not any(c.startswith(h) for h in have)]
    if not missing:
        return None
    new = f"# noqa: {', '.join(have + missing)}"
    return comment[: m.start()] + new + comment[m.end() :]


def add_to_text(text: str, wanted: dict[int, list[str]]) -> tuple[str, int, list[int]]:
    """Add ``# noqa`` codes to lines of ``text``; returns (text, directives added, skipped lines)."""
    lines = io.StringIO(text, newline="").readlines()  # the tokenizer's idea of a line
    comments, blocked = _comment_free_ends(text)
    added = 0
    skipped: list[int] = []
    for line_no, codes in sorted(wanted.items()):
        if not 1 <= line_no <= len(lines):
            skipped.append(line_no)
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        if line_no in comments:
            start, comment = comments[line_no]
            new_comment = _with_codes(comment, codes)
            if new_comment is None:
                continue
            body = body[:start] + new_comment
        elif line_no in blocked or body.rstrip().endswith("\\"):
            skipped.append(line_no)
            continue
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(codes)}"
        lines[line_no - 1] = body + ending
        added += 1
    return "".join(lines), added, skipped


def _codes_by_line(findings: list[Finding], spans: list[tuple[int, int]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for f in findings:
        line = first_line_of_statement(spans, f.line)
        if f.rule not in out.setdefault(line, []):
            out[line].append(f.rule)
    return {line: sorted(codes) for line, codes in out.items()}


def add_noqa(findings: list[Finding], files: dict[str, Path]) -> NoqaResult:
    """Edit each file behind ``findings`` (display path -> real path) in place."""
    result = NoqaResult()
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    for display, fs in sorted(by_path.items()):
        path = files.get(display)
        if path is None or path.suffix == ".ipynb":
            result.skipped += [f"{display}: notebooks are not edited by --add-noqa"] if path else []
            continue
        try:
            raw = path.read_bytes()
            text = decode_python(raw)
            tree = ast.parse(text)
        except (OSError, SourceError, SyntaxError, ValueError) as exc:
            result.skipped.append(f"{display}: cannot edit: {exc}")
            continue
        new_text, added, skipped = add_to_text(text, _codes_by_line(fs, statement_lines(tree)))
        result.skipped += [f"{display}:{n}: this line cannot take a comment" for n in skipped]
        if not added:
            continue
        try:
            same = ast.dump(ast.parse(new_text)) == ast.dump(tree)
        except SyntaxError:
            same = False
        if not same:  # never write a file whose meaning changed
            result.skipped.append(f"{display}: the edit would change the code; left unchanged")
            continue
        _write(path, raw, new_text)
        result.added += added
        result.files += 1
        result.edited.append(display)
    return result


def _write(path: Path, raw: bytes, text: str) -> None:
    """Write back with the file's own encoding declaration, BOM and line endings kept."""
    import codecs

    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    bom = codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    path.write_bytes(bom + text.encode(encoding))
