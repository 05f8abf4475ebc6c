"""Resolve TensorFlow/Keras names from a module's own import statements.

libcst's QualifiedNameProvider costs about 12x the parse on large trees, so imports are
resolved by hand: every import form binds a local name to a dotted path, and a call's
callee is resolved by walking its attribute chain back to such a name.  The dotted path is
then normalised (TF1 / compat / keras.src spellings collapse onto one form) and looked up
in :data:`OPS` to get a canonical operation name such as ``"log"`` or ``"sigmoid"``.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..optimizers import OPTIMIZERS

# Prefix rewrites, applied in order, that collapse every spelling onto ``tf.`` / ``keras.``.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.compat.v1.", "tf."),
    ("tensorflow.compat.v2.", "tf."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tensorflow.python.ops.gen_math_ops.", "tf.math."),
    ("tensorflow.python.ops.math_ops.", "tf.math."),
    ("tensorflow.python.ops.special_math_ops.", "tf.math."),
    ("tensorflow.python.ops.gen_nn_ops.", "tf.nn."),
    ("tensorflow.python.ops.nn_ops.", "tf.nn."),
    ("tensorflow.python.ops.nn_impl.", "tf.nn."),
    ("tensorflow.python.ops.nn.", "tf.nn."),
    ("tensorflow.python.ops.clip_ops.", "tf."),
    ("tensorflow.python.ops.array_ops.", "tf."),
    ("tensorflow.python.ops.gen_array_ops.", "tf."),
    ("tensorflow.python.ops.linalg_ops.", "tf.linalg."),
    ("tensorflow.python.ops.variables.", "tf."),
    ("tensorflow.python.ops.", "tf."),
    ("tensorflow.python.framework.constant_op.", "tf."),
    ("tensorflow.", "tf."),
    ("tf_keras.", "keras."),
    ("keras.src.ops.numpy.", "keras.ops."),
    ("keras.src.ops.nn.", "keras.ops."),
    ("keras.src.ops.math.", "keras.ops."),
    ("keras.src.", "keras."),
    ("keras.api.", "keras."),
    ("keras._tf_keras.keras.", "keras."),
)

_ROOTS = ("tensorflow", "keras", "tf_keras")


def normalise(dotted: str) -> str:
    """Collapse a fully qualified TF/Keras path onto the ``tf.``/``keras.`` spelling."""
    dotted += "."
    for old, new in _PREFIXES:
        if dotted.startswith(old):
            dotted = new + dotted[len(old) :]
            break
    else:
        if dotted == "tensorflow.":
            dotted = "tf."
    return dotted[:-1]


def _table() -> dict[str, str]:
    """Build normalised-name -> canonical op.  Each op lists the namespaces that carry it."""
    spec: dict[str, tuple[str, ...]] = {
        # logs and exps
        "log": ("tf.math.log", "tf.log", "keras.ops.log", "keras.backend.log"),
        "log1p": ("tf.math.log1p", "tf.log1p", "keras.ops.log1p"),
        "exp": ("tf.math.exp", "tf.exp", "keras.ops.exp", "keras.backend.exp"),
        "expm1": ("tf.math.expm1", "tf.expm1", "keras.ops.expm1"),
        "log_softmax": (
            "tf.nn.log_softmax",
            "tf.math.log_softmax",
            "keras.ops.log_softmax",
            "keras.activations.log_softmax",
        ),
        "log_sigmoid": ("tf.math.log_sigmoid", "keras.ops.log_sigmoid"),
        "reduce_logsumexp": (
            "tf.math.reduce_logsumexp",
            "tf.reduce_logsumexp",
            "keras.ops.logsumexp",
            "keras.backend.logsumexp",
        ),
        "xlogy": ("tf.math.xlogy", "keras.ops.xlogy"),
        # activations
        "sigmoid": (
            "tf.math.sigmoid",
            "tf.sigmoid",
            "tf.nn.sigmoid",
            "keras.ops.sigmoid",
            "keras.activations.sigmoid",
            "keras.backend.sigmoid",
        ),
        "softmax": (
            "tf.nn.softmax",
            "tf.math.softmax",
            "keras.ops.softmax",
            "keras.activations.softmax",
            "keras.backend.softmax",
        ),
        "relu": ("tf.nn.relu", "keras.ops.relu", "keras.activations.relu", "keras.backend.relu"),
        "relu6": ("tf.nn.relu6", "keras.ops.relu6"),
        "softplus": (
            "tf.math.softplus",
            "tf.nn.softplus",
            "keras.ops.softplus",
            "keras.activations.softplus",
            "keras.backend.softplus",
        ),
        "tanh": ("tf.math.tanh", "tf.tanh", "tf.nn.tanh", "keras.ops.tanh", "keras.backend.tanh"),
        # elementwise
        "square": ("tf.math.square", "tf.square", "keras.ops.square", "keras.backend.square"),
        "squared_difference": ("tf.math.squared_difference", "tf.squared_difference"),
        "sqrt": ("tf.math.sqrt", "tf.sqrt", "keras.ops.sqrt", "keras.backend.sqrt"),
        "rsqrt": ("tf.math.rsqrt", "tf.rsqrt", "keras.ops.rsqrt"),
        "reciprocal": ("tf.math.reciprocal", "tf.reciprocal", "keras.ops.reciprocal"),
        "abs": (
            "tf.math.abs",
            "tf.abs",
            "keras.ops.abs",
            "keras.ops.absolute",
            "keras.backend.abs",
        ),
        "pow": ("tf.math.pow", "tf.pow", "keras.ops.power", "keras.backend.pow"),
        "acos": ("tf.math.acos", "tf.acos", "keras.ops.arccos"),
        "asin": ("tf.math.asin", "tf.asin", "keras.ops.arcsin"),
        "atanh": ("tf.math.atanh", "tf.atanh", "keras.ops.arctanh"),
        "divide": (
            "tf.math.divide",
            "tf.divide",
            "tf.math.truediv",
            "tf.truediv",
            "tf.math.realdiv",
            "tf.realdiv",
            "tf.div",
            "tf.math.div",
            "keras.ops.divide",
            "keras.ops.true_divide",
        ),
        "divide_no_nan": ("tf.math.divide_no_nan", "tf.div_no_nan", "keras.ops.divide_no_nan"),
        "multiply": ("tf.math.multiply", "tf.multiply", "keras.ops.multiply"),
        "add": ("tf.math.add", "tf.add", "keras.ops.add"),
        "subtract": ("tf.math.subtract", "tf.subtract", "keras.ops.subtract"),
        "negative": ("tf.math.negative", "tf.negative", "keras.ops.negative"),
        "maximum": ("tf.math.maximum", "tf.maximum", "keras.ops.maximum", "keras.backend.maximum"),
        "minimum": ("tf.math.minimum", "tf.minimum", "keras.ops.minimum", "keras.backend.minimum"),
        "clip_by_value": ("tf.clip_by_value", "keras.ops.clip", "keras.backend.clip"),
        "clip_by_norm": ("tf.clip_by_norm",),
        "clip_by_global_norm": ("tf.clip_by_global_norm",),
        "where": ("tf.where", "tf.where_v2", "keras.ops.where", "keras.backend.switch"),
        "cast": ("tf.cast", "tf.dtypes.cast", "keras.ops.cast", "keras.backend.cast"),
        "stop_gradient": (
            "tf.stop_gradient",
            "keras.ops.stop_gradient",
            "keras.backend.stop_gradient",
        ),
        "identity": ("tf.identity",),
        # shape-only ops: the values (and what made them) pass through
        "reshape": ("tf.reshape", "keras.ops.reshape", "keras.backend.reshape"),
        "tile": ("tf.tile", "keras.ops.tile", "keras.backend.tile"),
        "transpose": (
            "tf.transpose",
            "tf.linalg.matrix_transpose",
            "keras.ops.transpose",
            "keras.backend.transpose",
        ),
        "expand_dims": ("tf.expand_dims", "keras.ops.expand_dims", "keras.backend.expand_dims"),
        "squeeze": ("tf.squeeze", "keras.ops.squeeze", "keras.backend.squeeze"),
        "gather": ("tf.gather", "keras.ops.take", "keras.backend.gather"),
        "concat": ("tf.concat", "keras.ops.concatenate", "keras.backend.concatenate"),
        # reductions and linear algebra
        "reduce_sum": ("tf.math.reduce_sum", "tf.reduce_sum", "keras.ops.sum", "keras.backend.sum"),
        "reduce_mean": (
            "tf.math.reduce_mean",
            "tf.reduce_mean",
            "keras.ops.mean",
            "keras.backend.mean",
        ),
        "reduce_max": ("tf.math.reduce_max", "tf.reduce_max", "keras.ops.max", "keras.backend.max"),
        "reduce_min": ("tf.math.reduce_min", "tf.reduce_min", "keras.ops.min", "keras.backend.min"),
        "reduce_prod": (
            "tf.math.reduce_prod",
            "tf.reduce_prod",
            "keras.ops.prod",
            "keras.backend.prod",
        ),
        "reduce_std": ("tf.math.reduce_std", "keras.ops.std", "keras.backend.std"),
        "reduce_variance": ("tf.math.reduce_variance", "keras.ops.var", "keras.backend.var"),
        "count_nonzero": ("tf.math.count_nonzero", "tf.count_nonzero", "keras.ops.count_nonzero"),
        "norm": ("tf.norm", "tf.linalg.norm", "keras.ops.norm", "keras.ops.linalg.norm"),
        "euclidean_norm": ("tf.math.reduce_euclidean_norm", "tf.reduce_euclidean_norm"),
        "l2_normalize": (
            "tf.math.l2_normalize",
            "tf.nn.l2_normalize",
            "keras.backend.l2_normalize",
        ),
        "matmul": (
            "tf.linalg.matmul",
            "tf.matmul",
            "keras.ops.matmul",
            "keras.backend.dot",
            "keras.ops.dot",
        ),
        "moments": ("tf.nn.moments",),
        "one_hot": ("tf.one_hot", "keras.ops.one_hot", "keras.backend.one_hot"),
        # sources
        "placeholder": ("tf.placeholder", "keras.backend.placeholder"),
        "variable": ("tf.Variable", "tf.get_variable", "keras.Variable", "keras.backend.variable"),
        "constant": ("tf.constant", "tf.convert_to_tensor", "keras.ops.convert_to_tensor"),
        "zeros": ("tf.zeros", "tf.zeros_like", "keras.ops.zeros", "keras.ops.zeros_like"),
        "ones": ("tf.ones", "tf.ones_like", "keras.ops.ones", "keras.ops.ones_like"),
        "random": (
            "tf.random.normal",
            "tf.random.uniform",
            "tf.random_normal",
            "tf.random_uniform",
            "tf.random.truncated_normal",
            "tf.truncated_normal",
        ),
        "keras_input": ("keras.Input", "keras.layers.Input"),
        "epsilon": ("keras.backend.epsilon", "keras.config.epsilon"),
        # fused losses
        "sigmoid_xent": ("tf.nn.sigmoid_cross_entropy_with_logits",),
        "softmax_xent": (
            "tf.nn.softmax_cross_entropy_with_logits",
            "tf.nn.softmax_cross_entropy_with_logits_v2",
            "tf.nn.sparse_softmax_cross_entropy_with_logits",
        ),
        "weighted_xent": ("tf.nn.weighted_cross_entropy_with_logits",),
        # debugging
        "check_numerics": (
            "tf.debugging.check_numerics",
            "tf.check_numerics",
            "tf.debugging.assert_all_finite",
            "tf.debugging.enable_check_numerics",
            "tf.verify_tensor_all_finite",
        ),
        "set_policy": (
            "keras.mixed_precision.set_global_policy",
            "keras.mixed_precision.experimental.set_policy",
            "keras.mixed_precision.set_dtype_policy",
            "keras.config.set_dtype_policy",
        ),
        "loss_scale_optimizer": (
            "keras.mixed_precision.LossScaleOptimizer",
            "tf.train.experimental.enable_mixed_precision_graph_rewrite",
            "tf.mixed_precision.enable_mixed_precision_graph_rewrite",
        ),
        "dataset": (
            "tf.data.Dataset.from_tensor_slices",
            "tf.data.Dataset.from_tensors",
            "tf.data.Dataset.from_generator",
            "tf.data.TFRecordDataset",
        ),
        "dense": ("keras.layers.Dense",),
        "sequential": ("keras.Sequential", "keras.models.Sequential"),
        "keras_model": ("keras.Model", "keras.models.Model"),
        "gradient_tape": ("tf.GradientTape",),
    }
    table = {name: op for op, names in spec.items() for name in names}
    # optimizers: canonical op "optimizer:<family>"
    optimizers = {family: o.spellings for family, o in OPTIMIZERS.items()}
    for family, names in optimizers.items():
        for name in names:
            table[name] = "optimizer:" + family
    losses = {
        "binary_crossentropy": (
            "keras.losses.BinaryCrossentropy",
            "keras.losses.binary_crossentropy",
            "keras.backend.binary_crossentropy",
            "keras.metrics.binary_crossentropy",
        ),
        "categorical_crossentropy": (
            "keras.losses.CategoricalCrossentropy",
            "keras.losses.categorical_crossentropy",
            "keras.backend.categorical_crossentropy",
            "keras.losses.SparseCategoricalCrossentropy",
            "keras.losses.sparse_categorical_crossentropy",
            "keras.backend.sparse_categorical_crossentropy",
        ),
    }
    for family, names in losses.items():
        for name in names:
            table[name] = "loss:" + family
    return table


OPS: dict[str, str] = _table()

# String activations / losses as Keras accepts them.
PROBABILITY_LOSSES = frozenset(
    {
        "binary_crossentropy",
        "categorical_crossentropy",
        "sparse_categorical_crossentropy",
        "bce",
        "BinaryCrossentropy",
        "CategoricalCrossentropy",
        "SparseCategoricalCrossentropy",
    }
)


class ImportMap:
    """Local name -> dotted module path, from every import statement in a module."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = dotted_name(alias.name)
            if not dotted:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = dotted
            else:
                root = dotted.split(".")[0]
                self.aliases[root] = root

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted_name(node.module)
        if not base:
            return
        for name, local in imported_names(node.names):
            self.aliases[local] = f"{base}.{name}"

    @property
    def uses_tensorflow(self) -> bool:
        return any(v.split(".")[0] in _ROOTS for v in self.aliases.values())

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Dotted, normalised path of a Name/Attribute chain rooted at a TF/Keras import."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        base = self.aliases.get(node.value)
        if base is None or base.split(".")[0] not in _ROOTS:
            return None
        parts.append(base)
        return normalise(".".join(reversed(parts)))

    def op(self, func: cst.BaseExpression) -> str | None:
        """Canonical op for a callee expression, or None when it is not a known TF/Keras op."""
        name = self.resolve(func)
        return OPS.get(name) if name else None


def imported_names(aliases) -> list[tuple[str, str]]:
    """(imported name, local name) of each alias of a `from m import a, b as c`."""
    out = []
    for alias in aliases:
        name = dotted_name(alias.name)
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        if name and local:
            out.append((name, local))
    return out


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node and everything below it, without a libcst visitor (no metadata, no copies)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def dotted_name(node: cst.BaseExpression | None) -> str:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""
