"""Draw the confirmed findings to review by hand, and check that reviewed real hazards stay shown.

    python benchmarks/review_sample.py REPORT.json --seed S --confirmed 60
    python benchmarks/review_sample.py REPORT.json --check-kept benchmarks/reviews/kept-before.json
    python benchmarks/review_sample.py REPORT.json --labels benchmarks/reviews/labels.json

REPORT.json is the report written by ``python ../shared/wild/run.py --json REPORT.json``.  The
draw is the one ``run.py --sample N --seed S`` prints (``random.Random(S).sample`` over the shown
findings, in report order), grown in steps of 10 until it holds enough confirmed findings, so
that the reviewed list is reproducible from the report alone.  See ``benchmarks/REVIEW.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def shown(report: dict) -> list[dict]:
    """Findings the user sees: everything the verifier did not refute."""
    return [f for f in report["findings"] if f.get("verification", {}).get("status") != "refuted"]


def draw_confirmed(report: dict, seed: int, want: int) -> tuple[int, list[dict]]:
    """The first ``want`` confirmed findings of the smallest seeded sample (>= 60) that has them."""
    pool = shown(report)
    size = min(60, len(pool))
    while True:
        picked = random.Random(seed).sample(pool, size)
        confirmed = [f for f in picked if f["verification"]["status"] == "confirmed"]
        if len(confirmed) >= want or size == len(pool):
            return size, confirmed[:want]
        size = min(size + 10, len(pool))


def relative(path: str) -> tuple[str, str]:
    """(package, path inside it) for a path under the wild cache's ``src/`` folder."""
    tail = path.split("/src/", 1)[-1]
    package, _, rest = tail.partition("/")
    return package, rest


def check_kept(report: dict, kept_path: Path) -> list[dict]:
    """Reviewed real hazards (harmful/metric/precision) that the report no longer shows."""
    keys = {(*relative(f["path"]), f["line"], f["rule"]) for f in shown(report)}
    # one hazard, one finding: a finding also carries the codes of the rules merged into it,
    # and the places folded into it (a symptom that starts in it and carries on elsewhere)
    for f in shown(report):
        for code in f.get("related_rules") or ():
            keys.add((*relative(f["path"]), f["line"], code))
        for r in f.get("related") or ():
            if "rule" in r:  # a folded place (other related entries are call sites)
                keys.add((*relative(r["path"]), r["line"], r["rule"]))
    kept = json.loads(kept_path.read_text())
    return [k for k in kept if (k["package"], k["path"], k["line"], k["rule"]) not in keys]


def statuses(report: dict) -> dict[tuple[str, str, int, str], str]:
    """(package, path, line, rule) -> verification status, merged rule codes included."""
    out: dict[tuple[str, str, int, str], str] = {}
    for f in report["findings"]:
        status = f.get("verification", {}).get("status", "unverified")
        places = [
            (f["path"], f["line"], code) for code in (f["rule"], *(f.get("related_rules") or ()))
        ]
        places += [(r["path"], r["line"], r["rule"]) for r in f.get("related") or () if "rule" in r]
        for path, line, code in places:
            key = (*relative(path), line, code)
            if out.get(key) != "confirmed":  # the strongest verdict of a merged finding
                out[key] = status
    return out


def score_labels(report: dict, labels: list[dict]) -> dict[str, dict[str, int]]:
    """Every finding reviewed in an earlier round, by its class then its status in this report
    (``absent`` when the report has no such finding): the reviewed classes should move
    precondition/wrong/benign away from confirmed while harmful/metric/precision stay shown."""
    found = statuses(report)
    table: dict[str, dict[str, int]] = {}
    for lb in labels:
        status = found.get((lb["package"], lb["path"], lb["line"], lb["rule"]), "absent")
        row = table.setdefault(lb["kind"], {})
        row[status] = row.get(status, 0) + 1
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--confirmed", type=int, default=60)
    ap.add_argument("--check-kept", type=Path, nargs="+", help="kept lists (a glob's files)")
    ap.add_argument("--labels", type=Path, help="reviewed findings to score, by class")
    a = ap.parse_args()
    report = json.loads(a.report.read_text())
    if a.labels:
        for kind, row in sorted(score_labels(report, json.loads(a.labels.read_text())).items()):
            print(f"{kind:13s} " + "  ".join(f"{k}={v}" for k, v in sorted(row.items())))
        return 0
    if a.check_kept:
        any_lost = False
        for path in a.check_kept:
            lost = check_kept(report, path)
            for k in lost:
                print(f"LOST {k['package']}/{k['path']}:{k['line']} {k['rule']} ({k['kind']})")
            kept = len(json.loads(path.read_text())) - len(lost)
            print(f"{path.name}: kept {kept}, lost {len(lost)}")
            any_lost = any_lost or bool(lost)
        return 1 if any_lost else 0
    size, picked = draw_confirmed(report, a.seed, a.confirmed)
    print(f"# seed {a.seed}: sample of {size} shown findings, {len(picked)} confirmed")
    for i, f in enumerate(picked, 1):
        package, rel = relative(f["path"])
        print(f"{i}\t{package}/{rel}:{f['line']}:{f['column']}\t{f['rule']}\t{f['message'][:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
