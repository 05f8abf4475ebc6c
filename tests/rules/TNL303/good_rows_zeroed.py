"""-inf fills whose empty rows are replaced before anything reads them."""
import numpy as np
import tensorflow as tf


class GuardedAttention(tf.keras.layers.Layer):
    def call(self, scores, mask):
        weights = tf.nn.softmax(tf.where(mask, scores, -np.inf), axis=-1)
        any_kept = tf.reduce_any(mask, axis=-1, keepdims=True)
        weights = tf.where(any_kept, weights, tf.zeros_like(weights))
        probs = tf.nn.softmax(tf.where(mask, scores, -np.inf))
        probs = tf.where(tf.math.is_nan(probs), tf.zeros_like(probs), probs)
        kept = tf.cast(mask, tf.float32)
        products = tf.math.multiply_no_nan(tf.nn.softmax(tf.where(mask, scores, -np.inf)), kept)
        return weights + probs + products
