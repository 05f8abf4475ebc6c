"""Per-stage timings of a run (``--profile`` or ``TFNUMLINT_PROFILE=1``), so that a user with a
slow tree can see which stage costs it.

Time is charged to the innermost open stage only (exclusive time): provenance evaluated while
a rule runs counts as provenance, not as the rule.  Off, :func:`stage` costs one flag test.
Worker processes keep their own totals; :func:`take` hands them to the parent with each chunk.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# the table's order: a pipeline, from reading a file to printing the report
ORDER = (
    "float type",
    "read",
    "cache",
    "parse",
    "metadata",
    "provenance",
    "rules",
    "summary",
    "call places",
    "class invariants",
    "positions",
    "probes",
    "project index",
    "fix descriptions",
    "grouping",
    "verification",
    "other",
)

_on = bool(os.environ.get("TFNUMLINT_PROFILE"))
_wall: dict[str, float] = {}
_cpu: dict[str, float] = {}
_open: list[str] = []
_mark: list[float] = [0.0, 0.0]


def enable() -> None:
    """Start timing in this process (and in workers, which read the environment)."""
    global _on
    _on = True
    os.environ["TFNUMLINT_PROFILE"] = "1"


def enabled() -> bool:
    return _on


def _charge() -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    if _open:
        name = _open[-1]
        _wall[name] = _wall.get(name, 0.0) + wall - _mark[0]
        _cpu[name] = _cpu.get(name, 0.0) + cpu - _mark[1]
    _mark[0], _mark[1] = wall, cpu


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Charge the time spent inside to ``name`` (minus any stage opened inside it)."""
    if not _on:
        yield
        return
    _charge()
    _open.append(name)
    try:
        yield
    finally:
        _charge()
        _open.pop()


def timed(name: str, fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` charged to ``name`` on each call (for wrapping a method when profiling is on)."""

    def wrapper(*args, **kwargs) -> T:
        with stage(name):
            return fn(*args, **kwargs)

    return wrapper


def take() -> dict[str, tuple[float, float]]:
    """This process's totals since the last call, as ``{stage: (wall, cpu)}``; resets them."""
    out = {k: (_wall.get(k, 0.0), _cpu.get(k, 0.0)) for k in set(_wall) | set(_cpu)}
    _wall.clear()
    _cpu.clear()
    return out


_merged: dict[str, tuple[float, float]] = {}


def merge(totals: dict[str, tuple[float, float]]) -> None:
    """Add a worker's totals to this process's."""
    for k, (wall, cpu) in totals.items():
        w, c = _merged.get(k, (0.0, 0.0))
        _merged[k] = (w + wall, c + cpu)


def table(total_wall: float) -> str:
    """The stage table: wall and CPU seconds per stage, and each stage's share of the CPU."""
    merge(take())
    rows = dict(_merged)
    cpu_sum = sum(c for _, c in rows.values()) or 1.0
    names = [n for n in ORDER if n in rows] + sorted(set(rows) - set(ORDER))
    lines = [
        f"tfnumlint profile ({total_wall:.2f} s wall; worker time summed over processes)",
        f"  {'stage':<18}{'wall s':>9}{'cpu s':>9}{'share':>8}",
    ]
    for n in names:
        wall, cpu = rows[n]
        lines.append(f"  {n:<18}{wall:>9.2f}{cpu:>9.2f}{cpu / cpu_sum:>8.1%}")
    lines.append(f"  {'total':<18}{sum(w for w, _ in rows.values()):>9.2f}{cpu_sum:>9.2f}")
    return "\n".join(lines) + "\n"


def report(total_wall: float) -> None:
    sys.stderr.write(table(total_wall))
