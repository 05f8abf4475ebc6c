import tensorflow as tf


def complement_log(x):
    p = tf.sigmoid(x)
    return tf.math.log(tf.maximum(1.0 - p, 1e-7))
