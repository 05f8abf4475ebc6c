"""Contextual bandit for picking one of 6 banner ads, policy gradient, TF1.
Actions come from the policy with 20% uniform exploration.
"""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(11)

rng = np.random.RandomState(11)
A, C = 6, 10
best_of = rng.randn(C, A)

ctx = tf.compat.v1.placeholder(tf.float32, [None, C])
act = tf.compat.v1.placeholder(tf.int32, [None])
adv = tf.compat.v1.placeholder(tf.float32, [None])

Wp = tf.compat.v1.get_variable("Wp", [C, A], initializer=tf.compat.v1.zeros_initializer())
bp = tf.compat.v1.get_variable("bp", [A], initializer=tf.compat.v1.zeros_initializer())
probs = tf.nn.softmax(tf.matmul(ctx, Wp) + bp)
mask = tf.one_hot(act, A)
lp = tf.math.log(tf.reduce_sum(probs * mask, axis=1))  # expect: log-of-probability
obj = -tf.reduce_mean(lp * adv)
train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(obj)
w_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in [Wp, bp]])

s = tf.compat.v1.Session()
s.run(tf.compat.v1.global_variables_initializer())
baseline = 0.0
for ep in range(300):
    c = rng.poisson(30, (64, C)).astype(np.float32)  # raw visit counts per site section
    p = s.run(probs, {ctx: c})
    a = np.array([rng.choice(A, p=pi / pi.sum()) if rng.rand() > 0.2 else rng.randint(A) for pi in p])
    r = (np.argmax(c @ best_of, 1) == a).astype(np.float32)
    baseline = 0.9 * baseline + 0.1 * r.mean()
    _, o, ok = s.run([train, obj, w_ok], {ctx: c, act: a, adv: r - baseline})
    print(ep, o, r.mean())
    if not (np.isfinite(o) and ok):
        print("NONFINITE step=%d" % ep)
        sys.exit(3)
print("FINITE")
