import tensorflow as tf


def log_gap(x, w1, w2):
    a = tf.matmul(x, w1)
    b = tf.matmul(x, w2)
    return tf.math.log(a - b)  # error: TNL104
