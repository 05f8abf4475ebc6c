"""When Python's cyclic garbage collector runs during the static pass.

libcst trees are acyclic, and much of what a file's lint builds outlives it (the tree and walk
are kept for the next project round, within a memory budget).  With the default thresholds the
collector's full collections, triggered each time the long-lived objects grow by a quarter,
walk all of those kept trees again and again and free next to nothing: measured at about a
sixth of the static pass on TF's python/ops (benchmarks/SPEED.md).  So automatic collection is
paused for the pass, and between files the young objects (those made since the last
collection, where the analysis's short-lived cycles are) are collected once enough of them have
piled up, the middle generation every tenth time.  Objects that survive to the oldest
generation are walked again only by the collections after the pass.  Reference counting frees
everything else as usual.

The command line keeps the pass's results (findings, summaries, the project index: a million
objects on a large tree) to the end of the run: :func:`keeping` moves what the pass left out of
the collector's reach (``gc.freeze``), so that the collections of the stages after it (fix
descriptions, grouping, the report; on a warm cache they are most of the run) and the one at
interpreter exit do not walk them all again; :func:`thaw` gives them back.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# net tracked allocations since the last collection before the young ones are collected
YOUNG_AFTER = 400_000
MIDDLE_EVERY = 10  # young collections per collection of the middle generation


@contextmanager
def paused() -> Iterator[None]:
    """Automatic cyclic collection off inside the block (restored on exit, also nested)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def between_files() -> None:
    """Collect the young generation (and now and then the middle one) when paused and due."""
    if gc.isenabled():
        return
    young, middle_pending, _old = gc.get_count()
    if young > YOUNG_AFTER:
        gc.collect(1 if middle_pending >= MIDDLE_EVERY else 0)


@contextmanager
def keeping() -> Iterator[None]:
    """:func:`paused` for the block, then everything alive moved to the permanent generation
    (also on an error: :func:`thaw` undoes it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def thaw() -> None:
    """What :func:`keeping` froze is collectable again (an in-process caller's next run)."""
    gc.unfreeze()
