"""Issue #11, preconditions a witness may rest on (``verify/preconditions.py``): a far tail of a
log-scale input (a logit of -100) and an empty selection (a mask with no entry set) are not
hazards of training; the same symptoms at values a model really produces stay confirmed.

Snippets are sliced by the real static pass and verified in-process; hand-written probes pin
the pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from conftest import differentiated  # noqa: E402
from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability_gate import one_verdict, verdicts  # noqa: E402

from tfnumlint.verify import preconditions  # noqa: E402
from tfnumlint.verify.program import Program, build, run  # noqa: E402
from tfnumlint.verify.symptoms import Witness  # noqa: E402
from tfnumlint.verify.witness import clamp_far_tail  # noqa: E402

# ---------------------------------------------------------------- far tails


def test_log_of_a_sigmoid_that_needs_a_logit_of_minus_100_is_not_confirmed():
    src = """\
        import tensorflow as tf


        class MyLoss(tf.keras.losses.Loss):
            def call(self, y_true, logits):
                p = tf.sigmoid(logits)
                return -tf.reduce_mean(y_true * tf.math.log(p))
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("needs `logits` = -100, past the float32 exp range")
    assert "at |`logits`| <= 30" in out["detail"]
    assert "seen: " in out["detail"]


def test_exp_of_a_negated_log_variance_is_not_confirmed():
    src = """\
        import tensorflow as tf


        class Gauss(tf.keras.layers.Layer):
            def call(self, x, log_var):
                return tf.reduce_sum(tf.square(x) * tf.exp(-log_var))
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "inconclusive", out
    assert "needs `log_var` = -100" in out["detail"]


def test_a_ratio_of_log_probabilities_needs_a_far_tail():
    src = """\
        import tensorflow as tf


        class Ppo(tf.Module):
            def loss(self, action_log_prob, sample_action_log_probs):
                return tf.reduce_mean(tf.exp(action_log_prob - sample_action_log_probs))
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "inconclusive", out
    assert "log_prob" in out["detail"].split(",")[0]


def test_a_predicted_probability_at_a_logit_of_minus_100_is_a_far_tail():
    """A sigmoid output (its producer, not its name) at logit -100 is a far tail."""
    src = """\
        import tensorflow as tf


        class PoissonLoss(tf.keras.losses.Loss):
            def call(self, y_true, z):
                y_pred = tf.sigmoid(z)
                return tf.reduce_mean(y_pred - y_true * tf.math.log(y_pred))
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "inconclusive", out
    assert "past the float32 exp range" in out["detail"]


def test_a_target_probability_at_zero_is_no_tail():
    """A probability no squashing produced (a target `p`) is data at its domain edge; its name
    does not make it a prediction."""
    assert preconditions.predicted({"name": "p", "producer": "sigmoid"})
    assert preconditions.predicted({"name": "p", "origin": "model"})
    assert not preconditions.predicted({"name": "p"})
    assert not preconditions.predicted({"name": "y_pred"})
    assert not preconditions.tail_candidate({"name": "p", "drive": "driven"}, True, -100.0)


def test_one_minus_a_sigmoid_is_confirmed_with_a_logit_inside_the_band():
    """1 - sigmoid(z) is exactly 0 in float32 from z = 17: a value models produce."""
    src = """\
        import tensorflow as tf


        class Bce(tf.keras.losses.Loss):
            def call(self, y_true, z):
                p = tf.sigmoid(z)
                return -tf.reduce_mean((1 - y_true) * tf.math.log(1 - p))
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "confirmed", out
    assert 17 <= out["inputs"]["z"] <= preconditions.BAND


def _far_witness(dtype: str) -> tuple[Program, Witness]:
    """exp(logits) at logits = 100, as a climbed or unrelaxed witness may leave it."""
    spec = {**free("logits"), "drive": "driven", "exponent": True}  # as the static pass marks it
    probe = expr("TNL301", call("exp", inp("logits")), [spec])
    program = build(probe, dtype)
    rows = np.array([[100.0]])
    return program, Witness("inf-value", 0, rows, run(program, rows))


def test_a_far_witness_is_replaced_by_its_clamped_point_when_the_symptom_survives():
    """float16's exp overflows at 11.1: the mildest clamp (17) keeps the symptom."""
    program, w = _far_witness("float16")
    clamped, tail = clamp_far_tail(program, w, 1e6)
    assert tail is None
    assert clamped.rows[clamped.row][0] == 17.0


def test_a_far_witness_whose_symptom_vanishes_in_the_band_is_reported():
    program, w = _far_witness("float32")
    kept, tail = clamp_far_tail(program, w, 1e6)
    assert kept is w
    assert tail == {"inputs": {"logits": 100.0}, "band": preconditions.BAND}


def test_float16_overflow_inside_the_band_stays_confirmed():
    src = """\
        import tensorflow as tf


        class Half(tf.keras.layers.Layer):
            def call(self, logits):
                x = tf.cast(logits, tf.float16)
                return tf.exp(x)
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "confirmed", out
    assert out["dtype"] == "float16"


def test_a_probability_taken_as_it_is_at_zero_is_at_its_domains_edge_not_in_a_tail():
    """`output` = 0 is the edge of a probability's own domain, not a tail: no model squashes
    its logit, so a logit of -100 asks for no far tail.  Only its use (log(1 - output)) says it
    is a probability, so each verdict is conditional on that use and on nothing else (issue
    22).  The control: a sigmoid layer's output is 0 only at a logit past the band."""
    src = differentiated(
        """\
        import tensorflow as tf


        def bce(output, target, epsilon=1e-8):
            return tf.reduce_mean(
                -(target * tf.math.log(output + epsilon)
                  + (1.0 - target) * tf.math.log(1.0 - output + epsilon))
            )
        """,
        "bce",
    )  # a training step's loss: its gradient symptoms are not conditional on a caller
    out = verdicts(src, "TNL102")
    assert sorted(v["inputs"]["output"] for v in out) == [0.0, 1.0], out
    for v in out:
        assert "far_tail" not in v["observed"], v
        assert [s["gate"] for s in v["trail"] if "why" in s] == ["reachability"], v["trail"]
        assert v["detail"].startswith("conditional: only its use says `output` is a probability")
    produced = src.replace(
        "def bce(output, target, epsilon=1e-8):",
        "def bce(x, target, epsilon=1e-8):\n"
        '    output = tf.keras.layers.Dense(1, activation="sigmoid")(x)',  # `src` is dedented
    )
    tails = [v["observed"].get("far_tail") for v in verdicts(produced, "TNL102")]
    assert {"inputs": {"logit(output)": -100.0}, "band": preconditions.BAND} in tails, tails


def test_a_softmax_by_hand_of_a_trained_weight_needs_a_far_tail():
    """The weights are exponentiated, so they are log-scale values by their use: exp overflows
    past 88.7, a far tail of what training gives a weight (the training rung would show it)."""
    src = """\
        import tensorflow as tf


        class Mixture(tf.Module):
            def __init__(self):
                self._mixture_weights = tf.Variable(tf.zeros([3]))

            def update(self):
                unnormalized = tf.exp(self._mixture_weights)
                return unnormalized / tf.reduce_sum(unnormalized)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    assert "past the float32 exp range" in out["detail"], out


def test_log_scale_inputs_by_origin_use_and_modelled_probability():
    assert preconditions.log_scale({"name": "x", "origin": "logits"}, False)
    assert not preconditions.log_scale({"name": "log_variance"}, False)  # a name is no use
    assert preconditions.log_scale({"name": "v", "exponent": True}, False)
    assert preconditions.log_scale({"name": "v", "source": "dist.log_prob(a)"}, False)
    assert preconditions.log_scale({"name": "q", "producer": "softmax"}, True)
    assert not preconditions.log_scale({"name": "y_pred"}, True)  # a name is no producer
    assert not preconditions.log_scale({"name": "rewards"}, False)
    exponent = {"name": "z", "exponent": True}
    assert not preconditions.tail_candidate({**exponent, "drive": "free"}, False, -100.0)
    assert not preconditions.tail_candidate(exponent, False, -17.0)
    assert preconditions.tail_candidate({**exponent, "drive": "driven"}, False, -100.0)
    assert not preconditions.tail_candidate({"name": "logits", "drive": "driven"}, False, -100.0)


def test_the_far_tail_reason_names_the_dtype_range_only_when_passed():
    out = {"dtype": "float32", "observed": {"far_tail": {"inputs": {"z": 50.0}, "band": 30.0}}}
    reason = preconditions.far_tail_reason(out)
    assert reason is not None and "far in the tail of a log scale" in reason
    out["observed"]["far_tail"]["inputs"] = {"z": 100.0}
    assert "past the float32 exp range" in str(preconditions.far_tail_reason(out))


def test_the_far_tail_reason_states_the_band_as_the_condition():
    """Training on data it fits pushes logits apart without bound (issue 22): the reason says
    what the symptom needs, not that trained models never get there."""
    out = {"dtype": "float32", "observed": {"far_tail": {"inputs": {"z": -100.0}, "band": 30.0}}}
    reason = str(preconditions.far_tail_reason(out))
    assert "shows only where training or data take it past 30" in reason, reason
    assert "produce" not in reason, reason
    out["observed"]["far_tail"]["inputs"] = {"z": -100.0, "w": 60.0}
    assert "take them past 30" in str(preconditions.far_tail_reason(out))


# ---------------------------------------------------------------- empty selections


def test_a_masked_mean_over_an_empty_mask_is_not_confirmed():
    src = """\
        import tensorflow as tf


        class Masked(tf.keras.layers.Layer):
            def call(self, values, target_mask):
                return tf.reduce_sum(values * target_mask) / tf.reduce_sum(target_mask)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith(
        "needs an empty selection: every entry of `target_mask` is 0 (no element selected); "
        "guard the division if such a batch can occur"
    )


def test_a_count_of_edges_of_a_graph_without_edges_is_not_confirmed():
    src = """\
        import tensorflow as tf


        class Pool(tf.keras.layers.Layer):
            def call(self, x, a):
                n_edges = tf.cast(tf.math.count_nonzero(a), tf.float32)
                return tf.reduce_sum(x) / n_edges
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    assert "every entry of `a` is 0 (nothing counted)" in out["detail"]


def test_a_zero_feature_row_norm_stays_confirmed():
    src = """\
        import tensorflow as tf


        class Pool(tf.keras.layers.Layer):
            def call(self, features):
                return features / tf.norm(features, axis=-1, keepdims=True)
        """
    assert one_verdict(src, "TNL201")["status"] == "confirmed"


def test_a_zero_target_norm_has_one_status_whatever_the_name():
    """It stayed confirmed because `target` was a class word; the name no longer decides: the
    norm of a free parameter is 0 only at a batch of zero rows, the same for any name."""
    src = """\
        import tensorflow as tf


        def nmse(output, {name}):
            return tf.reduce_sum(tf.square(output - {name})) / tf.norm({name})
        """
    statuses = {one_verdict(src.format(name=n), "TNL201")["status"] for n in ("target", "qzxv")}
    assert len(statuses) == 1, statuses


def test_a_mask_read_outside_a_whole_reduction_is_no_selection():
    """`x / mask` divides by one entry: a zero entry is an ordinary mask value."""
    direct = expr(
        "TNL201",
        binop("/", call("reduce_sum", inp("mask")), inp("mask")),
        [free("mask", 0.0, 1.0, "mask")],
    )
    assert preconditions.selections(direct) == {}
    summed = expr(
        "TNL201",
        binop("/", const(1.0), call("reduce_sum", call("cast", inp("keep")))),
        [free("keep", 0.0, 1.0, "mask")],
    )
    assert preconditions.selections(summed) == {"keep": "reduce_sum"}
    feature = expr("TNL201", call("reduce_sum", inp("x")), [free("x")])
    assert preconditions.selections(feature) == {}
