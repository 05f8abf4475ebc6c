import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(learning_rate=0.01)
ds = tf.data.Dataset.range(10).map(lambda i: (tf.ones([8]), tf.ones([1]))).batch(512)


def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(model(x) - y))  # error: TNL506
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
