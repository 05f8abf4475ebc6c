import tensorflow as tf


def safe_ratio(x, y):
    ok = y > 0
    y_safe = tf.where(ok, y, tf.ones_like(y))
    return tf.where(ok, x / y_safe, tf.zeros_like(x))
