"""Cross-sectional stock ranking: next-day return of 200 stocks from 25 factor exposures.
Trained to maximise the daily correlation between the score and the realised return (IC).
"""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(2)

rnd = np.random.RandomState(2)
DAYS, STOCKS, K = 400, 200, 25
loadings = rnd.randn(K) * 0.02
expo = rnd.randn(DAYS, STOCKS, K).astype(np.float32)
ret = (expo @ loadings + 0.05 * rnd.randn(DAYS, STOCKS)).astype(np.float32)

factors = tf.compat.v1.placeholder(tf.float32, [None, K])
realised = tf.compat.v1.placeholder(tf.float32, [None])
coef = tf.compat.v1.Variable(tf.zeros([K, 1]), name="coef")
shift = tf.compat.v1.Variable(0.0, name="shift")
score = tf.squeeze(tf.matmul(factors, coef), 1) + shift

sc = score - tf.reduce_mean(score)
rc = realised - tf.reduce_mean(realised)
ic = tf.reduce_mean(sc * rc) / (tf.sqrt(tf.reduce_mean(sc * sc) + 1e-8) * tf.sqrt(tf.reduce_mean(rc * rc) + 1e-8))
objective = -ic
train = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(objective)
all_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in tf.gradients(objective, [coef, shift])])

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for day in range(300):
        feed = {factors: expo[day], realised: ret[day]}
        val, good = sess.run([objective, all_ok], feed)
        sess.run(train, feed)
        print("day", day, "neg ic", val)
        if not (np.isfinite(val) and good):
            print("NONFINITE step=%d" % day)
            sys.exit(3)
    print("FINITE")
