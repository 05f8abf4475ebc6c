import tensorflow as tf


def shrink(x):
    r = tf.nn.relu(x)
    return tf.math.log(1.0 + r)  # error: TNL105
