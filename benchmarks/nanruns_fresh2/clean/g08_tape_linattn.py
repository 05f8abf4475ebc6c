"""Machine-state classifier over 60-step windows of 5 vibration channels, using a
linear-time attention block (kernel feature map instead of a softmax) and mean pooling.
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(8)
v = np.random.default_rng(8)
N, T, C, S, H = 3000, 60, 5, 3, 8
state = v.integers(0, S, N)
freq = np.array([0.05, 0.12, 0.3])[state]
level = v.normal(0, 0.5, (S, C))[state]
t = np.arange(T)
series = level[:, None, :] + np.sin(2 * np.pi * freq[:, None, None] * t[None, :, None] + v.uniform(0, 6, (N, 1, C)))
series = (series + 0.3 * v.standard_normal((N, T, C))).astype(np.float32)

wq, wk, wv = (tf.keras.layers.Dense(H, use_bias=False) for _ in range(3))
clf = tf.keras.layers.Dense(S)


def forward(x):
    q, k, val = tf.nn.relu(wq(x)), tf.nn.relu(wk(x)), wv(x)
    kv = tf.einsum("bth,btd->bhd", k, val)
    num = tf.einsum("bth,bhd->btd", q, kv)
    den = tf.einsum("bth,bh->bt", q, tf.reduce_sum(k, axis=1))
    mixed = num / (den[:, :, None] + 1e-6)
    return clf(tf.reduce_mean(mixed, axis=1))


forward(series[:2])
params = wq.trainable_variables + wk.trainable_variables + wv.trainable_variables + clf.trainable_variables
opt = tf.keras.optimizers.Adam(1e-3)


@tf.function
def one_batch(xb, yb):
    with tf.GradientTape() as tape:
        err = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(yb, forward(xb), from_logits=True))
    gs = tape.gradient(err, params)
    opt.apply_gradients(zip(gs, params))
    return err, tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gs])


for i in range(300):
    pick = v.integers(0, N, 32)
    err, ok = one_batch(series[pick], state[pick])
    print(i, float(err))
    if not (np.isfinite(float(err)) and bool(ok)):
        print(f"NONFINITE step={i}")
        sys.exit(3)
print("FINITE")
