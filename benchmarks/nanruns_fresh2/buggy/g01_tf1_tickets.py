"""Support-ticket router (4 queues) from 30 text statistics, old TF1 code.
Only a few tickets were ever routed by a human; the loss is averaged over those.
"""
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(1)

gen = np.random.RandomState(1)
N, F, Q = 6000, 30, 4
queue = gen.randint(0, Q, N)
centres = gen.randn(Q, F)
stats = (centres[queue] + 1.2 * gen.randn(N, F)).astype(np.float32)
routed = (gen.rand(N) < 0.08).astype(np.float32)  # 8% of tickets have a human label

x_in = tf.compat.v1.placeholder(tf.float32, [None, F])
y_in = tf.compat.v1.placeholder(tf.int32, [None])
has_label = tf.compat.v1.placeholder(tf.float32, [None])



def layer(inp, n_out, name):
    with tf.compat.v1.variable_scope(name):
        w = tf.compat.v1.get_variable("w", [inp.shape[1], n_out])
        b = tf.compat.v1.get_variable("b", [n_out], initializer=tf.compat.v1.zeros_initializer())
    return tf.matmul(inp, w) + b


hidden = tf.nn.relu(layer(x_in, 48, "h"))
scores = layer(hidden, Q, "out")
per_ticket = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_in, logits=scores)
cost = tf.reduce_sum(per_ticket * has_label) / tf.reduce_sum(has_label)  # expect: division
step_op = tf.compat.v1.train.AdamOptimizer(0.003).minimize(cost)
grads = tf.gradients(cost, tf.compat.v1.trainable_variables())
grads_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
order = gen.permutation(N)
for it in range(300):
    sel = order[(it * 16) % N:(it * 16) % N + 16]
    feed = {x_in: stats[sel], y_in: queue[sel], has_label: routed[sel]}
    c, ok = sess.run([cost, grads_ok], feed)
    sess.run(step_op, feed)
    print("it", it, "cost", c)
    if not (np.isfinite(c) and ok):
        print("NONFINITE step=%d" % it)
        sys.exit(3)
print("FINITE")
