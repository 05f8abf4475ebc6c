"""Topic tagger over hashed bag-of-words vectors (some short messages hash to nothing)."""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(5)
q = np.random.default_rng(5)
N, V, T = 3000, 200, 4
length = q.integers(0, 12, N)               # messages of 0..11 known tokens
bow = np.zeros((N, V), np.float32)
topic = q.integers(0, T, N)
for n in range(N):
    words = q.integers(topic[n] * 50, topic[n] * 50 + 50, length[n])
    np.add.at(bow[n], words, 1.0)
Y = topic


class Scale(keras.layers.Layer):
    def call(self, x):
        return tf.math.l2_normalize(x, axis=1)


net = keras.Sequential([
    keras.Input((V,)),
    keras.layers.Dense(32, activation="relu", use_bias=False),
    Scale(),
    keras.layers.Dense(T),
])


class Stop(keras.callbacks.Callback):
    n = 0
    bad = None

    def on_train_batch_end(self, b, logs=None):
        ok = np.isfinite(logs["loss"]) and all(np.isfinite(w).all() for w in self.model.get_weights())
        if not ok:
            Stop.bad = Stop.n
            self.model.stop_training = True
        Stop.n += 1


net.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
net.fit(bow, Y, batch_size=32, epochs=3, verbose=0, callbacks=[Stop()])
if Stop.bad is not None:
    print(f"NONFINITE step={Stop.bad}")
    sys.exit(3)
print("FINITE")
