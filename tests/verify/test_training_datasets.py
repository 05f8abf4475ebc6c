"""Keras ``fit`` on a ``tf.data`` pipeline of arrays (``Dataset.from_tensor_slices((x, y))``,
shuffled and batched): the training rung draws the same batches of the same arrays as
``fit(x, y, batch_size=B)`` would.  A pipeline that changes its elements (``map``) or gives no
``(x, y)`` pair is not read as one."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_conv import program_of
from test_training_rung import by_training, on_line, verified

from tfnumlint.verify.repro_program import batch_size

# run as written, its loss is NaN at batch 16 of the first epoch (1 - p rounds to 0)
PIPELINE = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (4096, 10)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096).batch(64)


    def bce(t, p):
        return -tf.reduce_mean(t * tf.math.log(p) + (1 - t) * tf.math.log(1 - p))


    model = tf.keras.Sequential([
        tf.keras.layers.Dense(32, activation="relu", input_shape=(10,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=bce)
    model.fit(ds, epochs=20)
"""


def test_fit_on_a_batched_pipeline_of_arrays_draws_batches_of_those_arrays() -> None:
    spec = program_of(PIPELINE)
    assert batch_size(spec) == (64, True)
    assert set(spec["data"]) == {"x", "y"}
    for name in ("x", "y"):
        [feed] = spec["data"][name]["feeds"]
        assert feed.get("data") is not None and feed["batch"] == 64


def test_fit_on_a_pipeline_is_confirmed_by_its_own_training_near_the_program_s_step() -> None:
    results = on_line(verified(PIPELINE), "(1 - t) * tf.math.log(1 - p)", PIPELINE)
    confirmed = [v for f, v in results if f.rule == "TNL101" and by_training(v)]
    assert confirmed, [v.get("detail") for _, v in results]
    assert "batches of 64" in confirmed[0]["detail"]
    assert 1 <= confirmed[0]["observed"]["step"] <= 160  # the program's own run: batch 16


@pytest.mark.parametrize(
    "pipeline",
    [
        "tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2.0, b)).batch(64)",
        "tf.data.Dataset.from_tensor_slices(x).batch(64)",
        "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096)",
    ],
)
def test_a_pipeline_that_changes_its_elements_or_is_not_batched_is_not_read(pipeline) -> None:
    program = PIPELINE.replace(
        "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096).batch(64)", pipeline
    )
    assert pipeline in program
    import textwrap

    from tfnumlint.engine import LintOptions, lint_source, load_all
    from tfnumlint.rules.registry import CHECKS
    from tfnumlint.source import Source

    load_all()
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    found = lint_source(Source("train.py", text, text.encode()), options).findings
    assert found and not [f for f in found if (f.probe or {}).get("program")]
