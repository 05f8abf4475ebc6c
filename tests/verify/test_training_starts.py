"""Other starts of the weights: a program's initializers draw its weights at random, so a run
from another draw that breaks at the flagged operation is one of its runs; a draw that breaks
elsewhere, or trains, leaves the run from the program's own start standing."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from tfnumlint.verify import training_rung

# A stand-in for a rendered slice: ``train`` breaks at operation ``at`` from draw ``BAD_DRAW``
# on, at step 0 (a start whose output is already out of the op's domain), else stays finite.
BODY = """\
LEARNING_RATE = 0.01
RANGES = {{}}
SPREAD = []
CALLS = []


def train(lr=LEARNING_RATE, steps=None, steer=False, seconds=None, draw=0):
    CALLS.append((lr, steer, steps, draw))
    if draw == {bad} and not steer:
        return {{"step": 0, "loss": float("nan"), "first_loss": float("nan"),
                "origins": {{{at}: "value"}}, "steps": 1, "budget": 1000,
                "loss_finite": False, "weights_finite": True, "losses": [float("nan")]}}
    return {{"step": None, "loss": 1.0, "first_loss": 1.0, "origins": {{}}, "steps": steps or 1000,
            "budget": 1000, "loss_finite": True, "weights_finite": True}}
"""


def test_a_start_that_breaks_at_the_flagged_op_is_the_run_reported() -> None:
    out = training_rung.run_body(BODY.format(bad=2, at=0), False, flagged=frozenset({0}))
    assert out["draw"] == 2 and out["run"]["step"] == 0
    assert out["control"] is not None  # the control starts from the same draw
    spec = {"draw": out["draw"]}
    assert "from draw 3 of its initial weights" in training_rung.describe(
        {**spec, "optimizer": {"optimizer": "adam"}, "data": {}}, out["run"], None, "value"
    ).replace("training the program's slice", "")


def test_a_start_that_breaks_elsewhere_leaves_the_program_start_standing() -> None:
    out = training_rung.run_body(BODY.format(bad=1, at=5), False, flagged=frozenset({0}))
    assert out["run"]["step"] is None and out.get("draw", 0) == 0
    assert out["draws"] == training_rung.INIT_DRAWS - 1  # the draw that broke elsewhere is not one
    trained = {"run": out["run"], "spec": {"optimizer": {"optimizer": "adam"}, "data": {}},
               "draws": 1}  # fmt: skip
    assert "from another draw of its initial weights" in training_rung.reached(trained)


def test_starts_that_train_are_counted_in_what_the_run_saw() -> None:
    out = training_rung.run_body(BODY.format(bad=-1, at=0), False, flagged=frozenset({0}))
    assert out["draws"] == training_rung.INIT_DRAWS
    trained = {"run": out["run"], "spec": {"optimizer": {"optimizer": "adam"}, "data": {}},
               "draws": out["draws"]}  # fmt: skip
    assert f"from each of {training_rung.INIT_DRAWS} other draws" in training_rung.reached(trained)
