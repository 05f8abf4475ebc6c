"""Classify machine sounds from 24 band energies; a learnable power-law compression layer."""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(9)
u = np.random.default_rng(9)
N, B = 3000, 24
kind = u.integers(0, 3, N)
prof = u.uniform(0.2, 2.0, (3, B))
energy = (prof[kind] * u.gamma(2.0, 1.0, (N, B))).astype("float32")


class Compress(keras.layers.Layer):
    def build(self, shape):
        self.p = self.add_weight(shape=(), initializer=keras.initializers.Constant(0.3), name="p")

    def call(self, x):
        return tf.math.pow(x, self.p)  # expect: pow-domain


net = keras.Sequential([
    keras.Input((B,)),
    keras.layers.Dense(16, activation="relu"),
    Compress(),
    keras.layers.Dense(3),
])


class Check(keras.callbacks.Callback):
    cnt, first = 0, None

    def on_train_batch_end(self, b, logs=None):
        if self.first is None and not (np.isfinite(logs["loss"]) and all(np.isfinite(w).all() for w in self.model.get_weights())):
            self.first = self.cnt
            self.model.stop_training = True
        self.cnt += 1


cb = Check()
net.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
net.fit(energy, kind, batch_size=32, epochs=3, verbose=0, callbacks=[cb])
if cb.first is not None:
    print(f"NONFINITE step={cb.first}")
    sys.exit(3)
print("FINITE")
