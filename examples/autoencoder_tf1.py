"""The same autoencoder in TF1 graph style: placeholders and tf.compat.v1.train.AdamOptimizer."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

n_items = 512
P = tf.placeholder(tf.float32, shape=[None, n_items], name="P")
W1 = tf.Variable(tf.random_normal([n_items, 64], stddev=0.1))
W2 = tf.Variable(tf.random_normal([64, n_items], stddev=0.1))
hidden = tf.nn.relu(tf.matmul(P, W1))
logits = tf.matmul(hidden, W2)
P_pred = tf.sigmoid(logits)

loss = -tf.reduce_sum(P * tf.log(P_pred + 1e-10) + 0.55 * (1 - P) * tf.log(1 - P_pred + 1e-10), axis=1)
train_op = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_mean(loss))

if __name__ == "__main__":
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        batch = (np.random.rand(64, n_items) < 0.05).astype("float32")  # who liked which item
        print(sess.run([train_op, loss], feed_dict={P: batch})[1].mean())
