"""TF1 functional layers and variable scopes in the program slice
(``analysis/slicing/program_tf1.py``): ``tf.layers.dense`` and contrib's ``fully_connected``
are Dense layers of the objective, a helper that builds its layers inside ``with
tf.variable_scope(...)`` is inlined, and a weight is what TF1 makes it: its scoped name when
the code fixes it (two calls of a ``tower`` share ``tower/h``), else one per call."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.analysis.slicing.program import _sliced
from tfnumlint.engine import LintOptions, run_checks


def objectives(program: str) -> list[tuple[dict, dict, dict]]:
    """(weights, data, loss tree) of each objective the program slice reads whole."""
    module = cst.parse_module(textwrap.dedent(program))
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return [(ps.weights, ps.data, loss) for _obj, ps, loss in _sliced(ctx, positions)]


def the_objective(program: str) -> tuple[dict, dict, dict]:
    found = objectives(program)
    assert len(found) == 1, found
    return found[0]


def kernels(weights: dict) -> list[list]:
    return [w["shape"] for k, w in weights.items() if k.endswith(".kernel")]


def ops(tree: dict) -> list[str]:
    return [n["op"] for n in walk(tree) if n.get("k") == "call"]


PLAIN = """\
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 12])
    y = tf.placeholder(tf.float32, [None, 1])
    h = tf.layers.dense(x, 16, activation=tf.nn.tanh,
                        kernel_initializer=tf.truncated_normal_initializer(stddev=0.1))
    p = tf.compat.v1.layers.dense(h, 1, activation=tf.sigmoid)
    loss = -tf.reduce_mean(y * tf.log(p) + (1 - y) * tf.log(1 - p))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    X = np.random.rand(256, 12).astype(np.float32)
    Y = (X.sum(1, keepdims=True) > 6).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(100):
            sess.run(step, {x: X, y: Y})
"""


def test_a_tf1_dense_layer_in_the_objective_is_a_layer_with_its_initializer() -> None:
    weights, data, loss = the_objective(PLAIN)
    assert set(data) == {"x", "y"}
    first, second = (w for k, w in weights.items() if k.endswith(".kernel"))
    assert first["init"] == "truncated_normal" and first["stddev"] == 0.1
    assert first["shape"][1] == 16 and first.get("fan_in_from") == "x"
    assert second == {"init": "glorot_uniform", "shape": [16, 1], "fan_in_from": None}
    assert [w["init"] for k, w in weights.items() if k.endswith(".bias")] == ["zeros", "zeros"]
    assert {"matmul", "tanh", "sigmoid"} <= set(ops(loss))


SIAMESE = """\
    import numpy as np
    import tensorflow as tf

    p = tf.placeholder(tf.float32, [None, 6])
    q = tf.placeholder(tf.float32, [None, 6])

    def encode(v, reuse):
        with tf.variable_scope("enc", reuse=reuse):
            with tf.name_scope("layers"):
                z = tf.layers.dense(v, 10, activation=tf.nn.relu, name="first")
            return tf.layers.dense(z, 4, name="second")

    gap = tf.reduce_mean(tf.abs(encode(p, False) - encode(q, True)))
    train = tf.train.AdamOptimizer(0.01).minimize(gap)
    A = np.random.rand(64, 6).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {p: A, q: A[::-1]})
"""


def test_two_calls_of_a_scoped_helper_share_the_layers_it_names() -> None:
    weights, data, _loss = the_objective(SIAMESE)
    assert set(data) == {"p", "q"}
    assert sorted(weights) == [
        "enc/first.bias", "enc/first.kernel", "enc/second.bias", "enc/second.kernel"]  # fmt: skip
    assert weights["enc/second.kernel"]["shape"] == [10, 4]


def test_a_name_scope_does_not_prefix_a_layers_name() -> None:
    program = SIAMESE.replace('tf.variable_scope("enc", reuse=reuse)', 'tf.name_scope("enc")')
    program = program.replace("encode(q, True)", "encode(q, None)")
    weights, _data, _loss = the_objective(program)
    assert sorted(weights) == ["first.bias", "first.kernel", "second.bias", "second.kernel"]


UNNAMED = """\
    import numpy as np
    import tensorflow as tf

    p = tf.placeholder(tf.float32, [None, 6])
    t = tf.placeholder(tf.float32, [None, 1])

    def block(v, width):
        with tf.compat.v1.variable_scope("block"):
            return tf.contrib.layers.fully_connected(v, width)

    out = tf.contrib.layers.linear(block(block(p, 8), 5), 1)
    cost = tf.reduce_mean(tf.square(out - t))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    A = np.random.rand(64, 6).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {p: A, t: A[:, :1]})
"""


def test_each_call_of_a_helper_without_names_makes_its_own_layer() -> None:
    weights, _data, loss = the_objective(UNNAMED)
    assert sorted(kernels(weights), key=str) == sorted([[None, 8], [8, 5], [5, 1]], key=str)
    assert len(weights) == 6
    assert ops(loss).count("relu") == 2  # fully_connected's default activation; linear's none


def test_an_unnamed_layer_under_a_scope_that_reuses_stays_cut() -> None:
    program = UNNAMED.replace('variable_scope("block")', 'variable_scope("block", reuse=True)')
    assert len(objectives(UNNAMED)) == 1
    assert objectives(program) == []  # TF1 names it by its order in the scope: not read


def test_an_initializer_object_the_slice_cannot_read_leaves_the_layer_cut() -> None:
    program = PLAIN.replace("tf.truncated_normal_initializer(stddev=0.1)", "make_init()")
    assert len(objectives(PLAIN)) == 1
    assert objectives(program) == []


VARIABLES = """\
    import numpy as np
    import tensorflow as tf

    p = tf.placeholder(tf.float32, [None, 3])
    q = tf.placeholder(tf.float32, [None, 3])

    def project(v):
        with tf.variable_scope("proj", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [3, 2], initializer=tf.zeros_initializer())
            return tf.matmul(v, w)

    cost = tf.reduce_sum(tf.square(project(p) - project(q)))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    A = np.random.rand(64, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {p: A, q: A + 1})
"""


def test_get_variable_in_a_scoped_helper_is_one_weight_by_its_scoped_name() -> None:
    weights, data, _loss = the_objective(VARIABLES)
    assert set(data) == {"p", "q"}
    assert weights == {"proj/w": {"init": "zeros", "shape": [3, 2]}}


NESTED = """\
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.placeholder(tf.float32, [None, 1])

    def fc(v, n, scope, act):
        with tf.variable_scope(scope):
            return tf.layers.dense(v, n, activation=act, name="lin")

    with tf.variable_scope("net"):
        h = fc(x, 8, "a", tf.nn.relu)
        p = fc(h, 1, "b", None)
    loss = tf.reduce_mean(tf.square(p - y))
    opt = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    X = np.random.rand(100, 5).astype(np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(opt, {x: X, y: X[:, :1]})
"""


def test_scope_names_and_activations_a_helper_is_given_are_read_at_each_call() -> None:
    weights, _data, loss = the_objective(NESTED)
    assert sorted(weights) == [
        "net/a/lin.bias", "net/a/lin.kernel", "net/b/lin.bias", "net/b/lin.kernel"]  # fmt: skip
    assert ops(loss).count("relu") == 1  # the first call's; the second is given None
