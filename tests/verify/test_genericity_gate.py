"""Issue #11, "confirmed needs inputs the code really receives": a witness that needs a library
parameter at a special value (``df`` = 0.5, ``t1`` = ``t0``, a far tail of ``x``) is a
precondition, not a hazard; the same shapes on inputs training drives stay confirmed.

Snippets are sliced by the real static pass (which labels the inputs driven, fixed or free) and
verified in-process.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, expr, free, inp  # noqa: E402
from test_reachability_gate import (  # noqa: E402
    assert_far_tail,
    one_verdict,
    trained,
    verdicts,
    verify,
)

from tfnumlint.verify import generic  # noqa: E402

# ---------------------------------------------------------------- library preconditions


def test_a_tfp_like_log_prob_tail_is_not_confirmed():
    src = """\
        import tensorflow as tf


        class Gumbel:
            def _log_prob(self, x):
                z = (x - self.loc) / self.scale
                return -(z + tf.exp(-z)) - tf.math.log(self.scale)
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "inconclusive", out
    # the far tail of `x` (exp(100) overflows) or a zero scale: either way a value of the
    # distribution's own inputs that nothing in view passes (no name says `scale` > 0); at a
    # zero scale `z` is already infinite, so the symptom starts at the division, not the exp
    assert (
        "needs `x` = -100, a far tail; `x` is a parameter of `_log_prob`" in out["detail"]
        or "needs `self.scale` = 0; `self.scale` is an attribute of `Gumbel`" in out["detail"]
        or "the exp's argument `-z` is already inf at the witness" in out["detail"]
    ), out
    assert "seen: " in out["detail"]  # what the probe saw stays in the verdict


def test_reciprocal_of_a_parameter_minus_a_half_is_not_confirmed():
    src = """\
        import tensorflow as tf


        def _stdtrit(df, numpy_dtype):
            half = numpy_dtype(0.5)
            return tf.math.reciprocal(df - half)
        """
    out = one_verdict(src, "TNL206")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("needs `df` = 0.5; `df` is a parameter of `_stdtrit`")


def test_an_interpolation_between_two_equal_parameters_is_not_confirmed():
    src = """\
        import tensorflow as tf


        def _interpolate(t, t0, t1):
            return (t - t0) / (t1 - t0)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    assert "`t0` = `t1`" in out["detail"] or "`t1` = `t0`" in out["detail"]
    assert "are parameters of `_interpolate`" in out["detail"]


@pytest.mark.parametrize("scale", ["temperature", "c"])
def test_a_condition_leaves_out_an_input_that_only_shares_the_witness_value(scale):
    """`temperature` = `high` = `low` = 1 is the witness; only `high` = `low` breaks it."""
    src = f"""\
        import tensorflow as tf


        def concentration(x, {scale}, high, low):
            return 1.0 + {scale} * (x - low) / (high - low)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    needs = out["detail"].split(";")[0]
    assert "`high`" in needs and "`low`" in needs, out["detail"]
    assert f"`{scale}`" not in needs, out["detail"]


def test_a_condition_keeps_both_ends_of_an_order():
    """`log(s.hi - s.lo)` needs `s.hi` < `s.lo`: moving `s.lo` to 1.37 keeps it, but moving it
    below every other value does not, so both ends stay in the condition."""
    src = """\
        import tensorflow as tf


        def span(s, n):
            return tf.math.log(s.hi - s.lo) / n
        """
    out = one_verdict(src, "TNL104")
    assert out["status"] == "inconclusive", out
    needs = out["detail"].split(";")[0]
    assert "`s.hi`" in needs and "`s.lo`" in needs, out["detail"]


def test_an_input_the_symptom_needs_is_never_dropped_from_its_condition():
    out = {"observed": {"generic": {"irrelevant": ["a", "b"]}}}
    assert generic._relevant(["a", "b", "c"], out) == ["c"]
    assert generic._relevant(["a", "b"], out) == ["a", "b"]  # never empty
    assert generic._relevant(["a"], {"observed": {}}) == ["a"]


# ---------------------------------------------------------------- the same shapes, driven


def test_a_keras_loss_on_its_prediction_is_conditional_on_the_use_not_on_genericity():
    src = """\
        import tensorflow as tf


        class MyLoss(tf.keras.losses.Loss):
            def call(self, y_true, v):
                return -tf.reduce_mean(y_true * tf.math.log(1.0 - v))
        """
    # 1 - v is 0 from a logit of 17 on (log(v) needs -100: a far tail, not this gate);
    # genericity keeps it (a Keras loss's prediction is driven), but no compiled model says what
    # the prediction is: only its use (its complement is logged) says probability, and a use
    # never confirms (issue 22: names never decide, and `v` says nothing)
    out = one_verdict(src, "TNL103")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("conditional: only its use says `v` is a probability")
    assert "generic values" not in out["detail"], out


def test_a_layer_call_on_its_inputs_stays_confirmed():
    src = """\
        import tensorflow as tf


        class Normalize(tf.keras.layers.Layer):
            def call(self, inputs):
                return inputs / tf.norm(inputs, axis=-1, keepdims=True)
        """
    assert one_verdict(src, "TNL201")["status"] == "confirmed"


def test_an_interpolation_in_a_layer_call_stays_confirmed():
    src = """\
        import tensorflow as tf


        class Interpolate(tf.keras.layers.Layer):
            def call(self, t, t0, t1):
                return (t - t0) / (t1 - t0)
        """
    assert one_verdict(src, "TNL201")["status"] == "confirmed"


def test_a_log_of_probabilities_known_only_by_its_use_is_conditional():
    # REINFORCE's loss, the negated mean of a weighted log-likelihood: `a` is driven (the
    # function returns a batch mean), so genericity keeps it; but only its use says it is a
    # probability (its negated log is reduced, or its complement is logged; no producer, no
    # caller), and a use never confirms (issue 22): conditional on `a` reaching 0 (or 1), not
    # a far-tail precondition
    src = """\
        import tensorflow as tf


        def log_weight(a, weights):
            return -tf.reduce_mean(tf.math.log(a) * weights)
        """
    for body in (src, src.replace("log(a)", "log(1 - a)")):
        out = one_verdict(body, "TNL103")
        assert out["status"] == "inconclusive" and "far tail" not in out["detail"], out
        assert out["detail"].startswith("conditional: only its use says `a` is a probability"), out
    produced = src.replace(
        "(a, weights):", "(logits, weights):\n            a = tf.sigmoid(logits)"
    )
    assert one_verdict(produced.replace("log(a)", "log(1 - a)"), "TNL103")["status"] == (
        "confirmed"
    )


def test_cosine_similarity_of_features_stays_confirmed():
    src = """\
        import tensorflow as tf


        def sparse_cosine_similarity(x, index_n, index_k):
            x_n = tf.gather(x, index_n)
            x_k = tf.gather(x, index_k)
            return tf.reduce_sum(x_n * x_k, -1) / (tf.norm(x_n, axis=-1) * tf.norm(x_k, axis=-1))
        """
    src = trained(src, "sparse_cosine_similarity(model(x), [0], [1])")  # features training drives
    statuses = {v["status"] for v in verdicts(src, "TNL201")}
    assert statuses == {"confirmed"}, statuses


def test_a_model_output_exp_passes_genericity_but_needs_a_far_tail():
    src = """\
        import tensorflow as tf

        head = tf.keras.layers.Dense(1)


        def uncertainty(h, residual):
            predicted_log_variance = head(h)
            return residual * tf.exp(-predicted_log_variance)
        """
    out = one_verdict(src, "TNL301")
    assert_far_tail(out)
    assert "generic values" not in out["detail"], out


def test_an_epsilon_with_a_literal_default_is_kept_in_a_loss():
    src = """\
        import tensorflow as tf


        def eps_loss(y_true, logits, eps=1e-7):
            y_pred = tf.sigmoid(logits)
            return -tf.reduce_mean(y_true * tf.math.log(1.0 - y_pred + eps))
        """
    out = one_verdict(trained(src, "eps_loss(y, model(x))"), "TNL103")
    assert out["status"] == "confirmed", out


def test_a_symptom_that_needs_the_sign_of_a_free_parameter_is_conditional_on_it():
    # log(a - shift) needs only a < shift: it survives generic values of `shift` of the
    # witness's sign (one trial is enough), but negating `shift` removes it.  Nothing in view
    # passes `shift`: the finding states that condition instead of confirming.  (`a` is a
    # probability by its use, log(1 - a): a free input held in [0, 1].)
    src = """\
        import tensorflow as tf


        def helper(a, shift):
            return tf.math.log(a - shift), tf.math.log(1 - a)
        """
    out = one_verdict(src, "TNL104")
    assert out["status"] == "inconclusive", out
    assert out["observed"]["generic"]["kept"] >= generic.SURVIVES_IN
    assert out["observed"]["generic"]["signs"] == {"shift": "positive"}
    assert out["detail"].startswith("shows with `shift` > 0 where `a` = 0.5 (the witness has")
    assert "is gone with it negated; `shift` is a parameter of `helper`" in out["detail"]


def test_the_same_sign_in_a_layer_call_stays_confirmed():
    # a Keras layer's call inputs are data the program feeds: any sign is the program's own
    src = """\
        import tensorflow as tf


        class Shifted(tf.keras.layers.Layer):
            def call(self, inputs, shift):
                return tf.math.log(inputs - shift)
        """
    out = one_verdict(src, "TNL104")
    assert out["status"] == "confirmed", out
    assert "signs" not in (out["observed"].get("generic") or {})


def test_a_driven_weight_may_take_the_other_sign_with_the_free_input():
    # exp(x @ w) overflows for either sign of `x` once training gives `w` the matching sign:
    # negating `x` together with the weight keeps the symptom, so no sign of `x` is needed
    src = """\
        import tensorflow as tf

        weights = tf.Variable(tf.random.normal([16, 1], dtype=tf.float16))


        def scores(x):
            return tf.exp(tf.matmul(x, weights))
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "confirmed", out
    assert "signs" not in out["observed"]["generic"], out


def test_a_ratio_of_two_free_parameters_states_what_was_seen_not_a_necessity():
    # pow(x / df, 1/3) is NaN when x and df differ in sign (TFP's noncentral chi2 had such a
    # witness confirmed): each negated alone removes it; the reason says so, and does not
    # claim that `x` < 0 is needed (x > 0 with df < 0 is NaN too)
    src = """\
        import tensorflow as tf


        def wilson_hilferty(x, df):
            return tf.pow(x / df, 1.0 / 3.0)
        """
    out = one_verdict(src, "TNL204")
    assert out["status"] == "inconclusive", out
    signs = out["observed"]["generic"]["signs"]
    assert set(signs) == {"x", "df"} and set(signs.values()) == {"negative", "positive"}, out
    assert out["detail"].startswith("shows with `x` "), out
    assert "is gone with any one of them negated; `x`, `df` are parameters of" in out["detail"]


def test_signs_that_matter_only_together_are_stated_together():
    # log(df) + log(nc) at df = nc = -1: negating one alone keeps the NaN, both negated end it
    probe = expr("TNL104", None, [free("df"), free("nc"), free("x")])
    probe["inputs"] = [{**s, "origin": "param", "owner": "cdf"} for s in probe["inputs"]]
    out = {
        "status": "confirmed",
        "inputs": {"df": -1.0, "nc": -1.0, "x": 0.5},
        "observed": {
            "generic": {
                "free": ["df", "nc", "x"],
                "trials": 4,
                "kept": 4,
                "signs": {"df": "negative, or another", "nc": "negative, or another"},
            }
        },
    }
    reason = generic.free_value_reason(probe, out)
    assert reason == (
        "shows with `df` < 0 and `nc` < 0 where `x` = 0.5 (the witness has `df` = -1, `nc` = -1)"
        " and is gone with all of them negated; `df`, `nc` are parameters of `cdf` and nothing"
        " shows its callers pass such values"
    )
    assert generic.free_value_reason(probe, {**out, "status": "inconclusive"}) is None


# ---------------------------------------------------------------- hand-written probes


def test_probes_without_drive_labels_are_not_tested():
    """Probes of older caches (no ``drive`` label) keep their verdicts."""
    target = call("log", binop("-", inp("a"), inp("b")))
    probe = expr("TNL104", target, [free("a"), free("b")])
    out = verify(probe)
    assert out["status"] == "confirmed"
    assert "generic" not in out["observed"]


def test_generic_points_keep_driven_inputs_and_respect_domains():
    probe = expr(
        "TNL104",
        None,
        [
            {**free("x"), "drive": "driven"},
            {**free("scale"), "drive": "free"},
            {**free("n_items"), "drive": "free"},
            {**free("eps"), "drive": "fixed"},
        ],
    )
    probe["domains"] = [
        {"name": "scale", "lo": 0.0, "hi": "inf", "lo_open": True, "why": "", "strong": True},
        # whole numbers by the code (a tf.shape read, an asserted integer), not by the name
        {"name": "n_items", "lo": 0.0, "hi": "inf", "lo_open": False, "why": "", "strong": True,
         "integer": True},
    ]  # fmt: skip
    witness = {"x": -100.0, "scale": -3.0, "n_items": 0.5, "eps": 0.0}
    points = generic.generic_points(probe, witness)
    assert len(points) == generic.TRIALS
    for p in points:
        assert (p["x"], p["eps"]) == (-100.0, 0.0)
        assert 0.3 <= p["scale"] <= 3.0
        assert p["n_items"] == int(p["n_items"]) >= 1
