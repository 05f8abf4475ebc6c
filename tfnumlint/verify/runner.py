"""Parent side of verification: cache lookups, isolated TF workers, verdicts on findings.

This module never imports TensorFlow, so a warm re-run (every verdict cached) costs no TF
import at all.  Probes go to worker subprocesses (``--jobs`` of them at most), one probe per
worker at a time, each with a time budget; a crash or timeout marks that finding
inconclusive and the rest continue, the failed worker's share in a fresh worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from ..cache import Cache, key
from ..config import Settings
from ..model import Finding, Verification
from ..progress import Progress

TF_DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow-cpu",
    "tf-nightly",
    "tensorflow-macos",
    "tensorflow-intel",
)
NO_TF_NOTICE = (
    "TensorFlow is not installed, so verification is skipped and every finding is `skipped` "
    "(install tensorflow-cpu or tensorflow, or pass --no-verify)"
)
DEFAULT_TIMEOUT = 10.0
GRACE = 5.0  # seconds past a request's budget before its worker is taken for hung
MAX_WORKERS = 4  # TensorFlow workers at once: each holds its own TF runtime (0.5 to 1 GB)
READY_TIMEOUT = 180.0
STARTING = "starting the TensorFlow worker"


def tf_version() -> str | None:
    """The installed TensorFlow version, read from package metadata (no import)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


# A probe that trains the program's slice may take this many probe budgets more: a convolutional
# network's step takes a tenth of a second on two cores, and its runs (the data's, two other
# starts of the weights, steered, and the control at a tenth of the rate) take hundreds of steps
TRAINING_BUDGETS = 3


def probe_timeout() -> float:
    try:
        return float(os.environ.get("TFNUMLINT_PROBE_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def request_budget(request: dict[str, Any], timeout: float) -> float:
    """A request's seconds: ``timeout``, and :data:`TRAINING_BUDGETS` more of it when its probe
    trains the program's slice (the rung's runs stop themselves within that share)."""
    probe = request.get("probe")
    trains = isinstance(probe, dict) and bool(probe.get("program"))
    return timeout * (1 + TRAINING_BUDGETS) if trains else timeout


VERDICT_SCHEMA = "trail-1"  # verdicts carry their gate trail (and a reproducer): older ones do not


def cache_key(probe: dict[str, Any], version: str, settings: Settings) -> str:
    threshold = repr(float(settings.exploding_gradient))
    budget = repr(probe_timeout())  # a run a shorter budget stopped is not a longer one's verdict
    return key(json.dumps(probe, sort_keys=True), version, threshold, VERDICT_SCHEMA, budget)


def to_verification(data: dict[str, Any]) -> Verification:
    fields = (
        "status", "detail", "symptom", "dtype", "inputs", "observed", "seconds", "repro", "trail"
    )  # fmt: skip
    return Verification(**{k: data[k] for k in fields if k in data})


class WorkerFailed(Exception):
    """The worker died or overran its budget; ``reason`` says which, for the finding."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Worker:
    """One ``python -m tfnumlint.verify.worker`` process and a line reader over its stdout."""

    proc: subprocess.Popen[bytes]
    stdin: IO[bytes]
    stdout: IO[bytes]
    buffer: bytes = b""

    @classmethod
    def start(cls, graphs_only: bool = False) -> Worker:
        """A started worker, once it has imported TensorFlow and said it is ready."""
        worker = cls.spawn(graphs_only)
        try:
            worker.check_ready(worker.read(READY_TIMEOUT, STARTING))
        except WorkerFailed:
            worker.kill()
            raise
        return worker

    @classmethod
    def spawn(cls, graphs_only: bool = False) -> Worker:
        """The worker process, not yet ready.  ``graphs_only``: a worker for saved models only,
        which skips importing the probe and proof machinery (half a second of libcst and
        tracing modules at startup)."""
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = (
            root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        )
        stderr = None if os.environ.get("TFNUMLINT_DEBUG") else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(
                [*worker_command(), *(["--graphs"] if graphs_only else [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
            )
        except OSError as exc:
            raise WorkerFailed(f"the TensorFlow worker did not start ({exc.strerror})") from None
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes
        return cls(proc, proc.stdin, proc.stdout)

    def check_ready(self, line: dict[str, Any]) -> None:
        if not line.get("ready"):
            raise WorkerFailed("the TensorFlow worker did not start")

    def read(self, timeout: float, doing: str) -> dict[str, Any]:
        """Next JSON line, or WorkerFailed on death / timeout."""
        deadline = time.monotonic() + timeout
        while (line := self.take_line()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerFailed(over_budget(doing, timeout))
            ready, _, _ = select.select([self.fileno()], [], [], left)
            if ready:
                self.pump()
        return line

    def fileno(self) -> int:
        return self.stdout.fileno()

    def pump(self) -> None:
        """Read what the worker has written (call when its stdout is readable); WorkerFailed
        if it has died."""
        chunk = os.read(self.fileno(), 65536)
        if not chunk:
            raise WorkerFailed(self.death_reason())
        self.buffer += chunk

    def take_line(self) -> dict[str, Any] | None:
        """The next complete JSON line already read, if any."""
        if b"\n" not in self.buffer:
            return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerFailed("the TensorFlow worker sent a malformed reply") from None

    def death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "signal"
            return f"the TensorFlow worker crashed (signal {-code}, {name}) while probing"
        return f"the TensorFlow worker exited (status {code}) while probing"

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request (a probe or a fix proof) and wait for its answer."""
        self.send(payload)
        return self.answer(payload["id"], self.read(timeout, "probe"))

    def send(self, payload: dict[str, Any]) -> None:
        try:
            self.stdin.write((json.dumps(payload) + "\n").encode())
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerFailed(self.death_reason()) from None

    @staticmethod
    def answer(ident: int, reply: dict[str, Any]) -> dict[str, Any]:
        if reply.get("id") != ident:
            raise WorkerFailed("the TensorFlow worker answered out of order")
        return reply["result"]

    def kill(self) -> None:
        """Kill this worker (by its own pid) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()

    def close(self) -> None:
        try:
            self.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


def run_probes(
    jobs: list[tuple[Finding, dict[str, Any]]], threshold: float, workers: int = 1
) -> list[dict[str, Any]]:
    """Ask the workers about each probe; failures cost only the probe in flight."""
    requests = [{"probe": probe, "threshold": threshold} for _, probe in jobs]
    return serve(
        requests,
        lambda reason, i: failed(reason, jobs[i][1], cache=False),
        workers=workers,
        groups=[finding.path for finding, _ in jobs],
    )


def serve(
    requests: list[dict[str, Any]],
    on_failure,
    timeout: float | None = None,
    graphs_only: bool = False,
    workers: int = 1,
    groups: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Answer each request in a worker process, up to ``workers`` of them at once.  A crash or
    timeout costs only the request in flight (``on_failure(reason, index)`` answers it); a
    fresh worker takes the next one.  ``groups``: requests of one group (the findings of one
    file) go to one worker, in order, as they would with a single worker: a worker keeps the
    training runs of an objective for the next finding that shares it.  ``timeout``: each
    request's budget (default: the probe budget); ``graphs_only``: every request is a saved
    model's (``Worker.spawn``)."""
    timeout = probe_timeout() if timeout is None else timeout
    size = max(1, min(workers, len(requests)))
    pool = _Pool(requests, on_failure, timeout, graphs_only, size, groups)
    try:
        return pool.run()
    finally:
        pool.close()


@dataclass
class _Slot:
    """A worker of the pool: starting (``ready`` false), idle, or busy with ``index``."""

    worker: Worker
    deadline: float
    ready: bool = False
    index: int | None = None
    begin: float = 0.0
    budget: float = 0.0  # the seconds of the request in flight (``request_budget``)
    queue: list[int] = field(default_factory=list)  # the rest of its group, popped from the end


class _Pool:
    """The workers of one ``serve`` call and the requests not yet answered."""

    def __init__(self, requests, on_failure, timeout, graphs_only: bool, size: int, groups=None):
        self.requests = requests
        self.on_failure = on_failure
        self.timeout = timeout
        self.graphs_only = graphs_only
        self.size = size
        self.results: list[dict[str, Any] | None] = [None] * len(requests)
        # the requests not yet sent, per group in order of first appearance
        by_group: dict[str, list[int]] = {}
        for i in range(len(requests)):
            by_group.setdefault(groups[i] if groups else str(i), []).append(i)
        self.queues = [queue[::-1] for queue in by_group.values()][::-1]  # popped from the end
        self.slots: list[_Slot] = []
        self.start_failure: str | None = None
        self.done = 0
        self.progress = Progress(len(requests), "verifying", "findings", minimum=6)

    def run(self) -> list[dict[str, Any]]:
        while self.pending() or any(slot.index is not None for slot in self.slots):
            self._launch()
            self._dispatch()
            if not self.slots:  # no worker could start: the rest fail with its reason
                for queue in [*self.queues, *(slot.queue for slot in self.slots)]:
                    while queue:
                        i = queue.pop()
                        self._finish(i, self.on_failure(self.start_failure or STARTING, i))
                self.queues = []
                break
            self._wait()
        self.progress.finish()
        return [r if r is not None else self.on_failure("not answered", i)
                for i, r in enumerate(self.results)]  # fmt: skip

    def pending(self) -> int:
        """Requests not yet sent: in groups no worker has taken, and in workers' groups."""
        return sum(map(len, self.queues)) + sum(len(slot.queue) for slot in self.slots)

    def _launch(self) -> None:
        """Start workers up to the pool's size, as long as there is work for them; after a
        worker failed to start, no more are tried."""
        in_flight = sum(slot.index is not None for slot in self.slots)
        wanted = min(self.size, self.pending() + in_flight)
        while self.start_failure is None and len(self.slots) < wanted:
            try:
                worker = Worker.spawn(self.graphs_only)
            except WorkerFailed as exc:
                self.start_failure = exc.reason
                return
            self.slots.append(_Slot(worker, time.monotonic() + READY_TIMEOUT))

    def _dispatch(self) -> None:
        for slot in self.slots:
            if slot.ready and slot.index is None and not slot.queue and self.queues:
                slot.queue = self.queues.pop()  # the next group, all of it for this worker
            if slot.ready and slot.index is None and slot.queue:
                i = slot.queue.pop()
                slot.index, slot.begin = i, time.perf_counter()
                slot.budget = request_budget(self.requests[i], self.timeout)
                # a probe stops itself at its budget; past the grace, the worker is killed
                slot.deadline = time.monotonic() + slot.budget + GRACE
                try:
                    slot.worker.send({"id": i, **self.requests[i], "budget": slot.budget})
                except WorkerFailed as exc:
                    self._fail(slot, exc.reason)
                    return

    def _wait(self) -> None:
        """Block until a worker writes or a deadline passes, then handle what happened."""
        waiting = [slot for slot in self.slots if not slot.ready or slot.index is not None]
        if not waiting:
            return
        left = max(0.0, min(slot.deadline for slot in waiting) - time.monotonic())
        readable, _, _ = select.select([slot.worker.fileno() for slot in waiting], [], [], left)
        for slot in waiting:
            try:
                if slot.worker.fileno() in readable:
                    slot.worker.pump()
                while slot in self.slots and (line := slot.worker.take_line()) is not None:
                    self._receive(slot, line)
            except WorkerFailed as exc:
                self._fail(slot, exc.reason)
                continue
            still_waiting = not slot.ready or slot.index is not None
            if slot in self.slots and still_waiting and time.monotonic() >= slot.deadline:
                doing, budget = ("probe", slot.budget) if slot.ready else (STARTING, READY_TIMEOUT)
                self._fail(slot, over_budget(doing, budget))

    def _receive(self, slot: _Slot, line: dict[str, Any]) -> None:
        if not slot.ready:
            slot.worker.check_ready(line)
            slot.ready = True
            return
        if slot.index is None:
            raise WorkerFailed("the TensorFlow worker answered out of order")
        i, slot.index = slot.index, None
        self._finish(i, Worker.answer(i, line))

    def _fail(self, slot: _Slot, reason: str) -> None:
        """The worker of ``slot`` is gone: its request (if any) fails with ``reason``."""
        slot.worker.kill()
        self.slots.remove(slot)
        if slot.queue:  # the rest of its group goes to the next free worker, still in order
            self.queues.append(slot.queue)
        if not slot.ready:
            self.start_failure = reason
            return
        if slot.index is not None:
            out = self.on_failure(reason, slot.index)
            out["seconds"] = round(time.perf_counter() - slot.begin, 4)
            self._finish(slot.index, out)

    def _finish(self, i: int, result: dict[str, Any]) -> None:
        self.results[i] = result
        self.done += 1
        self.progress.update(self.done)

    def close(self) -> None:
        for slot in self.slots:
            if slot.index is None:
                slot.worker.close()
            else:
                slot.worker.kill()
        self.slots = []


def run_proofs(
    jobs: list[dict[str, Any]], cache_dir: Path | None, workers: int = 1
) -> list[dict[str, Any]]:
    """Fix proofs, served by the same worker as verdicts and cached like them: a re-run on
    unchanged code gets every proof from the cache and imports no TensorFlow."""
    version = tf_version()
    if version is None:
        return [{"verdict": "failed", "detail": "TensorFlow is not installed"} for _ in jobs]
    cache = Cache(cache_dir, "proof")
    keys = [key(json.dumps(job, sort_keys=True), version) for job in jobs]
    results: list[dict[str, Any] | None] = []
    for k in keys:
        hit = cache.get(k)
        results.append(hit if isinstance(hit, dict) and hit.get("verdict") else None)
    todo = [i for i, r in enumerate(results) if r is None]
    if todo:
        answers = serve(
            [{"proof": jobs[i]} for i in todo],
            lambda reason, _i: {"verdict": "failed", "detail": reason, "_nocache": True},
            workers=workers,
        )
        for i, answer in zip(todo, answers, strict=True):
            nocache = answer.pop("_nocache", False)
            answer.pop("seconds", None)
            results[i] = answer
            if not nocache:
                cache.put(keys[i], answer)
    return [r if r is not None else {"verdict": "failed"} for r in results]


def worker_command() -> list[str]:
    """The worker's interpreter line, without the working directory on its path: ``-m``
    would put it first, and a user's ``inspect.py`` or ``random.py`` there would shadow the
    standard library TensorFlow imports (every probe then failed)."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "tfnumlint.verify.worker"]
    return [
        sys.executable,
        "-c",
        "import runpy, sys; sys.path.pop(0); "
        "runpy.run_module('tfnumlint.verify.worker', run_name='__main__', alter_sys=True)",
    ]


def over_budget(doing: str, budget: float) -> str:
    """Why a request was stopped: the parent's timeout and a probe's own stop say the same,
    and how to give it longer."""
    hint = " (--probe-timeout sets it)" if doing == "probe" else ""  # a worker's start: fixed
    return f"{doing} exceeded its {budget:g} s budget{hint}"


def failed(reason: str, probe: dict[str, Any], cache: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "inconclusive", "detail": reason, "dtype": probe.get("dtype")}
    if not cache:
        out["_nocache"] = True
    return out


def verify_findings(
    findings: list[Finding], settings: Settings, cache_dir: Path | None, workers: int = 1
) -> list[str]:
    """Set ``finding.verification`` for every finding with a probe, with up to ``workers``
    TensorFlow workers at once; return notices."""
    probed = [(f, f.probe) for f in findings if f.probe is not None]
    if not probed:
        return []
    version = tf_version()
    if version is None:
        return [NO_TF_NOTICE]
    cache = Cache(cache_dir, "verify")
    todo: list[tuple[Finding, dict[str, Any]]] = []
    keys: list[str] = []
    for finding, probe in probed:
        k = cache_key(probe, version, settings)
        hit = cache.get(k)
        if isinstance(hit, dict) and hit.get("status"):
            finding.verification = to_verification(hit)
        else:
            todo.append((finding, probe))
            keys.append(k)
    if not todo:
        return []
    results = run_probes(todo, float(settings.exploding_gradient), min(workers, MAX_WORKERS))
    for (finding, _), k, result in zip(todo, keys, results, strict=True):
        nocache = result.pop("_nocache", False)
        finding.verification = to_verification(result)
        if not nocache:
            cache.put(k, result)
    return []
