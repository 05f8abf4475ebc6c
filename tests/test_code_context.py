"""Facts the code itself implies: a normalised count is a probability (the calibration hazard
lost in the issue-12 merge), and epsilon rules need a float32/float16 context."""

from __future__ import annotations

import pytest
from conftest import func, hits


def test_log_of_a_gathered_normalised_count_is_a_log_of_probability():
    src = """\
        import numpy as np
        import tensorflow as tf


        def brier(labels, pred_class):
            confusion = tf.math.confusion_matrix(pred_class, labels, dtype=tf.float32)
            eps = np.finfo(np.float32).eps
            dist_mean = confusion / (eps + tf.reduce_sum(confusion, axis=-1, keepdims=True))
            prob_true = tf.gather(dist_mean, pred_class, axis=0)
            return tf.math.log(prob_true)
        """
    [finding] = hits("TNL101", src)
    assert finding.line == 10
    assert "x / sum(x)" in finding.message and "`confusion`" in finding.message


def test_a_count_divided_by_its_own_sum_is_a_probability_without_an_epsilon():
    src = """\
        import tensorflow as tf


        def entropy(counts):
            freq = counts / tf.reduce_sum(counts)
            return -tf.reduce_sum(freq * tf.math.log(freq))
        """
    assert len(hits("TNL101", src)) == 1


def test_a_value_divided_by_another_sum_is_not_a_distribution():
    src = """\
        import tensorflow as tf


        def ratio(counts, other):
            r = counts / tf.reduce_sum(other)
            return tf.math.log(r)
        """
    assert hits("TNL101", src) == []


# ---------------------------------------------------------------- epsilons need float32/16


@pytest.mark.parametrize(
    "body",
    [
        "return min([t, 1 - 1e-10])",  # pure Python (COCO evaluation)
        "return np.log(1.0 + 1e-10 - np.asarray(t))",  # numpy, float64
        "return tf.constant(1.0 - 1e-10, dtype=tf.float64)",  # float64 on purpose
        "limit = 1 - 1e-10\nreturn [v for v in t if v < limit]",  # a host constant, host uses
    ],
)
def test_float64_host_arithmetic_keeps_its_epsilon(body):
    assert hits("TNL401", "import numpy as np\n" + func(body, "t")) == []


@pytest.mark.parametrize(
    "body",
    [
        "return np.float32(1 - 1e-10)",  # a float32 cast
        "return tf.constant(1.0 - 1e-10)",  # a TensorFlow op
        "return tf.clip_by_value(t, 1e-7, 1.0 - 1e-10)",
        "return tf.sqrt(1.0 + 1e-10 - tf.square(t))",  # the sum meets a tensor
        "limit = 1 - 1e-10\nreturn tf.minimum(t, limit)",  # assigned, then used by TF
    ],
)
def test_float32_context_loses_the_epsilon(body):
    assert len(hits("TNL401", "import numpy as np\n" + func(body, "t"))) == 1


def test_float16_epsilon_in_numpy_code_is_float64():
    src = """\
        import numpy as np
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")


        def host_stats(x):
            return np.maximum(np.asarray(x), 1e-8)


        def guard(x):
            return tf.maximum(x, 1e-8)
        """
    assert [f.line for f in hits("TNL402", src)] == [12]
