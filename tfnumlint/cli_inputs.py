"""What a run analyses: the named paths (or stdin) discovered into candidates, with the project
root that config, excludes and fingerprints are relative to.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .cli_args import (
    STDIN,
    pattern_list,
)
from .config import Config, load_config
from .discovery import (
    DEFAULT_EXCLUDES,
    Candidate,
    discover,
    exclude_spec,
    excluded_explicitly,
)
from .model import MISSING_PATH, FileError
from .source import Source, SourceError, read_source


@dataclass
class Inputs:
    """What to analyse, and where the project (config, excludes, fingerprints) is rooted."""

    candidates: list[Candidate]
    config: Config
    root: Path
    stdin: Source | None = None
    missing: list[FileError] = field(default_factory=list)  # named paths that do not exist


def _project_root(config: Config, cwd: Path) -> Path:
    """The directory fingerprint paths are relative to: the config's, else the repository's."""
    if config.path is not None:
        return config.root
    for d in [cwd, *cwd.parents]:
        if (d / ".git").exists():
            return d
    return cwd


def gather_inputs(args: argparse.Namespace, cwd: Path) -> Inputs:
    stdin_name = args.stdin_filename
    config_start = cwd
    if stdin_name:
        config_start = (cwd / stdin_name).parent.resolve()
        if not config_start.is_dir():
            config_start = cwd
    config = load_config(args.config, config_start)
    if args.exclude is not None:
        config.exclude = pattern_list(args.exclude)
    if args.extend_exclude is not None:
        config.extend_exclude = [*config.extend_exclude, *pattern_list(args.extend_exclude)]
    force = args.force_exclude or config.force_exclude
    root = _project_root(config, cwd)
    if args.paths == [STDIN]:
        return _stdin_inputs(stdin_name, cwd, config, root, force)
    missing: list[str] = []
    candidates = discover(
        args.paths, cwd, config.exclude, config.extend_exclude, config.root, force, missing
    )
    errors = [FileError(path, MISSING_PATH) for path in missing]
    return Inputs(candidates, config, root, missing=errors)


def _stdin_inputs(name: str | None, cwd: Path, config: Config, root: Path, force: bool) -> Inputs:
    """Standard input as one candidate named ``name``; none when --force-exclude excludes it."""
    data = sys.stdin.buffer.read()  # read even when excluded: the writer must not see a broken pipe
    path = cwd / (name or "stdin.py")
    patterns = (DEFAULT_EXCLUDES if config.exclude is None else config.exclude) + list(
        config.extend_exclude
    )
    if name and force and excluded_explicitly(path, exclude_spec(patterns), config.root):
        return Inputs([], config, root)
    display = name or "-"
    try:
        source = read_source(path, display, data)
    except SourceError:
        source = None  # reported by the analysis, like any unreadable file
    return Inputs([Candidate(path, display, data)], config, root, stdin=source)


def source_reader(inputs: Inputs):
    by_display = {c.display: c for c in inputs.candidates}

    def source_of(display: str) -> Source | None:
        if inputs.stdin is not None and display == inputs.stdin.path:
            return inputs.stdin
        cand = by_display.get(display)
        if cand is None:
            return None
        try:
            return read_source(cand.path, display)
        except (SourceError, OSError):
            return None

    return source_of
