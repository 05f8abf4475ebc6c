import tensorflow as tf


def angle(a, b):
    a = tf.math.l2_normalize(a, axis=-1)
    b = tf.math.l2_normalize(b, axis=-1)
    c = tf.clip_by_value(tf.reduce_sum(a * b, axis=-1), -1 + 1e-7, 1 - 1e-7)
    return tf.math.asin(c)
