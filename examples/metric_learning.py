"""A triplet/contrastive embedding loss with the classic zero-distance hazards."""

import tensorflow as tf


def triplet_loss(anchor, positive, negative, margin=0.2):
    d_pos = tf.norm(anchor - positive, axis=-1)
    d_neg = tf.sqrt(tf.reduce_sum(tf.square(anchor - negative), axis=-1))
    return tf.reduce_mean(tf.nn.relu(d_pos - d_neg + margin))


def masked_log(x):
    return tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))


def normalise_rows(x):
    activity = tf.reduce_sum(tf.nn.relu(x), axis=-1, keepdims=True)
    return x / activity


embed = tf.keras.Sequential([tf.keras.layers.Dense(32)])
optimizer = tf.keras.optimizers.Adam(1e-3)


def train_step(anchors, positives, negatives):
    with tf.GradientTape() as tape:
        loss = triplet_loss(embed(anchors), embed(positives), embed(negatives))
    grads = tape.gradient(loss, embed.trainable_variables)
    optimizer.apply_gradients(zip(grads, embed.trainable_variables, strict=True))
    return loss
