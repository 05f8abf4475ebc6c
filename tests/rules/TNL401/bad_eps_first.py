import tensorflow as tf


def complement_log(x):
    p = tf.sigmoid(x)
    return tf.math.log(1.0 + 1e-10 - p)  # error: TNL401
