"""Linting a ~100 MB SavedModel, against the time TensorFlow takes just to load it.

    python benchmarks/saved_model_speed.py                  # a 100 MB SavedModel on disk
    python benchmarks/saved_model_speed.py --mb 10          # smaller, for a smoke run
    python benchmarks/saved_model_speed.py --other OLD_ROOT # another checkout, alternately

Builds a model with one log(softmax) head (two square dense layers; ``Model.export`` writes
each weight twice, so ``--mb 100`` holds 50 MB of weights) in a temporary directory, then
times, each in a fresh process, alternately: ``tf.saved_model.load`` alone, ``tfnumlint
--no-cache`` on the directory, and the other checkout's tfnumlint.  Prints the medians of
``--repeat`` runs, wall and CPU (the process and the children it waited for), as JSON;
nothing here is asserted by tests.

Measured 2026-12-05 on the shared 2-core machine, load average 4 to 6 from other sessions
(``--repeat 3 --other`` a checkout of 2374ab6, the code before this round):

    --mb 100 (100.3 MB):  load 4.60 s wall / 2.92 s CPU;  tfnumlint 7.50 s / 4.52 s
                          (1.63x / 1.55x);  2374ab6 8.10 s / 4.75 s (1.76x / 1.63x)
    --mb 200 (200.3 MB):  load 5.94 s / 2.99 s;  tfnumlint 12.85 s / 6.84 s (2.16x / 2.29x);
                          2374ab6 13.90 s / 6.77 s (2.34x / 2.26x)

The issue's bound (at most 30 s for a 100 MB SavedModel) holds: 7.5 s, and 12.9 s at 200 MB.

2026-12-07, branch graph33 (``--repeat 5 --other`` main 4e7ea94), load average 1.0 to 1.5:

    --mb 100 (100.3 MB):  load 4.64 s wall / 4.75 s CPU;  tfnumlint 6.91 s / 7.39 s
                          (1.49x / 1.56x);  main 7.20 s / 7.66 s (1.55x / 1.61x)
The 2026-12-02 figure (tfnumlint 155.1 s against a 63.2 s load, "--mb 100", then 200 MB on
disk, load average ~13) is not comparable: that machine was several times slower.
benchmarks/SPEED.md has the worker's own time, where this round's changes show.
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

BUILD = """
import sys, numpy as np, keras
width = int(sys.argv[2])
x = keras.Input((width,), name="x")
h = keras.layers.Dense(width, activation="relu")(x)
h = keras.layers.Dense(width, activation="relu")(h)
p = keras.layers.Softmax()(keras.layers.Dense(10)(h))
keras.Model(x, keras.ops.log(p)).export(sys.argv[1], verbose=False)
"""
LOAD = "import sys, tensorflow as tf; tf.saved_model.load(sys.argv[1])"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mb",
        type=float,
        default=100.0,
        help="the SavedModel's size on disk in MB (Model.export writes each weight twice)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--other", type=Path, help="another checkout's root, linted alternately with this one"
    )
    args = parser.parse_args()
    # two width x width dense layers of float32, each written twice by Model.export
    width = int((args.mb * 1e6 / 4 / 2 / 2) ** 0.5)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "big_sm"
        subprocess.run([sys.executable, "-c", BUILD, str(model), str(width)], check=True, env=env)
        size = sum(f.stat().st_size for f in model.rglob("*") if f.is_file()) / 1e6
        env["TFNUMLINT_CACHE_DIR"] = str(Path(tmp) / "cache")
        lint_argv = [sys.executable, "-m", "tfnumlint", "--no-cache", "-q", str(model)]
        times: dict[str, list[tuple[float, float]]] = {"load": [], "lint": [], "other": []}
        for _ in range(args.repeat):  # alternately, so that load changes hit all alike
            times["load"].append(timed([sys.executable, "-c", LOAD, str(model)], env))
            times["lint"].append(timed(lint_argv, env))
            if args.other is not None:
                other_env = dict(env, PYTHONPATH=str(args.other.resolve()))
                times["other"].append(timed(lint_argv, other_env))
    out: dict[str, float] = {"saved_model_mb": round(size, 1)}
    for clock, index in (("wall", 0), ("cpu", 1)):
        load = statistics.median(t[index] for t in times["load"])
        lint = statistics.median(t[index] for t in times["lint"])
        out[f"tf_load_{clock}_s"] = round(load, 2)
        out[f"lint_{clock}_s"] = round(lint, 2)
        out[f"ratio_{clock}"] = round(lint / load, 2)
        if times["other"]:
            other = statistics.median(t[index] for t in times["other"])
            out[f"other_lint_{clock}_s"] = round(other, 2)
            out[f"other_ratio_{clock}"] = round(other / load, 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
