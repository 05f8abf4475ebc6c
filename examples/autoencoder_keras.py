"""Sigmoid autoencoder over a binary preference matrix P (who liked which item), TF2/Keras style.

The loss is a hand-written weighted cross-entropy on the sigmoid outputs, trained with Adam at
lr 0.01. It goes NaN (or silently stops learning) at a random epoch; tfnumlint explains why.
"""

import numpy as np
import tensorflow as tf

N_ITEMS = 512
POS_WEIGHT = 0.55


def build_autoencoder(n_items: int = N_ITEMS) -> tf.keras.Model:
    inputs = tf.keras.Input(shape=(n_items,))
    hidden = tf.keras.layers.Dense(64, activation="relu")(inputs)
    outputs = tf.keras.layers.Dense(n_items, activation="sigmoid")(hidden)
    return tf.keras.Model(inputs, outputs)


def weighted_bce(p, p_pred):
    return -tf.reduce_sum(
        p * tf.math.log(p_pred + 1e-10) + POS_WEIGHT * (1 - p) * tf.math.log(1e-10 + 1 - p_pred),
        axis=1,
    )


model = build_autoencoder()
optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)


@tf.function
def train_step(p):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(weighted_bce(p, model(p, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


if __name__ == "__main__":
    data = (np.random.rand(1024, N_ITEMS) < 0.05).astype("float32")  # who liked which item
    for epoch in range(10):
        print(epoch, float(train_step(data)))
