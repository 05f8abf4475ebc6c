import tensorflow as tf


def loss(x, w, y):
    logp = tf.nn.log_softmax(tf.matmul(x, w))
    return -tf.reduce_mean(tf.reduce_sum(y * logp, axis=-1))
