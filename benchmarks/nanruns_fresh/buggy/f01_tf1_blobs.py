"""Sensor-fault classifier: 5 fault types from 40 sensor readings, old TF1 code."""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

rs = np.random.RandomState(21)
K, D, N = 5, 40, 5000
mu = rs.uniform(-2, 2, (K, D))
lab = rs.randint(0, K, N)
data = (mu[lab] + 0.5 * rs.randn(N, D)).astype(np.float32)
onehot = np.eye(K, dtype=np.float32)[lab]

inp = tf.compat.v1.placeholder(tf.float32, shape=(None, D))
tgt = tf.compat.v1.placeholder(tf.float32, shape=(None, K))

W = tf.compat.v1.Variable(tf.compat.v1.random_normal((D, 64), stddev=0.1, seed=1))
c = tf.compat.v1.Variable(tf.zeros((64,)))
V = tf.compat.v1.Variable(tf.compat.v1.random_normal((64, K), stddev=0.1, seed=2))
d = tf.compat.v1.Variable(tf.zeros((K,)))

h2 = tf.tanh(tf.matmul(inp, W) + c)
out = tf.matmul(h2, V) + d
res = -tf.reduce_sum(tgt * tf.math.log(tf.nn.softmax(out)))  # expect: log-of-probability
upd = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(res)
allfin = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in tf.compat.v1.trainable_variables()])

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for it in range(300):
    pick = rs.randint(0, N, 200)
    _, val = sess.run([upd, res], {inp: data[pick], tgt: onehot[pick]})
    ok = sess.run(allfin)
    print("it", it, "cost", val)
    if not np.isfinite(val) or not ok:
        print("NONFINITE step=%d" % it)
        sys.exit(3)
print("FINITE")
