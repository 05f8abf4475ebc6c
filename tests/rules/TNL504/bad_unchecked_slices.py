import numpy as np
import tensorflow as tf

features = np.load("features.npy")
labels = np.load("labels.npy")
ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)  # error: TNL504
