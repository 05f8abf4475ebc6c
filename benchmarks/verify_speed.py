"""Measure the verifier: TF import time, then median/p95 seconds per probe (in one worker).

Run: python benchmarks/verify_speed.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "verify"))

from probe_helpers import binop, call, cmp, const, expr, free, inp, prob, seed_loss  # noqa: E402

from tfnumlint.model import Finding  # noqa: E402
from tfnumlint.rules import Settings  # noqa: E402
from tfnumlint.verify import runner  # noqa: E402


def sample_probes() -> list[dict]:
    """A spread of probes like the slicer emits: the seed loss, every rule family."""
    target, loss = seed_loss()
    dist = call("reduce_sum", call("square", binop("-", inp("a"), inp("b"))))
    pos = cmp(">", inp("x"), const(0))
    clip = call("clip_by_value", inp("p"), const(1e-7), const(1 - 1e-7))
    return [
        expr("TNL102", target, [free("z"), free("p")], loss=loss, eps=1e-10),
        expr("TNL101", call("log", inp("p")), [prob("p")]),
        expr("TNL101", call("log", clip), [prob("p")]),
        expr(
            "TNL201",
            binop("/", inp("x"), call("maximum", inp("d"), const(1e-6))),
            [free("x"), free("d")],
        ),
        expr("TNL202", call("sqrt", dist), [free("a"), free("b")]),
        expr("TNL202", call("sqrt", binop("+", dist, const(1e-12))), [free("a"), free("b")]),
        expr("TNL203", call("norm", binop("-", inp("a"), inp("b"))), [free("a"), free("b")]),
        expr("TNL205", call("acos", inp("c")), [free("c", -1.0, 1.0)]),
        expr("TNL301", call("exp", inp("x")), [free("x")]),
        expr("TNL302", call("where", pos, call("log", inp("x")), const(0.0)), [free("x")]),
        expr(
            "TNL302",
            call("where", pos, call("log", call("where", pos, inp("x"), const(1.0))), const(0.0)),
            [free("x")],
        ),
        expr(
            "TNL401",
            binop("-", binop("+", const(1e-10), const(1)), inp("p")),
            [prob("p")],
            eps=1e-10,
        ),
        expr(
            "TNL402",
            call("log", binop("+", inp("x"), const(1e-8))),
            [free("x", 0.0)],
            eps=1e-8,
            dtype="float16",
        ),
        expr("TNL105", call("log", binop("+", const(1), inp("x"))), [free("x")]),
        expr("TNL106", call("log", call("reduce_sum", call("exp", inp("x")))), [free("x")]),
    ]


def main() -> None:
    probes = sample_probes() * 3
    fs = [
        Finding("m.py", i, 1, i, 2, p["rule"], "x", "error", "m", probe=p)
        for i, p in enumerate(probes)
    ]
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        worker = runner.Worker.start()
        ready = time.perf_counter() - start
        worker.close()
        start = time.perf_counter()
        runner.verify_findings(fs, Settings(), Path(d))
        cold = time.perf_counter() - start
        start = time.perf_counter()
        runner.verify_findings(fs, Settings(), Path(d))
        warm = time.perf_counter() - start
    per = sorted(f.verification.seconds for f in fs)
    p95 = per[min(len(per) - 1, round(0.95 * (len(per) - 1)))]
    print(json.dumps({
        "probes": len(fs),
        "worker_start_and_tf_import_s": round(ready, 2),
        "per_probe_median_ms": round(statistics.median(per) * 1000, 1),
        "per_probe_p95_ms": round(p95 * 1000, 1),
        "cold_total_s": round(cold, 2),
        "warm_cached_total_s": round(warm, 3),
        "statuses": {s: sum(f.verification.status == s for f in fs) for s in ("confirmed", "refuted", "inconclusive")},
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
