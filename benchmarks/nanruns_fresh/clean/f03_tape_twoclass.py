"""Spam / not-spam from 30 token-count features; 2-way softmax head, custom loop."""
import sys

import numpy as np
import tensorflow as tf

tf.random.set_seed(3)
r = np.random.default_rng(3)
N, F = 6000, 30
cnt = r.poisson(2.0, (N, F)).astype(np.float32)
lab = (cnt[:, :5].sum(1) > cnt[:, 5:10].sum(1)).astype(np.float32)

ds = tf.data.Dataset.from_tensor_slices((cnt, lab)).shuffle(N, seed=3).repeat().batch(128)

m = tf.keras.Sequential([
    tf.keras.Input((F,)),
    tf.keras.layers.Dense(32, activation="relu"),
    tf.keras.layers.Dense(2),
])
opt = tf.keras.optimizers.Adam(0.01)


@tf.function
def go(xb, yb):
    with tf.GradientTape() as tp:
        calc = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(yb, tf.int32), logits=m(xb)))
    gs = tp.gradient(calc, m.trainable_variables)
    fin = tf.reduce_all([tf.reduce_all(tf.math.is_finite(z)) for z in gs])
    opt.apply_gradients(zip(gs, m.trainable_variables))
    return calc, fin


for i, (xb, yb) in enumerate(ds.take(300)):
    v, fin = go(xb, yb)
    print(i, float(v))
    if not (np.isfinite(float(v)) and bool(fin)):
        print(f"NONFINITE step={i}")
        sys.exit(3)
print("FINITE")
