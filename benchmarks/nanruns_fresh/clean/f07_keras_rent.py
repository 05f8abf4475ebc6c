"""Monthly rent from flat size (sq ft), year built offset and floor; Keras, my own loss."""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(7)
rg = np.random.default_rng(7)
n = 5000
sqft = rg.uniform(300, 1000, n)
age = rg.uniform(0, 100, n)
floor = rg.integers(0, 30, n).astype(float)
rent = 0.9 * sqft - 3.0 * age + 12 * floor + 200 + rg.normal(0, 50, n)
X = np.stack([sqft, age, floor], 1).astype("float32")
X = (X - X.mean(0)) / X.std(0)  # standardise the features
Y = rent.astype("float32")[:, None]


def calc(t, o):
    return tf.reduce_mean(tf.square(t - o))


class Guard(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.i = 0
        self.hit = None

    def on_train_batch_end(self, batch, logs=None):
        good = np.isfinite(logs["loss"]) and all(np.isfinite(w).all() for w in self.model.get_weights())
        if not good:
            self.hit = self.i
            self.model.stop_training = True
        self.i += 1


mdl = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
mdl.compile(optimizer=keras.optimizers.SGD(learning_rate=1e-4), loss=calc)
gd = Guard()
mdl.fit(X, Y, batch_size=32, epochs=2, verbose=0, callbacks=[gd])
if gd.hit is not None:
    print(f"NONFINITE step={gd.hit}")
    sys.exit(3)
print("FINITE")
