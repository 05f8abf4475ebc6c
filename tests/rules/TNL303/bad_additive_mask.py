"""An additive -inf mask: 0 * -inf = NaN at every kept position, so every row is NaN."""
import numpy as np
import tensorflow as tf


class AdditiveMask(tf.keras.layers.Layer):
    def call(self, scores, mask):
        return tf.nn.softmax(scores + (1.0 - mask) * -np.inf, axis=-1)  # error: TNL303
