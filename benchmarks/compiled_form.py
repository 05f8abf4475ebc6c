"""What probing the compiled form costs: every probe of ``../shared/nanruns`` verified eager-only
(``forms: ["eager"]``) and in both forms, alternately, in one worker with no cache.

Prints the median seconds per probe and per program (the sum of its probes' seconds) for each.

Run: python benchmarks/compiled_form.py [NANRUNS_DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tfnumlint.engine import LintOptions, lint_source  # noqa: E402
from tfnumlint.model import Finding  # noqa: E402
from tfnumlint.ruledocs import all_docs  # noqa: E402
from tfnumlint.source import read_source  # noqa: E402
from tfnumlint.verify import runner  # noqa: E402


def nanruns_findings(root: Path) -> list[Finding]:
    """Each program file linted on its own (a package's cross-file facts are not followed)."""
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    found = []
    for path in sorted(root.glob("*/**/*.py")):
        found += lint_source(read_source(path, str(path.relative_to(root))), options).findings
    return [f for f in found if f.probe is not None]


def program_of(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[:2]) if len(parts) > 2 else path


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "nanruns"
    fs = nanruns_findings(root)
    jobs = []
    for f in fs:
        assert f.probe is not None
        jobs += [(f, {**f.probe, "forms": ["eager"]}), (f, f.probe)]
    results = runner.run_probes(jobs, 1e6)
    per: dict[str, list[float]] = {"eager": [], "both": []}
    programs: dict[str, dict[str, float]] = {
        "eager": defaultdict(float),
        "both": defaultdict(float),
    }
    changed = 0
    for i, (f, _) in enumerate(jobs):
        form = "eager" if i % 2 == 0 else "both"
        seconds = float(results[i].get("seconds", 0.0))
        per[form].append(seconds)
        programs[form][program_of(f.path)] += seconds
        if form == "both" and "only when compiled" in str(results[i].get("detail")):
            changed += 1
    print(json.dumps({
        "probes": len(fs),
        "programs": len(programs["both"]),
        "compiled_only_verdicts": changed,
        "per_probe_median_s": {k: round(statistics.median(v), 3) for k, v in per.items()},
        "per_program_median_s": {
            k: round(statistics.median(v.values()), 3) for k, v in programs.items()
        },
        "per_program_max_s": {k: round(max(v.values()), 3) for k, v in programs.items()},
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
