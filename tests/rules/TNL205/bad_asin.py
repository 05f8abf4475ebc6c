import tensorflow as tf


def angle(a, b):
    a = tf.math.l2_normalize(a, axis=-1)
    b = tf.math.l2_normalize(b, axis=-1)
    return tf.math.asin(tf.reduce_sum(a * b, axis=-1))  # error: TNL205
