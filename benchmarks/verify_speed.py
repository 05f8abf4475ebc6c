"""Measure the verifier: TF import time, then median/p95 seconds per probe (in one worker),
on the probes the real slicer emits for ``examples/`` and the rule docs' Examples.

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

from tfnumlint.config import Settings  # noqa: E402
from tfnumlint.engine import LintOptions, lint_source  # noqa: E402
from tfnumlint.model import Finding  # noqa: E402
from tfnumlint.ruledocs import all_docs  # noqa: E402
from tfnumlint.source import Source, read_source  # noqa: E402
from tfnumlint.verify import runner  # noqa: E402


def sample_findings() -> list[Finding]:
    """The findings of ``examples/`` and of every rule doc's Example, with the probes the
    real slicer emits for them: every rule family, as users meet them."""
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    sources = [read_source(p, str(p)) for p in sorted((ROOT / "examples").glob("*.py"))]
    found = [f for s in sources for f in lint_source(s, options).findings]
    for code, doc in sorted(all_docs().items()):
        text = doc.code_block("Example")
        if not text:
            continue
        found += lint_source(Source(f"doc_{code}.py", text, text.encode()), options).findings
    return [f for f in found if f.probe is not None]


def main() -> None:
    fs = sample_findings()
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
