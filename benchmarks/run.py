"""Reproducible speed table for tfnumlint, every figure a ratio to a baseline timed in the same run.

    python benchmarks/run.py            # full table (tensorflow/python/ops + keras/src + generated)
    python benchmarks/run.py --quick    # a smaller corpus, for a smoke run

The corpora are copied into a temporary directory first: the installed packages usually sit
under a .gitignore'd tree (pyenv's ``versions/``), which tfnumlint would rightly skip.
Timings are wall-clock medians of ``--repeat`` runs; nothing here is asserted by the tests.
tfnumlint runs from compiled bytecode, as pip installs it (``bytecode_env``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEMPLATE = '''"""Generated training script {i}."""
import tensorflow as tf

model = tf.keras.Sequential([
    tf.keras.layers.Dense({units}, activation="relu"),
    tf.keras.layers.Dense({classes}, activation="{act}"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate={lr})


def loss_fn(y, p):
    return -tf.reduce_mean(tf.reduce_sum(y * tf.math.log(p + {eps}), axis=-1))


def distance(a, b):
    return tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
'''


def display(cmd: list[str]) -> str:
    """The command as a user would type it."""
    return " ".join(["python", *cmd[1:]] if cmd and cmd[0] == sys.executable else cmd)


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def build_corpus(dest: Path, quick: bool) -> dict[str, int]:
    counts: dict[str, int] = {}
    tf_dir = package_dir("tensorflow")
    keras_dir = package_dir("keras")
    if tf_dir and (tf_dir / "python" / "ops").is_dir():
        src = tf_dir / "python" / "ops"
        if quick:
            (dest / "tf_ops").mkdir(parents=True)
            for f in sorted(src.glob("*.py"))[:40]:
                shutil.copy(f, dest / "tf_ops" / f.name)
        else:
            shutil.copytree(src, dest / "tf_ops", ignore=shutil.ignore_patterns("__pycache__"))
    if keras_dir and (keras_dir / "src").is_dir() and not quick:
        shutil.copytree(
            keras_dir / "src", dest / "keras_src", ignore=shutil.ignore_patterns("__pycache__")
        )
    gen = dest / "generated"
    gen.mkdir(parents=True)
    n = 40 if quick else 200
    for i in range(n):
        text = TEMPLATE.format(
            i=i,
            units=32 + i % 64,
            classes=2 + i % 10,
            act="softmax" if i % 2 else "sigmoid",
            lr=[1e-3, 1e-2, 3e-4][i % 3],
            eps=["1e-7", "1e-10", "1e-8"][i % 3],
        )
        (gen / f"train_{i:03d}.py").write_text(text)
    for sub in dest.iterdir():
        files = list(sub.rglob("*.py"))
        counts[sub.name] = len(files)
        counts[sub.name + "_lines"] = sum(f.read_bytes().count(b"\n") for f in files)
    return counts


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, int, str, float]:
    """Wall seconds, peak RSS in KiB (the process and the children it reaped), stdout, and
    CPU seconds (user + system: less sensitive than wall time to a shared machine)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-2000:]}")
    return wall, usage.ru_maxrss, stdout, usage.ru_utime + usage.ru_stime


def median_time(
    cmd: list[str], cwd: Path, repeat: int, env: dict | None = None
) -> tuple[float, int, str]:
    runs = [timed(cmd, cwd, env) for _ in range(repeat)]
    walls = [r[0] for r in runs]
    return statistics.median(walls), max(r[1] for r in runs), runs[-1][2]


PARSE_SNIPPET = (
    "import sys, pathlib, libcst\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
    "    try:\n"
    "        libcst.parse_module(p.read_bytes())\n"
    "    except Exception:\n"
    "        pass\n"
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    args = ap.parse_args()
    py = sys.executable
    rows: list[tuple[str, str, str]] = []
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        corpus = tmpdir / "corpus"
        counts = build_corpus(corpus, args.quick)
        cache = tmpdir / "cache"
        env = bytecode_env(dict(os.environ, TFNUMLINT_CACHE_DIR=str(cache)), tmpdir / "pyc")

        parse_cmd = [py, "-c", PARSE_SNIPPET, "."]
        base, _, _ = median_time(parse_cmd, corpus, args.repeat)
        figures["parse"] = base
        rows.append(
            (
                "1. bare libcst parse (baseline)",
                f"{base:.2f} s (1.00x)",
                "python -c '<parse every *.py with libcst>' .",
            )
        )

        lint = [py, "-m", "tfnumlint", "--no-verify", "--exit-zero", "--format", "json"]
        one = str(ROOT / "examples" / "autoencoder_keras.py")
        subprocess.run([*lint, "--no-cache", one], capture_output=True, env=env)  # the bytecode
        j1_cmd = [*lint, "--no-cache", "--jobs", "1", "."]
        # The project index's cost: the same run with every file linted on its own, timed
        # alternately with row 2 so that a busy machine slows both alike.
        alone_env = dict(env, TFNUMLINT_BENCH_NO_PROJECT="1")
        with_index, alone = [], []
        for _ in range(args.repeat):
            alone.append(timed(j1_cmd, corpus, alone_env))
            with_index.append(timed(j1_cmd, corpus, env))
        j1 = statistics.median(r[0] for r in with_index)
        j1_alone = statistics.median(r[0] for r in alone)
        rss1, out1 = max(r[1] for r in with_index), with_index[-1][2]
        cpu1 = statistics.median(r[3] for r in with_index)
        cpu1_alone = statistics.median(r[3] for r in alone)
        figures.update(jobs1=j1, jobs1_alone=j1_alone, cpu1=cpu1, cpu1_alone=cpu1_alone)
        rows.append(
            (
                "2. tfnumlint --no-verify --no-cache --jobs 1",
                f"{j1:.2f} s ({j1 / base:.2f}x row 1)",
                display(j1_cmd),
            )
        )
        rows.append(
            (
                "2b. the project index's cost (row 2 / each file alone)",
                f"wall {j1 / j1_alone:.3f}x ({j1_alone:.2f} s alone); "
                f"CPU {cpu1 / cpu1_alone:.3f}x ({cpu1:.2f} s / {cpu1_alone:.2f} s)",
                "TFNUMLINT_BENCH_NO_PROJECT=1 " + display(j1_cmd),
            )
        )

        j2_cmd = [*lint, "--no-cache", "--jobs", "2", "."]
        j2, _, out2 = median_time(j2_cmd, corpus, args.repeat, env)
        figures["jobs2"] = j2
        same = json.loads(out1)["findings"] == json.loads(out2)["findings"]
        rows.append(
            (
                "3. same, --jobs 2",
                f"{j2:.2f} s ({j2 / base:.2f}x row 1, {j2 / j1:.2f}x row 2; output identical: {same})",
                display(j2_cmd),
            )
        )

        cold_cmd = [*lint, "--jobs", "2", "."]
        cold = timed(cold_cmd, corpus, env)[0]
        warm, _, _ = median_time(cold_cmd, corpus, args.repeat, env)
        figures["cold"] = cold
        figures["warm"] = warm
        rows.append(
            (
                "4. warm-cache re-run (--jobs 2)",
                f"{warm:.2f} s ({warm / cold:.3f}x the cold cached run of {cold:.2f} s; {warm / j2:.3f}x row 3)",
                display(cold_cmd) + "  (run twice)",
            )
        )

        one_wall, tf_imported, one_cmd = one_file_run(py, env, args.repeat)
        figures["one_file"] = one_wall
        rows.append(
            (
                "5. one-file static run (compiled bytecode, as pip installs it)",
                f"{one_wall:.2f} s (TensorFlow imported: {tf_imported})",
                display(one_cmd),
            )
        )

        rss_mb = rss1 / 1024
        figures["rss_mb"] = rss_mb
        verify = verification_row(py, env)
        rows.extend(verify[0])
        figures.update(verify[1])
        rows.append(
            ("7. peak RSS, static corpus run (--jobs 1)", f"{rss_mb:.0f} MB", display(j1_cmd))
        )

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("corpus: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print()
    print("| row | result | command |")
    print("|---|---|---|")
    for name, result, cmd in rows:
        print(f"| {name} | {result} | `{cmd}` |")
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


def bytecode_env(env: dict, prefix: Path) -> dict:
    """``env`` for tfnumlint as pip installs it: from compiled bytecode (written on first use
    into ``prefix``).  This sandbox sets PYTHONDONTWRITEBYTECODE=1, which would compile every
    module of tfnumlint from source on every run: about 0.2 s, a tenth of a warm re-run."""
    out = dict(env, PYTHONPYCACHEPREFIX=str(prefix))
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out


def one_file_run(py: str, env: dict, repeat: int) -> tuple[float, bool, list[str]]:
    """Wall seconds of a one-file static run as an installed tfnumlint starts: from compiled
    bytecode, which pip writes at install time.  An editable install under
    PYTHONDONTWRITEBYTECODE=1 (this sandbox's default) compiles every module of tfnumlint from
    source on every run, about 0.2 s more; the warm-up run here writes the bytecode into a
    fresh cache of its own.  Also whether TensorFlow was imported (``-X importtime``, in a run
    of its own: its accounting costs time)."""
    one = ROOT / "examples" / "autoencoder_keras.py"
    args = ["-m", "tfnumlint", "--no-verify", "--no-cache", "--exit-zero", str(one)]
    with tempfile.TemporaryDirectory() as prefix:
        with_bytecode = bytecode_env(env, Path(prefix))
        subprocess.run([py, *args], capture_output=True, env=with_bytecode)  # writes it
        wall = statistics.median(
            timed([py, *args], ROOT, with_bytecode)[0] for _ in range(max(3, repeat))
        )
    proc = subprocess.run([py, "-X", "importtime", *args], capture_output=True, text=True, env=env)
    tf_imported = any(
        line.split("|")[-1].strip().split(".")[0] in ("tensorflow", "keras")
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    )
    return wall, tf_imported, [py, *args]


def verification_row(py: str, env: dict) -> tuple[list[tuple[str, str, str]], dict[str, float]]:
    if importlib.util.find_spec("tensorflow") is None:
        return [("6. verification", "skipped: TensorFlow is not installed", "")], {}
    imp = subprocess.run(
        [
            py,
            "-c",
            "import time; t=time.perf_counter(); import tensorflow; print(time.perf_counter()-t)",
        ],
        capture_output=True,
        text=True,
    )
    tf_import = float(imp.stdout.strip().splitlines()[-1]) if imp.returncode == 0 else float("nan")
    cmd = [
        py,
        "-m",
        "tfnumlint",
        "--format",
        "json",
        "--exit-zero",
        "--no-cache",
        "--show-refuted",
        str(ROOT / "examples"),
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    total = time.perf_counter() - start
    per_probe = []
    if proc.stdout:
        for f in json.loads(proc.stdout)["findings"]:
            seconds = f.get("verification", {}).get("seconds")
            if seconds:
                per_probe.append(seconds)
    per_probe.sort()
    if per_probe:
        med = statistics.median(per_probe)
        p95 = per_probe[min(len(per_probe) - 1, int(0.95 * len(per_probe)))]
        result = f"TF import {tf_import:.2f} s; per probe median {med * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms ({len(per_probe)} probes); examples/ total {total:.2f} s"
    else:
        med = p95 = float("nan")
        result = f"TF import {tf_import:.2f} s; no per-probe timings reported; examples/ total {total:.2f} s"
    return [("6. verification of examples/", result, display(cmd))], {
        "tf_import": tf_import,
        "probe_median": med,
        "probe_p95": p95,
        "verify_total": total,
    }


if __name__ == "__main__":
    raise SystemExit(main())
