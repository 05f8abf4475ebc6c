"""Siamese net for product-image descriptors (64-d), contrastive loss, random pairs."""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(4)
rr = np.random.default_rng(4)
n_items, dim = 300, 64
grp = rr.integers(0, 20, n_items)
cent = rr.normal(0, 1, (20, dim))
feats = (cent[grp] + 0.7 * rr.normal(0, 1, (n_items, dim))).astype(np.float32)

enc = tf.keras.Sequential([
    tf.keras.Input((dim,)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(8),
])
opt = tf.keras.optimizers.SGD(0.01)


def dist(a, b):
    return tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=1))  # expect: sqrt-at-zero


@tf.function
def one_step(u, v, same):
    with tf.GradientTape() as tape:
        d = dist(enc(u), enc(v))
        res = tf.reduce_mean(same * d + (1.0 - same) * tf.maximum(1.5 - d, 0.0))
    gr = tape.gradient(res, enc.trainable_variables)
    good = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in gr])
    opt.apply_gradients(zip(gr, enc.trainable_variables))
    return res, good


for k in range(300):
    i = rr.integers(0, n_items, 64)
    j = rr.integers(0, n_items, 64)
    same = (grp[i] == grp[j]).astype(np.float32)
    res, good = one_step(feats[i], feats[j], same)
    print(k, float(res))
    if not (np.isfinite(float(res)) and bool(good)):
        print(f"NONFINITE step={k}")
        sys.exit(3)
print("FINITE")
