"""Attention over a right-padded history: a user with no history has a padding-only row."""
import numpy as np
import tensorflow as tf


class HistoryAttention(tf.keras.layers.Layer):
    def call(self, items, query):
        keys = tf.cast(items, tf.float32)[..., None] * query[:, None, :]
        scores = tf.reduce_sum(keys, axis=-1) / np.sqrt(16.0)
        scores = tf.where(items > 0, scores, float("-inf"))
        return tf.nn.softmax(scores, axis=-1)  # error: TNL303


class PaddingFill(tf.keras.layers.Layer):
    """The padding side of the mask selects the fill: `tf.where(padded, -inf, scores)`."""

    def call(self, scores, lengths):
        padded = tf.logical_not(tf.sequence_mask(lengths, tf.shape(scores)[-1]))
        filled = tf.where(padded, tf.fill(tf.shape(scores), -np.inf), scores)
        return tf.math.softmax(filled / 2.0)  # error: TNL303
