"""Lint a whole tree as one project, in rounds, with a cache that stays correct.

Round 0 lints every file on its own and collects its summary and the project facts it asked
about (all unknown then).  The summaries are merged into a :class:`ProjectIndex`; a file is
linted again only when a fact it asked about is now different, and that repeats (a helper's
parameter becomes known once its caller has been re-linted) for at most ``MAX_ROUNDS``.
Rounds are synchronous, so the output does not depend on ``--jobs``.

Cache: a file's round-0 entry is keyed by its content; later entries by its content and
the digests of the facts it asked about, so editing ``model.py`` re-lints ``train.py``
and nothing else.  A warm run parses nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import stages
from .analysis.project import ModuleSummary, ProjectIndex, from_jsonable, module_name, to_jsonable
from .cache import Cache, key
from .discovery import Candidate
from .engine import LintOptions, ProjectUnit, UnitOutcome, lint_unit
from .model import FileError, FileResult, Finding
from .source import SourceError, read_source

MAX_ROUNDS = 3
MAX_VARIANTS = 4  # cached results per file content (one per set of facts seen)


@dataclass
class Job:
    options: LintOptions
    fingerprint: str
    cache_dir: Path | None


@dataclass
class _State:
    outcome: UnitOutcome
    unit: ProjectUnit
    deps: dict[str, str] = field(default_factory=dict)


def _serialise(result: FileResult) -> dict:
    return {
        "findings": [
            dict(f.to_json(), source_line=f.source_line, probe=f.probe) for f in result.findings
        ],
        "errors": [e.to_json() for e in result.errors],
        "skipped": result.skipped,
    }


def _deserialise(path: str, data: dict) -> FileResult:
    findings = [Finding.from_json(dict(raw, path=path)) for raw in data["findings"]]
    errors = [FileError(path, e["message"]) for e in data["errors"]]
    return FileResult(path, findings, errors, data.get("skipped", False))


def _encode(outcome: UnitOutcome) -> dict:
    return dict(
        _serialise(outcome.result),
        summary=to_jsonable(outcome.summary) if outcome.summary else None,
        deps=outcome.deps,
    )


def _decode(path: str, data: dict) -> UnitOutcome:
    summary = from_jsonable(data["summary"]) if data.get("summary") else None
    if summary is not None and not isinstance(summary, ModuleSummary):
        raise ValueError("not a summary")
    deps = data.get("deps") or {}
    if not isinstance(deps, dict):
        raise ValueError("bad deps")
    return UnitOutcome(_deserialise(path, data), summary, dict(deps))


def _cacheable(outcome: UnitOutcome) -> bool:
    return not any(e.message.startswith("internal error") for e in outcome.result.errors)


def lint_file(candidate: Candidate, job: Job, unit: ProjectUnit | None) -> UnitOutcome:
    """One file in one round: from the cache when its content and facts match; never raises."""
    try:
        with stages.stage("read"):
            source = read_source(candidate.path, candidate.display, candidate.data)
    except SourceError as exc:
        return UnitOutcome(
            FileResult(candidate.display, errors=[FileError(candidate.display, str(exc))])
        )
    except Exception as exc:  # anything else the OS throws at us
        return UnitOutcome(
            FileResult(
                candidate.display, errors=[FileError(candidate.display, f"cannot read: {exc}")]
            )
        )
    cache = Cache(job.cache_dir, "static")
    probes = "probes" if job.options.slice_probes else ""
    index = unit.index if unit is not None else None
    stage = "alone" if unit is None else ("first" if index is None else "facts")
    with stages.stage("cache"):
        k = key(job.fingerprint, probes, unit.module if unit else "", stage, source.raw)
        cached = cache.get(k)
    variants: list = []
    if isinstance(cached, list):
        variants = cached
    elif cached is not None and index is None:
        variants = [cached]
    for data in variants:
        try:
            deps = data.get("deps") or {}
            if index is not None and any(index.digest(d) != v for d, v in deps.items()):
                continue
            return _decode(candidate.display, data)
        except (AttributeError, KeyError, TypeError, ValueError):
            continue  # a malformed entry is a miss
    try:
        outcome = lint_unit(source, job.options, unit)
        if not outcome.result.skipped:  # problems the reader noted (a notebook's bad cell)
            outcome.result.errors += [FileError(candidate.display, p) for p in source.problems]
    except Exception as exc:  # an internal error loses this file only, never the run
        return UnitOutcome(
            FileResult(
                candidate.display,
                errors=[
                    FileError(candidate.display, f"internal error: {type(exc).__name__}: {exc}")
                ],
            )
        )
    if cache.dir is not None and _cacheable(outcome):
        with stages.stage("cache"):
            _store(cache, k, outcome, variants, index is None)
    return outcome


def _store(cache: Cache, k: str, outcome: UnitOutcome, variants: list, alone: bool) -> None:
    """A first-round entry is the outcome; a later one keeps a few variants (sets of facts)."""
    if alone:
        cache.put(k, _encode(outcome))
    else:
        cache.put(k, [_encode(outcome), *variants[: MAX_VARIANTS - 1]])


_ROUND_INDEX: ProjectIndex | None = None  # the index of the current round, in each worker


def _set_index(index: ProjectIndex | None) -> None:
    global _ROUND_INDEX
    _ROUND_INDEX = index


def _lint_chunk(args: tuple[list[tuple[Candidate, str, bool]], Job]) -> list[UnitOutcome]:
    items, job = args
    if _ALONE:
        return [lint_file(c, job, None) for c, _, _ in items]
    return [lint_file(c, job, ProjectUnit(m, p, _ROUND_INDEX)) for c, m, p in items]


def _lint_chunk_timed(
    args: tuple[list[tuple[Candidate, str, bool]], Job],
) -> tuple[list[UnitOutcome], dict[str, tuple[float, float]]]:
    """:func:`_lint_chunk` in a worker, with the worker's stage times (empty unless profiling)."""
    outcomes = _lint_chunk(args)
    return outcomes, stages.take() if stages.enabled() else {}


# Each file on its own, no project index: only for measuring what the index costs
# (benchmarks/run.py); not a user setting.
_ALONE = bool(os.environ.get("TFNUMLINT_BENCH_NO_PROJECT"))


def _run_round(
    items: list[tuple[Candidate, str, bool]],
    job: Job,
    index: ProjectIndex | None,
    jobs: int,
    tick: Callable[[int], None] | None = None,
) -> list[UnitOutcome]:
    """Outcomes in the order of ``items``, whatever ``jobs`` is; ``tick(done)`` as they come."""
    tick = tick or (lambda _done: None)
    if jobs <= 1 or len(items) < 4:
        _set_index(index)
        outcomes: list[UnitOutcome] = []
        for item in items:
            outcomes.extend(_lint_chunk(([item], job)))
            tick(len(outcomes))
        return outcomes
    n = min(jobs * 8, len(items))  # interleaved chunks balance big and small files
    chunks = [items[i::n] for i in range(n)]
    from concurrent.futures import ProcessPoolExecutor  # ~30 ms of imports a one-file run skips

    out: list[UnitOutcome | None] = [None] * len(items)
    done = 0
    with ProcessPoolExecutor(max_workers=jobs, initializer=_set_index, initargs=(index,)) as pool:
        for i, (chunk_out, times) in enumerate(
            pool.map(_lint_chunk_timed, [(c, job) for c in chunks])
        ):
            stages.merge(times)
            for j, o in enumerate(chunk_out):
                out[i + j * n] = o
            done += len(chunk_out)
            tick(done)
    return [o for o in out if o is not None]


def _module_names(candidates: list[Candidate]) -> list[tuple[str, bool]]:
    """Each file's module name; a clash (two scripts named train.py) keeps the first."""
    names: list[tuple[str, bool]] = []
    seen: set[str] = set()
    for i, c in enumerate(candidates):
        try:
            name, is_package = module_name(Path(c.path))
        except OSError:
            name, is_package = Path(str(c.path)).stem, False
        if name in seen:
            name = f"{name}#{i}"  # not importable by that name: stays out of resolution
        seen.add(name)
        names.append((name, is_package))
    return names


def _index(states: list[_State]) -> ProjectIndex:
    return ProjectIndex(
        {s.outcome.summary.module: s.outcome.summary for s in states if s.outcome.summary}
    )


@dataclass
class ProjectRun:
    """What linting a tree produced: each file's result, and where each file sits in the
    project with the final index (``--fix`` re-lints a file with the facts lint had)."""

    results: list[FileResult]
    units: dict[str, ProjectUnit]  # by display path


def analyse_project(
    candidates: list[Candidate],
    job: Job,
    jobs: int,
    on_round: Callable[[int, int], None] | None = None,
    tick: Callable[[int], None] | None = None,
) -> list[FileResult]:
    """Every file's result, in the order of ``candidates``; ``tick(done)`` counts the first
    round (every file once), ``on_round(n, files)`` announces each later one."""
    return run_project(candidates, job, jobs, on_round, tick).results


def run_project(
    candidates: list[Candidate],
    job: Job,
    jobs: int,
    on_round: Callable[[int, int], None] | None = None,
    tick: Callable[[int], None] | None = None,
) -> ProjectRun:
    """:func:`analyse_project`, with each file's place in the project."""
    names = _module_names(candidates)
    items = [(c, m, p) for c, (m, p) in zip(candidates, names, strict=True)]
    first = _run_round(items, job, None, jobs, tick)
    states = [
        _State(o, ProjectUnit(m, p), o.deps) for o, (_, m, p) in zip(first, items, strict=True)
    ]
    for round_no in range(1, MAX_ROUNDS + 1):
        with stages.stage("project index"):
            index = _index(states)
            stale = [
                i
                for i, s in enumerate(states)
                if any(index.digest(k) != d for k, d in s.deps.items())
            ]
        if not stale:
            break
        if on_round is not None:
            on_round(round_no, len(stale))
        outcomes = _run_round([items[i] for i in stale], job, index, jobs)
        for i, o in zip(stale, outcomes, strict=True):
            states[i].outcome = o
            states[i].deps = o.deps
    with stages.stage("project index"):
        final = _index(states)
    units = {c.display: ProjectUnit(m, p, final) for c, m, p in items}
    return ProjectRun([s.outcome.result for s in states], units)
