"""A numerically careful training script: logits end to end, guarded norms, clipped optimizer."""

import tensorflow as tf

model = tf.keras.Sequential(
    [
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ]
)
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3, clipnorm=1.0)
model.compile(
    optimizer=optimizer,
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)


def entropy(logits):
    log_p = tf.nn.log_softmax(logits, axis=-1)
    return -tf.reduce_sum(tf.exp(log_p) * log_p, axis=-1)


def pairwise_distance(a, b, eps=1e-12):
    squared = tf.reduce_sum(tf.square(a - b), axis=-1)
    return tf.sqrt(tf.maximum(squared, eps))


def safe_cosine(u, v):
    u = tf.math.l2_normalize(u, axis=-1)
    v = tf.math.l2_normalize(v, axis=-1)
    cos = tf.reduce_sum(u * v, axis=-1)
    return tf.math.acos(tf.clip_by_value(cos, -1.0 + 1e-6, 1.0 - 1e-6))


def binary_loss(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
