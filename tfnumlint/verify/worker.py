"""The TensorFlow worker: ``python -m tfnumlint.verify.worker``.

It imports TF once, prints a ready line, then answers one JSON request per stdin line
(``{"id", "probe", "threshold"}`` for a verdict, ``{"id", "proof"}`` for a fix proof) with
one JSON result line.  It runs isolated from the
parent so that a segfault, abort or runaway allocation only costs the probe in flight.
The protocol goes over a private copy of stdout; fd 1 is pointed at stderr so stray C-level
prints cannot corrupt it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import warnings

MEMORY_LIMIT = 8 << 30


def memory_bound() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return soft if soft != resource.RLIM_INFINITY else MEMORY_LIMIT


def limit_memory() -> None:
    """Bound the address space (generous: TF maps a lot) so an OOM cannot take the machine."""
    limit = int(os.environ.get("TFNUMLINT_PROBE_MEMORY", MEMORY_LIMIT))
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        pass


def protocol_stream():
    """A private dup of stdout for results; fd 1 then goes to stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def inject_fault(rule: str) -> None:
    """Test-only: TFNUMLINT_TEST_FAULT=crash:<rule> / hang:<rule> / abort:<rule> / oom:<rule>."""
    spec = os.environ.get("TFNUMLINT_TEST_FAULT", "")
    kind, _, target = spec.partition(":")
    if not target or target != rule:
        return
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "abort":
        os.abort()
    elif kind == "hang":
        while True:
            time.sleep(60)
    elif kind == "oom":
        _ = bytearray(1 << 46)  # 64 TiB: far past the address-space bound


def _verify_within(probe: dict, request: dict) -> dict:
    """The verdict on one probe, stopped between evaluations once its ``budget`` (seconds, from
    the parent) is used: the same answer the parent gives on a timeout."""
    from . import program
    from .probing import verify
    from .runner import failed, over_budget

    budget = request.get("budget")
    start = time.monotonic()
    program.DEADLINE[0] = start + float(budget) if budget else float("inf")
    try:
        return verify(probe, float(request.get("threshold", 1e6)))
    except program.OverBudget:  # not cached: a matter of time, not a property of the code
        out = failed(over_budget("probe", float(budget or 0)), probe, cache=False)
        out["seconds"] = round(time.monotonic() - start, 4)
        return out
    finally:
        program.DEADLINE[0] = float("inf")


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.filterwarnings("ignore")
    limit_memory()
    out = protocol_stream()
    start = time.perf_counter()
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})  # eager numerics
    if "--graphs" not in sys.argv[1:]:  # a saved-model worker needs neither before a request
        from . import probing, proving  # noqa: F401

    out.write(json.dumps({"ready": True, "import_seconds": time.perf_counter() - start}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        probe = request.get("probe") or request.get("proof") or {}
        try:
            inject_fault(str(probe.get("rule")))
            if "graph" in request:  # a saved model: loaded and linted here (verify/graphs)
                from .graphs.lint import lint_model

                result = lint_model(request["graph"])
            elif "proof" in request:
                from .proving import prove_safely

                result = prove_safely(request["proof"])
            else:
                result = _verify_within(probe, request)
        except MemoryError:
            result = {
                "status": "inconclusive",
                "detail": f"probe ran out of memory (bound {memory_bound() / 2**30:.0f} GiB)",
                "_nocache": True,  # a resource failure, not a property of the code
            }
        except Exception as exc:  # a bug of ours must cost only this probe, not the worker
            result = {
                "status": "inconclusive",
                "detail": f"internal error while probing ({type(exc).__name__}); please report it",
                "_nocache": True,
            }
        out.write(json.dumps({"id": request["id"], "result": result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
