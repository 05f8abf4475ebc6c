"""Run the static pass over many files: cache lookups, process parallelism, determinism."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .cache import Cache, key
from .config import Config, per_file_ignored
from .discovery import Candidate
from .engine import LintOptions, lint_source
from .model import FileError, FileResult, Finding
from .progress import Progress
from .source import SourceError, read_source


@dataclass
class Job:
    options: LintOptions
    fingerprint: str
    cache_dir: Path | None


def _serialise(result: FileResult) -> dict:
    return {
        "findings": [
            dict(f.to_json(), source_line=f.source_line, probe=f.probe) for f in result.findings
        ],
        "errors": [e.to_json() for e in result.errors],
        "skipped": result.skipped,
    }


def _deserialise(path: str, data: dict) -> FileResult:
    findings = []
    for raw in data["findings"]:
        raw = dict(raw, path=path)
        findings.append(Finding.from_json(raw))
    errors = [FileError(path, e["message"]) for e in data["errors"]]
    return FileResult(path, findings, errors, data.get("skipped", False))


def analyse_file(candidate: Candidate, job: Job) -> FileResult:
    """Read, look up the cache, lint; never raises."""
    try:
        source = read_source(candidate.path, candidate.display, candidate.data)
    except SourceError as exc:
        return FileResult(candidate.display, errors=[FileError(candidate.display, str(exc))])
    except Exception as exc:  # anything else the OS throws at us
        return FileResult(
            candidate.display, errors=[FileError(candidate.display, f"cannot read: {exc}")]
        )
    cache = Cache(job.cache_dir, "static")
    k = key(job.fingerprint, "probes" if job.options.slice_probes else "", source.raw)
    cached = cache.get(k)
    if cached is not None:
        try:
            return _deserialise(candidate.display, cached)
        except (KeyError, TypeError, ValueError):
            pass  # a malformed entry is a miss
    try:
        result = lint_source(source, job.options)
        if not result.skipped:
            result.errors += [FileError(candidate.display, p) for p in source.problems]
    except Exception as exc:  # an internal error loses this file only, never the run
        return FileResult(
            candidate.display,
            errors=[FileError(candidate.display, f"internal error: {type(exc).__name__}: {exc}")],
        )
    if not any(e.message.startswith("internal error") for e in result.errors):
        cache.put(k, _serialise(result))
    return result


def _analyse_chunk(args: tuple[list[Candidate], Job]) -> list[FileResult]:
    candidates, job = args
    return [analyse_file(c, job) for c in candidates]


def analyse(
    candidates: list[Candidate], job: Job, jobs: int, progress: Progress | None = None
) -> list[FileResult]:
    """Results in the order of ``candidates``, whatever ``jobs`` is."""
    tick = progress.update if progress is not None else lambda _done: None
    if jobs <= 1 or len(candidates) < 4:
        out = []
        for c in candidates:
            out.append(analyse_file(c, job))
            tick(len(out))
        return out
    # Interleaved chunks balance big and small files; results are put back in input order.
    n = min(jobs * 8, len(candidates))
    chunks = [candidates[i::n] for i in range(n)]
    from concurrent.futures import ProcessPoolExecutor  # ~30 ms of imports a one-file run skips

    results: list[FileResult | None] = [None] * len(candidates)
    done = 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, chunk_results in enumerate(pool.map(_analyse_chunk, [(c, job) for c in chunks])):
            for j, r in enumerate(chunk_results):
                results[i + j * n] = r
            done += len(chunk_results)
            tick(done)
    return [r for r in results if r is not None]


def apply_per_file_ignores(results: list[FileResult], config: Config) -> None:
    if not config.per_file_ignores:
        return
    for r in results:
        r.findings = [f for f in r.findings if not per_file_ignored(config, f.path, f.rule)]


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
