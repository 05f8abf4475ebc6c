"""Issue #11, round-3 groups 3-5: code that is never differentiated, guards and branches the
witness must respect, and host arithmetic that is not TensorFlow.

Static side, no TensorFlow: what the analysis hands the verifier (``no_gradient``,
``value_guarded``, ``guarded``, the slice's inputs) and which hits are dropped as host code.
Every snippet is written for its test, with the shape of the reviewed real-world finding.
"""

from __future__ import annotations

import textwrap

import pytest
from conftest import differentiated
from test_reachability import one_probe, probed

from tfnumlint.model import Finding
from tfnumlint.verify import gradient_gate

# ---------------------------------------------------------------- iterative numerical code

SOLVER_LOOP = """\
    import tensorflow as tf


    def iterate(f, x0, x1, max_iter):
        def _body(x0, x1, num_iterations):
            step = tf.norm(x1 - x0)
            return x1, x1 - f(x1) * step, num_iterations + 1

        return tf.while_loop(lambda x0, x1, n: n < max_iter, _body, (x0, x1, 0))
    """

RNN_LOOP = """\
    import tensorflow as tf


    def unroll(cell, xs, h0, steps):
        def step(t, h, prev):
            change = tf.norm(h - prev)
            return t + 1, cell(xs[t], h) * change, h

        return tf.while_loop(lambda t, h, prev: t < steps, step, (0, h0, h0))
    """


def test_an_rnn_unrolled_with_while_loop_keeps_its_gradient():
    assert "no_gradient" not in one_probe(RNN_LOOP, "TNL203")


HELPER_OF_A_SOLVER = """\
    import tensorflow as tf


    def _proposal(a, b, c):
        return tf.norm(b - c) * a


    def run(a, b, c):
        def body(a, b, c):
            return _proposal(a, b, c), b, c

        return tf.while_loop(lambda a, b, c: a < b, body, (a, b, c))
"""


def test_the_same_helper_also_called_from_training_code_keeps_its_gradient():
    """`_proposal` is also called by `loss`, which a training step differentiates."""
    src = (
        HELPER_OF_A_SOLVER
        + """\


    def loss(a, b, c):
        return _proposal(a, b, c)
"""
    )
    assert "no_gradient" not in one_probe(differentiated(src, "loss"), "TNL203")


def test_a_model_module_with_a_plain_norm_keeps_its_gradient():
    """A differentiated distance in `models/`: the path does not decide."""
    src = """\
        import tensorflow as tf


        def embedding_distance(x, y):
            return tf.norm(x - y)
        """
    probe = one_probe(
        differentiated(src, "embedding_distance"), "TNL203", path="pkg/models/encoder.py"
    )
    assert "no_gradient" not in probe


# ---------------------------------------------------------------- a flag that guards the value

SECANT_STEP = """\
    import tensorflow as tf


    def secant_step(x, f0, f1, step, tol):
        done = tf.math.is_nan(f1) | ({flag})
        return tf.where(done, {branches})
    """


def secant(flag: str, branches: str = "tf.zeros_like(step), step * f1 / (f0 - f1)") -> str:
    return SECANT_STEP.replace("{flag}", flag).replace("{branches}", branches)


@pytest.mark.parametrize(
    "flag", ["tf.equal(f0, f1)", "(f1 == f0)", "tf.abs(f0 - f1) < tol", "tf.abs(f1 - f0) <= tol"]
)
def test_a_flag_computed_from_the_divisors_zero_guards_the_value(flag):
    probe = one_probe(secant(flag), "TNL201")
    assert "selects the other value" in probe["value_guarded"]


@pytest.mark.parametrize(
    ("flag", "branches"),
    [
        pytest.param("(f1 > f0)", None, id="flag-misses-the-zero"),
        pytest.param("tf.equal(f0, step)", None, id="flag-on-other-values"),
        pytest.param(
            "tf.equal(f0, f1)",
            "step * f1 / (f0 - f1), tf.zeros_like(step)",
            id="hazard-in-the-selected-branch",
        ),
    ],
)
def test_a_flag_that_does_not_cover_the_zero_is_no_guard(flag, branches):
    src = secant(flag, branches) if branches else secant(flag)
    assert "value_guarded" not in one_probe(src, "TNL201")


def test_a_flag_and_another_condition_is_no_guard():
    src = secant("tf.equal(f0, f1)").replace(
        "return tf.where(done,", "return tf.where(done & (x > 0),"
    )
    assert "value_guarded" not in one_probe(src, "TNL201")


def test_the_flag_guard_refutes_the_value_but_not_the_gradient():
    probe = one_probe(secant("tf.equal(f0, f1)"), "TNL201")
    value = gradient_gate.apply(
        probe, {"status": "confirmed", "symptom": "inf-value", "detail": "d"}
    )
    assert value["status"] == "refuted"
    gradient = {"status": "confirmed", "symptom": "nan-gradient", "detail": "d"}
    reached = {**probe, "no_gradient": None, "conditional": None}  # as if a root called it
    assert gradient_gate.apply(reached, gradient)["status"] == "confirmed"


# ---------------------------------------------------------------- assertions as guards

TAU = """\
    import tensorflow as tf


    def rank_correlation(dx, dy):
        s = tf.reduce_sum(dx * dy)
        t = tf.math.count_nonzero(dx, dtype=tf.float32)
        u = tf.math.count_nonzero(dy, dtype=tf.float32)
    """


def tau(asserts: str) -> str:
    return textwrap.dedent(TAU) + textwrap.indent(asserts, "    ") + "\n"


@pytest.mark.parametrize(
    "asserts",
    [
        pytest.param(
            "tf.debugging.assert_positive(t)\n"
            "tf.debugging.assert_positive(u)\n"
            "return s / tf.sqrt(t * u)",
            id="statements",
        ),
        pytest.param(
            "checks = [tf.debugging.assert_positive(t), tf.debugging.assert_greater(u, 0.0)]\n"
            "with tf.control_dependencies(checks):\n"
            "    return s / tf.sqrt(t * u)",
            id="control-dependencies",
        ),
    ],
)
def test_assertions_that_reject_every_zero_of_the_divisor_guard_it(asserts):
    probe = one_probe(tau(asserts), "TNL201")
    assert "assertion of the code rejects the zero of `t`, `u`" in probe["guarded"]
    verdict = gradient_gate.apply(
        probe, {"status": "confirmed", "symptom": "nan-value", "detail": "d"}
    )
    assert verdict["status"] == "refuted"


@pytest.mark.parametrize(
    "asserts",
    [
        pytest.param(
            "tf.debugging.assert_positive(t)\nreturn s / tf.sqrt(t * u)",
            id="one-factor-unchecked",
        ),
        pytest.param(
            "tf.debugging.assert_non_negative(t)\n"
            "tf.debugging.assert_non_negative(u)\n"
            "return s / tf.sqrt(t * u)",
            id="zero-allowed",
        ),
        pytest.param(
            "if s > 0:\n"
            "    tf.debugging.assert_positive(t)\n"
            "    tf.debugging.assert_positive(u)\n"
            "return s / tf.sqrt(t * u)",
            id="conditional-assertion",
        ),
        pytest.param(
            "tf.debugging.assert_positive(t)\n"
            "tf.debugging.assert_positive(u)\n"
            "return s / tf.sqrt(t - u)",
            id="difference-can-be-zero",
        ),
    ],
)
def test_assertions_that_leave_a_zero_are_no_guard(asserts):
    assert "guarded" not in one_probe(tau(asserts), "TNL201")


# ---------------------------------------------------------------- host arithmetic in callbacks

TIMER = """\
    import time

    import tensorflow as tf


    class Stamp:
        def __init__(self, step, when):
            self.step = step
            self.when = when


    class Throughput({base}):
        def __init__(self, batch_size):
            super().__init__()
            self.batch_size = batch_size
            self.log = []

        def on_batch_end(self, batch, logs=None):
            self.log.append(Stamp(batch, time.time()))

        def examples_per_second(self):
            log = self.log
            seconds = log[-1].when - log[0].when
            steps = log[-1].step - log[0].step
            return self.batch_size * steps / seconds

        def on_epoch_end(self, epoch, logs=None):
            self.rate = logs["samples"] / self.elapsed
    """


def test_python_timings_in_a_keras_callback_are_not_tensorflow_divisions():
    src = TIMER.replace("{base}", "tf.keras.callbacks.Callback")
    assert [f for f in probed(src, select=["TNL201"]) if f.rule == "TNL201"] == []


def test_the_timing_division_outside_a_callback_is_still_python():
    """Fields of a list of Python records are host values in any class."""
    src = TIMER.replace("{base}", "object")
    lines = {f.line for f in probed(src, select=["TNL201"]) if f.rule == "TNL201"}
    assert 25 not in lines  # examples_per_second: time.time() fields of Stamp records


def test_a_callback_hook_dividing_tensors_is_still_reported():
    src = """\
        import tensorflow as tf


        class Monitor(tf.keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                pred = self.model(self.probe_x)
                self.ratio = tf.reduce_sum(pred) / tf.norm(pred)
        """
    assert [f.rule for f in probed(src, select=["TNL201"])] == ["TNL201"]


CLOCKED = """\
    import tensorflow as tf


    class Speed({base}):
        def on_train_batch_end(self, batch, logs=None):
            duration = self.clock() - self.started
            self.speed = self.batch_size / duration
    """


def test_a_callback_hook_is_host_code():
    src = CLOCKED.replace("{base}", "tf.keras.callbacks.Callback")
    assert [f for f in probed(src, select=["TNL201"]) if f.rule == "TNL201"] == []


def test_the_same_method_outside_a_callback_is_still_reported():
    src = CLOCKED.replace("{base}", "tf.keras.layers.Layer")
    assert [f.rule for f in probed(src, select=["TNL201"])] == ["TNL201"]


# ---------------------------------------------------------------- Python branches in the slice

LETTERBOX = """\
    import tensorflow as tf


    def crop(image, width, height, jitter, letter_box):
        w0 = tf.cast(tf.shape(image)[1], tf.float32)
        left = tf.random.uniform([], -jitter, jitter)
        right = tf.random.uniform([], -jitter, jitter)
        if letter_box:
            aspect = width / height
            pull = (w0 * aspect - w0) / 2
            left = left - pull
            right = right - pull
        swidth = w0 - left - right
        if not letter_box:
            width = tf.round(w0 * width / swidth)
        return width
    """


def _input_names(probe: dict) -> set[str]:
    return {spec["name"] for spec in probe["inputs"]}


def _finding_at(src: str, rule: str, line: int) -> Finding:
    [finding] = [f for f in probed(src, select=[rule]) if f.rule == rule and f.line == line]
    assert finding.probe is not None
    return finding


def test_a_hazard_under_if_not_flag_ignores_definitions_under_if_flag():
    probe = _finding_at(LETTERBOX, "TNL201", 15).probe
    assert probe is not None
    names = _input_names(probe)
    assert "height" not in names  # only the letter-box adjustment reads it
    assert {"left", "right", "width"} <= names


def test_without_the_flag_both_definitions_reach_the_hazard():
    src = LETTERBOX.replace("        if not letter_box:\n", "        if width > 0:\n")
    probe = _finding_at(src, "TNL201", 15).probe
    assert probe is not None
    assert "height" in _input_names(probe)


def test_the_else_branch_does_not_see_the_if_branch_definition():
    src = """\
        import tensorflow as tf


        def normalise(x, y, flag):
            d = tf.reduce_sum(y)
            if flag:
                d = tf.norm(x)
            else:
                return x / d
            return x / d
        """
    findings = [f for f in probed(src, select=["TNL201"]) if f.rule == "TNL201"]
    by_line = {f.line: f.probe for f in findings}
    assert by_line[9] is not None and by_line[9]["target"]["r"]["op"] == "reduce_sum"
    assert by_line[10] is not None and by_line[10]["target"]["r"]["op"] == "norm"


# ---------------------------------------------------------------- value symptoms in solver loops

BRACKET_LOOP = """\
    import tensorflow as tf


    def interpolate(f, lo, hi, tol):
        def _body(a, b, c, converged):
            t = (a - b) / (c - b)
            return a + t, b, c, tf.abs(b - a) < tol

        return tf.while_loop(lambda a, b, c, done: ~done, _body, (lo, hi, hi, False))
    """


def test_an_rnn_body_has_no_solver_state():
    assert "loop_state" not in one_probe(RNN_LOOP, "TNL203")


def _value_verdict(needed: list[str]) -> dict:
    return {
        "status": "confirmed",
        "symptom": "inf-value",
        "detail": "d",
        "observed": {"needed": needed},
    }


def test_a_value_witness_needing_only_other_inputs_stays_confirmed():
    probe = one_probe(BRACKET_LOOP, "TNL201")
    assert gradient_gate.apply(probe, _value_verdict(["tol"]))["status"] == "confirmed"


# ---------------------------------------------------------------- decoding-time samplers

TOP_K_SAMPLER = """\
    import tensorflow as tf


    class TopKSampler:
        def get_next_token(self, probabilities):
            top_k_pred, top_k_indices = tf.math.top_k(probabilities, k=5)
            return tf.random.categorical(tf.math.log(top_k_pred), 1)
"""
