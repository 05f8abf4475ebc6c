"""Tariff recommendation from a household's 12 monthly meter readings (kWh) plus the
month's degree-days; the months are pooled with learned weights. Custom train_step.
"""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(10)
a = np.random.default_rng(10)
N, M, TARIFFS = 4000, 12, 3
base = a.gamma(3.0, 100.0, N)
season = np.cos(2 * np.pi * np.arange(M) / M)
heating = a.uniform(0, 1, N) * 400
kwh = base[:, None] + heating[:, None] * np.maximum(season, 0)[None, :] + a.normal(0, 20, (N, M))
ddays = np.tile(np.maximum(season, 0) * 500, (N, 1))
months = np.stack([kwh, ddays], -1).astype("float32")          # (N, 12, 2)
tariff = np.digitize(heating / (base + 1), [0.8, 2.0])


class Pooled(keras.Model):
    def __init__(self):
        super().__init__()
        self.score = keras.layers.Dense(1)
        self.embed = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(TARIFFS)

    def call(self, x):
        s = tf.exp(self.score(x))  # expect: exp-overflow
        share = s / tf.reduce_sum(s, axis=1, keepdims=True)                 # (B, 12, 1)
        return self.out(tf.reduce_sum(share * self.embed(x), axis=1))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            ce = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, self(x), from_logits=True))
        grads = tape.gradient(ce, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        return {"ce": ce, "ok": tf.cast(ok, tf.float32)}


class Halt(keras.callbacks.Callback):
    k, first = 0, None

    def on_train_batch_end(self, batch, logs=None):
        if self.first is None and not (np.isfinite(logs["ce"]) and logs["ok"] == 1.0):
            self.first = self.k
            self.model.stop_training = True
        self.k += 1


halt = Halt()
model = Pooled()
model.compile(optimizer=keras.optimizers.Adam(1e-3))
model.fit(months, tariff, batch_size=32, epochs=3, verbose=0, callbacks=[halt])
if halt.first is not None:
    print(f"NONFINITE step={halt.first}")
    sys.exit(3)
print("FINITE")
