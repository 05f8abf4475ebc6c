"""The wild dev set with verification, this checkout against another one, alternately.

    python ../shared/wild/run.py --no-verify               # once: downloads the sources
    python benchmarks/wild.py --other OLD_CHECKOUT [--repeat 1] [--no-verify] [--jobs N]

Each run lints all the packages of the wild dev set (``$TFNL_WILD_CACHE/src``, else
``~/.cache/tfnumlint-wild/src``) in one ``tfnumlint --format json --exit-zero`` process, as
``../shared/wild/run.py`` does, with an empty cache of its own, from a temporary working
directory (``python -m`` puts the working directory first on ``sys.path``), and the checkout
on ``PYTHONPATH``.  The two checkouts alternate, so the machine's load falls on both alike.
Prints wall and CPU seconds (the process and its children) per run, the medians and their
ratio, and writes each report next to the others (``--out``) for
``benchmarks/compare_reports.py``.  Timings only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sources() -> list[Path]:
    cache = Path(os.environ.get("TFNL_WILD_CACHE") or Path.home() / ".cache" / "tfnumlint-wild")
    found = sorted(p for p in (cache / "src").iterdir() if p.is_dir()) if cache.exists() else []
    if not found:
        sys.exit(f"no sources under {cache / 'src'}: run ../shared/wild/run.py --no-verify once")
    return found


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lint(checkout: Path, roots: list[Path], extra: list[str], out: Path) -> tuple[float, float]:
    """One cold run of ``checkout`` over ``roots``: (wall s, CPU s); the report goes to ``out``."""
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, PYTHONPATH=str(checkout), TF_CPP_MIN_LOG_LEVEL="3")
        env["TFNUMLINT_CACHE_DIR"] = str(Path(work) / "cache")
        cmd = [sys.executable, "-m", "tfnumlint", "--format", "json", "--exit-zero", *extra]
        cpu, start = children_cpu(), time.perf_counter()
        done = subprocess.run(
            [*cmd, *map(str, roots)], cwd=work, env=env, capture_output=True, text=True
        )
        wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"{checkout}: exit {done.returncode}\n{done.stderr[-2000:]}")
    out.write_text(done.stdout)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "tfnumlint-wild")
    a = ap.parse_args()
    roots = sources()
    extra = (["--no-verify"] if a.no_verify else []) + (["--jobs", str(a.jobs)] if a.jobs else [])
    a.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
    for i in range(a.repeat):
        for label, checkout in (("other", a.other.resolve()), ("this", ROOT)):
            report = a.out / f"{label}-{i}.json"
            wall, cpu = lint(checkout, roots, extra, report)
            shown = len(json.loads(report.read_text())["findings"])
            runs[label].append((wall, cpu))
            print(
                f"{label:5}  run {i}: {wall:7.1f} s wall  {cpu:7.1f} s CPU  {shown} shown  {report}"
            )
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in runs.items()}  # fmt: skip
    print(f"median this {med['this'][0]:.1f} s wall / {med['this'][1]:.1f} s CPU; other "
          f"{med['other'][0]:.1f} s / {med['other'][1]:.1f} s; this/other "
          f"{med['this'][0] / med['other'][0]:.2f}x wall, "
          f"{med['this'][1] / med['other'][1]:.2f}x CPU")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
