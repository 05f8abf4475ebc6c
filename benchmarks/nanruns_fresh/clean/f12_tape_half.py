"""Fraud flag from 16 standardised transaction features, everything in half precision
to match the deployment accelerator; hand-rolled logistic head and training loop.
"""
import sys

import numpy as np
import tensorflow as tf

tf.random.set_seed(12)
z = np.random.default_rng(12)
N, D = 8000, 16
feat = z.standard_normal((N, D))
flag = (feat[:, 0] + 0.8 * feat[:, 1] - 0.5 * feat[:, 2] > 0.3).astype(np.float16)
feat = feat.astype(np.float16)

dt = tf.float16
k1 = tf.Variable(tf.random.normal([D, 32], stddev=0.25, dtype=dt))
c1 = tf.Variable(tf.zeros([32], dt))
k2 = tf.Variable(tf.random.normal([32, 1], stddev=0.25, dtype=dt))
c2 = tf.Variable(tf.zeros([1], dt))
vs = [k1, c1, k2, c2]
lr = tf.constant(0.1, dt)


@tf.function
def fit_batch(xb, yb):
    with tf.GradientTape() as g:
        out = tf.sigmoid(tf.matmul(tf.nn.relu(tf.matmul(xb, k1) + c1), k2) + c2)[:, 0]
        out = tf.clip_by_value(out, 1e-3, 1.0 - 1e-3)
        res = -tf.reduce_mean(yb * tf.math.log(out) + (1 - yb) * tf.math.log(1 - out))
    gs = g.gradient(res, vs)
    for v, d in zip(vs, gs):
        v.assign_sub(lr * d)
    fine = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in vs])
    return res, fine


for i in range(300):
    ix = z.integers(0, N, 128)
    res, fine = fit_batch(feat[ix], flag[ix])
    print(i, float(res))
    if not (np.isfinite(float(res)) and bool(fine)):
        print(f"NONFINITE step={i}")
        sys.exit(3)
print("FINITE")
