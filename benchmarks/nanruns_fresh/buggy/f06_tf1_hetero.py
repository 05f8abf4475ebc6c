"""Delivery-time regression with a predicted noise level (mean and log-variance heads), TF1."""
import sys

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.set_random_seed(6)

gen = np.random.RandomState(6)
N = 4000
km = gen.uniform(0.5, 30, N)
stops = gen.randint(1, 15, N)
rush = (gen.rand(N) < 0.3).astype(float)
minutes = 5 + 2.0 * km + 3 * stops + 10 * rush + gen.randn(N) * (2 + 0.3 * km)
X = np.stack([km, stops, rush], 1).astype(np.float32)
T = minutes.astype(np.float32)[:, None]

xx = tf1.placeholder(tf.float32, [None, 3])
tt = tf1.placeholder(tf.float32, [None, 1])


def fc(a, n_out, nm, seed):
    w = tf1.get_variable(nm + "_w", [a.shape[1], n_out], initializer=tf1.glorot_uniform_initializer(seed=seed))
    b = tf1.get_variable(nm + "_b", [n_out], initializer=tf1.zeros_initializer())
    return tf.matmul(a, w) + b


h = tf.nn.relu(fc(xx, 32, "l1", 1))
mu = fc(h, 1, "l2", 2)
s = fc(h, 1, "l3", 3)
inv = tf.exp(-s)  # expect: exp-overflow
out = tf.reduce_mean(0.5 * inv * tf.square(tt - mu) + 0.5 * s)
step = tf1.train.MomentumOptimizer(0.01, 0.9).minimize(out)
fin = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in tf1.trainable_variables()])

with tf1.Session() as sess:
    sess.run(tf1.global_variables_initializer())
    for it in range(300):
        b = gen.randint(0, N, 64)
        _, l = sess.run([step, out], {xx: X[b], tt: T[b]})
        ok = sess.run(fin)
        print(it, l)
        if not (np.isfinite(l) and ok):
            print("NONFINITE step=%d" % it)
            sys.exit(3)
print("FINITE")
