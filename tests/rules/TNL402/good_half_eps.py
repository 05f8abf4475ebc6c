import tensorflow as tf


def normalise(x):
    h = tf.cast(x, tf.float16)
    return h / (tf.reduce_sum(tf.abs(h)) + 1e-4)
