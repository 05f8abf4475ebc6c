"""Motor claims frequency: number of claims per policy-year, Poisson regression with a log link.
Features straight from the policy table: driver age, car age, annual km, engine kW, bonus level.
"""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(3)

g = np.random.RandomState(3)
N = 20000
table = np.stack([
    g.uniform(18, 85, N),        # driver age
    g.uniform(0, 20, N),         # car age
    g.gamma(4.0, 3000.0, N),     # annual km
    g.uniform(40, 200, N),       # engine kW
    g.randint(0, 15, N),         # bonus-malus level
], 1).astype(np.float32)
true_rate = np.exp(-2.5 + 0.00003 * table[:, 2] + 0.08 * table[:, 4] - 0.01 * (table[:, 0] - 40))
claims = g.poisson(true_rate).astype(np.float32)
table = (table - table.mean(0)) / table.std(0)

pol = tf.compat.v1.placeholder(tf.float32, [None, 5])
n_claims = tf.compat.v1.placeholder(tf.float32, [None])
beta = tf.compat.v1.get_variable("beta", [5, 1], initializer=tf.compat.v1.glorot_uniform_initializer())
icept = tf.compat.v1.get_variable("icept", [], initializer=tf.compat.v1.zeros_initializer())
lin = tf.squeeze(tf.matmul(pol, beta), 1) + icept
deviance = tf.reduce_mean(tf.exp(lin) - n_claims * lin)
opt = tf.compat.v1.train.AdamOptimizer(0.01).minimize(deviance)
fin = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tf.gradients(deviance, [beta, icept])])

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for i in range(300):
    rows = g.randint(0, N, 256)
    loss_val, f, _ = sess.run([deviance, fin, opt], {pol: table[rows], n_claims: claims[rows]})
    print(i, loss_val)
    if not (np.isfinite(loss_val) and f):
        print("NONFINITE step=%d" % i)
        sys.exit(3)
print("FINITE")
