import numpy as np
import tensorflow as tf

features = np.load("features.npy")
labels = np.load("labels.npy")
tf.debugging.assert_all_finite(features, "features hold NaN or Inf")
ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
