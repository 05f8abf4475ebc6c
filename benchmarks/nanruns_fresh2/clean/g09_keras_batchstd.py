"""Credit-limit band (5 bands) from 14 application fields; a hand-written batch
standardisation layer between the dense layers.
"""
import sys

import numpy as np
from tensorflow import keras
import tensorflow as tf

keras.utils.set_random_seed(9)
e = np.random.default_rng(9)
N, F, B = 4097, 14, 5
apps = e.normal(0, 1, (N, F)).astype("float32")
band = np.digitize(apps[:, :4] @ np.array([1.0, -0.7, 0.5, 0.3]), [-1.2, -0.4, 0.4, 1.2])


class BatchStd(keras.layers.Layer):
    def build(self, shape):
        self.g = self.add_weight(shape=shape[-1:], initializer="ones", name="g")
        self.o = self.add_weight(shape=shape[-1:], initializer="zeros", name="o")

    def call(self, x):
        m, var = tf.nn.moments(x, axes=[0])
        return self.g * (x - m) / tf.sqrt(var + 1e-3) + self.o


net = keras.Sequential([
    keras.Input((F,)),
    keras.layers.Dense(32), BatchStd(), keras.layers.ReLU(),
    keras.layers.Dense(32), BatchStd(), keras.layers.ReLU(),
    keras.layers.Dense(B),
])


class Watch(keras.callbacks.Callback):
    seen, bad = 0, None

    def on_train_batch_end(self, batch, logs=None):
        fine = np.isfinite(logs["loss"]) and all(np.isfinite(a).all() for a in self.model.get_weights())
        if not fine and self.bad is None:
            self.bad = self.seen
            self.model.stop_training = True
        self.seen += 1


watch = Watch()
net.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
net.fit(apps, band, batch_size=64, epochs=4, shuffle=True, verbose=0, callbacks=[watch])
if watch.bad is not None:
    print(f"NONFINITE step={watch.bad}")
    sys.exit(3)
print("FINITE")
