"""Parent side of verification: cache lookups, one isolated TF worker, verdicts on findings.

This module never imports TensorFlow, so a warm re-run (every verdict cached) costs no TF
import at all.  Probes go to one worker subprocess one at a time, each with a time budget;
a crash or timeout marks that finding inconclusive and the rest continue in a fresh worker.
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
from dataclasses import dataclass
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
READY_TIMEOUT = 180.0


def tf_version() -> str | None:
    """The installed TensorFlow version, read from package metadata (no import)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def probe_timeout() -> float:
    try:
        return float(os.environ.get("TFNUMLINT_PROBE_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


VERDICT_SCHEMA = "trail-1"  # verdicts carry their gate trail (and a reproducer): older ones do not


def cache_key(probe: dict[str, Any], version: str, settings: Settings) -> str:
    threshold = repr(float(settings.exploding_gradient))
    return key(json.dumps(probe, sort_keys=True), version, threshold, VERDICT_SCHEMA)


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
        """``graphs_only``: a worker for saved models only, which skips importing the probe
        and proof machinery (half a second of libcst and tracing modules at startup)."""
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = (
            root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        )
        stderr = None if os.environ.get("TFNUMLINT_DEBUG") else subprocess.DEVNULL
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tfnumlint.verify.worker",
                *(["--graphs"] if graphs_only else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes
        worker = cls(proc, proc.stdin, proc.stdout)
        try:
            ready = worker.read(READY_TIMEOUT, "starting the TensorFlow worker")
        except WorkerFailed:
            worker.kill()
            raise
        if not ready.get("ready"):
            worker.kill()
            raise WorkerFailed("the TensorFlow worker did not start")
        return worker

    def read(self, timeout: float, doing: str) -> dict[str, Any]:
        """Next JSON line, or WorkerFailed on death / timeout."""
        deadline = time.monotonic() + timeout
        fd = self.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerFailed(f"{doing} exceeded its {timeout:g} s budget")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerFailed(self.death_reason())
            self.buffer += chunk
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

    def ask(
        self, ident: int, probe: dict[str, Any], threshold: float, timeout: float
    ) -> dict[str, Any]:
        return self.request({"id": ident, "probe": probe, "threshold": threshold}, timeout)

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request (a probe or a fix proof) and wait for its answer."""
        ident = payload["id"]
        request = json.dumps(payload) + "\n"
        try:
            self.stdin.write(request.encode())
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerFailed(self.death_reason()) from None
        reply = self.read(timeout, "probe")
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
    jobs: list[tuple[Finding, dict[str, Any]]], threshold: float
) -> list[dict[str, Any]]:
    """Ask the worker about each probe in order; failures cost only the probe in flight."""
    requests = [{"probe": probe, "threshold": threshold} for _, probe in jobs]
    return serve(requests, lambda reason, i: failed(reason, jobs[i][1], cache=False))


def serve(
    requests: list[dict[str, Any]],
    on_failure,
    timeout: float | None = None,
    graphs_only: bool = False,
) -> list[dict[str, Any]]:
    """Send each request to one worker, in order.  A crash or timeout costs only the request
    in flight (``on_failure(reason, index)`` answers it); the next one gets a fresh worker.
    ``timeout``: each request's budget (default: the probe budget); ``graphs_only``: every
    request is a saved model's (``Worker.start``)."""
    timeout = probe_timeout() if timeout is None else timeout
    results: list[dict[str, Any]] = []
    worker: Worker | None = None
    progress = Progress(len(requests), "verifying", "findings", minimum=6)
    start_failure: str | None = None
    try:
        for i, payload in enumerate(requests):
            progress.update(i)
            if start_failure is not None:
                results.append(on_failure(start_failure, i))
                continue
            if worker is None:
                try:
                    worker = Worker.start(graphs_only)
                except WorkerFailed as exc:
                    start_failure = exc.reason
                    results.append(on_failure(exc.reason, i))
                    continue
            begin = time.perf_counter()
            try:
                results.append(worker.request({"id": i, **payload}, timeout))
            except WorkerFailed as exc:
                worker.kill()
                worker = None
                out = on_failure(exc.reason, i)
                out["seconds"] = round(time.perf_counter() - begin, 4)
                results.append(out)
    finally:
        if worker is not None:
            worker.close()
        progress.finish()
    return results


def run_proofs(jobs: list[dict[str, Any]], cache_dir: Path | None) -> list[dict[str, Any]]:
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
        )
        for i, answer in zip(todo, answers, strict=True):
            nocache = answer.pop("_nocache", False)
            answer.pop("seconds", None)
            results[i] = answer
            if not nocache:
                cache.put(keys[i], answer)
    return [r if r is not None else {"verdict": "failed"} for r in results]


def failed(reason: str, probe: dict[str, Any], cache: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "inconclusive", "detail": reason, "dtype": probe.get("dtype")}
    if not cache:
        out["_nocache"] = True
    return out


def verify_findings(
    findings: list[Finding], settings: Settings, cache_dir: Path | None
) -> list[str]:
    """Set ``finding.verification`` for every finding with a probe; return notices."""
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
    results = run_probes(todo, float(settings.exploding_gradient))
    for (finding, _), k, result in zip(todo, keys, results, strict=True):
        nocache = result.pop("_nocache", False)
        finding.verification = to_verification(result)
        if not nocache:
            cache.put(k, result)
    return []
