"""Compress a wine-quality grader (6 grades, 11 lab measurements) into a tiny student net
by matching the teacher's grade distribution.
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(6)
r = np.random.default_rng(6)
N, F, G = 6000, 11, 6
grade = r.integers(0, G, N)
typical = r.uniform(0, 1, (G, F)) * np.array([15, 1.5, 1, 60, 0.5, 70, 250, 1, 4, 2, 15])
lab = (typical[grade] * r.uniform(0.8, 1.2, (N, F))).astype(np.float32)

teacher = tf.keras.Sequential([tf.keras.Input((F,)), tf.keras.layers.Dense(64, activation="relu"),
                               tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(G)])
teacher.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
teacher.fit(lab, grade, epochs=3, batch_size=64, verbose=0)
soft = tf.nn.softmax(teacher.predict(lab, verbose=0)).numpy()

student = tf.keras.Sequential([tf.keras.Input((F,)), tf.keras.layers.Dense(8, activation="relu"),
                               tf.keras.layers.Dense(G)])
opt = tf.keras.optimizers.Adam(3e-3)


@tf.function
def distil(xb, pb):
    with tf.GradientTape() as tape:
        qb = tf.nn.softmax(student(xb))
        gap = tf.reduce_mean(tf.reduce_sum(pb * tf.math.log(pb / qb), axis=1))  # expect: log-of-probability
    gs = tape.gradient(gap, student.trainable_variables)
    opt.apply_gradients(zip(gs, student.trainable_variables))
    return gap, tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gs])


for n in range(300):
    pick = r.integers(0, N, 128)
    gap, fin = distil(lab[pick], soft[pick])
    print(n, float(gap))
    if not (np.isfinite(float(gap)) and bool(fin)):
        print(f"NONFINITE step={n}")
        sys.exit(3)
print("FINITE")
