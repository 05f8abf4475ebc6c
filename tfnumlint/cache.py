"""A content-addressed on-disk cache, safe under concurrent runs.

Entries are JSON files named by a SHA-256 key; writes go to a temporary file that is
atomically renamed into place, so a reader sees either nothing or a whole entry.  A corrupt,
truncated or unreadable entry is a miss; an unwritable directory just disables writes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from . import __version__


def default_dir() -> Path:
    env = os.environ.get("TFNUMLINT_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tfnumlint"))


@functools.cache
def build_id() -> str:
    """The tool version plus a digest of its own sources and rule docs, so an editable
    install (same version, new code) never serves results computed by older code."""
    h = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    files = sorted([*package.rglob("*.py"), *ruledocs_dir().glob("*.md")])
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def ruledocs_dir() -> Path:
    from .ruledocs import docs_dir

    return docs_dir()


def key(*parts: str | bytes) -> str:
    h = hashlib.sha256(build_id().encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class Cache:
    def __init__(self, directory: Path | None, namespace: str) -> None:
        self.dir = (directory / namespace) if directory is not None else None

    def _path(self, k: str) -> Path:
        assert self.dir is not None
        return self.dir / k[:2] / f"{k}.json"

    def get(self, k: str) -> Any | None:
        if self.dir is None:
            return None
        try:
            with open(self._path(k), encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != k:
            return None
        return entry.get("value")

    def put(self, k: str, value: Any) -> None:
        if self.dir is None:
            return
        target = self._path(k)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"key": k, "value": value}, fh)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except (OSError, TypeError, ValueError):
            return  # read-only or full disk: caching is an optimisation, never an error
