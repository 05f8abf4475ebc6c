import numpy as np
import tensorflow as tf

x = (np.random.rand(200, 3) * 100).astype(np.float32)
y = x @ np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
w = tf.Variable(tf.zeros([3, 1]))
opt = tf.keras.optimizers.SGD(learning_rate=0.01)  # error: TNL505


def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    return loss
