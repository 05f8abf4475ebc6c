"""Measure the training probes: seconds per probe after the TensorFlow import, per recipe.

The probes are the ones the static pass emits for small training programs (the seed
autoencoders, SGD on literal features, a summed cross-entropy, TNL502's Dense stacks); each is
verified ``--repeat`` times in this process, fresh each time (every probe traces its own
tf.function and builds its own optimizer, as in the worker).

Run: python benchmarks/training_probes.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tfnumlint.engine import LintOptions, lint_source  # noqa: E402
from tfnumlint.source import Source  # noqa: E402

PROGRAMS = {
    "gd_linspace": """\
        import numpy as np
        import tensorflow as tf

        x_data = np.linspace(-8, 8, 100)
        w = tf.Variable(0.0)
        opt = tf.keras.optimizers.SGD(learning_rate=0.1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(w * x_data - 1.0))
        """,
    "summed_xent": """\
        import numpy as np
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        W = tf.Variable(tf.zeros([784, 10]))
        y = tf.nn.softmax(tf.matmul(x, W))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(-tf.reduce_sum(y_ * tf.log(y)))
        batch_x = np.random.rand(200, 784)
        sess.run(step, feed_dict={x: batch_x})
        """,
    # TNL502's confirming path: ten relu layers under Adam at lr 0.1, and lr 0.01 as control
    "deep_adam": """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(16,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
        """,
    # TNL502 on a plain regression: both runs calm
    "adam_mse": """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(8,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        """,
}


def probes() -> list[tuple[str, dict]]:
    """(label, probe) for every training finding of the programs and the seed examples."""
    sources = {name: textwrap.dedent(code) for name, code in PROGRAMS.items()}
    for path in sorted((ROOT / "examples").glob("autoencoder_*.py")):
        sources[path.stem] = path.read_text()
    # the seed autoencoders confirm: NaN near step 220 at lr 0.01, then lr 0.001 for three times
    # as many steps (651 and 717), where the control stops
    codes = frozenset({"TNL501", "TNL502", "TNL505", "TNL506"})
    out = []
    for name, text in sources.items():
        options = LintOptions(codes=codes, slice_probes=True)
        result = lint_source(Source(f"{name}.py", text, text.encode()), options)
        for f in result.findings:
            if f.probe is not None:
                out.append((f"{name} {f.rule} {f.probe.get('recipe')}", f.probe))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = probes()
    start = time.perf_counter()
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    from tfnumlint.verify.probing import verify

    print(f"TensorFlow {tf.__version__} import: {time.perf_counter() - start:.2f} s")
    every: list[float] = []
    for label, probe in work:
        times, status = [], ""
        for _ in range(args.repeat):
            begin = time.perf_counter()
            status = verify(probe, 1e6)["status"]
            times.append(time.perf_counter() - begin)
        every.extend(times)
        print(
            f"{label:42} {status:13} median {statistics.median(times):.3f} s  max {max(times):.3f} s"
        )
    print(f"all training probes: median {statistics.median(every):.3f} s, max {max(every):.3f} s "
          f"over {len(every)} runs")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
