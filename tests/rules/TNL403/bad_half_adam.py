import tensorflow as tf

w = tf.Variable(tf.zeros([16, 4], dtype=tf.float16))
opt = tf.compat.v1.train.RMSPropOptimizer(1e-3)  # error: TNL403
