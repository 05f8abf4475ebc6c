import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.mixed_precision.set_global_policy("mixed_float16")
pixels = np.clip(np.random.default_rng(1).normal(400, 50, (256, 8)), 0, 4095).astype("float32")
targets = np.zeros(256, "float32")


class Energy(keras.layers.Layer):
    def call(self, p):
        return tf.reduce_sum(p * p, axis=-1, keepdims=True)  # error: TNL404


net = keras.Sequential([keras.Input((8,)), Energy(), keras.layers.Dense(1, dtype="float32")])
net.compile("adam", "mse")
net.fit(pixels, targets, epochs=1)  # noqa: TNL504 (the data check is not this case)
