import tensorflow as tf


def cube_root(x, w):
    z = tf.matmul(x, w)
    return tf.pow(z, 1.0 / 3.0)  # error: TNL204
