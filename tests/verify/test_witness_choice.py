"""Which witness is reported: among points showing a gradient symptom, one where the enclosing
statement's own gradient suffers too, so the witness shows what the user's loss sees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_reachability import probed  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402

BCE = """\
    import tensorflow as tf


    def binary_cross_entropy(output, target, epsilon=1e-8):
        return tf.reduce_mean(
            -(target * tf.math.log(output + epsilon)
              + (1.0 - target) * tf.math.log(1.0 - output + epsilon))
        )
    """


def _verdicts(src: str) -> dict[str, dict]:
    """Each TNL102 finding's eager verdict, keyed by the flagged term's source.  (Compiled,
    ``1.0 - output + 1e-8`` folds to ``1 - output`` and is -inf at output = 1:
    tests/verify/test_compiled.py; the witness choice is the eager form's.)"""
    out = {}
    for finding in probed(src, select=["TNL102"]):
        verdict = probing.verify({**finding.probe, "forms": ["eager"]}, 1e6)
        out["1 - output" if "1 - output" in verdict["detail"] else "output"] = verdict
    return out


def test_the_witness_weights_the_exploding_term_with_a_label_that_keeps_it():
    """log(1 - output + eps) explodes at output = 1 for any label, but a label of 1 multiplies
    it by 0: the reported point must be one where the loss's own gradient explodes."""
    verdict = _verdicts(BCE)["1 - output"]
    assert verdict["status"] == "confirmed" and verdict["symptom"] == "exploding-gradient"
    assert verdict["inputs"]["output"] == 1.0
    assert verdict["inputs"]["target"] != 1.0
    assert abs(verdict["observed"]["loss_gradient"]["output"]) > 1e6


def test_the_other_term_keeps_a_label_that_weights_it_too():
    verdict = _verdicts(BCE)["output"]
    assert verdict["status"] == "confirmed"
    assert verdict["inputs"]["output"] == 0.0 and verdict["inputs"]["target"] != 0.0
    assert abs(verdict["observed"]["loss_gradient"]["output"]) > 1e6
