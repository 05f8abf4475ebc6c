"""Click-through rate regression on standardised features, 4096-row batches, plain loop."""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(8)
rs = np.random.default_rng(8)
N, D = 40960, 12
xs = rs.standard_normal((N, D)).astype(np.float32)
wt = rs.standard_normal((D, 1)).astype(np.float32) * 0.3
ys = (1.0 / (1.0 + np.exp(-(xs @ wt))) + 0.05 * rs.standard_normal((N, 1))).astype(np.float32)

layer1 = tf.keras.layers.Dense(32, activation="tanh")
layer2 = tf.keras.layers.Dense(1)
opt = tf.keras.optimizers.SGD(learning_rate=0.01)


def my_fn(a, b):
    return tf.reduce_mean((a - b) ** 2)


@tf.function
def train(xb, yb):
    with tf.GradientTape() as tape:
        res = my_fn(yb, layer2(layer1(xb)))
    vs = layer1.trainable_variables + layer2.trainable_variables
    grads = tape.gradient(res, vs)
    okay = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    opt.apply_gradients(zip(grads, vs))
    return res, okay


for i in range(100):
    j = (i * 4096) % N
    res, okay = train(xs[j:j + 4096], ys[j:j + 4096])
    print(i, float(res))
    if not (np.isfinite(float(res)) and bool(okay)):
        print(f"NONFINITE step={i}")
        sys.exit(3)
print("FINITE")
