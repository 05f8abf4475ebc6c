"""Facts the code itself implies: a normalised count is a probability (the calibration hazard
lost in the issue-12 merge), and epsilon rules need a float32/float16 context."""

from __future__ import annotations

from conftest import hits


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
