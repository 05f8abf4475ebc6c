"""Which of 60 process sensors matter for the 4 product grades? A multinomial logistic
model with a group penalty on each sensor's row of weights, so whole sensors drop out.
"""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(12)
f = np.random.default_rng(12)
N, P, K = 5000, 60, 4
readings = f.normal(0, 1, (N, P)).astype("float32")
useful = f.normal(0, 1.5, (8, K))
grade = np.argmax(readings[:, :8] @ useful + f.gumbel(size=(N, K)), axis=1)


def sensor_groups(kernel):
    return 0.01 * tf.reduce_sum(tf.norm(kernel, axis=1))  # expect: sqrt-at-zero


clf = keras.Sequential([
    keras.Input((P,)),
    keras.layers.Dense(K, kernel_initializer="zeros", kernel_regularizer=sensor_groups),
])


class Track(keras.callbacks.Callback):
    n, bad = 0, None

    def on_train_batch_end(self, batch, logs=None):
        ok = np.isfinite(logs["loss"]) and all(np.isfinite(z).all() for z in self.model.get_weights())
        if self.bad is None and not ok:
            self.bad = self.n
            self.model.stop_training = True
        self.n += 1


track = Track()
clf.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"])
clf.fit(readings, grade, batch_size=100, epochs=5, verbose=0, callbacks=[track])
if track.bad is not None:
    print(f"NONFINITE step={track.bad}")
    sys.exit(3)
print("loss, accuracy", clf.evaluate(readings, grade, verbose=0))
print("FINITE")
