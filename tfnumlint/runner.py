"""Run the static pass over many files: the project rounds, caching and parallelism live in
:mod:`tfnumlint.incremental`; per-file ignores and the default worker count here."""

from __future__ import annotations

import os

from .config import Config, per_file_ignored
from .discovery import Candidate
from .engine import ProjectUnit
from .incremental import Job, ProjectRun, lint_file, run_project
from .model import FileResult


def analyse_file(candidate: Candidate, job: Job) -> FileResult:
    """One file on its own (no project index): read, look up the cache, lint; never raises."""
    return lint_file(candidate, job, ProjectUnit(candidate.display, False)).result


def analyse(candidates: list[Candidate], job: Job, jobs: int, progress=None) -> list[FileResult]:
    """Results in the order of ``candidates``, whatever ``jobs`` is: the tree is linted as one
    project, with provenance across its modules.  ``progress.update(done)`` is called as files
    finish their first round."""
    return analyse_run(candidates, job, jobs, progress).results


def analyse_run(
    candidates: list[Candidate], job: Job, jobs: int, progress=None, keep_fixable: bool = False
) -> ProjectRun:
    """:func:`analyse`, with each file's place in the project (for ``--fix``); with
    ``keep_fixable``, the trees of the files with a fixable finding too (for the fix
    descriptions; the caller releases them)."""
    tick = progress.update if progress is not None else None
    return run_project(candidates, job, jobs, tick=tick, keep_fixable=keep_fixable)


def apply_per_file_ignores(results: list[FileResult], config: Config) -> None:
    if not config.per_file_ignores:
        return
    for r in results:
        r.findings = [f for f in r.findings if not per_file_ignored(config, f.path, f.rule)]


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


__all__ = [
    "Job",
    "ProjectRun",
    "analyse",
    "analyse_file",
    "analyse_run",
    "apply_per_file_ignores",
    "default_jobs",
]
