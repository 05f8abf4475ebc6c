"""Verification cost per program: each training program linted on its own, with verification,
as a user runs tfnumlint on one project.

    python benchmarks/verify_programs.py                      # ../shared/nanruns/{buggy,clean}
    python benchmarks/verify_programs.py DIR [DIR ...]        # every *.py / package in DIR
    python benchmarks/verify_programs.py --jobs 2 --tree /path/to/other/checkout

A program is a top-level ``*.py`` file or a package directory of each DIR.  Per program: the
wall time of the whole run (start-up, static pass, TensorFlow import, verification; no cache),
and the verifier's own seconds (the sum of the findings' ``verification.seconds``).  Prints the
median and p90 of both, per folder and overall.  Timings only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [
    ROOT.parent / "shared" / "nanruns" / "buggy",
    ROOT.parent / "shared" / "nanruns" / "clean",
]


def programs(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if (p.suffix == ".py" and p.is_file()) or (p.is_dir() and any(p.rglob("*.py")))
    )


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def run_one(program: Path, tree: Path, jobs: int, cache: Path) -> tuple[float, float, int]:
    """Wall seconds, the verifier's seconds, and the number of findings it timed."""
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from tfnumlint.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "--no-cache", "--show-refuted", "--exit-zero"]
    cmd += ["--format", "json", "--jobs", str(jobs), str(program)]
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(cache))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=program.parent)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{program}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    findings = json.loads(proc.stdout)["findings"]
    seconds = [f.get("verification", {}).get("seconds") or 0.0 for f in findings]
    return wall, sum(seconds), sum(1 for s in seconds if s)


def summary(label: str, rows: list[tuple[str, float, float, int]]) -> str:
    walls = [r[1] for r in rows]
    verifier = [r[2] for r in rows]
    return (
        f"| {label} | {len(rows)} | {statistics.median(walls):.1f} | {p90(walls):.1f} | "
        f"{statistics.median(verifier):.1f} | {p90(verifier):.1f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose tfnumlint runs")
    ap.add_argument("--limit", type=int, default=0, help="the first N programs of each folder")
    args = ap.parse_args()
    by_folder: dict[str, list[tuple[str, float, float, int]]] = {}
    with tempfile.TemporaryDirectory() as cache:
        for folder in args.folders:
            rows = by_folder.setdefault(folder.name, [])
            for program in programs(folder)[: args.limit or None]:
                wall, verifier, n = run_one(program, args.tree.resolve(), args.jobs, Path(cache))
                rows.append((program.name, wall, verifier, n))
                print(
                    f"{folder.name}/{program.name}: {wall:.1f} s wall, {verifier:.1f} s verifying {n} finding(s)",
                    flush=True,
                )
    print()
    print("| programs | n | wall median s | wall p90 s | verifier median s | verifier p90 s |")
    print("|---|---|---|---|---|---|")
    for name, rows in by_folder.items():
        print(summary(name, rows))
    print(summary("all", [r for rows in by_folder.values() for r in rows]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
