"""Issue 22: what an input is comes from how the probe uses it, so a rename keeps it."""

from __future__ import annotations

import pytest
from conftest import hits
from test_reachability import one_probe

from tfnumlint.verify import domains, preconditions

RATIO = """\
    import tensorflow as tf


    def {f}({a}, {b}, adv):
        r = tf.exp({a} - {b})
        return -tf.reduce_mean(r * adv)
    """


@pytest.mark.parametrize(
    "names", [{"f": "ppo", "a": "new_lp", "b": "old_lp"}, {"f": "g", "a": "u", "b": "v"}]
)
def test_an_input_the_target_exponentiates_is_log_scale_under_any_name(names):
    probe = one_probe(RATIO.format(**names), "TNL301")
    specs = {s["name"]: s for s in probe["inputs"]}
    assert set(specs) == {names["a"], names["b"]}
    assert all(s.get("exponent") for s in specs.values())
    assert all(preconditions.log_scale(s, False) for s in specs.values())


def test_an_input_only_divided_by_is_not_log_scale():
    src = """\
        import tensorflow as tf


        def spread(logp, logits):
            return tf.ones_like(logp) / (logp - logits)
        """
    probe = one_probe(src, "TNL201")
    assert not any(s.get("exponent") for s in probe["inputs"])
    assert not any(preconditions.log_scale(s, False) for s in probe["inputs"])


@pytest.mark.parametrize(
    "source, expected",
    [
        ("policy.distribution(t).log_prob(a)", True),
        ("dist.log_cdf(x)", True),
        ("log_probability(x)", False),  # a project function: its name says nothing
        ("dist.log_prob", False),  # not a call
    ],
)
def test_a_log_density_is_a_library_method_call(source, expected):
    assert domains.log_density_call(source) is expected


@pytest.mark.parametrize("shift", ["x_max", "m", "self.max_logit"])
def test_a_shift_is_a_maximum_by_its_producer_not_its_name(shift):
    src = f"""\
        import tensorflow as tf


        def f(self, x, x_max, m):
            return tf.exp(x - {shift})
        """
    assert [f.rule for f in hits("TNL301", src)] == ["TNL301"]


@pytest.mark.parametrize(
    "shift", ["tf.reduce_max(x, -1, keepdims=True)", "np.max(x)", "x.max(axis=-1)"]
)
def test_a_shift_by_a_computed_maximum_is_silent(shift):
    src = f"""\
        import numpy as np
        import tensorflow as tf


        def f(x):
            return tf.exp(x - {shift})
        """
    assert hits("TNL301", src) == []


def test_a_max_kept_only_where_finite_is_still_a_max_shift():
    src = """\
        import tensorflow as tf


        def logsumexp(a):
            m = tf.reduce_max(a, axis=-1, keepdims=True)
            m = tf.where(tf.math.is_finite(m), m, 0)
            return m + tf.math.log(tf.reduce_sum(tf.exp(a - m), axis=-1, keepdims=True))
        """
    assert hits("TNL301", src) == []


def test_a_function_made_from_reduce_max_computes_a_max():
    src = """\
        import tensorflow as tf


        def _make(op):
            return lambda x, **kw: op(x, **kw)


        peak = _make(tf.reduce_max)


        def logsumexp(x):
            m = peak(tf.stop_gradient(x), axis=-1, keepdims=True)
            return tf.math.log(tf.reduce_sum(tf.exp(x - m), axis=-1))
        """
    assert hits("TNL301", src) == []


def test_the_weight_of_a_negated_log_is_never_negative():
    """`-mean(y * log(p))`: `y` is the label (or weight) of a negative log-likelihood; a
    witness with `y` = -1 would reward the error.  At logits = 17 and y >= 0 the saturated
    sigmoid sits at the loss's minimum, so no dead gradient is found there."""
    from test_reachability import one_probe

    code = """\
        import tensorflow as tf


        def loss(logits, labels):
            p = tf.sigmoid(logits)
            return -tf.reduce_mean(labels * tf.math.log(p + 1e-10))
        """
    probe = one_probe(code, "TNL102")
    [spec] = [i for i in probe["inputs"] if i["name"] == "labels"]
    assert (spec["lo"], spec["hi"]) == (0.0, "inf"), spec
    renamed = one_probe(code.replace("labels", "qz"), "TNL102")
    assert [i["lo"] for i in renamed["inputs"] if i["name"] == "qz"] == [0.0]
