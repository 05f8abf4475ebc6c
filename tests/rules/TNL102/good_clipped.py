import tensorflow as tf


def loss(x, w):
    p = tf.sigmoid(tf.matmul(x, w))
    return -tf.reduce_mean(tf.math.log(tf.clip_by_value(p, 1e-7, 1 - 1e-7)))
