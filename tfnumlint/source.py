"""Turn a file on disk into analysable text: PEP 263 decoding, NUL checks, notebooks.

Every failure is a :class:`SourceError` with a plain reason that the run reports and moves on.
"""

from __future__ import annotations

import ast
import io
import json
import re
import stat
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

# Files over this size are not analysed (generated blobs); reported as errors.
MAX_BYTES = 20 * 1024 * 1024


class SourceError(Exception):
    """A file that cannot be analysed, with the reason users see."""


@dataclass
class Source:
    path: str
    text: str
    raw: bytes
    # notebooks: line in ``text`` (1-based) -> (cell number, line in cell); empty for .py
    cell_map: dict[int, tuple[int, int]] = field(default_factory=dict)
    # parts left out of the analysis (a notebook cell that does not parse), with the reason
    problems: list[str] = field(default_factory=list)
    file: str = ""  # where it was read from (``path`` is as the user named it); "" for stdin

    @property
    def is_notebook(self) -> bool:
        return bool(self.cell_map)

    def locate(self, line: int) -> tuple[int | None, int]:
        """(cell, line) as the user sees it."""
        if not self.cell_map:
            return None, line
        if line in self.cell_map:
            return self.cell_map[line]
        # a line between cells or past the end (a parse error at end of input): the last line before it
        before = [n for n in self.cell_map if n < line]
        return self.cell_map[max(before)] if before else (None, line)


def decode_python(raw: bytes) -> str:
    if b"\x00" in raw:
        raise SourceError("file contains NUL bytes; not a Python source file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        raise SourceError(
            f"bad coding declaration: {exc.msg if hasattr(exc, 'msg') else exc}"
        ) from None
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {_short(exc)}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _short(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
    return str(exc)


_MAGIC = re.compile(r"^\s*[%!?]")


CELLS_ANALYSED = "; the other cells were analysed"


def notebook_source(raw: bytes) -> tuple[str, dict[int, tuple[int, int]], list[str]]:
    """Concatenate a notebook's code cells, so that names flow from cell to cell.

    A cell that does not parse on its own is left out and named in the returned problems, so
    that one bad cell does not cost the analysis of the others."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"not a valid notebook (JSON error: {exc})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise SourceError("not a valid notebook: no 'cells' list")
    lines: list[str] = []
    cell_map: dict[int, tuple[int, int]] = {}
    problems: list[str] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            raise SourceError(f"not a valid notebook: cell {number} has no source text")
        if _foreign_cell(src):
            continue
        cell_lines = [
            "# " + line if _MAGIC.match(line) else line  # IPython magics are not Python
            for line in src.splitlines()
        ]
        error = _cell_syntax_error(cell_lines)
        if error is not None:
            problems.append(f"cell {number}: {error}{CELLS_ANALYSED}")
            continue
        for i, line in enumerate(cell_lines, 1):
            lines.append(line)
            cell_map[len(lines)] = (number, i)
        lines.append("")  # keep cells apart
    return "\n".join(lines) + "\n", cell_map, problems


# Cell magics whose body is still Python; any other (%%bash, %%html, %%writefile, ...) is not.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "python", "python3"}


def _foreign_cell(src: str) -> bool:
    """A cell whose body another language owns, such as ``%%bash``: not analysed, not an error."""
    first = next((line.strip() for line in src.splitlines() if line.strip()), "")
    if not first.startswith("%%"):
        return False
    name = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
    return name not in _PYTHON_CELL_MAGICS


def _cell_syntax_error(cell_lines: list[str]) -> str | None:
    """Why one cell does not parse (the stdlib parser only parses: nothing runs), or None."""
    text = "\n".join(cell_lines) + "\n"
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return describe_syntax_error(text, exc)
    except (ValueError, RecursionError, MemoryError):
        return None  # let the main parse report it
    return None


# Python 2 constructs, recognised on the line the Python 3 parser rejects.
_PY2_MESSAGES = {
    "Missing parentheses in call to 'print'": "print statement",
    "Missing parentheses in call to 'exec'": "exec statement",
    "multiple exception types must be parenthesized": "'except X, e:'",
    "leading zeros in decimal integer literals": "octal literal without 0o",
}
_STRINGS_AND_COMMENT = re.compile(r"(\"[^\"]*\"|'[^']*'|#.*$)")
_PY2_PATTERNS = [
    (re.compile(r"^\s*print(\s+[\"'\w]|\s*>>)"), "print statement"),
    (re.compile(r"^\s*exec\s+[\"'\w]"), "exec statement"),
    (re.compile(r"^\s*except\s+[\w.]+\s*,\s*\w+\s*:"), "'except X, e:'"),
    (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "'raise E, message'"),
    (re.compile(r"`"), "backquote repr"),
    (re.compile(r"<>"), "'<>' operator"),
    (re.compile(r"\b\d+[lL]\b"), "long integer literal"),
    (re.compile(r"\bur[\"']", re.I), "ur'' string prefix"),
]


def python2_construct(message: str, line_text: str) -> str | None:
    """The Python 2 construct a syntax error points at, if it is one."""
    for prefix, what in _PY2_MESSAGES.items():
        if message.startswith(prefix):
            return what
    code = _STRINGS_AND_COMMENT.sub('""', line_text)  # a `<>` inside a string proves nothing
    for pattern, what in _PY2_PATTERNS:
        if pattern.search(code if what != "ur'' string prefix" else line_text):
            return what
    return None


def describe_syntax_error(text: str, exc: SyntaxError, where: str | None = None) -> str:
    """``syntax error at line N, column C: ...``, or the Python 2 construct at that line."""
    line = exc.lineno or 1
    lines = text.splitlines()
    line_text = lines[line - 1] if 0 < line <= len(lines) else ""
    where = where or f"line {line}" + (f", column {exc.offset}" if exc.offset else "")
    message = exc.msg or "invalid syntax"
    construct = python2_construct(message, line_text)
    if construct is not None:
        return (
            f"Python 2 syntax at {where} ({construct}): tfnumlint analyses Python 3 code; "
            "port the file (e.g. with 2to3) or exclude it"
        )
    return f"syntax error at {where}: {message}"


def syntax_error_message(source: Source, fallback: str) -> str:
    """A parse failure described at the line Python itself reports (libcst's can be off by one).

    ``fallback`` is used when the stdlib parser accepts what libcst rejected."""
    try:
        ast.parse(source.text)
    except SyntaxError as exc:
        cell, line = source.locate(exc.lineno or 1)
        where = f"cell {cell}, line {line}" if cell else None
        return describe_syntax_error(source.text, exc, where)
    except (ValueError, RecursionError, MemoryError):
        pass
    return fallback


def parse_python(source: Source) -> tuple[ast.Module | None, str | None]:
    """The stdlib parse of ``source``, or why it fails: a file with no TensorFlow in it is not
    analysed, but a syntax error in it is still the user's to know."""
    try:
        return ast.parse(source.text), None
    except SyntaxError as exc:
        cell, line = source.locate(exc.lineno or 1)
        where = f"cell {cell}, line {line}" if cell else None
        return None, describe_syntax_error(source.text, exc, where)
    except (RecursionError, MemoryError):
        return None, "cannot parse: nested too deeply for the parser"
    except ValueError as exc:  # null bytes (Python < 3.12)
        return None, f"cannot parse: {exc}"


def read_source(path: Path, display: str, data: bytes | None = None) -> Source:
    """The file at ``path`` (or ``data``, read from standard input, named ``display``)."""
    if data is not None:
        return _from_bytes(data, path, display)
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise SourceError("is a directory")
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block the read or never end
            raise SourceError("not a regular file")
        size = st.st_size
        if size > MAX_BYTES:
            raise SourceError(
                f"file is {size // (1024 * 1024)} MiB, over the {MAX_BYTES // (1024 * 1024)} MiB limit"
            )
        raw = path.read_bytes()
    except SourceError:
        raise
    except PermissionError:
        raise SourceError("permission denied") from None
    except FileNotFoundError:
        raise SourceError("no such file (a dangling symlink?)") from None
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    source = _from_bytes(raw, path, display)
    source.file = str(path.absolute())
    return source


def _from_bytes(raw: bytes, path: Path, display: str) -> Source:
    if path.suffix == ".ipynb":
        text, cell_map, problems = notebook_source(raw)
        return Source(display, text, raw, cell_map, problems)
    return Source(display, decode_python(raw), raw)


def might_use_tensorflow(text: str) -> bool:
    """Cheap pre-parse filter; the parse then confirms with the import statements."""
    return "tensorflow" in text or "keras" in text
