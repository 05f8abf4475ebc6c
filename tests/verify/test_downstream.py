"""Issue #11: follow the symptom to where the value is used.

A NaN or inf the code discards right after (a select whose condition picks the other value, a
comparison, a -inf entry of a log-sum-exp) is handled; in differentiated code the discarded
value's NaN/inf gradient still reaches the inputs (the tf.where gradient trap) and stays
confirmed as that gradient symptom.  A precision loss below the statement's own rounding does
not show.  Each case has its counterpart that stays confirmed.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import differentiated  # noqa: E402
from test_reachability import one_probe  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.downstream import additive_terms  # noqa: E402

THR = 1e6


def verdict(src: str, rule: str) -> dict:
    return probing.verify(one_probe(src, rule), THR)


# A module that trains a model of its own and calls `{name}` only from an evaluation loop: no
# path from `{name}` to a differentiation root, so no gradient flows through it (roots.py).
EVALUATED = """

model = tf.keras.Sequential([tf.keras.layers.Dense(3)])


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    return tape.gradient(loss, model.trainable_variables)


def evaluate(batches):
    return [{name}(*batch) for batch in batches]


scores = evaluate(tf.data.Dataset.range(3))
"""


def evaluated(src: str, name: str) -> str:
    """``src`` (a module) where only evaluation code calls its function ``name``."""
    return textwrap.dedent(src).rstrip("\n") + "\n" + EVALUATED.format(name=name)


# ---------------------------------------------------------------- 1. discarded by a select

# a layer's call: its inputs are the program's data, so a sign of `tailweight` is the program's
# own (in a helper nothing calls, the verdict would state that sign as its condition)
DISCARDED = """\
    import tensorflow as tf


    class Variance(tf.keras.layers.Layer):
        def call(self, tailweight, scale):
            var = tf.pow(1.0 - 2.0 * tailweight, -1.5) * tf.square(scale)
            return tf.where({cond}, var, tf.zeros_like(var))
    """


def test_a_nan_discarded_by_a_where_is_recorded_as_a_select_on_its_condition():
    probe = one_probe(DISCARDED.format(cond="tailweight < 0.5"), "TNL204")
    [sink] = probe["uses"]["sinks"]
    assert sink["kind"] == "select" and sink["line"] == 7
    assert sink["selected_when"] is True
    assert sink["cond"]["k"] == "cmp"


def test_a_discarded_nan_whose_gradient_flows_stays_confirmed_as_its_nan_gradient():
    out = verdict(DISCARDED.format(cond="tailweight < 0.5"), "TNL204")
    assert out["status"] == "confirmed"
    assert out["symptom"] == "nan-gradient"
    assert "discarded by `tf.where(tailweight < 0.5" in out["detail"]
    assert "its gradient is nan" in out["detail"]


def test_a_discarded_nan_where_the_select_takes_inf_instead_is_not_confirmed():
    """The variance is infinite by definition where the pow is NaN: the NaN gradient sits where
    the result is inf anyway, a symptom only if later code makes that inf finite."""
    src = DISCARDED.replace("tf.zeros_like(var)", 'tf.ones_like(var) * float("inf")')
    out = verdict(src.format(cond="tailweight < 0.5"), "TNL204")
    assert out["status"] == "inconclusive"
    assert out["symptom"] == "nan-gradient"
    assert "the value taken instead is inf there too" in out["detail"]


def test_a_discarded_nan_where_the_select_takes_a_finite_value_instead_stays_confirmed():
    src = DISCARDED.replace("tf.zeros_like(var)", "tf.ones_like(var) * 1e30")
    out = verdict(src.format(cond="tailweight < 0.5"), "TNL204")
    assert out["status"] == "confirmed" and out["symptom"] == "nan-gradient"


ATTRIBUTE_VARIANCE = """\
    import tensorflow as tf


    class Spread:
        def __init__(self, concentration, scale):
            self.concentration = concentration
            self.scale = scale

        def variance(self):
            c = tf.convert_to_tensor(self.concentration)
            valid = self.scale**2 * c / ((c - 1.0) ** 2 * (c - 2.0))
            return tf.where(c > 2.0, valid, tf.ones_like(c) * 1e30)
    """


def test_an_unreached_witness_discarded_by_a_where_says_only_its_gradient_is_left():
    """Inconclusive (the witness needs an attribute at 1) and discarded by the select there:
    the condition the verdict states is the gradient trap's, and it says the value is
    handled, instead of stating the -inf value as if it escaped (review round 16, TFP's
    Pareto variance)."""
    out = verdict(ATTRIBUTE_VARIANCE, "TNL201")
    assert out["status"] == "inconclusive", out["detail"]
    assert "discarded by `tf.where(c > 2.0" in out["detail"]
    assert out["symptom"] in ("nan-gradient", "inf-gradient") and "its gradient is" in out["detail"]


def test_a_discarded_nan_where_no_gradient_flows_is_refuted():
    probe = one_probe(DISCARDED.format(cond="tailweight < 0.5"), "TNL204")
    probe["no_gradient"] = "the value is under tf.stop_gradient"
    out = probing.verify(probe, THR)
    assert out["status"] == "refuted"
    assert "handled: discarded by `tf.where(tailweight < 0.5" in out["detail"]


def test_a_nan_the_where_selects_stays_a_confirmed_value():
    out = verdict(DISCARDED.format(cond="tailweight > 0.5"), "TNL204")
    assert out["status"] == "confirmed"
    assert out["symptom"] == "nan-value"
    assert "discarded" not in out["detail"]


def test_a_where_testing_an_unrelated_input_is_evaluated_not_assumed():
    src = DISCARDED.replace(
        "def call(self, tailweight, scale)", "def call(self, tailweight, scale, k)"
    )
    probe = one_probe(src.format(cond="k < 0.5"), "TNL204")
    assert [i["name"] for i in probe["uses"]["inputs"]] == ["k"]
    probe["no_gradient"] = "the value is under tf.stop_gradient"
    out = probing.verify(probe, THR)
    assert out["status"] == "confirmed"  # some value of `k` selects the NaN


def test_multiply_no_nan_discards_its_first_operand_where_the_second_is_zero():
    src = """\
        import tensorflow as tf


        def weighted(a, b, c, w):
            r = (a - b) / (c - b)
            return tf.math.multiply_no_nan(r, w)
        """
    [sink] = one_probe(src, "TNL201")["uses"]["sinks"]
    assert sink["kind"] == "select" and sink["selected_when"] is False


# ---------------------------------------------------------------- 2. only compared

COMPARED = """\
    import tensorflow as tf


    def propose(a, b, c, t):
        xi = (a - b) / (c - b)
        return {use}
    """


def test_a_ratio_only_compared_in_a_where_condition_is_refuted():
    out = verdict(COMPARED.format(use="tf.where(tf.math.sqrt(xi) > 0.5, t, 0.5)"), "TNL201")
    assert out["status"] == "refuted"
    assert "handled: only compared, in `tf.math.sqrt(xi) > 0.5` at line 6" in out["detail"]


def test_a_ratio_that_is_returned_escapes_and_keeps_its_verdict():
    probe = one_probe(COMPARED.format(use="xi"), "TNL201")
    assert "uses" not in probe
    assert probing.verify(probe, THR)["status"] != "refuted"


def test_a_ratio_compared_and_also_added_to_a_result_escapes():
    probe = one_probe(COMPARED.format(use="tf.where(xi > 0.5, t, 0.5) + xi"), "TNL201")
    assert "uses" not in probe


def test_a_use_under_an_if_is_not_straight_line_and_escapes():
    src = """\
        import tensorflow as tf


        def propose(a, b, c, flag):
            xi = (a - b) / (c - b)
            if flag:
                return xi > 0.5
            return a > 0.0
        """
    assert "uses" not in one_probe(src, "TNL201")


# ---------------------------------------------------------------- 3. -inf into a log-sum-exp

LOGSUMEXP = """\
    import tensorflow as tf


    def score(x, log_prob_pred):
        prob_true = tf.keras.layers.Dense(3, activation="softmax")(x)
        log_prob_true = tf.math.log(prob_true)
        return {use}
    """


def confirmed_log_at_zero(src: str) -> tuple[dict, dict]:
    """The probe, and a confirmed log(p) = -inf witness at p = 0 (the domain and tail gates
    judge whether p = 0 is reachable; here only the downstream decision is under test)."""
    from tfnumlint.verify import downstream

    probe = one_probe(src, "TNL101")
    out = {
        "status": "confirmed",
        "symptom": "inf-value",
        "dtype": "float32",
        "inputs": {"prob_true": 0.0, "logit(prob_true)": -100.0},
        "observed": {"value": "-inf", "gradient": {"prob_true": "inf"}},
        "detail": "at prob_true = 0 (float32), log(prob_true) = -inf",
    }
    return probe, downstream.review(probe, out)


def test_a_log_at_zero_into_a_logsumexp_keeps_only_its_inf_gradient():
    use = "tf.math.reduce_logsumexp(log_prob_pred + log_prob_true, axis=-1)"
    probe, out = confirmed_log_at_zero(differentiated(LOGSUMEXP.format(use=use), "score"))
    assert probe["uses"]["sinks"][0]["kind"] == "logsumexp"
    assert out["status"] == "confirmed" and out["symptom"] == "inf-gradient"
    assert "a -inf entry of `tf.math.reduce_logsumexp" in out["detail"]


def test_a_log_at_zero_into_a_logsumexp_where_no_gradient_flows_is_refuted():
    use = "tf.math.reduce_logsumexp(log_prob_pred + log_prob_true, axis=-1)"
    probe, out = confirmed_log_at_zero(evaluated(LOGSUMEXP.format(use=use), "score"))
    # the module's structure says no gradient flows (a certain fact, not a conditional one)
    assert probe["no_gradient"].startswith("no path to a differentiation root"), probe
    assert not probe.get("no_gradient_likely"), probe
    assert out["status"] == "refuted"
    assert "where it is exact (exp(-inf) = 0)" in out["detail"]


def test_a_log_at_zero_added_to_a_loss_escapes():
    probe, out = confirmed_log_at_zero(
        LOGSUMEXP.format(use="tf.reduce_mean(log_prob_pred - log_prob_true)")
    )
    assert "uses" not in probe
    assert out["status"] == "confirmed" and out["symptom"] == "inf-value"


def test_a_logsumexp_argument_that_turns_nan_does_not_handle_the_minus_inf():
    use = "tf.math.reduce_logsumexp(log_prob_true - log_prob_true, axis=-1)"  # -inf - -inf
    _probe, out = confirmed_log_at_zero(LOGSUMEXP.format(use=use))
    assert out["symptom"] == "inf-value"


# ---------------------------------------------------------------- 4. precision absorbed

ABSORBED = """\
    import tensorflow as tf


    def log_det(u, w):
        big = tf.math.log(tf.square(u) + 1e8)
        return {stmt}
    """


def test_a_precision_loss_below_the_statements_own_rounding_is_refuted():
    out = verdict(ABSORBED.format(stmt="big - tf.math.log(1.0 + w)"), "TNL105")
    assert out["status"] == "refuted"
    assert "is below the statement's own rounding" in out["detail"]


def test_a_precision_loss_that_shows_in_the_statement_passes_the_downstream_gate():
    out = verdict(ABSORBED.format(stmt="tf.math.log(1.0 + w) * tf.square(u)"), "TNL105")
    assert out["symptom"] == "diverges"
    step = [s for s in out["trail"] if s["gate"] == "downstream"]
    assert step and step[0]["status"] == "confirmed", out["trail"]
    # `w` is a parameter of `log_det` that nothing passes: the finding is its condition
    assert out["status"] == "inconclusive" and "`w` is a parameter of `log_det`" in out["detail"]


def test_additive_terms_split_a_chain_of_sums_and_differences():
    a, b, c = ({"k": "input", "name": n} for n in "abc")
    tree = {"k": "bin", "op": "-", "l": {"k": "bin", "op": "+", "l": a, "r": b}, "r": c}
    assert additive_terms(tree) == [a, b, c]
    product = {"k": "bin", "op": "*", "l": a, "r": b}
    assert additive_terms(product) == [product]


# ---------------------------------------------------------------- through a function of the module

HELPER = """\
    import tensorflow as tf
    from tensorflow_probability.python.math import generic


    def _log_l2(loga, logb):
        return {body}


    def reliability(x, log_prob_pred):
        prob_true = tf.keras.layers.Dense(3, activation="softmax")(x)
        log_prob_true = tf.math.log(prob_true)
        return _log_l2(log_prob_pred, log_prob_true)
    """


def test_a_minus_inf_passed_to_a_module_function_that_log_sub_exps_it_is_handled_there():
    body = "tf.math.reduce_logsumexp(2.0 * generic.log_sub_exp(loga, logb), axis=-1)"
    probe, out = confirmed_log_at_zero(differentiated(HELPER.format(body=body), "reliability"))
    [sink] = probe["uses"]["sinks"]
    assert sink["kind"] == "logsumexp" and sink["line"] == 6
    assert sink["arg"]["op"] == "log"  # the callee's `logb` stands for the caller's log(p)
    assert out["symptom"] == "inf-gradient"


def test_a_minus_inf_subtracted_from_in_log_sub_exp_is_not_handled():
    body = "generic.log_sub_exp(logb, loga)"  # log(exp(-inf) - exp(a)) is NaN
    probe, _out = confirmed_log_at_zero(HELPER.format(body=body))
    assert "uses" not in probe


def test_a_module_function_that_returns_the_value_lets_it_escape():
    probe, out = confirmed_log_at_zero(HELPER.format(body="loga + logb"))
    assert "uses" not in probe
    assert out["symptom"] == "inf-value"


def test_a_comparison_with_the_value_on_its_right_is_a_comparison_too():
    probe = one_probe(COMPARED.format(use="tf.where(0.5 < xi, t, 0.5)"), "TNL201")
    assert [s["kind"] for s in probe["uses"]["sinks"]] == ["compare"]


def test_a_ratio_only_tested_for_nan_is_a_comparison():
    probe = one_probe(COMPARED.format(use="tf.where(tf.math.is_nan(xi), t, 0.5)"), "TNL201")
    assert [s["kind"] for s in probe["uses"]["sinks"]] == ["compare"]


def test_a_precision_loss_where_the_statement_is_not_finite_does_not_show_there():
    import numpy as np
    from probe_helpers import binop, call, const, expr, free, inp

    from tfnumlint.verify.downstream import NON_FINITE, precision_absorbed
    from tfnumlint.verify.program import build

    target = call("log", binop("+", const(1.0), inp("w")))
    loss = binop("-", call("log", inp("y")), target)
    probe = expr("TNL105", target, [free("w"), free("y")], loss=loss)
    at_zero, at_one = precision_absorbed(build(probe), probe, np.array([[1e-8, 0.0], [1e-8, 1.0]]))
    assert at_zero is not None and at_zero.startswith(NON_FINITE)  # log(0) = -inf anyway
    assert at_one is None  # log(1) = 0: the lost 1e-8 is the whole result


def test_a_condition_on_an_input_only_the_statement_reads_is_tried_at_every_generic_value():
    src = """\
        import tensorflow as tf


        def body(should_stop, f, a, b, c):
            return tf.where(should_stop, f, (a - b) / (c - b))
        """
    probe = one_probe(src, "TNL201")
    assert "should_stop" in [i["name"] for i in probe["inputs"]]  # read by the statement only
    probe["no_gradient"] = "solver code"
    out = probing.verify(probe, THR)
    assert "handled" not in out.get("detail", "")  # some should_stop selects the division


# ------------------------------------------- a gradient only with respect to counts

COUNTED = """\
    import tensorflow as tf


    def reliability(logits, labels, num_classes):
        pred_class = tf.argmax(logits, axis=-1, output_type=labels.dtype)
        counts = tf.math.confusion_matrix(
            pred_class, labels, num_classes=num_classes, dtype=logits.dtype{weights}
        )
        dist_mean = counts / (1e-7 + tf.reduce_sum(counts, axis=-1, keepdims=True))
        prob_true = tf.gather(dist_mean, pred_class, axis=0)
        log_prob_true = tf.math.log(prob_true)
        log_prob_pred = tf.nn.log_softmax(logits)
        return tf.math.reduce_logsumexp(log_prob_pred + log_prob_true, axis=-1)
    """


def test_a_handled_minus_inf_whose_bad_gradient_is_only_wrt_counts_is_refuted():
    out = verdict(COUNTED.format(weights=""), "TNL101")
    assert out["status"] == "refuted", out
    assert "`counts`, a count, which has none" in out["detail"]


def test_a_weighted_confusion_matrix_is_not_a_count_and_keeps_its_gradient_symptom():
    out = verdict(differentiated(COUNTED.format(weights=", weights=w"), "reliability"), "TNL101")
    assert out["status"] == "confirmed", out
    assert out["symptom"] == "inf-gradient" or out["symptom"] == "nan-gradient"
