import tensorflow as tf


def distance(a, b):
    return tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(a - b), axis=-1), 1e-12))
