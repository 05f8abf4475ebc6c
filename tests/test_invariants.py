"""Class invariants (analysis/invariants.py): what a class asserts about an attribute bounds
every read of it in the class's methods, as a code-derived ("strong") domain."""

from __future__ import annotations

import math
import textwrap

import pytest

from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.ruledocs import all_docs
from tfnumlint.source import Source
from tfnumlint.verify import gates


def probe_of(code: str, rule: str = "TNL201") -> dict:
    text = textwrap.dedent(code)
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    result = lint_source(Source("dist.py", text, text.encode()), options)
    assert not result.errors, result.errors
    [finding] = [f for f in result.findings if f.rule == rule]
    assert finding.probe is not None
    return finding.probe


def domain_of(probe: dict, name: str) -> dict:
    [found] = [d for d in probe.get("domains") or [] if d["name"] == name]
    return found


HEAD = """\
    import tensorflow as tf
    from tensorflow_probability.python.internal import assert_util
    from tensorflow_probability.python.internal import parameter_properties
    from tensorflow_probability.python.bijectors import softplus as softplus_bijector
    from tensorflow_probability.python.bijectors import sigmoid as sigmoid_bijector
    from tensorflow_probability.python.bijectors import shift as shift_bijector


    class Dist:
"""


def cls(body: str) -> str:
    return textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(body), "    ")


def test_an_assertion_in_parameter_control_dependencies_bounds_the_property():
    probe = probe_of(
        cls(
            """\
            @property
            def scale(self):
                return self._scale

            def _log_prob(self, x):
                return x / (self.scale - x)

            def _parameter_control_dependencies(self, is_init):
                scale = tf.convert_to_tensor(self.scale)
                return [assert_util.assert_positive(scale)]
            """
        )
    )
    d = domain_of(probe, "self.scale")
    assert (d["lo"], d["lo_open"], d["strong"]) == (0.0, True, True)
    assert "assert_positive" in d["why"]


def test_the_private_attribute_shares_the_key_of_the_property():
    probe = probe_of(
        cls(
            """\
            def __init__(self, df):
                self._df = df
                tf.debugging.assert_non_negative(self.df)

            def _mean(self, x):
                return x / (self._df - x)
            """
        )
    )
    assert domain_of(probe, "df")["lo"] == 0.0  # the slicer follows `self._df = df`


def test_a_python_guard_in_init_bounds_the_attribute():
    probe = probe_of(
        cls(
            """\
            def __init__(self, total_count, probs):
                if total_count < 1:
                    raise ValueError("total_count must be >= 1")
                self._total_count = tf.convert_to_tensor(total_count)

            def _mean(self, x):
                return x / (self._total_count - x)
            """
        )
    )
    d = domain_of(probe, "total_count")
    assert (d["lo"], d["lo_open"]) == (1.0, False) and "raises" in d["why"]


def test_assert_greater_between_two_attributes_is_a_relation():
    probe = probe_of(
        cls(
            """\
            def _width(self, x):
                return x / (self.top - self.bottom)

            def _parameter_control_dependencies(self, is_init):
                return [assert_util.assert_greater(self.top, self.bottom)]
            """
        )
    )
    [rel] = probe["relations"]
    assert (rel["a"], rel["op"], rel["b"], rel["strong"]) == ("self.top", ">", "self.bottom", True)


@pytest.mark.parametrize(
    "bijector, lo, lo_open, hi",
    [
        ("softplus_bijector.Softplus", 0.0, True, "inf"),
        ("lambda: softplus_bijector.Softplus(low=dtype_util.eps(dtype))", 2.0**-23, True, "inf"),
        ("sigmoid_bijector.Sigmoid", 0.0, True, 1.0),
        ("lambda: sigmoid_bijector.Sigmoid(low=-2., high=3.)", -2.0, True, 3.0),
        ("lambda: softplus_bijector.Softplus(low=-1.)", -1.0, True, "inf"),
    ],
)
def test_a_constraining_bijector_bounds_the_parameter(bijector, lo, lo_open, hi):
    probe = probe_of(
        cls(
            f"""\
            @classmethod
            def _parameter_properties(cls, dtype):
                return dict(
                    rate=parameter_properties.ParameterProperties(
                        default_constraining_bijector_fn={bijector}))

            def _mean(self, x):
                return x / (self.rate - x)
            """
        )
    )
    d = domain_of(probe, "self.rate")
    assert (d["lo"], d["lo_open"], d["hi"], d["strong"]) == (lo, lo_open, hi, True)


@pytest.mark.parametrize(
    "bijector",
    [
        "lambda: shift_bijector.Shift(-5.)(softplus_bijector.Softplus())",
        "lambda: sigmoid_bijector.Sigmoid(low=low, high=high)",
        "lambda: lifted(softplus_bijector.Softplus())",  # a helper may move the range
        "lambda: softplus_bijector.Softplus(low=eps)",  # a variable, whatever its name
    ],
)
def test_a_moved_or_parameterised_bijector_is_not_trusted(bijector):
    probe = probe_of(
        cls(
            f"""\
            @classmethod
            def _parameter_properties(cls, dtype):
                return dict(
                    alpha=parameter_properties.ParameterProperties(
                        default_constraining_bijector_fn={bijector}))

            def _mean(self, x):
                return x / (self.alpha - x)
            """
        )
    )
    assert not [d for d in probe.get("domains") or [] if d["name"] == "self.alpha"]


def test_another_class_invariants_do_not_apply():
    src = """\
        import tensorflow as tf


        class Dist:
            def _parameter_control_dependencies(self, is_init):
                return [tf.debugging.assert_positive(self.gain)]


        class Other:
            def _mean(self, x):
                return x / (self.gain - x)
        """
    probe = probe_of(src)
    assert not [d for d in probe.get("domains") or [] if d["name"] == "self.gain"]


def test_a_witness_outside_the_class_invariant_is_refuted():
    probe = probe_of(
        cls(
            """\
            def _log_prob(self, x):
                return x / (self.gain - x)

            def _parameter_control_dependencies(self, is_init):
                return [assert_util.assert_positive(self.gain)]
            """
        )
    )
    out = {"status": "confirmed", "symptom": "inf-value", "detail": "at self.gain = 0",
           "inputs": {"self.gain": 0.0, "x": 1.0}}  # fmt: skip
    verdict = gates.judge(probe, out)
    assert verdict["status"] == "refuted"
    assert "assert_positive" in verdict["detail"]
    inside = {**out, "inputs": {"self.gain": 1e-3, "x": math.inf}}
    assert gates.judge(probe, inside)["status"] == "confirmed"


def test_an_assertion_in_a_helper_bounds_the_argument_passed_to_it():
    probe = probe_of(
        cls(
            """\
            def _forward(self, x):
                with tf.control_dependencies(self._maybe_assert_valid_x(x)):
                    return tf.exp(-(x - self.offset))

            def _maybe_assert_valid_x(self, x):
                return [assert_util.assert_non_negative(x)]
            """
        ),
        rule="TNL301",
    )
    d = domain_of(probe, "x")
    assert (d["lo"], d["strong"]) == (0.0, True)
    assert "`_maybe_assert_valid_x` asserts `assert_non_negative`" in d["why"]


def test_an_asserted_pair_drops_the_name_guess_about_the_same_pair():
    # `high`/`low` alone would give a weak (name) relation; the class asserts it, so the
    # witness high == low breaks the code itself and is refuted, not merely unlikely
    probe = probe_of(
        cls(
            """\
            def _log_prob(self, x):
                return x / (self.high - self.low)

            def _parameter_control_dependencies(self, is_init):
                return [assert_util.assert_less(self.low, self.high)]
            """
        )
    )
    pairs = [(r["a"], r["b"], r["strong"]) for r in probe["relations"]]
    assert all(strong for *_, strong in pairs), pairs
    assert {frozenset((a, b)) for a, b, _ in pairs} == {frozenset(("self.high", "self.low"))}
    out = {"status": "confirmed", "symptom": "inf-value", "detail": "at self.high = self.low",
           "inputs": {"self.high": 1.0, "self.low": 1.0, "x": 1.0}}  # fmt: skip
    assert gates.judge(probe, out)["status"] == "refuted"


def test_attribute_names_alone_give_no_relation():
    """`self.high` > `self.low` was a guess from their names (issue 22: names never decide)."""
    probe = probe_of(
        cls(
            """\
            def _log_prob(self, x):
                return x / (self.high - self.low)
            """
        )
    )
    assert "relations" not in probe
