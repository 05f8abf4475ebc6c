import tensorflow as tf


def masked(scores, mask):
    s = tf.cast(scores, tf.float16)
    return s + (1.0 - tf.cast(mask, tf.float16)) * -1e4
