"""Bearing-fault detector on raw 10-bit accelerometer windows (128 samples, counts 0..1023),
trained with mixed precision; each window is standardised inside the model.
"""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(11)
b = np.random.default_rng(11)
N, W = 3000, 128
faulty = b.integers(0, 2, N)
tt = np.arange(W)
wave = 60 * np.sin(2 * np.pi * 0.07 * tt[None, :] + b.uniform(0, 6, (N, 1)))
spikes = faulty[:, None] * 150 * (b.random((N, W)) < 0.04)
counts = np.clip(512 + wave + spikes + b.normal(0, 15, (N, W)), 0, 1023).astype("float32")


class WindowNorm(keras.layers.Layer):
    def call(self, x):
        mean = tf.reduce_mean(x, axis=1, keepdims=True)
        spread = tf.reduce_mean(x * x, axis=1, keepdims=True) - mean * mean
        return (x - mean) / tf.sqrt(spread + 1e-3)


net = keras.Sequential([
    keras.Input((W,)),
    WindowNorm(dtype="float32"),
    keras.layers.Reshape((W, 1)),
    keras.layers.Conv1D(16, 5, activation="relu"),
    keras.layers.GlobalMaxPooling1D(),
    keras.layers.Dense(1, dtype="float32"),
])


class Guard(keras.callbacks.Callback):
    i, hit = 0, None

    def on_train_batch_end(self, batch, logs=None):
        good = np.isfinite(logs["loss"]) and all(np.isfinite(q).all() for q in self.model.get_weights())
        if self.hit is None and not good:
            self.hit = self.i
            self.model.stop_training = True
        self.i += 1


guard = Guard()
net.compile(keras.optimizers.Adam(1e-3), keras.losses.BinaryCrossentropy(from_logits=True))
net.fit(counts, faulty.astype("float32"), batch_size=32, epochs=3, verbose=0, callbacks=[guard])
if guard.hit is not None:
    print(f"NONFINITE step={guard.hit}")
    sys.exit(3)
print("FINITE")
