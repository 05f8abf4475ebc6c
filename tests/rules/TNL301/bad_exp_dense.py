import tensorflow as tf


def rate(x, w):
    return tf.exp(tf.matmul(x, w))  # error: TNL301
