"""The cyclic collector is paused for the static pass and runs between files when due."""

from __future__ import annotations

import gc

from tfnumlint import collector, incremental
from tfnumlint.discovery import Candidate
from tfnumlint.engine import LintOptions
from tfnumlint.incremental import Job


def test_paused_restores_the_collector_even_when_nested_and_on_errors():
    assert gc.isenabled()
    try:
        with collector.paused():
            assert not gc.isenabled()
            with collector.paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer block still holds it
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled()


def test_between_files_collects_young_cycles_once_enough_piled_up(monkeypatch):
    monkeypatch.setattr(collector, "YOUNG_AFTER", 1000)

    class Node:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the cyclic collector frees it

    with collector.paused():
        gc.collect()
        for _ in range(2000):
            Node()
        assert any(isinstance(o, Node) for o in gc.get_objects(0))
        collector.between_files()
        assert not any(isinstance(o, Node) for o in gc.get_objects(0))


def test_between_files_does_nothing_while_the_collector_runs(monkeypatch):
    monkeypatch.setattr(collector, "YOUNG_AFTER", -1)
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a))
    collector.between_files()
    assert calls == []


def test_the_project_run_pauses_the_collector_while_it_lints(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("import tensorflow as tf\nx = tf.math.log(tf.sigmoid(1.0))\n")
    seen = []
    real = incremental.lint_unit

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(incremental, "lint_unit", spy)
    job = Job(LintOptions(codes=frozenset({"TNL101"})), "test", None)
    run = incremental.run_project([Candidate(tmp_path / "a.py", "a.py")], job, jobs=1)
    assert seen == [False]
    assert gc.isenabled()
    assert [f.rule for r in run.results for f in r.findings] == ["TNL101"]


def test_keeping_freezes_what_the_pass_left_and_thaw_gives_it_back():
    """The command line's results are out of the collector's reach until thawed; a cycle
    made after the block is still collected."""
    assert gc.isenabled()
    try:
        with collector.keeping():
            assert not gc.isenabled()
            kept = [object() for _ in range(10)]
        assert gc.isenabled() and gc.get_freeze_count() >= len(kept)

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
        assert gc.collect() >= 2
    finally:
        collector.thaw()
    assert gc.get_freeze_count() == 0


def test_an_in_process_run_leaves_nothing_frozen(tmp_path, monkeypatch):
    from tfnumlint.cli import main

    (tmp_path / "m.py").write_text("import tensorflow as tf\nx = tf.math.log(tf.nn.softmax(y))\n")
    monkeypatch.chdir(tmp_path)
    main(["--no-verify", "--no-cache", "--exit-zero", "--quiet", "."])
    assert gc.get_freeze_count() == 0
