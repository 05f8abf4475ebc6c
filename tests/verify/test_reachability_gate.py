"""Issue #11, "confirmed means reachable": a witness that sets a computed value freely, or needs
a parameter at a value the code never gives it, is not a confirmation.

Snippets are sliced by the real static pass (their probes carry each input's origin) and
verified in-process; hand-written probes pin the minimisation.  Real hazards stay confirmed.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from conftest import run_json  # noqa: E402
from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability import probed  # noqa: E402

from tfnumlint.verify import domains, probing  # noqa: E402
from tfnumlint.verify.points import point_grid  # noqa: E402
from tfnumlint.verify.program import build, run  # noqa: E402
from tfnumlint.verify.symptoms import Witness  # noqa: E402
from tfnumlint.verify.witness import minimise  # noqa: E402


def verify(probe: dict, threshold: float = 1e6) -> dict:
    return probing.verify(probe, threshold)


def verdicts(src: str, rule: str) -> list[dict]:
    """The verdicts of every finding of ``rule`` in the snippet (each must carry a probe)."""
    found = [f for f in probed(src, select=[rule]) if f.rule == rule]
    assert found and all(f.probe is not None for f in found), found
    return [verify(f.probe) for f in found]


def one_verdict(src: str, rule: str) -> dict:
    [out] = verdicts(src, rule)
    return out


def assert_far_tail(out: dict) -> None:
    """Not rejected by the reachability gate: inconclusive only for needing a far tail."""
    assert out["status"] == "inconclusive", out
    assert "past the float32 exp range" in out["detail"].split(" (seen: ")[0], out
    assert "breaks only if" not in out["detail"], out


STEP = """

model = tf.keras.Sequential([tf.keras.layers.Dense(4)])


def train_step(x, y):
    with tf.GradientTape() as tape:
        value = tf.reduce_mean({call})
    return tape.gradient(value, model.trainable_variables)
"""


def trained(src: str, call: str) -> str:
    """The snippet with a training step that differentiates ``call`` (its model's output as
    the argument that training drives): reachability, not a name, makes it a loss."""
    return textwrap.dedent(src) + STEP.format(call=call)


def spec(name: str, origin: str, **fields) -> dict:
    return {**free(name), "origin": origin, **fields}


# ---------------------------------------------------------------- origins recorded by the slicer


def test_the_slicer_records_where_each_input_comes_from():
    src = """\
        import tensorflow as tf


        class Layer:
            def call(self, v, x, scale):
                kve = bessel_kve(v, x)
                a, b = helper(x)
                n = tf.shape(x)[0]
                h = tf.compat.v1.placeholder(tf.float32)
                return (tf.math.log(kve) + tf.math.log(a) + tf.math.log(n)
                        + tf.math.log(scale) + tf.math.log(self.w) + tf.math.log(h))
        """
    [finding] = [f for f in probed(src, select=["TNL104"]) if f.probe]
    got = {i["name"]: (i["origin"], i.get("source"), i.get("of")) for i in finding.probe["inputs"]}
    assert got == {
        "kve": ("call", "bessel_kve(v, x)", None),
        "a": ("call", "helper(x)", None),
        "n": ("subscript", "tf.shape(x)", "call"),
        "scale": ("param", None, None),
        "self.w": ("attr", None, None),
        "h": ("data", None, None),
    }


def test_a_layer_output_is_a_model_origin_with_its_activation_range():
    src = """\
        import tensorflow as tf

        dense = tf.keras.layers.Dense(1, activation="sigmoid")


        def loss(x, y):
            p = dense(x)
            return -tf.reduce_mean((1 - y) * tf.math.log(1 - p))
        """
    [finding] = [f for f in probed(src, select=["TNL101"]) if f.probe]
    [p] = [i for i in finding.probe["inputs"] if i["name"] == "p"]
    assert (p["origin"], p["producer"], p["lo"], p["hi"]) == ("model", "sigmoid", 0.0, 1.0)
    assert verify(finding.probe)["status"] == "confirmed"


# ---------------------------------------------------------------- (a) a computed value set freely


MINCUT = """\
    import tensorflow as tf


    def orthogonality_loss(s, k):  # a loss term, as in MinCut: training drives `s`
        ss = tf.matmul(s, s, transpose_a=True)
        i_s = tf.eye(k, dtype=ss.dtype)
        return tf.norm(ss / tf.norm(ss) - i_s / tf.norm(i_s))
    """


MINCUT_TRAINED = trained(MINCUT, "orthogonality_loss(model(x), 4)")


def test_the_norm_of_an_identity_matrix_is_never_zero():
    # MinCut's orthogonality term: i_s = tf.eye(k) has norm sqrt(k), never 0
    statuses = sorted(v["status"] for v in verdicts(MINCUT_TRAINED, "TNL201"))
    assert statuses == ["confirmed", "refuted"], statuses  # ss / norm(ss) at s = 0 stays


def test_an_untraced_computed_value_at_zero_is_inconclusive_naming_its_producer():
    # the same term with a producer the verifier knows nothing about
    src = MINCUT_TRAINED.replace("tf.eye(k, dtype=ss.dtype)", "orthonormal_basis(k)")
    [out] = [v for v in verdicts(src, "TNL201") if "`i_s`" in v["detail"]]
    assert out["status"] == "inconclusive", out
    assert "`i_s` is computed by `orthonormal_basis(k)`, which was not traced" in out["detail"]
    assert out["detail"].startswith(("breaks only if `i_s` = 0;", "needs `i_s` = ")), out["detail"]
    assert "(seen: at " in out["detail"]  # what was seen stays in the message
    # the same file's real hazard, a Gram matrix of all-zero assignments, is still confirmed
    others = [v for v in verdicts(src, "TNL201") if "`i_s`" not in v["detail"]]
    assert others and all(v["status"] == "confirmed" for v in others), others


@pytest.mark.parametrize("callee", ["shifted_log_term", "log1mexp"])
def test_an_untraced_value_needed_at_an_extreme_is_inconclusive(callee):
    """A producer with no known range; `log1mexp` here is a project function named like the
    TFP one (not imported): its name is no evidence of a range (issue 22)."""
    src = f"""\
        import tensorflow as tf


        def cdf(x):
            shifted = {callee}(x)
            return tf.exp(shifted - tf.ones_like(x))
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith(
        f"breaks only if `shifted` = 100; `shifted` is computed by `{callee}(x)`, which "
        "was not traced"
    ), out["detail"]


def test_a_log1mexp_value_is_never_positive():
    src = """\
        import tensorflow as tf
        from tensorflow_probability.python.math import log1mexp


        def cdf(x):
            log1mexpx = log1mexp(x)
            return tf.exp(log1mexpx - tf.ones_like(x))
        """
    out = one_verdict(src, "TNL301")
    assert out["status"] == "refuted", out
    assert "its producer `log1mexp(x)` (log1mexp) lies there" in out["detail"], out["detail"]


def test_an_element_of_an_untraced_call_is_inconclusive():
    n = spec("n", "subscript", of="call", source="tf.shape(x)")
    out = verify(expr("TNL201", binop("/", inp("y"), inp("n")), [spec("y", "param"), n]))
    assert out["status"] == "inconclusive", out
    assert "`n` is an element of a value computed by `tf.shape(x)`" in out["detail"]


def test_an_element_of_a_parameter_confirms():
    n = spec("n", "subscript", of="param")
    out = verify(expr("TNL201", binop("/", inp("y"), inp("n")), [spec("y", "param"), n]))
    assert out["status"] == "confirmed", out


def test_a_computed_value_needed_at_an_ordinary_value_is_inconclusive():
    # log(h - 1) is -inf at h = 1, but nothing says helper(x) is ever 1: an assumption
    target = call("log", binop("-", inp("h"), const(1.0)))
    out = verify(expr("TNL101", target, [spec("h", "call", source="helper(x)")]))
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith(
        "breaks only if `h` = 1; `h` is computed by `helper(x)`, which was not traced"
    ), out["detail"]


def test_a_parameter_needed_at_an_ordinary_value_confirms():
    # the same with a parameter: the caller may pass 1
    target = call("log", binop("-", inp("h"), const(1.0)))
    out = verify(expr("TNL101", target, [spec("h", "param")]))
    assert out["status"] == "confirmed", out


def test_a_log_probability_in_training_passes_reachability_but_needs_a_far_tail():
    # PPO's importance ratio: the reachability gate lets a log-probability take any value; the
    # overflow needs a gap past 88 (preconditions.py: a far tail, not a training hazard)
    src = """\
        import tensorflow as tf


        def ratio(policy, old_log_prob, time_steps, actions):
            new_log_prob = policy.distribution(time_steps).log_prob(actions)
            return tf.exp(new_log_prob - old_log_prob)
        """
    assert_far_tail(one_verdict(trained(src, "ratio(model, model(x), x, y)"), "TNL301"))


def test_a_log_variance_computed_by_an_untraced_helper_is_not_reached_by_its_name():
    # a reward network's predicted log-variance, picked by a helper the slice cannot follow:
    # exp(-x) overflows only past -88, and nothing but the name `log_variance` says the helper's
    # result goes there.  Names never confirm (issue 22), nor do they pass the reachability gate
    src = """\
        import tensorflow as tf


        def weights(predicted_log_variance, actions):
            action_log_variance = index_with_actions(predicted_log_variance, actions)
            return tf.exp(-action_log_variance)
        """
    out = one_verdict(trained(src, "weights(model(x), y)"), "TNL301")
    assert out["status"] == "inconclusive", out
    reason = out["detail"].split(" (seen: ")[0]
    assert "is computed by `index_with_actions(predicted_log_variance, actions)`" in reason, out
    assert "which was not traced" in reason


def test_an_untraced_product_of_data_may_be_zero():
    # v = L x (a graph Laplacian times features) is 0 for constant features: its norm's gradient
    target = call("norm", inp("v"), axis=const(-1), keepdims={"k": "bool", "v": True})
    v = spec("v", "call", source="ops.modal_dot(lap, x)")
    assert verify(expr("TNL203", target, [v]))["status"] == "confirmed"
    v["source"] = "ops.bessel_kve(lap, x)"
    assert verify(expr("TNL203", target, [v]))["status"] == "inconclusive"


def test_a_count_of_data_may_be_zero_or_an_everyday_value():
    # calibration: counts / (eps + row sums) gathered and logged; an empty confusion cell is 0
    counts = spec("cm", "call", source="tf.math.confusion_matrix(pred, labels)")
    out = verify(expr("TNL101", call("log", inp("cm")), [counts]))
    assert out["status"] == "confirmed", out
    # and log(cm - 1) at cm = 1 (one sample in the cell) is an everyday count too
    out = verify(expr("TNL101", call("log", binop("-", inp("cm"), const(1.0))), [counts]))
    assert out["status"] == "confirmed", out


def test_a_computed_value_named_a_probability_is_not_known_to_reach_zero():
    # only the name says the helper's result is a probability that underflows: no confirmation
    # (issue 22); the control below, with the producer's range known, confirms
    probs = spec("probs", "call", source="self.compute_probabilities(logits)")
    out = verify(expr("TNL101", call("log", inp("probs")), [probs]))
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("breaks only if `probs` = 0"), out


def test_a_computed_value_inside_its_known_range_confirms():
    # an untraced helper whose value provenance knows is in [0, 1] reaches 0 by underflow
    target = call("log", inp("p"))
    p = spec("p", "call", source="helper(x)", lo=0.0, hi=1.0, producer="sigmoid")
    out = verify(expr("TNL101", target, [p]))
    assert out["status"] == "confirmed", out


# ---------------------------------------------------------------- (b) subnormal parameters


def _positive(name: str) -> dict:
    """A strong domain (0, inf): as from an in-scope `assert_positive`, so 0 is never probed."""
    why = "asserted by `assert_positive`"
    return {"name": name, "lo": 0.0, "hi": "inf", "lo_open": True, "why": why, "strong": True}


def test_a_parameter_needed_at_a_subnormal_is_inconclusive():
    probe = expr(
        "TNL201", binop("/", inp("x"), inp("scale")), [spec("x", "param"), spec("scale", "attr")]
    )
    probe["domains"] = [_positive("scale")]
    out = verify(probe, threshold=math.inf)  # no exploding gradient: x / 1e-8 is one too
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("needs `scale` = 1.4013e-45, a subnormal"), out["detail"]
    assert out["inputs"]["x"] == 1.0  # x is not needed at 100: the witness shows it relaxed


def test_a_subnormal_from_an_underflowing_producer_confirms():
    p = spec("p", "call", source="tf.exp(-t)", producer="exp", lo=0.0, hi="inf")
    probe = expr("TNL201", binop("/", inp("x"), inp("p")), [spec("x", "param"), p])
    probe["domains"] = [_positive("p")]
    out = verify(probe)
    assert out["status"] == "confirmed", out
    assert domains.value_class(out["inputs"]["p"], "float32") == "subnormal"


@pytest.mark.parametrize("count", ["total_count", "t"])
def test_a_parameter_needed_at_a_small_value_is_conditional_under_any_name(count):
    """A name (`total_count`) once made 1e-8 "not a count"; what decides is that nothing passes
    the parameter such a value."""
    src = f"""\
        import tensorflow as tf


        def log_normalizer(counts, {count}):
            return tf.math.log(counts) / tf.math.log({count} + 1.0)
        """
    out = one_verdict(src, "TNL105")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith(f"needs `{count}` = 1e-08; `{count}` is a parameter"), out


# ---------------------------------------------------------------- minimal witnesses


def test_an_irrelevant_input_is_no_longer_shown_at_an_extreme():
    # a - b is 0 at any a == b; c only scales the result and is not needed at 100
    target = binop("/", inp("c"), binop("-", inp("a"), inp("b")))
    probe = expr("TNL201", target, [free("c"), free("a"), free("b")])
    rows = point_grid(build(probe).inputs, "float32")
    assert 100.0 in rows[:, 0]  # the grid does put c at 100
    out = verify(probe)
    assert out["status"] == "confirmed"
    assert out["inputs"]["c"] == 1.0, out
    assert out["observed"]["needed"] == [n for n in ("a", "b") if out["inputs"][n] == 0.0]


def test_minimise_relaxes_an_extreme_constant_and_keeps_the_needed_zero():
    probe = expr("TNL201", binop("/", inp("k"), inp("x")), [free("k"), free("x")])
    program = build(probe)
    rows = np.array([[100.0, 0.0]])
    res = run(program, rows)
    w, needed = minimise(program, Witness("inf-value", 0, rows, res), 1e6)
    assert list(w.rows[w.row]) == [1.0, 0.0]
    assert needed == ["x"]


def test_minimise_keeps_inputs_that_must_stay_equal():
    # log(a - b + 1) - log(1) with a == b == 100: no single replacement keeps a == b, the shared
    # one does, so neither is needed at 100
    target = binop("/", const(1.0), binop("-", inp("a"), inp("b")))
    probe = expr("TNL201", target, [free("a"), free("b")])
    program = build(probe)
    rows = np.array([[100.0, 100.0]])
    res = run(program, rows)
    w, needed = minimise(program, Witness("inf-value", 0, rows, res), 1e6)
    assert list(w.rows[w.row]) == [1.0, 1.0]
    assert needed == []


def test_a_dead_gradient_witness_is_not_minimised():
    program = build(expr("TNL102", call("log", inp("z")), [free("z")]))
    rows = np.array([[0.0]])
    w = Witness("dead-gradient", 0, rows, run(program, rows))
    assert minimise(program, w, 1e6) == (w, None)


# ---------------------------------------------------------------- real hazards stay confirmed


def test_log_of_softmax_needs_a_logit_gap_past_100():
    src = """\
        import tensorflow as tf


        def loss(labels, logits):
            return -tf.reduce_sum(labels * tf.math.log(tf.nn.softmax(logits)), axis=-1)
        """
    for out in verdicts(trained(src, "loss(y, model(x))"), "TNL103"):
        assert_far_tail(out)


def test_log_of_sigmoid_needs_a_logit_past_minus_88():
    src = """\
        import tensorflow as tf


        def loss(z):
            return -tf.reduce_mean(tf.math.log(tf.sigmoid(z)))
        """
    assert_far_tail(one_verdict(trained(src, "loss(model(x))"), "TNL101"))


def test_one_minus_sigmoid_saturating_at_17_stays_confirmed():
    src = """\
        import tensorflow as tf


        def loss(z):
            return -tf.reduce_mean(tf.math.log(1.0 - tf.sigmoid(z)))
        """
    out = one_verdict(trained(src, "loss(model(x))"), "TNL101")
    assert out["status"] == "confirmed", out
    assert 0 < out["inputs"]["z"] <= 17, out  # 1 - sigmoid(17) is already 0 in float32


def test_cosine_similarity_of_a_relu_feature_vector_stays_confirmed():
    # a layer's data times its own weight: an all-zero ReLU row is the program's own state
    src = """\
        import tensorflow as tf


        class Similarity(tf.keras.layers.Layer):
            def build(self, shape):
                self.w = self.add_weight(shape=(shape[-1], 8))

            def call(self, x):
                h = tf.nn.relu(tf.matmul(x, self.w))
                return h / tf.norm(h, axis=-1, keepdims=True)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "confirmed", out


def test_cosine_similarity_in_a_helper_nothing_calls_states_its_sign_condition():
    # the same rows in a helper with no caller: the witness rests on the sign of `x` (with
    # w > 0, x < 0 zeroes the ReLU row), which no caller in view is shown to pass
    src = """\
        import tensorflow as tf


        def similarity(x, w):
            h = tf.nn.relu(tf.matmul(x, w))
            return h / tf.norm(h, axis=-1, keepdims=True)
        """
    out = one_verdict(src, "TNL201")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("shows with `"), out
    assert "parameters of `similarity` and nothing shows its callers pass" in out["detail"]
    assert [s["gate"] for s in out["trail"] if s.get("why")] == ["free signs"], out["trail"]


def test_sqrt_of_squared_error_at_an_exact_fit_stays_confirmed():
    src = """\
        import tensorflow as tf


        def rmse(y_true, y_pred):
            return tf.sqrt(tf.reduce_sum(tf.square(y_pred - y_true), axis=-1))
        """
    out = one_verdict(trained(src, "rmse(y, model(x))"), "TNL202")
    assert (out["status"], out["symptom"]) == ("confirmed", "nan-gradient"), out


def test_log_of_a_prediction_known_only_by_its_use_is_conditional():
    # a loss whose caller passes a model output, linted alone (no project index, so the call
    # site's producer is not read): only its use (the negated mean of its log-likelihood)
    # makes `v` a probability.  A use never confirms (issue 22), and nothing here says it is a
    # squashed logit either: the verdict is conditional on `v` = 0, not a far-tail precondition
    src = """\
        import tensorflow as tf


        def nll(y_true, v):
            return -tf.reduce_mean(tf.reduce_sum(y_true * tf.math.log(v), axis=-1))
        """
    src = trained(src, "nll(y, model(x))")
    [out] = [v for v in verdicts(src, "TNL101") if "v" in v.get("inputs", {})]
    assert out["inputs"]["v"] == 0.0, out
    assert out["status"] == "inconclusive" and "far tail" not in out["detail"], out
    assert out["detail"].startswith("conditional: only its use says `v` is a probability")
    # the depth loss this once was: `y_pred` is a probability by no use, whatever its name
    silog = """\
        import tensorflow as tf


        def silog(y_true, y_pred):
            d = tf.math.log(y_true) - tf.math.log(y_pred)
            return tf.sqrt(tf.reduce_mean(tf.square(d)) - 0.5 * tf.square(tf.reduce_mean(d)))
        """
    assert not probed(trained(silog, "silog(y, model(x))"), select=["TNL101"])


def test_user_loss_with_an_epsilon_on_a_sigmoid_output_needs_a_far_tail():
    src = """\
        import tensorflow as tf


        def loss(logits):
            p = tf.sigmoid(logits)
            return -tf.reduce_mean(tf.math.log(p + 1e-10))
        """
    out = one_verdict(trained(src, "loss(model(x))"), "TNL102")
    assert out["symptom"] == "dead-gradient", out  # exactly 0 at -100; about 1e-3 at -30
    assert_far_tail(out)


def test_tf1_tutorial_loss_needs_a_logit_gap_past_100():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float32, [None, 784])
        W = tf.Variable(tf.zeros([784, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.nn.softmax(tf.matmul(x, W) + b)
        y_ = tf.placeholder(tf.float32, [None, 10])
        cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
        """
    for rule in ("TNL101", "TNL103"):
        for out in verdicts(src, rule):
            assert_far_tail(out)


def test_a_constant_the_slicer_kept_as_an_input_is_never_held_against_the_witness():
    # `K.epsilon()` is sliced as an opaque call, but provenance knows it is 1e-7 (lo == hi)
    eps = spec("K.epsilon()", "call", source="K.epsilon()", producer="constant", lo=1e-7, hi=1e-7)
    target = call("log", binop("+", inp("s"), inp("K.epsilon()")))
    out = verify(expr("TNL101", target, [spec("s", "param"), eps]))
    assert out["status"] == "confirmed", out


# -- a use never confirms (issue 22) ----------------------------------------------------------


def test_a_probability_by_its_use_alone_is_conditional_not_confirmed():
    """`a` is read as a probability only because of its use, the negated mean of its log (no
    producer, no caller; its name says nothing): the witness shows what happens if it is one,
    so the finding is conditional and says so."""
    src = """\
        import tensorflow as tf


        def generator_loss(a):
            return -tf.reduce_mean(tf.math.log(a))
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "inconclusive", out
    reason = out["detail"].split(" (seen: ")[0]
    assert reason.startswith("conditional: only its use says `a` is a probability"), out
    assert reason.endswith("the symptom needs `a` = 0"), out


def test_the_same_log_of_a_sigmoid_output_is_confirmed():
    """The control: the producer says it is a probability, so the same log is confirmed."""
    src = """\
        import tensorflow as tf


        def generator_loss(logits):
            d_fake = tf.sigmoid(logits)
            return -tf.reduce_mean(tf.math.log(1.0 - d_fake))
        """
    out = one_verdict(src, "TNL101")
    assert out["status"] == "confirmed", out
    assert "only its name" not in out["detail"]


def test_a_callers_probability_range_is_not_taken_for_the_logits_range(write):
    """Every caller passes a sigmoid output, in [0, 1]: the range analysis must start the
    probability input's logit from (-inf, inf), not from [0, 1] (sigmoid([0, 1]) never reaches
    0 or 1, which once refuted nanruns p04's `log(1 - d_fake)`).  The callers are read by the
    project index, so this runs the CLI on a file."""
    path = write(
        "gan.py",
        """\
        import tensorflow as tf

        disc = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])


        def loss_of(u):
            return -tf.reduce_mean(tf.math.log(1.0 - u))


        def step(x):
            with tf.GradientTape() as tape:
                loss = loss_of(disc(x))
            return tape.gradient(loss, disc.trainable_variables)
        """,
    )
    report = run_json(
        "--no-cache", "--exit-zero", "--show-refuted", "--select", "TNL101", str(path)
    )
    [finding] = report["findings"]
    assert finding["verification"]["status"] == "confirmed", finding
    assert "sigmoid model output" in finding["message"]


FRITSCH = """\
    import tensorflow as tf


    def refine(z, w):
        zn = tf.math.log(tf.abs(z)) - tf.math.log(tf.abs(w)) - w
        wp1 = w + 1.0
        q = 2.0 * wp1 * (wp1 + 2.0 / 3.0 * zn)
        q_minus = q - 2.0 * zn
        return zn / wp1 * (1.0 + zn / q_minus)
    """


def test_an_upstream_inf_states_no_condition_on_a_free_parameter():
    """At ``z`` = 0 both operands of ``q - 2 * zn`` are -inf: the divisor is NaN, not 0.  The
    witness review runs before reachability, so "needs `z` = 0" (a condition on a parameter no
    caller passes) is not stated for a division that never divides by 0 there."""
    divisions = [v for v in verdicts(FRITSCH, "TNL201") if "zn / q_minus" in v.get("detail", "")]
    assert divisions, verdicts(FRITSCH, "TNL201")
    for v in divisions:
        assert v["status"] == "inconclusive", v
        assert "already -inf at the witness" in v["detail"], v["detail"]
        assert "needs `z` = 0" not in v["detail"], v["detail"]
