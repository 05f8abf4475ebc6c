import numpy as np
import tensorflow as tf

gen = np.random.default_rng(8)
feats = gen.standard_normal((40960, 12)).astype(np.float32)
target = (feats @ gen.standard_normal((12, 1)) * 0.3).astype(np.float32)
hidden = tf.keras.layers.Dense(32, activation="tanh")
head = tf.keras.layers.Dense(1)
opt = tf.keras.optimizers.SGD(learning_rate=0.01)


def sq_sum(a, b):
    return tf.reduce_sum((a - b) ** 2)  # error: TNL506


@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = sq_sum(yb, head(hidden(xb)))
    ws = hidden.trainable_variables + head.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, ws), ws))
    return loss


for i in range(100):
    j = (i * 4096) % 40960
    step(feats[j:j + 4096], target[j:j + 4096])
