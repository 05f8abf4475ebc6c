import tensorflow as tf


def cube(x, w):
    z = tf.matmul(x, w)
    return tf.pow(z, 3.0)
