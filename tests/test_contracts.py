"""Contracts a library declares for its API methods' inputs (analysis/contracts.py): a density
method's sample check and a bijector's forward image bound the inputs, as code-derived
("strong") domains, so a witness outside them is refuted."""

from __future__ import annotations

import textwrap

from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.ruledocs import all_docs
from tfnumlint.source import Source


def probes_of(code: str, rule: str) -> dict[int, dict]:
    """line -> probe of each finding of ``rule`` in the snippet."""
    text = textwrap.dedent(code)
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    result = lint_source(Source("dist.py", text, text.encode()), options)
    assert not result.errors, result.errors
    return {f.line: f.probe for f in result.findings if f.rule == rule and f.probe}


def probe_of(code: str, rule: str) -> dict:
    [probe] = probes_of(code, rule).values()
    return probe


def domains(probe: dict) -> dict[str, tuple]:
    return {
        d["name"]: (d["lo"], d["lo_open"], d["hi"], d["strong"]) for d in probe.get("domains") or []
    }


def relations(probe: dict) -> set[tuple[str, str, str, bool]]:
    return {(r["a"], r["op"], r["b"], r["strong"]) for r in probe.get("relations") or []}


SAMPLE_CHECKED = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import assert_util


    class Counts:
        def {method}(self, x):
            return tf.math.log(x - self.rate)

        def _sample_control_dependencies(self, value):
            assertions = []
            if not self.validate_args:
                return assertions
            assertions.append(assert_util.{check}(value))
            return assertions
    """


def test_the_sample_check_bounds_the_sample_of_a_density_method():
    probe = probe_of(SAMPLE_CHECKED.format(method="_log_prob", check="assert_positive"), "TNL104")
    lo, lo_open, hi, strong = domains(probe)["x"]
    assert (lo, lo_open, hi, strong) == (0.0, True, "inf", True)


def test_a_non_negative_integer_form_check_makes_the_sample_non_negative():
    src = SAMPLE_CHECKED.format(method="_cdf", check="assert_nonnegative_integer_form")
    assert domains(probe_of(src, "TNL104"))["x"][:3] == (0.0, False, "inf")


def test_the_sample_check_does_not_bound_other_methods():
    src = SAMPLE_CHECKED.format(method="_quantile", check="assert_positive")
    assert "x" not in domains(probe_of(src, "TNL104"))


BIJECTOR = """\
    import tensorflow as tf


    class Squash:
        def _forward(self, x):
            {forward}

        def _inverse(self, y):
            {inverse}
    """


LOG_ABOVE_LOW = "return tf.math.log(y - self.low)"


def test_the_inverse_receives_the_static_image_of_the_forward():
    src = BIJECTOR.format(forward="return tf.nn.tanh(x)", inverse=LOG_ABOVE_LOW)
    assert domains(probe_of(src, "TNL104"))["y"] == (-1.0, False, 1.0, True)


def test_an_interval_map_between_two_attributes_relates_the_inverse_input_to_them():
    forward = """\
            lo = tf.convert_to_tensor(self.low)
            hi = tf.convert_to_tensor(self.high)
            diff = hi - lo
            left = lo + diff * tf.sigmoid(x)
            right = hi - diff * tf.sigmoid(-x)
            return tf.where(x < 0, left, right)"""
    below = BIJECTOR.format(forward=forward.strip(), inverse=LOG_ABOVE_LOW)
    assert ("y", ">=", "self.low", True) in relations(probe_of(below, "TNL104"))
    above = BIJECTOR.format(forward=forward.strip(), inverse="return tf.math.log(self.high - y)")
    assert ("y", "<=", "self.high", True) in relations(probe_of(above, "TNL104"))


def test_only_the_forward_return_of_the_same_branch_counts():
    forward = """\
            if self.standard:
                return tf.sigmoid(x)
            return tf.exp(x)"""
    inverse = """\
            if self.standard:
                return tf.math.log(y - self.low)
            return tf.math.log(y - self.low)"""
    src = BIJECTOR.format(forward=forward.strip(), inverse=inverse.strip())
    by_line = {line: domains(p).get("y") for line, p in probes_of(src, "TNL104").items()}
    assert by_line == {
        12: (0.0, False, 1.0, True),  # under `if self.standard`: the sigmoid branch
        13: (0.0, False, "inf", True),  # after it: exp(x) >= 0
    }


def test_a_forward_of_unknown_range_gives_nothing():
    src = BIJECTOR.format(forward="return self.fn(x)", inverse=LOG_ABOVE_LOW)
    assert "y" not in domains(probe_of(src, "TNL104"))
