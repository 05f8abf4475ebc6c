"""The training rung draws a fed value whose producer is a probability op as that producer's
output: a teacher's softmax predictions fed to a student's step are softmax rows (entries in
[0, 1], each row summing to 1), never uniform draws in [-1, 1]; and a run on them is the
program's own evidence, said to be drawn from the producer, not its values."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from test_reachability import probed
from test_training_rung import by_training, on_line, verified

from tfnumlint.verify import training_rung

SOFT_TARGETS = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(1)
    counts = rng.poisson(300.0, (2000, 5)).astype(np.float32)
    kind = rng.integers(0, 4, 2000)
    float_kind = np.int32  # a dtype held in a variable (only one case reads it)

    teacher = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(16, activation="relu"),
                                   tf.keras.layers.Dense(4, activation="softmax")])
    teacher.compile("adam", "sparse_categorical_crossentropy")
    teacher.fit(counts, kind, epochs=1, verbose=0)
    targets = PRODUCED

    student = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(4)])
    opt = tf.keras.optimizers.SGD(0.01)


    @tf.function
    def step(x, t):
        with tf.GradientTape() as tape:
            q = tf.nn.softmax(student(x))
            loss = -tf.reduce_mean(tf.reduce_sum(t * tf.math.log(q), axis=1))
        grads = tape.gradient(loss, student.trainable_variables)
        opt.apply_gradients(zip(grads, student.trainable_variables))
        return loss


    for i in range(100):
        idx = rng.integers(0, 2000, 64)
        step(counts[idx], PICKED)
"""

PREDICTED = "np.asarray(teacher.predict(counts, verbose=0))"


def program(produced: str = PREDICTED, picked: str = "targets[idx]") -> str:
    return SOFT_TARGETS.replace("PRODUCED", produced).replace("PICKED", picked)


def spec_of(src: str) -> dict:
    found = [f for f in probed(src, "train.py", ["TNL101"]) if f.probe and f.probe.get("program")]
    assert found, "no finding with a training spec"
    return found[0].probe["program"]


def drawn(spec: dict) -> dict[str, np.ndarray]:
    namespace: dict = {}
    exec(compile(training_rung.rendered(spec).body, "<rung>", "exec"), namespace)
    return namespace["data"]()


@pytest.mark.parametrize(
    "produced",
    [
        PREDICTED,  # the model's last Dense layer is a softmax
        "tf.nn.softmax(tf.keras.Sequential([tf.keras.layers.Dense(4)])(counts)).numpy()",
        "tf.nn.softmax(teacher.predict(counts, verbose=0), axis=-1).numpy().astype(np.float32)",
    ],
)
def test_a_softmax_producer_is_drawn_as_softmax_rows(produced: str) -> None:
    spec = spec_of(program(produced))
    t = drawn(spec)["t"]
    assert t.shape[1] == 4  # the producer's width, or that of `log(q)` it multiplies
    assert (t > 0).all() and (t < 1).all()
    assert np.allclose(t.sum(axis=1), 1.0, atol=1e-5)
    assert "softmax rows of standard-normal inputs" in training_rung.sources(spec)


def test_a_sigmoid_producer_is_drawn_as_sigmoid_values() -> None:
    spec = spec_of(program("tf.math.sigmoid(teacher(counts)).numpy()"))
    t = drawn(spec)["t"]
    assert (t > 0).all() and (t < 1).all() and t.std() > 0.05
    assert "sigmoid values of standard-normal inputs" in training_rung.sources(spec)


@pytest.mark.parametrize(
    "produced, picked",
    [
        # over the batch axis: its rows do not sum to 1
        ("tf.nn.softmax(teacher.predict(counts, verbose=0), axis=0).numpy()", "targets[idx]"),
        (PREDICTED, "targets[idx, :]"),  # an index into the row: not a row of the producer
        ("np.asarray(teacher.predict(counts, verbose=0), dtype=np.int32)", "targets[idx]"),
        # a dtype held in a variable is not read, whatever the variable is called
        ("teacher.predict(counts, verbose=0).astype(float_kind)", "targets[idx]"),
    ],
)
def test_what_is_not_a_producer_row_stays_an_unknown_draw(produced: str, picked: str) -> None:
    spec = spec_of(program(produced, picked))
    feed = spec["data"]["t"]["feeds"][0]
    assert "producer" not in feed
    assert "`t` = uniform draws in [-1, 1]" in training_rung.sources(spec)


def test_a_student_fed_its_teachers_softmax_is_confirmed_by_its_own_training() -> None:
    """The student's softmax of raw counts is exactly 0 at step 0, and the teacher's rows are
    positive: log(0) is -inf on data the code gives (the counts replayed, the targets drawn
    as the teacher's producer emits them), so the run is the program's own."""
    src = program()
    logs = [v for f, v in on_line(verified(src), "tf.math.log(q)", src) if f.rule == "TNL101"]
    assert any(by_training(v) for v in logs), [v.get("detail") for v in logs]
    detail = next(v["detail"] for v in logs if by_training(v))
    assert "`t` = softmax rows of standard-normal inputs" in detail
    assert "not the values it produced in the program" in detail
    assert "`targets`'s producer `teacher.predict(counts, verbose=0)` (a model whose" in detail


def test_the_log_softmax_student_has_nothing_to_confirm() -> None:
    src = (
        textwrap.dedent(program())
        .replace("q = tf.nn.softmax(student(x))", "lq = tf.nn.log_softmax(student(x))")
        .replace("tf.math.log(q)", "lq")
    )
    assert "log_softmax" in src and "math.log" not in src
    assert not [v for _, v in verified(src) if v.get("status") == "confirmed"]
