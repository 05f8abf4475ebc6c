"""A Keras Softmax layer and a hand-written max shift over a -inf fill."""
import math

import tensorflow as tf

NEG_INF = -math.inf


class SlotAttention(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.softmax = tf.keras.layers.Softmax(axis=-1)

    def call(self, scores, valid):
        masked = tf.where(valid, scores, NEG_INF)
        return self.softmax(masked)  # error: TNL303


class HandSoftmax(tf.keras.layers.Layer):
    def call(self, scores, valid):
        x = tf.where(valid, scores, tf.ones_like(scores) * NEG_INF)
        shifted = x - tf.reduce_max(x, axis=-1, keepdims=True)  # error: TNL303
        e = tf.exp(shifted)
        return e / tf.reduce_sum(e, axis=-1, keepdims=True)
