"""Where the static pass spends its time, stage by stage, against a bare libcst parse timed in
the same run (alternately: parse, lint, parse, lint, ... so that a busy machine slows both).

    python benchmarks/stages.py                 # TF's python/ops, --jobs 1, one round each
    python benchmarks/stages.py --repeat 3      # medians of three alternations
    python benchmarks/stages.py --quick         # 40 files of it
    python benchmarks/stages.py --other /path/to/old/checkout   # also that tree's tfnumlint, alternately
    python benchmarks/stages.py --format text   # the text report (JSON also describes the fixes)

The lint command is ``tfnumlint --no-verify --no-cache --jobs 1 --format json``; the stage
table of one more run with ``--profile`` (see tfnumlint/stages.py, not timed: its accounting
costs CPU) is printed as it came.  Ratios are given by wall time
and by CPU time (user + system of the child): on a shared machine the CPU ratio is the steadier.
Nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import PARSE_SNIPPET, package_dir, timed

ROOT = Path(__file__).resolve().parent.parent


def lint_cmd(tree: Path, fmt: str = "json", profile: bool = False) -> list[str]:
    """The static run of the tfnumlint in ``tree`` (``profile``: with --profile, when that
    checkout has it; the timed runs go without, since the profiler's accounting costs CPU)."""
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from tfnumlint.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "--no-verify", "--no-cache", "--jobs", "1"]
    cmd += ["--exit-zero", "--format", fmt]
    if profile and (tree / "tfnumlint" / "stages.py").exists():
        cmd.append("--profile")
    return [*cmd, "."]


def copy_ops(dest: Path, quick: bool) -> tuple[int, int]:
    """TF's python/ops in ``dest`` (out of site-packages, which a .gitignore may cover)."""
    tf_dir = package_dir("tensorflow")
    if tf_dir is None or not (tf_dir / "python" / "ops").is_dir():
        raise SystemExit("TensorFlow's python/ops is not installed")
    src = tf_dir / "python" / "ops"
    if quick:
        dest.mkdir(parents=True)
        for f in sorted(src.glob("*.py"))[:40]:
            shutil.copy(f, dest / f.name)
    else:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    files = list(dest.rglob("*.py"))
    return len(files), sum(f.read_bytes().count(b"\n") for f in files)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--other", type=Path, help="another checkout, timed alternately too")
    ap.add_argument("--format", default="json", choices=("json", "text"), help="report format")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "ops"
        n_files, lines = copy_ops(corpus, args.quick)
        env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(Path(tmp) / "cache"))
        env.pop("TFNUMLINT_PROFILE", None)
        parse = [sys.executable, "-c", PARSE_SNIPPET, "."]
        trees = {"this": ROOT} | ({"other": args.other.resolve()} if args.other else {})
        times: dict[str, list[tuple[float, float]]] = {"parse": []} | {k: [] for k in trees}
        tables: dict[str, str] = {}
        for _ in range(args.repeat):
            wall, _, _, cpu = timed(parse, corpus, env)
            times["parse"].append((wall, cpu))
            for name, tree in trees.items():
                wall, cpu, _err = _timed_with_stderr(lint_cmd(tree, args.format), corpus, env)
                times[name].append((wall, cpu))
        for name, tree in trees.items():  # the stage tables: one more run each, not timed
            tables[name] = _timed_with_stderr(lint_cmd(tree, args.format, True), corpus, env)[2]
    print(
        f"corpus: TF python/ops, {n_files} files, {lines} lines; {args.repeat} alternation(s); "
        f"--format {args.format}"
    )
    base_wall = statistics.median(w for w, _ in times["parse"])
    base_cpu = statistics.median(c for _, c in times["parse"])
    print("| run | wall s | x parse | CPU s | x parse |")
    print("|---|---|---|---|---|")
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        label = "bare libcst parse" if name == "parse" else f"tfnumlint ({name} checkout)"
        print(
            f"| {label} | {wall:.2f} | {wall / base_wall:.2f}x | {cpu:.2f} | {cpu / base_cpu:.2f}x |"
        )
    for name, table in tables.items():
        print(f"\nstage table, {name} checkout:\n{table.strip() or '(no --profile support)'}")
    return 0


def _timed_with_stderr(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and the stage table a run printed."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read()
    if os.waitstatus_to_exitcode(status) not in (0, 1, 2):
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{stderr[-2000:]}")
    table = "\n".join(
        line for line in stderr.splitlines() if line.startswith(("tfnumlint profile", "  "))
    )
    return wall, usage.ru_utime + usage.ru_stime, table


if __name__ == "__main__":
    raise SystemExit(main())
