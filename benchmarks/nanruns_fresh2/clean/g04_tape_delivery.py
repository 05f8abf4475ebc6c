"""Delivery-time estimate with an uncertainty band: the net predicts a centre and a spread
per order, trained on the Gaussian negative log-likelihood.
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(4)
h = np.random.default_rng(4)
N = 6000
dist_km = h.uniform(0.5, 15, N)
rush = h.integers(0, 2, N)
rain = h.integers(0, 2, N)
noise_sd = 0.2 + 0.3 * dist_km / 15 + 0.4 * rain
pickup = h.random(N) < 0.2                       # click & collect: always quoted 15 min
minutes = np.where(pickup, 15.0, 10 + 3 * dist_km + 8 * rush + 5 * rain + noise_sd * 10 * h.standard_normal(N))
X = np.stack([dist_km / 15, rush, rain, pickup], 1).astype(np.float32)
Y = ((minutes - 40) / 15).astype(np.float32)

trunk = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(32, activation="tanh")])
centre = tf.keras.layers.Dense(1)
spread = tf.keras.layers.Dense(1, bias_initializer=tf.keras.initializers.Constant(1.0))
_ = centre(trunk(X[:2])), spread(trunk(X[:2]))
params = trunk.trainable_variables + centre.trainable_variables + spread.trainable_variables
opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)


@tf.function
def train_on(xb, yb):
    with tf.GradientTape() as tape:
        z = trunk(xb)
        mu, s = centre(z)[:, 0], tf.nn.softplus(spread(z)[:, 0]) + 1e-3
        fit_cost = tf.reduce_mean(tf.math.log(s) + 0.5 * tf.square((yb - mu) / s))
    gr = tape.gradient(fit_cost, params)
    opt.apply_gradients(zip(gr, params))
    return fit_cost, tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in gr])


for step in range(1000):
    idx = h.integers(0, N, 64)
    fit_cost, ok = train_on(X[idx], Y[idx])
    print(step, float(fit_cost))
    if not (np.isfinite(float(fit_cost)) and bool(ok)):
        print(f"NONFINITE step={step}")
        sys.exit(3)
print("FINITE")
