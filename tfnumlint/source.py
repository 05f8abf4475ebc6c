"""Turn a file on disk into analysable text: PEP 263 decoding, NUL checks, notebooks.

Every failure is a :class:`SourceError` with a plain reason that the run reports and moves on.
"""

from __future__ import annotations

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


def notebook_source(raw: bytes) -> tuple[str, dict[int, tuple[int, int]]]:
    """Concatenate a notebook's code cells, so that names flow from cell to cell."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"not a valid notebook (JSON error: {exc})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise SourceError("not a valid notebook: no 'cells' list")
    lines: list[str] = []
    cell_map: dict[int, tuple[int, int]] = {}
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            raise SourceError(f"not a valid notebook: cell {number} has no source text")
        for i, line in enumerate(src.splitlines(), 1):
            if _MAGIC.match(line):
                line = "# " + line  # IPython magics and shell escapes are not Python
            lines.append(line)
            cell_map[len(lines)] = (number, i)
        lines.append("")  # keep cells apart
    return "\n".join(lines) + "\n", cell_map


def read_source(path: Path, display: str) -> Source:
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
    if path.suffix == ".ipynb":
        text, cell_map = notebook_source(raw)
        return Source(display, text, raw, cell_map)
    return Source(display, decode_python(raw), raw)


def might_use_tensorflow(text: str) -> bool:
    """Cheap pre-parse filter; the parse then confirms with the import statements."""
    return "tensorflow" in text or "keras" in text
