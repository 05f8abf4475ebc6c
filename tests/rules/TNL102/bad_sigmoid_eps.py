import tensorflow as tf


def loss(x, w):
    p = tf.sigmoid(tf.matmul(x, w))
    return -tf.reduce_mean(tf.math.log(p + 1e-8))  # error: TNL102
