import tensorflow as tf


def distance(a, b):
    return tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))  # error: TNL202
