"""Wine quality score from lab measurements, TF1. Columns are scaled inside the graph.
This extract comes from one vineyard, so the region code column is the same in every row.
"""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(10)

rnd = np.random.RandomState(10)
N = 2500
acid = rnd.normal(7.5, 1.2, N)
sugar = rnd.gamma(2.0, 2.5, N)
alc = rnd.normal(11, 1.1, N)
region = np.full(N, 3.0)
score = 0.4 * alc - 0.3 * acid + 0.05 * sugar + rnd.normal(0, 0.4, N)
tab = np.stack([acid, sugar, alc, region], 1).astype(np.float32)
lab = score.astype(np.float32)[:, None]

ph_x = tf.compat.v1.placeholder(tf.float32, [None, 4])
ph_y = tf.compat.v1.placeholder(tf.float32, [None, 1])

mn = tf.reduce_mean(ph_x, axis=0)
sd = tf.math.reduce_std(ph_x, axis=0)
xn = (ph_x - mn) / sd  # expect: division

A = tf.compat.v1.get_variable("A", [4, 8], initializer=tf.compat.v1.random_normal_initializer(0, 0.3, seed=1))
a = tf.compat.v1.get_variable("a", [8], initializer=tf.compat.v1.zeros_initializer())
B = tf.compat.v1.get_variable("B", [8, 1], initializer=tf.compat.v1.random_normal_initializer(0, 0.3, seed=2))
pred = tf.matmul(tf.nn.elu(tf.matmul(xn, A) + a), B)
err = tf.reduce_mean(tf.square(pred - ph_y))
opt = tf.compat.v1.train.AdagradOptimizer(0.05)
pairs = opt.compute_gradients(err)
apply = opt.apply_gradients(pairs)
g_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g, _ in pairs])

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for it in range(200):
    sel = rnd.randint(0, N, 50)
    _, e, ok = sess.run([apply, err, g_ok], {ph_x: tab[sel], ph_y: lab[sel]})
    print("iter", it, "err", e)
    if not (np.isfinite(e) and ok):
        print("NONFINITE step=%d" % it)
        sys.exit(3)
print("FINITE")
