import tensorflow as tf


def direction(a, b):
    return tf.math.l2_normalize(a - b, axis=-1)
