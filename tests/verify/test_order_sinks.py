"""Issue #11: a -inf log-probability that only feeds a draw, an argmax or a top-k is exact.

``tf.random.categorical`` never draws a -inf logit while its row has a finite one; an argmax,
argsort, sort or top_k puts a -inf entry last; a ``reduce_max`` of a row with a finite entry is
finite.  Those sinks are found in the code (``analysis/slicing/uses.py``) and evaluated at the
witness (``verify/downstream.py``): a -inf that only reaches them is refuted where no gradient
flows back (a draw and an index have none).  Arithmetic that keeps the -inf (a running score
averaged, ``-inf - -inf``), a -inf spread over its whole row, or a value returned keep the
finding as it was.  A name-based sampler context alone never refutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import differentiated  # noqa: E402
from test_downstream import evaluated  # noqa: E402
from test_reachability import one_probe, probed  # noqa: E402

from tfnumlint.verify import downstream, gradient_gate, probing  # noqa: E402

THR = 1e6


def at_zero(src: str, zero: str = "probs") -> tuple[dict, dict]:
    """The probe of the flagged log, and the review of a confirmed log(`zero`) = -inf witness
    at `zero` = 0, every other input at 1 (the domain and tail gates judge whether 0 is
    reachable; here only the downstream decision is under test)."""
    probe = one_probe(src, "TNL101")
    inputs: dict[str, float] = {}
    for spec in probe["inputs"]:
        name = spec["name"]
        if name == zero:
            inputs |= {name: 0.0, f"logit({name})": -100.0}
        else:
            inputs[name] = 1.0
    out = {
        "status": "confirmed",
        "symptom": "inf-value",
        "dtype": "float32",
        "inputs": inputs,
        "observed": {"value": "-inf", "gradient": {zero: "inf"}},
        "detail": f"at {zero} = 0 (float32), log({zero}) = -inf",
    }
    return probe, downstream.review(probe, out)


def kinds(probe: dict) -> list[str]:
    return [s["kind"] for s in probe["uses"]["sinks"]]


# ---------------------------------------------------------------- a draw from logits

TOP_K_SAMPLER = """\
    import keras
    from keras import ops, random


    def next_token(x, seed):
        top_k_logits, top_k_indices = ops.top_k(x, k=5, sorted=False)
        probs = keras.layers.Softmax()(top_k_logits)
        logits = ops.cast(ops.log(probs), "float32")
        {use}
        return ops.take_along_axis(top_k_indices, picked, axis=-1)
    """

DRAW = "picked = random.categorical(logits, 1, seed=seed)"


def test_a_log_probability_only_drawn_from_is_refuted():
    probe, out = at_zero(TOP_K_SAMPLER.format(use=DRAW))
    assert kinds(probe) == ["sample"]
    assert out["status"] == "refuted", out
    draw = "`random.categorical(logits, 1, seed=seed)` at line 9"
    assert f"only feeds the logits of {draw}" in out["detail"]
    assert "impossible outcome" in out["detail"]


def test_the_same_log_also_added_to_a_running_score_and_averaged_keeps_its_verdict():
    use = DRAW + "\n        score = ops.mean(seed + logits)"
    probe, out = at_zero(TOP_K_SAMPLER.format(use=use))
    assert "uses" not in probe  # the sum escapes: its -inf reaches a mean
    assert out["status"] == "confirmed" and out["symptom"] == "inf-value"


def test_tf_spellings_of_a_draw_are_sinks_too():
    src = """\
        import tensorflow as tf


        def draw(x, seed):
            probs = tf.keras.layers.Dense(3, activation="softmax")(x)
            a = tf.random.categorical(tf.math.log(probs), 1)
            b = tf.random.stateless_categorical(tf.math.log(probs), 1, seed=seed)
            return a, b
        """
    found = [f.probe for f in probed(src, "model.py", ["TNL101"]) if f.probe is not None]
    assert len(found) == 2 and all(kinds(probe) == ["sample"] for probe in found)


def test_a_minus_inf_spread_over_its_whole_row_is_not_handled_by_a_draw():
    """A row of only -inf logits makes TensorFlow draw an out-of-range index."""
    src = """\
        import tensorflow as tf


        def draw(x):
            probs = tf.keras.layers.Dense(3, activation="softmax")(x)
            best = tf.reduce_max(probs, axis=-1, keepdims=True)
            return tf.random.categorical(tf.math.log(best), 1)
        """
    probe, out = at_zero(src)
    assert kinds(probe) == ["sample"]
    assert out["status"] == "confirmed" and "handled" not in out["detail"]


def test_a_draw_from_a_minus_inf_minus_itself_is_not_handled():
    src = """\
        import tensorflow as tf


        def draw(x):
            probs = tf.keras.layers.Dense(3, activation="softmax")(x)
            lp = tf.math.log(probs)
            return tf.random.categorical(lp - lp, 1)
        """
    _probe, out = at_zero(src)  # -inf - -inf is NaN: the draw is meaningless
    assert out["status"] == "confirmed" and "handled" not in out["detail"]


def test_the_number_of_samples_is_not_a_logit():
    src = """\
        import tensorflow as tf


        def draw(logits, x):
            probs = tf.keras.layers.Dense(3, activation="softmax")(x)
            return tf.random.categorical(logits, num_samples=tf.math.log(probs))
        """
    assert "uses" not in one_probe(src, "TNL101")


# ---------------------------------------------------------------- order-only consumers

BEAM = """\
    import tensorflow as tf


    def step(x, score):
        probs = tf.keras.layers.Dense(3, activation="softmax")(x)
        scores = score[..., None] + tf.math.log(probs)
        {body}
    """


def test_a_beam_score_ranked_by_top_k_then_argmax_is_refuted():
    body = "vals, idx = tf.math.top_k(scores, k=2)\n        return tf.argmax(vals, axis=-1), idx"
    probe, out = at_zero(BEAM.format(body=body))
    assert kinds(probe) == ["order", "order"]
    assert probe["uses"]["sinks"][1]["arg"] is None  # checked on top_k's input
    assert out["status"] == "refuted", out
    top_k = "`tf.math.top_k(scores, k=2)` at line 7"
    assert f"only ordered, by {top_k}, where -inf sorts last" in out["detail"]


def test_top_k_indices_alone_end_the_flow():
    body = "return tf.math.top_k(scores, k=2).indices"
    probe, out = at_zero(BEAM.format(body=body))
    assert kinds(probe) == ["order"]
    assert out["status"] == "refuted"


def test_top_k_values_returned_escape():
    probe, out = at_zero(BEAM.format(body="return tf.math.top_k(scores, k=2).values"))
    assert "uses" not in probe
    assert out["status"] == "confirmed"


def test_arithmetic_on_top_k_values_escapes():
    """The values are not sliced after a top_k: only ops keeping every entry may follow."""
    body = "vals, idx = tf.math.top_k(scores, k=2)\n        return tf.argmax(vals * 0.0, axis=-1)"
    assert "uses" not in one_probe(BEAM.format(body=body), "TNL101")


def test_a_sort_then_argsort_is_order_only():
    body = "ranked = tf.sort(scores, axis=-1)\n        return tf.argsort(tf.reshape(ranked, [-1]))"
    probe, out = at_zero(BEAM.format(body=body))
    assert kinds(probe) == ["order", "order"]
    assert out["status"] == "refuted"


def test_a_log_returned_from_the_function_is_unchanged():
    probe, out = at_zero(BEAM.format(body="return scores"))
    assert "uses" not in probe
    assert out["status"] == "confirmed" and out["symptom"] == "inf-value"


# ---------------------------------------------------------------- a maximum passes a gradient

BEST = """\
    import tensorflow as tf


    def best(x):
        probs = tf.keras.layers.Dense(3, activation="softmax")(x)
        return tf.reduce_max(tf.math.log(probs), axis=-1)
    """


def test_a_row_maximum_of_a_minus_inf_entry_keeps_only_its_gradient_trap():
    probe, out = at_zero(differentiated(BEST, "best"))
    assert kinds(probe) == ["max"]
    assert out["status"] == "confirmed" and out["symptom"] == "inf-gradient"
    assert "whose row keeps a finite maximum" in out["detail"]


def test_a_row_maximum_where_no_gradient_flows_is_refuted():
    probe = one_probe(evaluated(BEST, "best"), "TNL101")
    # the module's structure says no gradient flows (a certain fact, not a conditional one)
    assert probe["no_gradient"].startswith("no path to a differentiation root"), probe
    assert not probe.get("no_gradient_likely"), probe
    out = probing.verify(probe, THR)
    assert out["status"] == "refuted", out
    assert "whose row keeps a finite maximum" in out["detail"]


def test_a_maximum_only_compared_stays_a_comparison():
    src = BEST.replace("return tf.reduce_max(tf.math.log(probs), axis=-1)",
                       "return tf.reduce_max(tf.math.log(probs), axis=-1) > -1.0")  # fmt: skip
    assert kinds(one_probe(src, "TNL101")) == ["compare"]


# ---------------------------------------------------------------- names alone never refute


def test_a_class_named_like_a_sampler_gets_no_context_from_its_name():
    # the name once made the value "in the sampler" and the verdict inconclusive; a name must
    # not decide, so the same body under either name keeps the witness's status
    body = """\
        import tensorflow as tf


        class {name}:
            def __call__(self, x, score):
                probs = tf.keras.layers.Dense(3, activation="softmax")(x)
                return score + tf.math.log(probs)
        """
    out = {"status": "confirmed", "symptom": "inf-value", "detail": "at probs = 0, log = -inf",
           "observed": {"value": "-inf"}, "inputs": {"probs": 0.0, "score": 1.0}}  # fmt: skip
    statuses = set()
    for name in ("BeamSampler", "Qz"):
        probe = one_probe(body.format(name=name), "TNL101")
        assert "uses" not in probe and "sampler" not in str(probe.get("no_gradient") or "")
        judged = downstream.review(probe, gradient_gate.apply(probe, dict(out)))
        statuses.add(judged["status"])
    assert statuses == {"confirmed"}
