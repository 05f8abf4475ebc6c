import tensorflow as tf


def loss(x, w, y):
    logits = tf.matmul(x, w)
    return tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits)
