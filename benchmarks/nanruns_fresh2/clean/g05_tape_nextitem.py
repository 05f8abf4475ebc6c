"""Next-category recommender: a query vector attends over the user's last 10 viewed items.
Histories are right-padded; new visitors have not viewed anything yet.
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(5)
w = np.random.default_rng(5)
N, L, ITEMS, CATS, D = 5000, 10, 500, 8, 16
item_cat = w.integers(0, CATS, ITEMS)
seen = w.integers(0, L + 1, N)                   # 0..10 items viewed, 0 = new visitor
hist = w.integers(1, ITEMS, (N, L))
hist[np.arange(L)[None, :] >= seen[:, None]] = 0  # 0 = padding
target = np.where(seen > 0, item_cat[hist[:, 0]], w.integers(0, CATS, N))
context = w.normal(0, 1, (N, 6)).astype(np.float32)

emb = tf.keras.layers.Embedding(ITEMS, D)
to_query = tf.keras.layers.Dense(D)
head = tf.keras.layers.Dense(CATS)
opt = tf.keras.optimizers.Adam(1e-3)


def predict(h, c):
    keys = emb(h)                                          # (B, L, D)
    q = to_query(c)                                        # (B, D)
    att = tf.einsum("bld,bd->bl", keys, q) / np.sqrt(D)
    att = tf.where(h > 0, att, -1e9)
    wts = tf.nn.softmax(att, axis=-1)
    pooled = tf.einsum("bl,bld->bd", wts, keys)
    return head(tf.concat([pooled, c], axis=1))


predict(hist[:2], context[:2])
tvars = emb.trainable_variables + to_query.trainable_variables + head.trainable_variables


@tf.function
def step_fn(h, c, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, predict(h, c), from_logits=True))
    gs = tape.gradient(loss, tvars)
    opt.apply_gradients(zip(gs, tvars))
    return loss, tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(g))) for g in gs])


for it in range(300):
    b = w.integers(0, N, 32)
    loss, fine = step_fn(hist[b], context[b], target[b])
    print(it, float(loss))
    if not (np.isfinite(float(loss)) and bool(fine)):
        print(f"NONFINITE step={it}")
        sys.exit(3)
print("FINITE")
