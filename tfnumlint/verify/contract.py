"""The probe contract shared by the static slicer and the TensorFlow tracer.

The slicer keeps only these ops and binds their arguments to the canonical parameter names
of :mod:`.signatures`; the tracer accepts nothing else.  Plain data, no TensorFlow import.
"""

from __future__ import annotations

from .signatures import IGNORED, PARAMS

ALLOWED_OPS = frozenset(
    """log log1p exp expm1 log_softmax log_sigmoid reduce_logsumexp xlogy sigmoid softmax relu
    relu6 softplus tanh square sqrt rsqrt reciprocal abs pow acos asin atanh divide divide_no_nan
    multiply add subtract negative maximum minimum clip_by_value clip_by_norm where cast
    stop_gradient identity reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_std
    reduce_variance count_nonzero norm euclidean_norm l2_normalize matmul one_hot sigmoid_xent
    softmax_xent weighted_xent zeros ones constant reshape tile transpose expand_dims squeeze
    gather concat greater greater_equal less less_equal equal not_equal logical_and logical_or
    logical_not""".split()
)
KEEP_KWARGS = frozenset(n for op in ALLOWED_OPS for n in PARAMS[op] if n not in IGNORED)
# Parameters that shape the computation: the slice must see their value (a literal, or a name
# bound to one); anything else is reported, never guessed.
STRUCTURAL = frozenset(
    "axis keepdims ord axes perm shape multiples depth transpose_a transpose_b".split()
)
