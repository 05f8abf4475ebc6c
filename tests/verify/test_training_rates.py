"""The training rung's controls for a claim about the step size (a learning rate too high for
the features' scale, a loss summed over the batch): when the control at lr / 10 breaks too,
smaller rates are tried, and the verdict names the one that trains, or says that none did.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import INLINE_STEP, by_training, on_line, verified

from tfnumlint.verify import training_rung

# linear regression on raw features (up to ~1000) with a hand-written mean squared error: the
# stable limit is about 2.3e-6; run as written at lr 1e-4 it is non-finite by step 8 (fresh f07)
RAW_RENT = """\
    import numpy as np
    import tensorflow as tf

    gen = np.random.default_rng(7)
    area = gen.uniform(300, 1000, 5000)
    years = gen.uniform(0, 100, 5000)
    level = gen.integers(0, 30, 5000).astype(float)
    price = 0.9 * area - 3.0 * years + 12 * level + 200 + gen.normal(0, 50, 5000)
    feats = np.stack([area, years, level], 1).astype("float32")
    target = price.astype("float32")[:, None]


    def sq_err(t, o):
        return tf.reduce_mean(tf.square(t - o))


    net = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    net.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=RATE), loss=sq_err)
    net.fit(feats, target, batch_size=32, epochs=2)
"""


def _rate_verdict(rate: str) -> dict:
    program = RAW_RENT.replace("RATE", rate)
    results = [v for f, v in on_line(verified(program), "SGD(", program) if f.rule == "TNL505"]
    assert results, "TNL505 fires on the raw features"
    return results[0]


def test_a_rate_forty_times_its_limit_is_confirmed_by_the_smaller_rate_that_trains() -> None:
    """lr / 10 is still 4x the limit and breaks too; lr / 100 is below it and trains."""
    verdict = _rate_verdict("1e-4")
    assert by_training(verdict), verdict
    detail = verdict["detail"]
    assert "at lr / 10 too (step" in detail, detail
    assert "at lr / 100 it stays finite for 100 steps" in detail, detail
    assert "lr / 1000" not in detail  # the first rate that trains ends the search
    assert "not what breaks it" not in detail


def test_a_rate_forty_thousand_times_its_limit_is_confirmed_by_the_first_rate_below_it() -> None:
    """At lr 0.1 every tenth of the rate down to lr / 10000 (1e-5, still above the 2.3e-6
    limit) breaks too; lr / 100000 is below the limit, and its loss holds."""
    verdict = _rate_verdict("0.1")
    assert by_training(verdict), verdict
    detail = verdict["detail"]
    assert "at lr / 10 to lr / 10000 (each a tenth) too (steps" in detail, detail
    assert "at lr / 100000 it stays finite for 100 steps, its loss not rising" in detail, detail


def test_a_loss_that_rises_at_every_rate_tried_is_not_confirmed() -> None:
    """Gradient ascent on the squared error (its negative, minimised) diverges at every rate:
    geometrically at the program's, slowly at a tiny one.  A smaller rate that stays finite
    while its loss keeps rising shows no rate that trains."""
    program = (
        RAW_RENT.replace("RATE", "1e-4")
        .replace(
            "return tf.reduce_mean(tf.square(t - o))", "return -tf.reduce_mean(tf.square(t - o))"
        )
        .replace("batch_size=32", "batch_size=5000")
    )
    assert "-tf.reduce_mean" in program and "batch_size=5000" in program
    [verdict] = [v for f, v in on_line(verified(program), "SGD(", program) if f.rule == "TNL505"]
    assert verdict["status"] != "confirmed", verdict
    assert "but its loss keeps rising" in verdict["detail"], verdict["detail"]
    assert "no rate tried trains it" in verdict["detail"], verdict["detail"]


@pytest.mark.parametrize(
    ("losses", "held"),
    [
        ([3.1e4, 2.8e4, 1.8e4] + [2.5e4, 1.7e4, 3.2e4] * 5 + [3.0e4, 2.2e4], True),  # a plateau
        ([5.0, 4.0, 3.0, 2.5, 2.2, 2.0, 1.9, 1.8, 1.7, 1.6], True),  # it falls
        ([1.0 * 1.002**i for i in range(100)], False),  # a slow rise: a divergence, however slow
        ([-(1.0 * 1.01**i) for i in range(20)], False),  # a negative loss growing in size
    ],
)
def test_a_smaller_rate_trains_only_where_its_loss_holds(losses, held) -> None:
    run = {"step": None, "steps": len(losses), "losses": losses,
           "first_loss": losses[0], "loss": losses[-1]}  # fmt: skip
    assert training_rung.loss_held(run) is held
    assert training_rung.trains(run, len(losses)) is held
    assert not training_rung.trains(run, len(losses) + 1)  # the budget cut it short


def _run(losses: list[float]) -> dict:
    return {"step": len(losses) - 1, "losses": losses}


@pytest.mark.parametrize(
    ("losses", "blow_up"),
    [
        ([5e4, 2.8e8, 2.2e12, 1.6e16, 1.2e20, float("inf")], True),  # x1e4 a step
        ([3.0, 2.0, 1.0, 4.0, 30.0, float("nan")], True),  # falls, then rises to the break
        ([1.0 * 1.01**i for i in range(8)] + [float("nan")], False),  # a slow drift
        ([2.0, 1.9, 1.8, 1.8, 1.7, float("nan")], False),  # a break out of a calm run
        ([5e4, float("inf")], False),  # one step: nothing to see a rise in
    ],
)
def test_only_a_geometric_blow_up_early_in_the_run_is_taken_to_smaller_rates(
    losses, blow_up
) -> None:
    assert training_rung.blew_up(_run(losses), 100) is blow_up
    # a break as late as a tenth of the control's steps is not early
    assert not training_rung.blew_up(_run(losses), 5 * len(losses))


def _findings(program: str) -> list:
    """The findings of ``program``, with their probes (not verified)."""
    from tfnumlint.engine import LintOptions, lint_source, load_all
    from tfnumlint.rules.registry import CHECKS
    from tfnumlint.source import Source

    load_all()
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    return lint_source(Source("train.py", text, text.encode()), options).findings


def _programs(program: str) -> dict[str, dict]:
    """Each learning-rate finding's training-rung spec, by rule."""
    return {
        f.rule: f.probe["program"] for f in _findings(program) if (f.probe or {}).get("program")
    }


def test_the_saturation_rule_keeps_its_one_control() -> None:
    """A learning rate too high for the features' scale claims a step size: smaller rates
    follow its control.  One that saturates the output layer (TNL501) claims a state of the
    logits, which a smaller rate reaching later or not at all does not settle: lr / 10 alone."""
    further = _programs(RAW_RENT.replace("RATE", "1e-4"))["TNL505"]["further"]
    assert further == [10.0**k for k in range(2, 9)]  # every tenth of the rate to lr / 1e8
    assert _programs(INLINE_STEP)["TNL501"]["further"] == []


# a summed squared error (written with ``** 2``) over 4096-row slices of the data, trained
# with SGD(0.01) by a tape step on two Dense layers called directly: run as written, the
# loss overflows at step 7 (fresh f08)
SLICED_BATCHES = (
    (Path(__file__).resolve().parents[1] / "rules" / "TNL506" / "bad_sliced_batches.py")
    .read_text()
    .replace("  # error: TNL506", "")
)


def test_a_summed_loss_over_sliced_batches_is_found_and_trained_as_the_program_runs() -> None:
    specs = _programs(SLICED_BATCHES)
    assert set(specs["TNL506"]["weights"]) == {
        "hidden.kernel", "hidden.bias", "head.kernel", "head.bias"
    }  # fmt: skip
    [verdict] = [v for f, v in verified(SLICED_BATCHES) if f.rule == "TNL506"]
    assert by_training(verdict), verdict
    assert "batches of 4096" in verdict["detail"]
    assert "at lr / 4096 (the step of the batch mean) it stays finite" in verdict["detail"]


def test_a_square_written_with_the_operator_is_a_squared_loss() -> None:
    [summed] = [f for f in _findings(SLICED_BATCHES) if f.rule == "TNL506"]
    assert summed.probe["loss"] == "squared"
    assert summed.probe["batch"] == 4096


@pytest.mark.parametrize("ran", [0, 40])
def test_a_smaller_rate_the_time_budget_cuts_short_shows_nothing(monkeypatch, ran) -> None:
    """The run breaks at step 9 and lr / 10 at step 18; lr / 100, stopped by the time budget
    (or never started), is finite only so far: no confirmation, and the verdict says which
    rate ran how far."""
    run = {"step": 9, "steps": 10, "budget": 300, "loss": float("inf"), "first_loss": 5e4,
           "loss_finite": False, "weights_finite": False, "origins": {}}  # fmt: skip
    control = {"step": 18, "steps": 19, "budget": 300}
    smaller = {"step": None, "steps": ran, "budget": 300}
    out = {"run": run, "control": smaller, "steer": False, "rate_free": True,
           "tried": [(10.0, control), (100.0, smaller)], "steps": 100}  # fmt: skip
    monkeypatch.setattr(training_rung, "run_body", lambda *a, **k: out)
    spec = _programs(RAW_RENT.replace("RATE", "1e-4"))["TNL505"]
    trained = training_rung.verify_program(spec)
    assert trained["status"] == "finite", trained
    text = training_rung.reached(trained)
    assert "at lr / 10 too (step 18); lr / 100 " in text, text
    assert ("did not start" in text) is (ran == 0), text
    assert ("stopped by the time budget after 40 steps" in text) is (ran == 40), text
    assert "whether a smaller rate trains is not shown" in text


# The classic per-example linear regression of TF1 tutorials: raw areas fed one row a step from
# a zip loop, weights drawn by NumPy, and a squared error summed and divided by 2n
ONE_ROW = (
    (Path(__file__).resolve().parents[1] / "rules" / "TNL505" / "bad_one_example_a_step.py")
    .read_text()
    .replace("  # error: TNL505", "")
)


def test_a_row_a_step_from_a_zip_loop_is_a_batch_of_one_row_of_the_array() -> None:
    from tfnumlint.verify.repro_program import batch_size

    spec = _programs(ONE_ROW)["TNL505"]
    assert batch_size(spec) == (1, True)
    [feed] = spec["data"]["X"]["feeds"]
    assert feed["rows"] == "batch" and feed["batch"] == 1 and feed.get("data") is not None


def test_weights_numpy_draws_start_from_that_draw_not_an_assumed_initializer() -> None:
    spec = _programs(ONE_ROW)["TNL505"]
    for name in ("W", "b"):
        assert spec["weights"][name]["init"] == "drawn", spec["weights"][name]
        assert spec["weights"][name]["shape"] == []  # rng.randn(): one number
    assert not [a for a in spec["assumed"] if "starts as" in a]
