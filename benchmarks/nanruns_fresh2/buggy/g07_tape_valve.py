"""Heating-valve controller: a stochastic policy picks a valve opening in [-1, 1] from the
room and outdoor temperatures, the setpoint and the hour; trained with REINFORCE.
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(7)
k = np.random.default_rng(7)


def rooms(n):
    inside = k.uniform(14, 26, n)
    outside = k.uniform(-10, 20, n)
    setpoint = k.choice([19.0, 20.0, 21.0, 22.0], n)
    hour = k.integers(0, 24, n)
    wanted = np.clip(0.4 * (setpoint - inside) + 0.05 * (setpoint - outside), -1, 1)
    return np.stack([inside, outside, setpoint, hour], 1).astype(np.float32), wanted.astype(np.float32)


actor = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(32, activation="relu"),
                             tf.keras.layers.Dense(1)])
log_sd = tf.Variable(-0.5)
opt = tf.keras.optimizers.Adam(1e-2)
wts = actor.trainable_variables + [log_sd]


@tf.function
def update(obs, u, adv):
    with tf.GradientTape() as tape:
        centre = actor(obs)[:, 0]
        gauss = -0.5 * tf.square((u - centre) / tf.exp(log_sd)) - log_sd - 0.9189385
        lik = gauss - tf.math.log(1.0 - tf.square(tf.tanh(u)))  # expect: domain
        loss = -tf.reduce_mean(lik * adv)
    gs = tape.gradient(loss, wts)
    opt.apply_gradients(zip(gs, wts))
    return loss, tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gs])


for ep in range(300):
    obs, wanted = rooms(64)
    u = actor(obs)[:, 0].numpy() + np.exp(log_sd.numpy()) * k.standard_normal(64).astype(np.float32)
    reward = -np.square(np.tanh(u) - wanted)
    loss, ok = update(obs, u, reward - reward.mean())
    print(ep, float(loss), reward.mean())
    if not (np.isfinite(float(loss)) and bool(ok)):
        print(f"NONFINITE step={ep}")
        sys.exit(3)
print("FINITE")
