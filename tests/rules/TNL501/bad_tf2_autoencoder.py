import tensorflow as tf

model = tf.keras.Sequential([
    tf.keras.layers.Dense(32, activation="relu", input_shape=(256,)),
    tf.keras.layers.Dense(256, activation="sigmoid"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)  # error: TNL501


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        p = model(x, training=True)
        loss = -tf.reduce_mean(x * tf.math.log(p + 1e-10) + (1 - x) * tf.math.log(1 - p + 1e-10))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
