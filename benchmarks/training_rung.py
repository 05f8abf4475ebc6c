"""Training-rung cost: how long training each objective's slice takes, per program.

    python benchmarks/training_rung.py                 # ../shared/nanruns/{buggy,clean}
    python benchmarks/training_rung.py DIR [DIR ...]   # every *.py / package in DIR

For every finding with a training-rung spec, in one process (TensorFlow imported once): the
seconds of its rung (rendering the script and every run: the program's data, the steered run,
the control).  Findings of one objective share one run, so a program's cost is the sum over
its distinct objectives.  Prints per program, then the median and p90 over programs.  Timings
only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT = [
    ROOT.parent / "shared" / "nanruns" / "buggy",
    ROOT.parent / "shared" / "nanruns" / "clean",
]


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def specs(program: Path) -> list[dict]:
    from tfnumlint.engine import LintOptions, lint_source, load_all
    from tfnumlint.rules.registry import CHECKS
    from tfnumlint.source import Source

    load_all()
    files = [program] if program.is_file() else sorted(program.rglob("*.py"))
    out = []
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    for path in files:
        text = path.read_text()
        result = lint_source(Source(str(path), text, text.encode()), options)
        out += [f.probe["program"] for f in result.findings if f.probe and f.probe.get("program")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path, default=DEFAULT)
    args = ap.parse_args()
    from tfnumlint.verify import training_rung

    per_program: list[float] = []
    for folder in args.dirs:
        for program in sorted(p for p in folder.iterdir() if p.suffix == ".py" or p.is_dir()):
            found = specs(program)
            if not found:
                continue
            start = time.perf_counter()
            for spec in found:
                training_rung.verify_program(spec)
            seconds = time.perf_counter() - start
            per_program.append(seconds)
            print(f"{folder.name}/{program.name}: {len(found)} findings, {seconds:.2f} s")
    if per_program:
        print(f"programs {len(per_program)}: median {statistics.median(per_program):.2f} s, "
              f"p90 {p90(per_program):.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
