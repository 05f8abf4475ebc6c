"""Which files to analyse: walk directories, honour .gitignore and excludes, never loop."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily: a run on explicit files never needs it (~45 ms)
    import pathspec

SUFFIXES = (".py", ".pyi", ".ipynb")
# saved models (linted through the verification worker, see models.py)
MODEL_SUFFIXES = (".keras", ".h5", ".hdf5", ".pb", ".pbtxt")
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
DEFAULT_EXCLUDES = [
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    "site-packages",
    "dist-packages",
    "build",
    "dist",
    "node_modules",
    ".eggs",
    "*.egg-info",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
    "__pypackages__",
]


@dataclass(frozen=True)
class Candidate:
    path: Path
    display: str  # as the user named it (relative when under the cwd)
    data: bytes | None = None  # the content, when it comes from standard input


def is_saved_model(path: Path) -> bool:
    """A SavedModel directory: one input, never walked into (its variables/ are data)."""
    return path.is_dir() and any((path / name).is_file() for name in SAVED_MODEL_FILES)


class MissingPath(Exception):
    pass


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd)) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def _gitignore_spec(directory: Path) -> pathspec.PathSpec | None:
    ignore = directory / ".gitignore"
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ancestor_specs(start: Path) -> list[tuple[Path, pathspec.PathSpec]]:
    """.gitignore files from the repository root down to ``start`` (exclusive)."""
    specs: list[tuple[Path, pathspec.PathSpec]] = []
    for d in start.parents:
        spec = _gitignore_spec(d)
        if spec is not None:
            specs.append((d, spec))
        if (d / ".git").exists():
            break
    return list(reversed(specs))


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.PathSpec]]) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + ("/" if is_dir else "")):
            return True
    return False


def discover(
    paths: list[str],
    cwd: Path,
    exclude: list[str] | None = None,
    extend_exclude: list[str] | None = None,
    exclude_root: Path | None = None,
    force_exclude: bool = False,
    missing: list[str] | None = None,
) -> list[Candidate]:
    """Files to lint, sorted and de-duplicated.

    A file named explicitly is always included, unless ``force_exclude`` applies the excludes
    to it too (as ruff's ``--force-exclude`` does; pre-commit names every file).  A path that
    does not exist raises MissingPath, or is appended to ``missing`` when that list is given
    (one bad path must not stop the run)."""
    patterns = (DEFAULT_EXCLUDES if exclude is None else exclude) + list(extend_exclude or [])
    excludes = None
    root = (exclude_root or cwd).resolve()
    out: dict[str, Candidate] = {}
    for raw in paths:
        p = Path(raw)
        full = p if p.is_absolute() else cwd / p
        if not full.exists() and not full.is_symlink():
            if missing is None:
                raise MissingPath(raw)
            missing.append(raw)
            continue
        if force_exclude:
            if excludes is None:
                excludes = exclude_spec(patterns)
            if excluded_explicitly(full, excludes, root):
                continue
        if not full.is_dir() or is_saved_model(full):
            out.setdefault(
                str(full), Candidate(full, _display(p, cwd) if not p.is_absolute() else str(p))
            )
            continue
        if excludes is None:
            excludes = exclude_spec(patterns)
        for cand in _walk(full, p, excludes, root):
            out.setdefault(str(cand.path), cand)
    return sorted(out.values(), key=lambda c: c.display)


def exclude_spec(patterns: list[str]) -> pathspec.PathSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def excluded_explicitly(path: Path, spec: pathspec.PathSpec, root: Path) -> bool:
    """Whether an explicitly named path, or a directory above it, matches an exclude pattern."""
    absolute = Path(os.path.abspath(path))
    try:
        parts = absolute.relative_to(root).parts
    except ValueError:  # outside the project: its own name and its directories' names
        parts = tuple(p for p in absolute.parts if p != absolute.anchor)
        return any(
            spec.match_file(part + ("/" if i < len(parts) - 1 or absolute.is_dir() else ""))
            for i, part in enumerate(parts)
        )
    for i in range(1, len(parts) + 1):
        is_dir = i < len(parts) or absolute.is_dir()
        if spec.match_file(Path(*parts[:i]).as_posix() + ("/" if is_dir else "")):
            return True
    return False


def _excluded(path: Path, is_dir: bool, excludes: pathspec.PathSpec, root: Path) -> bool:
    try:
        rel = path.resolve().relative_to(root).as_posix() if path.is_absolute() else path.as_posix()
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        rel = path.name
    suffix = "/" if is_dir else ""
    return excludes.match_file(rel + suffix) or excludes.match_file(path.name + suffix)


def _walk(top: Path, shown: Path, excludes: pathspec.PathSpec, root: Path):
    base_specs = _ancestor_specs(top.resolve())
    spec_stack: dict[Path, list[tuple[Path, pathspec.PathSpec]]] = {}
    seen_dirs: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False, onerror=None):
        d = Path(dirpath)
        try:
            st = d.stat()
            ident = (st.st_dev, st.st_ino)
        except OSError:
            continue
        if ident in seen_dirs:
            dirnames[:] = []
            continue
        seen_dirs.add(ident)
        parent_specs = spec_stack.get(d.parent, base_specs) if d != top else base_specs
        own = _gitignore_spec(d)
        specs = parent_specs + ([(d, own)] if own is not None else [])
        spec_stack[d] = specs
        if (d / "pyvenv.cfg").exists() and d != top:
            dirnames[:] = []
            continue
        if is_saved_model(d):
            dirnames[:] = []
            if not _excluded(d, True, excludes, root) and not _ignored(d, True, specs):
                rel = d.relative_to(top)
                yield Candidate(d, str(shown / rel) if str(shown) != "." else str(rel))
            continue
        dirnames[:] = sorted(
            n
            for n in dirnames
            if not _excluded(d / n, True, excludes, root)
            and not _ignored(d / n, True, specs)
            and not (d / n / "pyvenv.cfg").exists()
        )
        for name in sorted(filenames):
            if not name.endswith(SUFFIXES) and not name.lower().endswith(MODEL_SUFFIXES):
                continue
            f = d / name
            if _excluded(f, False, excludes, root) or _ignored(f, False, specs):
                continue
            rel = f.relative_to(top)
            yield Candidate(f, str(shown / rel) if str(shown) != "." else str(rel))
