"""The training rung's static reading of where weights start
(``analysis/slicing/program_sources.py``): a helper that makes a variable is read through, with
its parameters bound to the call's arguments, and only when every name it reads means the same
at the call."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tfnumlint.analysis.context import Context
from tfnumlint.analysis.module import build
from tfnumlint.analysis.slicing.program_inits import initializer
from tfnumlint.analysis.slicing.program_inline import inlined
from tfnumlint.analysis.slicing.program_sources import model_layers
from tfnumlint.config import Settings

HELPERS = """\
    import tensorflow as tf

    STD = 0.1

    def weight_variable(shape, scale=1.0):
        initial = tf.random.truncated_normal(shape, stddev=STD * scale)
        return tf.Variable(initial)

    W1 = weight_variable([64, 128])
    W2 = weight_variable([128, 10], scale=2.0)

    def build():
        STD = 5.0
        W3 = weight_variable([10, 10])
        return W3
"""


def _site(ctx: Context, code: str):
    return next(s for s in ctx.info.calls if ctx.code(s.node) == code)


def _read(code: str) -> dict | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(HELPERS))), Settings())
    site = _site(ctx, code)
    made = inlined(ctx, site.node, site.scope, site.order)
    if not isinstance(made, cst.Call):
        return None
    return initializer(ctx, made, site.scope, site.order)


def test_a_helper_variable_starts_as_the_helper_makes_it_with_the_calls_arguments() -> None:
    assert _read("weight_variable([64, 128])") == {
        "init": "truncated_normal", "shape": [64, 128], "stddev": 0.1}  # fmt: skip
    assert _read("weight_variable([128, 10], scale=2.0)") == {
        "init": "truncated_normal", "shape": [128, 10], "stddev": 0.2}  # fmt: skip


def test_a_helper_is_not_read_where_a_local_shadows_a_name_it_reads() -> None:
    assert _read("weight_variable([10, 10])") is None  # STD is 5.0 in build(), not 0.1


VALUES = """\
    import tensorflow as tf

    Z_DIM = 100

    def xavier_init(size):
        in_dim = size[0]
        stddev = 1.0 / tf.sqrt(in_dim / 2.0)
        return tf.random_normal(shape=size, stddev=stddev)

    def normal(shape):
        return tf.zeros(shape)

    D_W1 = tf.Variable(xavier_init([784, 128]))
    G_W1 = tf.Variable(xavier_init([Z_DIM, 128]))
    W0 = tf.Variable(normal([4, 4]))
    W5 = tf.Variable(tf.random_normal([4, 4], stddev=SPREAD))
    W6 = tf.Variable(tf.keras.initializers.RandomNormal(0.5, 0.02)((3, 2)))
"""


def _start(name: str) -> dict | None:
    """How the weight ``name = tf.Variable(...)`` of VALUES starts."""
    ctx = Context(build(cst.parse_module(textwrap.dedent(VALUES))), Settings())
    site = next(
        s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.Variable(")
        and f"{name} = {ctx.code(s.node)}" in textwrap.dedent(VALUES)
    )  # fmt: skip
    return initializer(ctx, site.node, site.scope, site.order)


def test_a_variable_whose_initial_value_a_helper_returns_starts_as_the_helper_draws_it() -> None:
    # the helper's float32 stddev: 1 / sqrt(784 / 2), not the draw's default of 1
    d = _start("D_W1")
    assert d is not None and d["init"] == "normal" and d["shape"] == [784, 128]
    assert abs(d["stddev"] - 1 / (392**0.5)) < 1e-6
    g = _start("G_W1")  # the module constant passed in the shape
    assert g is not None and g["shape"] == [100, 128] and abs(g["stddev"] - 0.02**0.5) < 1e-6


def test_a_program_function_is_read_from_its_body_never_by_its_name() -> None:
    assert _start("W0") == {"init": "zeros", "shape": [4, 4]}  # ``normal`` returns zeros


def test_a_spread_the_code_does_not_fix_is_not_taken_as_the_default() -> None:
    assert _start("W5") is None  # stddev=SPREAD, unknown: not a standard normal


def test_an_initializer_object_takes_its_spread_first() -> None:
    assert _start("W6") == {"init": "normal", "shape": [3, 2], "mean": 0.5, "stddev": 0.02}


ADDED = """\
    import tensorflow as tf
    from tensorflow.keras.layers import Dense, Dropout

    m = tf.keras.Sequential(name="net")
    m.add(Dense(64, activation="relu", input_dim=30))
    m.add(Dropout(0.5))
    m.add(Dense(5, activation="softmax"))
    m.compile(loss="mse", optimizer="sgd")

    k = tf.keras.Sequential()
    k.add(Dense(8, input_dim=3))
    if WIDE:
        k.add(Dense(8))
    k.add(Dense(1))
    k.compile(loss="mse", optimizer="sgd")
"""


def _layers(receiver: str) -> list[dict] | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(ADDED))), Settings())
    site = _site(ctx, f'{receiver}.compile(loss="mse", optimizer="sgd")')
    return model_layers(ctx, site.node.func.value, site.scope, site.order)


def test_a_sequential_built_by_add_statements_has_their_layers_in_order() -> None:
    layers = _layers("m")
    assert layers is not None
    assert [layer.get("units") for layer in layers] == [64, None, 5]
    assert [layer.get("activation") for layer in layers if "units" in layer] == ["relu", "softmax"]
    assert layers[0]["input_dim"] == 30


def test_an_add_under_a_condition_leaves_the_stack_unknown() -> None:
    assert _layers("k") is None  # two or three layers: the run decides


def test_a_tf_math_op_of_a_number_is_folded_for_the_rung_but_kept_in_a_probe() -> None:
    """The rung reads an initializer's spread as a number (``1.0 / tf.sqrt(392.0)``, in
    float32); a probe's tree keeps ``tf.math.log(1e-10)`` as the op the code writes, so a
    witness shows it as written."""
    from tfnumlint.analysis.slicing.program_inits import _number
    from tfnumlint.analysis.slicing.slicer import Slicer

    code = "import tensorflow as tf\nA = 1.0 / tf.sqrt(392.0)\nB = tf.math.log(1e-10)\n"
    ctx = Context(build(cst.parse_module(code)), Settings())
    values = {ctx.code(s.node): s for s in ctx.info.calls}
    root = values["tf.sqrt(392.0)"].scope
    a = ctx.info.module.body[1].body[0].value  # 1.0 / tf.sqrt(392.0)
    folded = _number(ctx, a, root, 99)
    assert folded is not None and abs(folded - 1 / 392**0.5) < 1e-7
    b = values["tf.math.log(1e-10)"].node
    assert Slicer(ctx, {})._host_constant(b, 0, (root, 99)) is None


LOOPED = """\
    import tensorflow as tf
    from tensorflow.keras.layers import Dense, Dropout

    DEPTH = 2
    inputs = tf.keras.Input(shape=(784,))
    h = inputs
    for units in [512, 256, 128]:
        h = Dense(units, activation="relu")(h)
    f = tf.keras.Model(inputs, Dense(10, activation="softmax")(h))
    f.compile(loss="mse", optimizer="sgd")

    x = tf.keras.Input(shape=(8,))
    y = x
    for _ in range(DEPTH):
        y = Dense(16, activation="tanh")(y)
        y = Dropout(0.25)(y)
    g = tf.keras.Model(x, Dense(1)(y))
    g.compile(loss="mse", optimizer="sgd")

    s = tf.keras.Sequential()
    s.add(Dense(32, activation="relu", input_dim=4))
    for width in (16, 8):
        s.add(Dense(width, activation="relu"))
    s.add(Dense(1))
    s.compile(loss="mse", optimizer="sgd")

    r = tf.keras.Sequential()
    r.add(Dense(32, input_dim=4))
    for width in WIDTHS:
        r.add(Dense(width))
    r.compile(loss="mse", optimizer="sgd")

    c = tf.keras.Sequential()
    c.add(Dense(32, input_dim=4))
    for width in (16, 8):
        if width > 8:
            c.add(Dense(width))
    c.compile(loss="mse", optimizer="sgd")

    v = tf.keras.Input(shape=(8,))
    w = v
    for width in SIZES:
        w = Dense(width)(w)
    q = tf.keras.Model(v, Dense(1)(w))
    q.compile(loss="mse", optimizer="sgd")
"""


def _looped(receiver: str) -> list[dict] | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(LOOPED))), Settings())
    site = _site(ctx, f'{receiver}.compile(loss="mse", optimizer="sgd")')
    return model_layers(ctx, site.node.func.value, site.scope, site.order)


def test_a_functional_chain_built_in_a_loop_has_one_layer_per_pass() -> None:
    layers = _looped("f")
    assert layers is not None
    assert [layer["units"] for layer in layers] == [512, 256, 128, 10]
    assert [layer["activation"] for layer in layers] == ["relu", "relu", "relu", "softmax"]
    assert layers[0]["input_dim"] == 784


def test_each_pass_of_a_range_loop_repeats_every_layer_of_its_body_in_order() -> None:
    layers = _looped("g")
    assert layers is not None
    assert [layer.get("units", layer.get("dropout")) for layer in layers] == [16, 0.25, 16, 0.25, 1]


def test_layers_added_in_a_loop_take_each_pass_value_between_the_adds_around_it() -> None:
    layers = _looped("s")
    assert layers is not None
    assert [layer["units"] for layer in layers] == [32, 16, 8, 1]
    assert layers[0]["input_dim"] == 4


@pytest.mark.parametrize("receiver", ["r", "c", "q"])
def test_a_loop_over_values_the_code_does_not_fix_or_a_conditional_add_is_not_read(
    receiver: str,
) -> None:
    assert _looped(receiver) is None  # WIDTHS/SIZES unknown; an add under an if


INITIALIZED = """\
    import tensorflow as tf
    from tensorflow.keras import initializers, layers, regularizers

    def stack(layer):
        m = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layer, layers.Dense(1)])
        m.compile(loss="mse", optimizer="sgd")
        return m

    a = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                             layers.Dense(8, kernel_initializer=initializers.RandomNormal(stddev=0.01))])
    b = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                             layers.Dense(8, kernel_initializer=initializers.RandomNormal())])
    c = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Dense(8, kernel_initializer="he_uniform")])
    d = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Dense(8, kernel_initializer="random_normal")])
    u = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Dense(8, kernel_initializer="random_uniform")])
    e = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                             layers.Dense(8, kernel_regularizer=regularizers.l2(0.01))])
    f = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Dense(8, kernel_constraint=MaxNorm(3))])
    g = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Dense(8, kernel_initializer=mine())])
    h = tf.keras.Sequential([tf.keras.Input(shape=(4,)), layers.Rescaling(1.0 / 255, offset=-1.0),
                             layers.Dense(8), layers.LeakyReLU(0.2), layers.Dense(8), layers.LeakyReLU()])
"""


def _stack(name: str) -> list[dict] | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(INITIALIZED))), Settings())
    return model_layers(ctx, cst.Name(name), ctx.info.root, 10**9)


@pytest.mark.parametrize(
    "name, kernel",
    [("a", ("normal", {"stddev": 0.01})), ("b", ("normal", {"stddev": 0.05})),
     ("c", ("he_uniform", {})), ("d", ("normal", {"stddev": 0.05})),
     ("u", ("uniform", {"minval": -0.05, "maxval": 0.05}))],
)  # fmt: skip
def test_a_dense_kernel_starts_as_its_keras_initializer_says(name: str, kernel: tuple) -> None:
    """An initializer object or name, with Keras's spread where none is given (0.05: TF1's
    initializer functions default to 1)."""
    [layer] = _stack(name) or [None]
    assert layer is not None
    assert (layer["kernel_initializer"], layer["kernel_params"]) == kernel


@pytest.mark.parametrize("name", ["e", "f", "g"])
def test_a_dense_layer_the_slice_would_not_train_as_keras_does_leaves_the_stack_cut(name) -> None:
    assert _stack(name) is None  # a regularizer, a constraint, an initializer of the program's


def test_rescaling_and_leaky_relu_apply_their_arguments_and_keras_s_defaults() -> None:
    layers = _stack("h")
    assert layers is not None
    acts = [{k: v for k, v in layer.items() if not k.startswith("input")} for layer in layers]
    assert [a for a in acts if "act" in a] == [
        {"act": "rescale", "scale": 1.0 / 255, "offset": -1.0},
        {"act": "leaky_relu", "alpha": 0.2},
        {"act": "leaky_relu", "alpha": 0.3},
    ]


def test_a_keras_initializer_object_draws_with_keras_s_spread_and_tf1_s_with_its_own() -> None:
    """``RandomNormal()`` draws at 0.05 and ``RandomUniform()`` in [-0.05, 0.05] (Keras);
    ``random_normal_initializer()`` at 1 (TF1's default)."""
    code = textwrap.dedent(
        """
        import tensorflow as tf
        a = tf.compat.v1.get_variable("a", [3, 4], initializer=tf.keras.initializers.RandomNormal())
        b = tf.compat.v1.get_variable("b", [3, 4], initializer=tf.compat.v1.random_normal_initializer())
        c = tf.compat.v1.get_variable("c", [3, 4], initializer=tf.keras.initializers.RandomUniform())
        """
    )
    ctx = Context(build(cst.parse_module(code)), Settings())
    got = {
        ctx.code(s.node.args[0].value): initializer(ctx, s.node, s.scope, s.order)
        for s in ctx.info.calls
        if ctx.code(s.node.func).endswith("get_variable")
    }
    assert got['"a"'] == {"init": "normal", "stddev": 0.05, "shape": [3, 4]}
    assert got['"b"'] == {"init": "normal", "shape": [3, 4]}  # the rung's default: 1
    assert got['"c"'] == {"init": "uniform", "minval": -0.05, "maxval": 0.05, "shape": [3, 4]}


FOLDS = """\
    import tensorflow as tf
    from tensorflow.keras.layers import Dense

    for fold in range(5):
        inputs = tf.keras.Input(shape=(8,))
        h = Dense(16, activation="relu")(inputs)
        f = tf.keras.Model(inputs, Dense(1)(h))
        f.compile(loss="mse", optimizer="sgd")

        s = tf.keras.Sequential()
        s.add(Dense(16, activation="relu", input_dim=8))
        s.add(Dense(1))
        s.compile(loss="mse", optimizer="sgd")
"""


def test_a_model_made_anew_in_each_pass_of_a_loop_is_one_stack_not_one_per_pass() -> None:
    """A cross-validation loop builds the same two-layer model each fold: its layers are not
    repeated per pass (the functional chain does not rebind its input; the Sequential is made
    in the loop), and the functional chain is still read."""
    ctx = Context(build(cst.parse_module(textwrap.dedent(FOLDS))), Settings())
    f = _site(ctx, 'f.compile(loss="mse", optimizer="sgd")')
    layers = model_layers(ctx, f.node.func.value, f.scope, f.order)
    assert layers is not None and [layer["units"] for layer in layers] == [16, 1]
    s = _site(ctx, 's.compile(loss="mse", optimizer="sgd")')
    stacked = model_layers(ctx, s.node.func.value, s.scope, s.order)
    assert stacked is None or [layer["units"] for layer in stacked] == [16, 1]


DRAWS = """\
    import tensorflow as tf

    def sample(z_mean, z_log_var):
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        a = tf.random.normal(shape=(batch, dim))
        b = tf.random.normal([tf.shape(z_mean)[0], 16], 0.0, 0.5)
        c = tf.random.normal([tf.shape(z_mean)[1], 16])
        d = tf.random.normal([32, 16])
        e = tf.random.uniform(tf.shape(z_mean))
        return a, b, c, d, e
"""


def test_a_draw_shaped_from_a_values_rows_is_read_with_its_width() -> None:
    """Keras's VAE example writes the noise's shape out from the mean's own (through names);
    a GAN's noise takes the batch's rows and a width of its own.  A draw over another axis,
    a literal shape or another distribution is not read."""
    from tfnumlint.analysis.slicing.program_draws import normal_draw

    ctx = Context(build(cst.parse_module(textwrap.dedent(DRAWS))), Settings())

    def tree(node, scope, order, depth):
        return {"k": "input", "name": ctx.code(node)}

    got = {}
    for site in ctx.info.calls:
        code = ctx.code(site.node)
        if code.startswith("tf.random."):
            got[code] = normal_draw(ctx, site.node, site.scope, site.order, 0, tree)
    a, b, c, d, e = got.values()
    assert (
        a is not None and a["args"][0] == {"k": "input", "name": "z_mean"} and len(a["args"]) == 3
    )
    assert b is not None and [x.get("v") for x in b["args"][1:]] == [0.0, 0.5, 16.0]
    assert c is None and d is None and e is None
