"""Fix descriptions planned in forked processes: the same fixes as planned in the parent."""

from __future__ import annotations

import os

from conftest import run_json
from test_cache import RISKY

from tfnumlint.fix import forked


def test_tasks_run_in_children_and_come_back_in_order():
    parent = os.getpid()
    out = forked.run_forked(lambda i: (i * i, os.getpid() != parent), [5, 1, 9, 2, 7], 2)
    assert out == [(0, True), (1, True), (4, True), (9, True), (16, True)]


def test_a_child_that_dies_leaves_the_tasks_to_the_caller():
    def die(i: int) -> int:
        os._exit(3)

    assert forked.run_forked(die, [1, 1], 2) is None


def test_chunks_hold_every_task_once_heaviest_first():
    weights = [9, 1, 5, 4, 3, 2, 30, 1, 1, 1]
    parts = forked.chunks(weights, 2, per_worker=2)
    assert sorted(i for p in parts for i in p) == list(range(len(weights)))
    assert parts[0] == [6]  # the heaviest task goes out first, alone (it fills a chunk)
    firsts = [weights[p[0]] for p in parts]
    assert firsts == sorted(firsts, reverse=True)
    assert len(parts) <= 2 * 2 + 1
    assert forked.chunks([1], 4) == [[0]]


def test_parallel_fix_descriptions_equal_serial_ones(tmp_path):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(RISKY + f"\n\nSCALE = {i}\n")
    runs = [
        run_json("--no-verify", "--no-cache", "--jobs", jobs, ".", cwd=tmp_path)
        for jobs in ("1", "2")
    ]
    fixes = [[(f["path"], f["fix"]) for f in run["findings"]] for run in runs]
    assert len(fixes[0]) == 4 and all(fix for _, fix in fixes[0])
    assert fixes[0] == fixes[1]
