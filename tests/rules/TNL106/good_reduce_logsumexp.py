import tensorflow as tf


def lse(x, w):
    s = tf.matmul(x, w)
    return tf.reduce_logsumexp(s, axis=-1)
