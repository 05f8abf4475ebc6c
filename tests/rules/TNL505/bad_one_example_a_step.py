import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
rng = np.random.RandomState(1)
areas = rng.uniform(500, 3500, 200).astype(np.float32)
prices = (areas * 150 + rng.normal(0, 20000, 200)).astype(np.float32)

X = tf.compat.v1.placeholder(tf.float32)
Y = tf.compat.v1.placeholder(tf.float32)
W = tf.Variable(rng.randn(), dtype=tf.float32)
b = tf.Variable(rng.randn(), dtype=tf.float32)
pred = tf.add(tf.multiply(X, W), b)
cost = tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * 200)
step = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(cost)  # error: TNL505
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(100):
        for x, y in zip(areas, prices):
            sess.run(step, feed_dict={X: x, Y: y})
