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

from . import collector, stages
from .analysis import project_model
from .analysis.project import ProjectIndex
from .analysis.project_imports import module_name
from .analysis.slicing import program_modules
from .cache import Cache, key
from .discovery import Candidate
from .engine import LintOptions, Parsed, ProjectUnit, UnitOutcome, lint_unit
from .model import FileError, FileResult, Finding
from .source import CELLS_ANALYSED, Source, SourceError, read_source

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
        summary=project_model.dumps(outcome.summary) if outcome.summary else None,
        deps=outcome.deps,
    )


def _decode(path: str, data: dict) -> UnitOutcome:
    summary = project_model.loads(data["summary"]) if data.get("summary") else None
    deps = data.get("deps") or {}
    if not isinstance(deps, dict):
        raise ValueError("bad deps")
    return UnitOutcome(_deserialise(path, data), summary, dict(deps))


def _cacheable(outcome: UnitOutcome) -> bool:
    return not any(e.message.startswith("internal error") for e in outcome.result.errors)


def _problem(problem: str, skipped: bool) -> str:
    """A reader's problem as reported: the other cells of a notebook with no TensorFlow in
    it were read, not analysed."""
    if skipped:
        return problem.replace(CELLS_ANALYSED, "; the notebook does not use TensorFlow")
    return problem


def lint_file(candidate: Candidate, job: Job, unit: ProjectUnit | None) -> UnitOutcome:
    """One file in one round: from the cache when its content and facts match; never raises."""
    collector.between_files()
    looked = _look_up(candidate, job, unit)
    if isinstance(looked, UnitOutcome):
        return looked
    source, k, variants = looked
    index = unit.index if unit is not None else None
    try:
        kept = _TREES.get(candidate.display) if index is not None else None
        parsed = kept[1] if kept is not None and kept[0] == source.raw else None
        outcome = lint_unit(source, job.options, unit, parsed)
        _keep_tree(candidate.display, source.raw, outcome)
        # problems the reader noted (a notebook's bad cell), with or without TensorFlow in it
        outcome.result.errors += [
            FileError(candidate.display, _problem(p, outcome.result.skipped))
            for p in source.problems
        ]
    except Exception as exc:  # an internal error loses this file only, never the run
        return UnitOutcome(
            FileResult(
                candidate.display,
                errors=[
                    FileError(candidate.display, f"internal error: {type(exc).__name__}: {exc}")
                ],
            )
        )
    if job.cache_dir is not None and _cacheable(outcome):
        with stages.stage("cache"):
            _store(Cache(job.cache_dir, "static"), k, outcome, variants, index is None)
    return outcome


def _look_up(
    candidate: Candidate, job: Job, unit: ProjectUnit | None
) -> UnitOutcome | tuple[Source, str, list]:
    """The file's outcome when it needs no linting (served from the cache, or unreadable);
    else its source, cache key and the cached variants to keep next to the new result."""
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
    probes = "probes" if job.options.slice_probes else ""
    index = unit.index if unit is not None else None
    stage = "alone" if unit is None else ("first" if index is None else "facts")
    with stages.stage("cache"):
        k = key(job.fingerprint, probes, unit.module if unit else "", stage, source.raw)
        if job.cache_dir is None:
            return source, k, []
        cached = Cache(job.cache_dir, "static").get(k)
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
    return source, k, variants


# Trees kept between project rounds, in the process that parsed them (display -> raw text and
# tree): a file re-linted because a fact it asked about changed is not parsed again.  Only
# files that asked about project facts can go stale; the budget bounds the memory (a libcst
# tree and its walk take about 70 times the text: 4 MiB of source is about 300 MB).
_TREES: dict[str, tuple[bytes, Parsed]] = {}
KEEP_BYTES = 4 * 1024 * 1024
_kept_bytes = [0]


def _keep_tree(display: str, raw: bytes, outcome: UnitOutcome) -> None:
    parsed, outcome.parsed = outcome.parsed, None  # the tree never travels back to the parent
    if parsed is None:
        _drop_fixable(display, None)
        return
    kept_for_fixes = _keep_fixable(display, raw, parsed, outcome.result)
    if not outcome.deps:
        if not kept_for_fixes:
            parsed.info.release()  # not kept: freed now, not by the cyclic collector
        return
    if display in _TREES:
        _TREES[display] = (raw, parsed)
    elif _kept_bytes[0] + len(raw) <= KEEP_BYTES:
        _TREES[display] = (raw, parsed)
        _kept_bytes[0] += len(raw)
    elif not kept_for_fixes:
        parsed.info.release()


# Trees of the files whose last lint found something a fix may rewrite, kept after the pass
# for the JSON and SARIF fix descriptions (fix/apply.describe_fixes), which would otherwise
# parse and walk each of those files again.  Only when the pass runs in this process (the
# descriptions run here, or in forks of it) and only when asked (``run_project(keep_fixable=
# True)``); within a budget of their own.
_FIXABLE: dict[str, tuple[bytes, Parsed]] = {}
_fixable_on = [False]
_fixable_bytes = [0]


def _keep_fixable(display: str, raw: bytes, parsed: Parsed, result: FileResult) -> bool:
    """Keep (or drop) this file's tree for the fix descriptions; True when kept."""
    _drop_fixable(display, parsed)
    if not _fixable_on[0] or not result.findings:
        return False
    from .fix.rewrites import fixable

    if not any(fixable(f.rule) for f in result.findings):
        return False
    if _fixable_bytes[0] + len(raw) > KEEP_BYTES:
        return False
    _FIXABLE[display] = (raw, parsed)
    _fixable_bytes[0] += len(raw)
    return True


def _drop_fixable(display: str, current: Parsed | None) -> None:
    """Forget the tree kept for ``display`` by an earlier round; released unless it is the
    ``current`` one or kept between rounds (released with those)."""
    old = _FIXABLE.pop(display, None)
    if old is None:
        return
    _fixable_bytes[0] -= len(old[0])
    in_rounds = _TREES.get(display)
    if old[1] is not current and (in_rounds is None or in_rounds[1] is not old[1]):
        old[1].info.release()


def _forget_trees() -> None:
    """Release the trees kept between rounds, but not those kept for the fix descriptions
    (and the modules the program slices loaded)."""
    program_modules.forget()
    fixable = {id(parsed) for _raw, parsed in _FIXABLE.values()}
    for _raw, parsed in _TREES.values():
        if id(parsed) not in fixable:
            parsed.info.release()
    _TREES.clear()
    _kept_bytes[0] = 0


def _take_fixable() -> dict[str, tuple[bytes, Parsed]]:
    """The trees kept for the fix descriptions (the caller releases them)."""
    trees = dict(_FIXABLE)
    _FIXABLE.clear()
    _fixable_bytes[0] = 0
    _fixable_on[0] = False
    return trees


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
    with collector.paused():
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
    workers: _Workers | None,
    owners: list[int],
    tick: Callable[[int], None] | None = None,
) -> list[UnitOutcome]:
    """Outcomes in the order of ``items``, whatever ``jobs`` is; ``tick(done)`` as they come.
    ``owners[i]``: the worker that lints ``items[i]`` in every round (it keeps the tree)."""
    tick = tick or (lambda _done: None)
    if workers is None:
        _set_index(index)
        outcomes: list[UnitOutcome] = []
        for item in items:
            outcomes.extend(_lint_chunk(([item], job)))
            tick(len(outcomes))
        return outcomes
    # the cache is read here: a file served from it never reaches a worker, and a warm run
    # starts none (the workers read the file again; a miss costs the parent a read and a hash)
    found: list[UnitOutcome | None] = []
    with collector.paused():
        for c, m, p in items:
            looked = _look_up(c, job, None if _ALONE else ProjectUnit(m, p, index))
            found.append(looked if isinstance(looked, UnitOutcome) else None)
    missing = [i for i, o in enumerate(found) if o is None]
    done = len(items) - len(missing)
    if done:
        tick(done)
    if missing:
        linted = workers.run(
            [items[i] for i in missing],
            job,
            index,
            [owners[i] for i in missing],
            lambda n: tick(done + n),
        )
        for i, o in zip(missing, linted, strict=True):
            found[i] = o
    return [o for o in found if o is not None]


class _Workers:
    """One single-process pool per job, kept for all the rounds of a run: a file goes to the
    same process in every round, which still holds its tree.  A pool of one runs its tasks in
    the order they were submitted, so the round's index is set before the round's files."""

    CHUNKS_PER_WORKER = 8  # progress granularity

    def __init__(self, jobs: int) -> None:
        from concurrent.futures import ProcessPoolExecutor  # ~30 ms a one-file run skips

        self.pools = [ProcessPoolExecutor(max_workers=1) for _ in range(jobs)]

    def run(self, items, job: Job, index, owners: list[int], tick) -> list[UnitOutcome]:
        from concurrent.futures import as_completed

        futures = {}
        for w, pool in enumerate(self.pools):
            mine = [i for i, o in enumerate(owners) if o == w]
            if not mine:
                continue
            pool.submit(_set_index, index)
            size = max(1, -(-len(mine) // self.CHUNKS_PER_WORKER))
            for c in range(0, len(mine), size):
                positions = mine[c : c + size]
                chunk = [items[i] for i in positions]
                futures[pool.submit(_lint_chunk_timed, (chunk, job))] = positions
        out: list[UnitOutcome | None] = [None] * len(items)
        done = 0
        for future in as_completed(futures):
            chunk_out, times = future.result()
            stages.merge(times)
            for i, o in zip(futures[future], chunk_out, strict=True):
                out[i] = o
            done += len(chunk_out)
            tick(done)
        return [o for o in out if o is not None]

    def close(self) -> None:
        for pool in self.pools:
            pool.shutdown()


def _owners(candidates: list[Candidate], jobs: int) -> list[int]:
    """Each file's worker: largest file first to the least loaded worker (sizes stand for
    cost), so that the workers finish together without sharing files between rounds."""
    sizes = [_size(c) for c in candidates]
    load = [0] * jobs
    owners = [0] * len(candidates)
    for i in sorted(range(len(candidates)), key=lambda i: (-sizes[i], i)):
        w = min(range(jobs), key=lambda w: (load[w], w))
        owners[i] = w
        load[w] += sizes[i] + 1
    return owners


def _size(candidate: Candidate) -> int:
    if candidate.data is not None:
        return len(candidate.data)
    try:
        return os.path.getsize(candidate.path)
    except OSError:
        return 0


def _module_names(candidates: list[Candidate]) -> list[tuple[str, bool]]:
    """Each file's module name; a clash (two scripts named train.py) keeps the first."""
    names: list[tuple[str, bool]] = []
    seen: set[str] = set()
    packages: dict[str, tuple[str, ...]] = {}
    for i, c in enumerate(candidates):
        try:
            name, is_package = module_name(c.path, packages)
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
    # display path -> (raw text, tree and walk) of files with a fixable finding, with
    # ``keep_fixable``; whoever takes them releases them (:func:`release_trees`)
    trees: dict[str, tuple[bytes, Parsed]] = field(default_factory=dict)

    def release_trees(self) -> None:
        """Free the kept trees by reference counting (their walks are cyclic)."""
        for _raw, parsed in self.trees.values():
            parsed.info.release()
        self.trees = {}


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


def _rounds(
    items, job: Job, workers, owners: list[int], on_round, tick
) -> tuple[list[_State], ProjectIndex]:
    """Round 0 for every file, then the files whose facts changed, until none did; the
    states and the index of the last one.  A round that changed no summary keeps the index
    (and the facts it has worked out) for the next check and the end."""
    first = _run_round(items, job, None, workers, owners, tick)
    states = [
        _State(o, ProjectUnit(m, p), o.deps) for o, (_, m, p) in zip(first, items, strict=True)
    ]
    index: ProjectIndex | None = None
    for round_no in range(1, MAX_ROUNDS + 1):
        with stages.stage("project index"):
            index = _index(states) if index is None else index
            stale = [
                i
                for i, s in enumerate(states)
                if any(index.digest(k) != d for k, d in s.deps.items())
            ]
        if not stale:
            break
        if on_round is not None:
            on_round(round_no, len(stale))
        outcomes = _run_round(
            [items[i] for i in stale], job, index, workers, [owners[i] for i in stale]
        )
        changed = False
        for i, o in zip(stale, outcomes, strict=True):
            changed = changed or o.summary != states[i].outcome.summary
            states[i].outcome = o
            states[i].deps = o.deps
        if changed:
            index = None
    with stages.stage("project index"):
        return states, _index(states) if index is None else index


def run_project(
    candidates: list[Candidate],
    job: Job,
    jobs: int,
    on_round: Callable[[int, int], None] | None = None,
    tick: Callable[[int], None] | None = None,
    keep_fixable: bool = False,
) -> ProjectRun:
    """:func:`analyse_project`, with each file's place in the project.  ``keep_fixable``:
    also hand back the trees of the files with a fixable finding, when they were linted in
    this process (``ProjectRun.trees``)."""
    names = _module_names(candidates)
    items = [(c, m, p) for c, (m, p) in zip(candidates, names, strict=True)]
    workers = _Workers(jobs) if jobs > 1 and len(items) >= 4 else None
    owners = _owners(candidates, jobs) if workers is not None else [0] * len(items)
    _take_fixable()  # nothing left from an earlier run in this process
    _fixable_on[0] = keep_fixable and workers is None
    trees: dict[str, tuple[bytes, Parsed]] = {}
    try:
        with collector.paused():
            states, final = _rounds(items, job, workers, owners, on_round, tick)
    finally:
        if workers is not None:
            workers.close()
        _forget_trees()
        trees = _take_fixable()
    units = {c.display: ProjectUnit(m, p, final) for c, m, p in items}
    return ProjectRun([s.outcome.result for s in states], units, trees)
