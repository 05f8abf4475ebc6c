"""Will a subscriber renew? Keras MLP with my own binary loss."""
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(2)
g = np.random.default_rng(2)
n = 4000
tenure = g.uniform(0, 120, n)           # months
spend = g.gamma(2.0, 40.0, n)            # dollars / month
tickets = g.poisson(1.5, n)
renew = ((0.05 * tenure + 0.02 * spend - 0.8 * tickets) > 2.0).astype("float32")
X = np.stack([tenure, spend, tickets], 1).astype("float32")
Y = renew[:, None]


def my_fn(t, o):
    a = t * tf.math.log(o)
    b = (1.0 - t) * tf.math.log(1.0 - o)  # expect: log-of-probability
    return -tf.reduce_mean(a + b)


class Watch(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.k = 0
        self.bad = None

    def on_train_batch_end(self, batch, logs=None):
        v = logs["loss"]
        ws_ok = all(np.all(np.isfinite(w)) for w in self.model.get_weights())
        if not np.isfinite(v) or not ws_ok:
            self.bad = self.k
            self.model.stop_training = True
        self.k += 1


net = keras.Sequential([
    keras.Input((3,)),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(1, activation="sigmoid"),
])
net.compile(optimizer=keras.optimizers.Adam(0.01), loss=my_fn)
w = Watch()
net.fit(X, Y, batch_size=64, epochs=4, verbose=0, callbacks=[w])
if w.bad is not None:
    print(f"NONFINITE step={w.bad}")
    sys.exit(3)
print("FINITE")
