"""The step each confirmed nanruns finding reports, against the step its program really failed.

    python benchmarks/nanruns_steps.py [--report REPORT.json]

Lints ``../shared/nanruns`` with verification (or reads a ``--format json`` report of it), and
for every buggy program takes the finding at its hazard line (within one line, as ``check.py``
counts it).  A training-rung confirmation records the step it reached (``observed.step``); a
confirmation by a witness or an optimizer simulation has none ("no step").  Prints, per program, the step ``truth.json`` records, the step
reported, and whether the two agree within an order of magnitude: ``max(a, b) + 1 <= 10 *
(min(a, b) + 1)``, so step 0 and step 9 agree and step 0 and step 10 do not.  Nothing is
asserted: the table goes into benchmarks/SPEED.md with an explanation of every miss.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NANRUNS = ROOT.parent / "shared" / "nanruns"


def report(path: Path | None) -> list[dict]:
    if path is not None:
        return json.loads(path.read_text())["findings"]
    cmd = [sys.executable, "-m", "tfnumlint", "--format", "json", "--exit-zero", "--no-cache", "."]
    done = subprocess.run(cmd, cwd=NANRUNS, capture_output=True, text=True, timeout=3000)
    return json.loads(done.stdout)["findings"]


def reported_step(finding: dict) -> int | None:
    """The training step of a rung confirmation (None for a witness or a static one)."""
    observed = (finding.get("verification") or {}).get("observed")
    if isinstance(observed, str):
        try:
            observed = ast.literal_eval(observed)
        except (ValueError, SyntaxError):
            return None
    step = observed.get("step") if isinstance(observed, dict) else None
    return step if isinstance(step, int) else None


def agree(a: int, b: int) -> bool:
    return max(a, b) + 1 <= 10 * (min(a, b) + 1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", type=Path, help="a JSON report of ../shared/nanruns to read")
    args = ap.parse_args()
    truth = json.loads((NANRUNS / "truth.json").read_text())
    by_file: dict[str, list[dict]] = {}
    for f in report(args.report):
        by_file.setdefault(Path(f["path"]).as_posix().lstrip("./"), []).append(f)
    print("| program | mechanism | real step | reported | rung | within 10x |")
    print("|---|---|---|---|---|---|")
    for t in truth:
        hazard = t.get("hazard_file") or t["program"]
        near = [
            f
            for f in by_file.get(hazard, [])
            if abs(f["line"] - t["line"]) <= 1
            and (f.get("verification") or {}).get("status") == "confirmed"
        ]
        steps = [s for s in map(reported_step, near) if s is not None]
        real = t["nonfinite_step"]
        if steps:
            step = min(steps)
            verdict = "yes" if isinstance(real, int) and agree(step, real) else "**no**"
            shown, rung = str(step), "training"
        else:
            shown, rung = "-", "no step" if near else "not confirmed"
            verdict = "-"
        print(f"| {t['id']} | {t['family']} | {real} | {shown} | {rung} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
