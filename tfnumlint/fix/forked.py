"""Run independent per-file tasks in forked worker processes: the fix descriptions of a JSON
run (:func:`.apply.describe_fixes`) plan each file on its own, after the static pass, and on a
large tree they were a fifth of a ``--jobs 2`` run spent in the parent alone.

The children are forked, so they inherit the task and everything it reads (the findings, the
project index) without pickling any of it; only each task's result travels back.  The tasks go
out in chunks, heaviest first (a file's size stands for its cost), to whichever child is free,
and each chunk runs on a large-stack thread as the lint does.  Where ``fork`` is not
available, or a child dies, the caller is told (``None``) and runs the tasks itself.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .. import collector, stages

_TASK: list[Callable[[int], Any]] = []  # the running map's task, inherited by the children
STACK_BYTES = 512 * 1024 * 1024


def chunks(weights: Sequence[int], jobs: int, per_worker: int = 8) -> list[list[int]]:
    """Task indices in chunks of about equal weight, heaviest first, about ``per_worker`` per
    worker: the pool hands the next chunk to whichever child is free, so a weight that
    misjudges a task's cost (a small file with many fixes) costs at most one chunk's time."""
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    target = (sum(weights) + len(weights)) / max(1, jobs * per_worker)
    out: list[list[int]] = []
    part: list[int] = []
    load = 0
    for i in order:
        part.append(i)
        load += weights[i] + 1
        if load >= target:
            out.append(part)
            part, load = [], 0
    if part:
        out.append(part)
    return out


def run_forked(task: Callable[[int], Any], weights: Sequence[int], jobs: int) -> list[Any] | None:
    """``[task(i) for i in range(len(weights))]``, computed in up to ``jobs`` forked
    processes; None when that could not be done (no ``fork``, a child died)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    from concurrent.futures import ProcessPoolExecutor

    parts = chunks(weights, jobs)
    out: list[Any] = [None] * len(weights)
    _TASK[:] = [task]
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(parts)), mp_context=context) as pool:
            futures = [pool.submit(_run_chunk, part) for part in parts]
            for part, future in zip(parts, futures, strict=True):
                results, times = future.result()
                stages.merge(times)
                for i, r in zip(part, results, strict=True):
                    out[i] = r
    except Exception:  # a broken pool, an unpicklable result: the caller runs them itself
        return None
    finally:
        _TASK.clear()
    return out


def _run_chunk(part: list[int]) -> tuple[list[Any], dict[str, tuple[float, float]]]:
    """In a child: the tasks of one chunk, on a large-stack thread (deep expressions)."""
    task = _TASK[0]
    box: list[Any] = []
    if stages.enabled():
        stages.take()  # the parent's totals, inherited: they are the parent's to report

    def work() -> None:
        with collector.paused():
            for i in part:
                collector.between_files()
                box.append(task(i))

    old = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
    finally:
        threading.stack_size(old)
    thread.join()
    if len(box) != len(part):
        raise RuntimeError("a task failed")
    return box, stages.take() if stages.enabled() else {}
