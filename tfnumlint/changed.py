"""``--diff-base REV``: the lines added or changed since a git revision, uncommitted work included."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .config import ConfigError
from .model import Finding

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")
WHOLE_FILE = None  # marker: every line of the file counts as changed


@dataclass
class ChangedLines:
    rev: str
    # absolute path -> changed line numbers, or None when the whole file is new or a notebook
    files: dict[Path, set[int] | None] = field(default_factory=dict)

    def contains(self, finding: Finding) -> bool:
        path = Path(finding.path).resolve()
        if path not in self.files:
            return False
        lines = self.files[path]
        if lines is None:
            return True
        return any(n in lines for n in range(finding.line, finding.end_line + 1))


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except FileNotFoundError:
        raise ConfigError("--diff-base needs git, which is not installed") from None
    if proc.returncode != 0:
        raise _GitFailed(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
    return proc.stdout


class _GitFailed(Exception):
    pass


def changed_lines(rev: str, cwd: Path) -> ChangedLines:
    """Lines of the working tree that differ from ``rev`` (staged, unstaged and untracked)."""
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    except _GitFailed:
        raise ConfigError(
            f"--diff-base needs a git repository, and {cwd} is not inside one"
        ) from None
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
    except _GitFailed:
        raise ConfigError(
            f"--diff-base: unknown git revision '{rev}' (in a shallow CI checkout, fetch it "
            "first, e.g. actions/checkout with fetch-depth: 0)"
        ) from None
    out = ChangedLines(rev)
    diff = _git(
        [
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--unified=0",
            "-M",
            rev,
            "--",
        ],
        top,
    )
    current: Path | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip('"')
            current = None if name == "/dev/null" else (top / name[2:]).resolve()
            if current is not None:
                out.files[current] = None if current.suffix == ".ipynb" else set()
            continue
        m = _HUNK.match(line)
        if m and current is not None and out.files[current] is not None:
            start = int(m["start"])
            count = int(m["count"]) if m["count"] is not None else 1
            out.files[current].update(range(start, start + count))  # type: ignore[union-attr]
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
    for name in filter(None, untracked.split("\0")):
        out.files[(top / name).resolve()] = WHOLE_FILE
    return out
