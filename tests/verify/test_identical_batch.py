"""A witness that needs every example of the batch to be identical is a precondition (issue 11).

The probe fills each input with one value, so a dispersion across the batch axis 0 (a variance,
a Jensen gap as in a Gamma MLE) is 0 at every probe point, as it is only for a batch of
identical examples.  Such a witness is inconclusive: the worker re-evaluates it with the
examples made to differ along axis 0 (``verify/spread.py``), and a moments variance cut as an
input is 0 only then.  A dispersion within one example (spatial or feature axes) and values
identical across examples by construction (a dead ReLU unit, a mask, labels) stay confirmed, and
so does axis 0 of a function mapped over a dataset, which sees one example at a time.

Snippets are sliced by the real static pass and verified in-process.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from conftest import func, trained_func  # noqa: E402
from probe_helpers import call, const, expr, free, inp  # noqa: E402
from test_reachability_gate import one_verdict, verdicts  # noqa: E402

from tfnumlint.verify import preconditions  # noqa: E402
from tfnumlint.verify.program import build  # noqa: E402
from tfnumlint.verify.spread import identical_batch  # noqa: E402


def reason(out: dict) -> str:
    assert out["status"] == "inconclusive", out
    return out["detail"].split(" (seen: ")[0]


def assert_confirmed(out: dict) -> None:
    assert out["status"] == "confirmed", out
    assert "identical_batch" not in out["observed"], out


# ---------------------------------------------------------------- a moments variance, cut


def moments_stddev(axes: str, x: str = "x") -> str:
    # a training step differentiates `f`: its sqrt's gradient is a symptom of a loss (with no
    # caller in the project it would be conditional on one, issue 22)
    return trained_func(
        f"mean, var = tf.nn.moments(x={x}, axes={axes})\nreturn tf.reduce_mean(tf.sqrt(var))",
        "x, w",
    )


def test_a_batch_variance_at_zero_needs_identical_examples():
    out = one_verdict(moments_stddev("[0]"), "TNL202")
    text = reason(out)
    assert text.startswith("needs `var` = 0 (`tf.nn.moments(x=x, axes=[0])`)"), out
    assert "every example is identical (or a batch of one)" in text, out
    assert "guard with `sqrt(var + eps)`" in text, out
    assert out["observed"]["needed"] == ["var"]  # what was seen is kept


def test_a_variance_within_each_example_stays_confirmed():
    # a constant-colour patch has zero spatial variance: common, a real metric hazard
    assert_confirmed(one_verdict(moments_stddev("[1, 2, 3]"), "TNL202"))


def test_a_batch_variance_of_a_relu_output_stays_confirmed():
    # a dead unit is 0 for every example: zero batch variance is reachable by construction
    assert_confirmed(one_verdict(moments_stddev("[0]", "tf.nn.relu(tf.matmul(x, w))"), "TNL202"))


# ---------------------------------------------------------------- traced batch reductions


GAMMA_MLE = func(
    "expected_x = tf.reduce_mean(value, axis=0)\n"
    "expected_log_x = tf.reduce_mean(tf.math.log(value), axis=0)\n"
    "inv_concentration = 2. * (tf.math.log(expected_x) - expected_log_x)\n"
    "return 1. / inv_concentration",
    "value",
)


def test_a_jensen_gap_over_the_sample_axis_needs_identical_examples():
    out = one_verdict(GAMMA_MLE, "TNL206")
    text = reason(out)
    assert text.startswith("needs every example along axis 0 of `value` to be identical"), out
    assert "the symptom is gone" in text and "guard the division" in text, out
    assert out["observed"]["identical_batch"]["inputs"] == ["value"]


def test_a_batch_norm_without_eps_needs_identical_examples():
    # its only witness is var = 0: with two different examples x / sqrt(var) is finite
    src = func("var = tf.math.reduce_variance(x, axis=0)\nreturn x / tf.sqrt(var)")
    text = reason(one_verdict(src, "TNL201"))
    assert text.startswith("needs every example along axis 0 of `x` to be identical"), text


def test_a_hand_written_batch_variance_needs_identical_examples():
    src = trained_func(
        "var = tf.reduce_mean(tf.square(x - tf.reduce_mean(x, 0)), 0)\nreturn tf.sqrt(var)"
    )
    assert "along axis 0 of `x`" in reason(one_verdict(src, "TNL202"))


@pytest.mark.parametrize("axis", ["1", "[1, 2]", "-1"])
def test_a_variance_over_other_axes_stays_confirmed(axis):
    src = trained_func(
        f"var = tf.math.reduce_variance(x, axis={axis})\nreturn tf.reduce_mean(tf.sqrt(var))"
    )
    assert_confirmed(one_verdict(src, "TNL202"))


def test_a_batch_variance_of_an_inline_relu_stays_confirmed():
    src = trained_func(
        "h = tf.nn.relu(z)\nvar = tf.math.reduce_variance(h, axis=0)\n"
        "return tf.reduce_mean(tf.sqrt(var))",
        "z",
    )
    assert_confirmed(one_verdict(src, "TNL202"))


def spread_seen(target: dict, point: dict[str, float], symptom: str) -> dict:
    """The worker's check alone on a hand-written probe and witness."""
    probe = expr("TNL101", target, [free(n) for n in point])
    program = build(probe)
    seen = {"status": "confirmed", "symptom": symptom, "inputs": point, "observed": {}}
    return identical_batch(program, seen, 1e6)["observed"]


def test_a_symptom_that_survives_different_examples_is_not_marked():
    # log of a batch mean at 0: a zero example stays zero when the others differ, the log is
    # -inf whatever the spread (all-zero examples are no coincidence of continuous values)
    log_mean = call("log", call("reduce_mean", inp("x"), const(0)))
    assert "identical_batch" not in spread_seen(log_mean, {"x": 0.0}, "inf-value")
    # ... while a Jensen gap at a constant sample is 0 only for identical examples
    gap = call(
        "subtract",
        log_mean,
        call("reduce_mean", call("log", inp("x")), const(0)),
    )
    seen = spread_seen(call("reciprocal", gap), {"x": 2.0}, "inf-value")
    assert seen["identical_batch"]["inputs"] == ["x"]


def test_an_overflow_in_one_example_is_not_marked():
    # exp overflows in the witness example itself: a different second example changes nothing
    big = call("reduce_mean", call("exp", inp("x")), const(0))
    assert "identical_batch" not in spread_seen(big, {"x": 100.0}, "inf-value")


# ---------------------------------------------------------------- the static gate


def batch_probe(*names: str, producer: str = "unknown") -> dict:
    total = call("reduce_mean", *[inp(n) for n in names[:1]], const(0))
    for n in names[1:]:
        total = call("add", total, call("reduce_mean", inp(n), const(0)))
    return expr("TNL206", total, [free(n, producer=producer) for n in names])


def test_the_gate_spreads_only_values_not_identical_by_construction():
    assert preconditions.batch_inputs(batch_probe("x")) == ["x"]
    assert preconditions.batch_inputs(batch_probe("h", producer="relu")) == []
    for producer in ("one_hot", "mask", "bool"):  # class labels, masks: by their producer
        assert preconditions.batch_inputs(batch_probe("labels", producer=producer)) == []
    # a name alone ("labels", "targets") no longer says the entries repeat across the batch
    assert preconditions.batch_inputs(batch_probe("labels")) == ["labels"]
    assert preconditions.batch_inputs(batch_probe("targets")) == ["targets"]


def test_the_gate_reads_axis_zero_in_every_spelling():
    for axis in (const(0), {"k": "tuple", "items": [const(0), const(1)]}):
        probe = expr("TNL206", call("reduce_variance", inp("x"), axis=axis), [free("x")])
        assert preconditions.batch_inputs(probe) == ["x"]
    for axis in (const(1), {"k": "neg", "x": const(1)}, inp("axis")):
        inputs = [free("x"), free("axis")] if axis["k"] == "input" else [free("x")]
        probe = expr("TNL206", call("reduce_variance", inp("x"), axis=axis), inputs)
        assert preconditions.batch_inputs(probe) == []


def test_axis_zero_of_a_function_mapped_over_a_dataset_is_no_batch_axis():
    # one image at a time: axis 0 is its height, a flat image region is common
    src = """\
        import tensorflow as tf


        def _scale(image):
            image = tf.cast(image, tf.float32) * 2.0
            mean, var = tf.nn.moments(image, axes=[0, 1])
            var_h = tf.math.reduce_variance(image, axis=0)
            return (image - mean) / tf.sqrt(var) + 1. / var_h


        def build(files):
            return tf.data.TFRecordDataset(files).map(_scale)
        """
    for out in verdicts(src, "TNL202") + verdicts(src, "TNL206"):
        assert "identical" not in out["detail"], out


def test_axis_zero_of_a_function_mapped_over_elements_is_no_batch_axis():
    src = func(
        "def _norm(v):\n"
        "    var = tf.math.reduce_variance(v * 2.0, axis=0)\n"
        "    return 1. / var\n"
        "return tf.map_fn(_norm, x)"
    )
    [out] = verdicts(src, "TNL206")
    assert "identical" not in out["detail"], out
