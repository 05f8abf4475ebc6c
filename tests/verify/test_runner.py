"""The parent side: one isolated worker, disk cache, crash/hang/abort isolation, no-TF notice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from probe_helpers import binop, call, const, expr, free, inp, prob, seed_loss

from tfnumlint.config import Settings
from tfnumlint.model import Finding
from tfnumlint.verify import runner

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(runner.tf_version() is None, reason="needs TensorFlow installed")


def probes() -> dict[str, dict]:
    target, loss = seed_loss()
    dist = call("reduce_sum", call("square", binop("-", inp("a"), inp("b"))))
    return {
        "seed": expr("TNL102", target, [free("z"), free("p")], loss=loss, eps=1e-10),
        "logp": expr("TNL101", call("log", inp("p")), [prob("p")]),
        "clipped": expr(
            "TNL101",
            call("log", call("clip_by_value", inp("p"), const(1e-7), const(1.0))),
            [prob("p")],
        ),
        "dist": expr("TNL202", call("sqrt", dist), [free("a"), free("b")]),
        "exp": expr("TNL301", call("exp", inp("x")), [free("x")]),
        "evil": expr("TNL104", call("eval", {"k": "str", "v": "1"}), [], hostile=True),
    }


def findings() -> list[Finding]:
    out = [Finding("m.py", i + 1, 1, i + 1, 2, p["rule"], name, "error", "msg", probe=p)
           for i, (name, p) in enumerate(probes().items())]  # fmt: skip
    out.append(Finding("m.py", 99, 1, 99, 2, "TNL504", "unprobed", "info", "msg"))
    return out


def by_name(fs: list[Finding]) -> dict[str, Finding]:
    return {f.name: f for f in fs}


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """One verify_findings call (one worker) shared by the tests below."""
    cache_dir = tmp_path_factory.mktemp("cache")
    fs = findings()
    # a probe that runs out of its budget is (rightly) not cached; on a loaded machine the
    # default budget can run out, and the warm-cache test below would then see a cold probe
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFNUMLINT_PROBE_TIMEOUT", "300")
        notices = runner.verify_findings(fs, Settings(), cache_dir)
    return by_name(fs), notices, cache_dir


def test_verdicts_come_back_from_the_worker(verified):
    fs, notices, _ = verified
    assert notices == []
    assert fs["seed"].verification.status == "confirmed"
    assert fs["seed"].verification.symptom == "dead-gradient"
    assert fs["seed"].verification.observed["loss"] == pytest.approx(23.03, abs=0.01)
    assert fs["logp"].verification.symptom == "inf-value"
    assert fs["clipped"].verification.status == "refuted"
    assert fs["dist"].verification.symptom == "nan-gradient"
    assert fs["exp"].verification.symptom == "inf-value"
    assert fs["evil"].verification.status == "inconclusive"
    assert fs["unprobed"].verification.status == "skipped"
    assert all(f.verification.seconds > 0 for n, f in fs.items() if n not in ("unprobed", "evil"))


def test_warm_rerun_uses_the_cache_and_never_imports_tensorflow(verified):
    fs, _, cache_dir = verified
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / "tests" / "verify")!r})
        from test_runner import findings
        from tfnumlint.config import Settings
        from tfnumlint.verify.runner import verify_findings, Worker
        def no_worker(*a, **k):
            raise AssertionError("a worker was started on a warm cache")
        Worker.start = no_worker
        fs = findings()
        notices = verify_findings(fs, Settings(), __import__("pathlib").Path({str(cache_dir)!r}))
        print(json.dumps({{"tf": "tensorflow" in sys.modules, "notices": notices,
                           "status": {{f.name: f.verification.status for f in fs}}}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, check=True)  # fmt: skip
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["tf"] is False
    assert data["notices"] == []
    assert data["status"] == {name: f.verification.status for name, f in fs.items()}


def test_cache_key_depends_on_settings_and_tf_version():
    p = probes()["logp"]
    k = runner.cache_key(p, "2.21.0", Settings())
    assert k != runner.cache_key(p, "2.20.0", Settings())
    assert k != runner.cache_key(p, "2.21.0", Settings(exploding_gradient=1e3))
    assert k == runner.cache_key(json.loads(json.dumps(p)), "2.21.0", Settings())


def test_without_tensorflow_everything_is_skipped_with_one_notice(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "tf_version", lambda: None)
    monkeypatch.setattr(runner.Worker, "start", lambda: pytest.fail("worker started without TF"))
    fs = findings()
    notices = runner.verify_findings(fs, Settings(), tmp_path)
    assert notices == [runner.NO_TF_NOTICE]
    assert "install tensorflow-cpu or tensorflow" in notices[0]  # no package index entry named
    assert {f.verification.status for f in fs} == {"skipped"}


@pytest.mark.parametrize(
    "fault, reason",
    [
        ("crash:TNL202", "the TensorFlow worker crashed (signal 11, SIGSEGV) while probing"),
        ("abort:TNL202", "the TensorFlow worker crashed (signal 6, SIGABRT) while probing"),
        ("hang:TNL202", "probe exceeded its 3 s budget (--probe-timeout sets it)"),
        ("oom:TNL202", "probe ran out of memory (bound 8 GiB)"),
    ],
)
def test_worker_failure_costs_only_the_probe_in_flight(monkeypatch, tmp_path, fault, reason):
    failure_costs_only_its_probe(monkeypatch, tmp_path, fault, reason, workers=1)


@pytest.mark.parametrize(
    "fault, reason",
    [
        ("crash:TNL202", "the TensorFlow worker crashed (signal 11, SIGSEGV) while probing"),
        ("hang:TNL202", "probe exceeded its 3 s budget (--probe-timeout sets it)"),
    ],
)
def test_with_two_workers_a_failure_still_costs_only_its_probe(
    monkeypatch, tmp_path, fault, reason
):
    failure_costs_only_its_probe(monkeypatch, tmp_path, fault, reason, workers=2)


def failure_costs_only_its_probe(monkeypatch, tmp_path, fault, reason, workers):
    monkeypatch.setenv("TFNUMLINT_TEST_FAULT", fault)
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "3")
    # a probe before the failing one, the failing one, and one after it (the others add time,
    # not evidence)
    fs = by_name([f for f in findings() if f.name in ("logp", "dist", "exp")])
    runner.verify_findings(list(fs.values()), Settings(), tmp_path, workers)
    assert fs["dist"].verification.status == "inconclusive"
    assert fs["dist"].verification.detail == reason
    # probes before and after the failure still get real verdicts (after: in a fresh worker)
    assert fs["logp"].verification.status == "confirmed"
    assert fs["exp"].verification.status == "confirmed"
    assert fs["exp"].verification.symptom == "inf-value"
    # the failure is not cached: a healthy re-run probes it again
    monkeypatch.delenv("TFNUMLINT_TEST_FAULT")
    again = by_name(findings())
    runner.verify_findings([again["dist"]], Settings(), tmp_path)
    assert again["dist"].verification.status == "confirmed"


def test_verdicts_are_deterministic(verified):
    """The same probes verified again, in a fresh worker and with no cache, give the same
    verdicts, witnesses and observations (only the timing differs)."""
    first, _, _ = verified
    again = by_name(findings())
    runner.verify_findings(list(again.values()), Settings(), None)

    def stable(f: Finding) -> dict:
        data = f.verification.to_json()
        data.pop("seconds", None)
        return data

    assert {n: stable(f) for n, f in again.items()} == {n: stable(f) for n, f in first.items()}


def counting_spawns(monkeypatch) -> list[int]:
    """The pids of the workers started from now on, in order."""
    spawned: list[int] = []
    spawn = runner.Worker.spawn

    def counted(graphs_only=False):
        worker = spawn(graphs_only)
        spawned.append(worker.proc.pid)
        return worker

    monkeypatch.setattr(runner.Worker, "spawn", counted)
    return spawned


def test_two_workers_share_the_probes_and_give_the_same_verdicts(verified, monkeypatch):
    """Sharing the probes out over two workers changes nothing but the wall time."""
    first, _, _ = verified
    spawned = counting_spawns(monkeypatch)
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "300")
    again = by_name(findings())
    runner.verify_findings(list(again.values()), Settings(), None, workers=2)
    assert len(set(spawned)) == 2

    def stable(f: Finding) -> dict:
        data = f.verification.to_json()
        data.pop("seconds", None)
        return data

    assert {n: stable(f) for n, f in again.items()} == {n: stable(f) for n, f in first.items()}


def test_a_worker_that_cannot_start_fails_every_probe_with_its_reason(monkeypatch):
    def broken(graphs_only=False):
        raise runner.WorkerFailed("the TensorFlow worker did not start (No such file)")

    monkeypatch.setattr(runner.Worker, "spawn", broken)
    fs = findings()
    runner.verify_findings(fs, Settings(), None, workers=2)
    probed = [f for f in fs if f.probe is not None]
    assert {f.verification.status for f in probed} == {"inconclusive"}
    assert {f.verification.detail for f in probed} == {
        "the TensorFlow worker did not start (No such file)"
    }


def test_a_probe_over_its_budget_stops_itself_and_the_worker_lives_on(monkeypatch):
    """Past its budget a probe stops at its next evaluation with the timeout's own answer, in
    the same worker: no kill and no second TensorFlow import."""
    spawned = counting_spawns(monkeypatch)
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "0.000001")
    fs = by_name(findings())
    runner.verify_findings([fs["logp"], fs["exp"]], Settings(), None)
    for name in ("logp", "exp"):
        assert fs[name].verification.status == "inconclusive"
        assert (
            fs[name].verification.detail
            == "probe exceeded its 1e-06 s budget (--probe-timeout sets it)"
        )
    assert len(spawned) == 1


def test_the_findings_of_one_file_go_to_one_worker_in_order(monkeypatch):
    """A worker keeps an objective's training runs for the next finding that shares it, so
    the findings of a file are verified by one worker in their order, as with one worker."""
    sent: list[tuple[int, int]] = []
    send = runner.Worker.send

    def recorded(self, payload):
        sent.append((self.proc.pid, payload["id"]))
        return send(self, payload)

    monkeypatch.setattr(runner.Worker, "send", recorded)
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "300")
    p = probes()
    places = [("a.py", "logp"), ("a.py", "exp"), ("b.py", "dist"), ("b.py", "clipped")]
    fs = [Finding(path, i + 1, 1, i + 1, 2, p[name]["rule"], name, "error", "msg", probe=p[name])
          for i, (path, name) in enumerate(places)]  # fmt: skip
    runner.verify_findings(fs, Settings(), None, workers=2)
    by_worker: dict[int, list[int]] = {}
    for pid, index in sent:
        by_worker.setdefault(pid, []).append(index)
    a, b = [0, 1], [2, 3]  # the requests of a.py and of b.py
    assert sorted(by_worker.values()) in ([a, b], [a + b], [b + a])
    assert {f.verification.status for f in fs} == {"confirmed", "refuted"}


@pytest.mark.parametrize("modern", [True, False])
def test_a_user_module_named_like_the_standard_library_does_not_reach_the_worker(
    monkeypatch, tmp_path, modern
):
    """The worker runs in the user's folder: an ``inspect.py`` there must not shadow the
    module TensorFlow imports (``python -m`` puts the folder first on the path).  Both
    interpreter lines: ``-P`` (3.11+) and the one for 3.10."""
    (tmp_path / "inspect.py").write_text('raise ImportError("the user\'s own inspect.py")\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "300")
    if not modern:
        monkeypatch.setattr(runner.sys, "version_info", (3, 10, 0))
    [finding] = [f for f in findings() if f.name == "exp"]
    notices = runner.verify_findings([finding], Settings(), tmp_path / "cache")
    assert notices == []
    assert finding.verification.status == "confirmed", finding.verification.detail
