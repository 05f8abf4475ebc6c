"""The traced slice computes exactly what TensorFlow computes for the code as written.

Each test writes a function in user code, slices it with the real slicer, evaluates the probe
at batched points, and compares every point with TensorFlow running the same expression
directly in the test (test code, with concrete tensors).  Every TF1/TF2/Keras spelling of an
argument must bind to the same meaning; one the slicer does not model must be reported.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from tfnumlint.analysis.slicing import slicer, tools  # noqa: E402
from tfnumlint.engine import LintOptions, run_checks  # noqa: E402
from tfnumlint.verify import probing, trace, trace_ops  # noqa: E402
from tfnumlint.verify.program import build, to_batch  # noqa: E402
from tfnumlint.verify.trace import UnsupportedProbe  # noqa: E402

PATH = "/virtual/semantics.py"
HEADER = (
    "import numpy as np\nimport tensorflow as tf\nfrom tensorflow.keras import backend as K\n\n\n"
)


def slice_of(expr: str, args: str = "x, y") -> dict:
    """The probe of ``tf.identity(expr)`` inside ``def f(args)``, sliced by the real slicer."""
    src = HEADER + f"def f({args}):\n    return tf.identity({expr})\n"
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(
        s
        for s in ctx.info.calls
        if ctx.code(s.node).startswith("tf.identity(")  # type: ignore[attr-defined]
    )
    sl = slicer.Slicer(ctx, positions)  # type: ignore[arg-type]
    sl.cut_logits = False  # trace what feeds a softmax too: the semantics are under test
    target = sl.tree(site.node, site.scope, site.order)
    return {
        "kind": "expr",
        "rule": "probe",
        "dtype": "float32",
        "path": PATH,
        "line": 5,
        "target": target,
        "loss": None,
        "inputs": list(sl.inputs.values()),
        "unsupported": sl.unsupported,
    }


def direct(expr: str, values: dict[str, np.ndarray]) -> np.ndarray:
    """The same expression, run by TensorFlow directly on one point's tensors."""
    env = {"tf": tf, "K": tf.keras.backend, "tf1": tf.compat.v1, "np": np}
    env.update({n: tf.zeros((1, 1)) for n in ("x", "y")})  # an argument the slice never reads
    env.update({k: tf.constant(v, tf.float32) for k, v in values.items()})
    return np.asarray(eval(expr.replace("tf.compat.v1.", "tf1."), env))


SHAPE_ERRORS = (tf.errors.InvalidArgumentError, ValueError)


def compare(expr: str, seed: int = 0) -> None:
    """Batched probe == TF on each point; an expression TF rejects at these shapes must be
    rejected by the probe too (it must never invent a broadcast TF does not do)."""
    probe = slice_of(expr)
    assert not probe["unsupported"], probe["unsupported"]
    try:
        program = build(probe)
    except UnsupportedProbe:  # refused while tracing (an axis a scalar lacks): TF must refuse
        rng0 = np.random.default_rng(seed)
        point = {i["name"]: rng0.normal(0, 2, size=(2, 3)) for i in probe["inputs"]}
        with pytest.raises(SHAPE_ERRORS):
            direct(expr, point)
        return
    rng = np.random.default_rng(seed)
    names = [i.name for i in program.inputs]
    # every point a different [2, 3] tensor: a dropped or wrong axis changes the value
    shape = (6, 2, 3, *[2] * (program.rank - 2))
    batch = [tf.constant(rng.normal(0, 2, size=shape), tf.float32) for _ in names]
    try:
        got = np.asarray(program.fn(*batch)["t"], dtype=np.float64)
    except (*SHAPE_ERRORS, UnsupportedProbe):  # the probe refuses an axis the value lacks
        got = None
    for p in range(shape[0]):
        point = {n: np.asarray(batch[j][p]) for j, n in enumerate(names)}
        try:
            want = direct(expr, point)
        except SHAPE_ERRORS:
            assert got is None, f"{expr}: TF rejects these shapes, the probe does not"
            return
        assert got is not None, f"{expr}: the probe rejects what TF computes"
        np.testing.assert_allclose(got[p], want, rtol=1e-5, atol=1e-6, err_msg=f"{expr} @ {p}")


SPELLINGS = [
    "tf.reduce_sum(x * y, axis=1)",
    "tf.reduce_sum(x * y, 1)",
    "tf.compat.v1.reduce_sum(x * y, reduction_indices=1)",
    "tf.compat.v1.reduce_sum(x * y, reduction_indices=[1], keep_dims=True)",
    "tf.reduce_sum(input_tensor=x * y, axis=-1, keepdims=True)",
    "tf.reduce_mean(x, axis=None)",
    "tf.reduce_mean(x)",
    "K.sum(x, axis=-1)",
    "K.mean(-K.sum(y * K.log(K.softmax(x)), axis=-1))",
    "tf.reduce_mean(-tf.reduce_sum(y * tf.math.log(tf.nn.softmax(x)), axis=1))",
    "x / tf.sqrt(tf.reduce_sum(tf.square(x)))",
    "x - tf.reduce_max(x, axis=-1, keepdims=True)",
    "tf.norm(tensor=x, axis=-1)",
    "tf.norm(x * y, ord=1) + tf.norm(x, ord=2, keepdims=True) + tf.norm(x, ord=np.inf)",
    "tf.math.divide(x, y) + tf.truediv(y, x)",
    "tf.where(x > 0, x, y)",
    "tf.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: y)",
    "tf.convert_to_tensor(tf.constant(2.0)) * x",
    "tf.cast(x, dtype=y.dtype) + tf.ones_like(x, dtype=x.dtype)",
    "tf.clip_by_value(t=x, clip_value_min=-1.0, clip_value_max=1.0)",
    "K.clip(x, min_value=-1.0, max_value=1.0)",
    "tf.expand_dims(tf.reduce_sum(x, axis=-1), -1) * y",
    "tf.transpose(tf.identity(tf.transpose(x))) + tf.cast(tf.greater(y, 0.0), tf.float32)",
    "tf.reduce_sum(tf.transpose(x), axis=0) * y",
    "tf.nn.softmax(logits=x, axis=-1) * y",
    "tf.nn.elu(x) + tf.nn.selu(features=y) + K.elu(x * y)",
    "tf.nn.leaky_relu(x) * tf.nn.leaky_relu(y, alpha=0.3)",
]


@pytest.mark.parametrize("expr", SPELLINGS)
def test_every_spelling_traces_to_what_tensorflow_computes(expr):
    compare(expr)


def test_a_full_reduction_never_meets_another_points_row():
    """X / sqrt(reduce_sum(square(X))) was "inf at X = 1": the [N] sum broadcast against
    the [N, 1, K] batch, so one point's numerator met another's denominator."""
    probe = slice_of("x / tf.sqrt(tf.reduce_sum(tf.square(x)))", "x")
    program = build(probe)
    rows = np.array([[1.0], [0.0], [3.0]])
    got = np.asarray(program.fn(*to_batch(program, rows))["t"])
    assert np.allclose(got[0], 1.0) and np.allclose(got[2], 1.0)
    assert np.isnan(got[1]).all()
    verdict = probing.verify_expr({**probe, "rule": "TNL201"}, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert verdict["inputs"]["x"] != 1.0, verdict  # at x = 1 the value is 1, never inf


def test_points_that_mix_are_an_internal_error_never_a_verdict(monkeypatch):
    """A reduction that (wrongly) reduces across the point axis must be caught: its spurious
    inf (every row's denominator 0) never becomes a verdict, because no point shows it alone."""
    probe = {
        **slice_of("1.0 / (tf.reduce_sum(x * x, axis=-1) + 1.0)", "x"),
        "rule": "TNL201",
    }

    def across_points(x, axis=None, keepdims=False):
        own = tf.reduce_sum(x, axis=-1)  # what the probed expression asks for
        if (x.shape[0] or 0) > 1:  # batched (eager): each row gets its neighbour's sum - 1
            return tf.roll(own, 1, axis=0) - 1.0  # a spurious 0 after the x = 0 row
        return own

    monkeypatch.setitem(trace_ops.OP_TABLE, "reduce_sum", across_points)
    verdict = probing.verify_expr(probe, 1e6)
    assert verdict["status"] == "inconclusive"
    assert "no verdict" in verdict["detail"] and "one by one" in verdict["detail"]


def test_a_symptom_that_reproduces_on_its_own_point_is_confirmed_despite_a_mixed_batch(
    monkeypatch,
):
    """When the batch cannot be trusted, a point evaluated alone still can: 1 / sum(x) at x = 0."""
    probe = {**slice_of("1.0 / tf.reduce_sum(x, axis=-1)", "x"), "rule": "TNL201"}

    def across_points(x, axis=None, keepdims=False):
        if (x.shape[0] or 0) > 1:
            return 0 * tf.reduce_sum(x, axis=[1, 2]) + tf.reduce_sum(x)
        return tf.reduce_sum(x, axis=-1)  # what the probed expression asks for

    monkeypatch.setitem(trace_ops.OP_TABLE, "reduce_sum", across_points)
    verdict = probing.verify_expr(probe, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert verdict["inputs"]["x"] == 0.0


@pytest.mark.parametrize(
    "expr, construct",
    [
        ("tf.reduce_sum(x, axis=x.shape[-1])", "axis=x.shape[-1]"),
        ("tf.reduce_sum(x, 1, True, 'name', 7)", "positional argument 5 of tf.reduce_sum"),
        ("tf.reduce_sum(x, foo=1)", "`foo=`"),
        ("tf.nn.softmax(x, axis=self_axis)", "axis=self_axis"),
    ],
)
def test_an_argument_the_slicer_does_not_model_is_named(expr, construct):
    probe = slice_of(expr, "x, self_axis=None")
    assert probe["unsupported"] and construct in probe["unsupported"][0], probe["unsupported"]
    verdict = probing.verify_expr({**probe, "rule": "TNL201"}, 1e6)
    assert verdict["status"] == "inconclusive"
    assert construct in verdict["detail"], verdict


def test_a_dtype_argument_means_what_it_names():
    cast = slice_of("tf.cast(x, dt)", "x, dt=None")["target"]["args"][0]
    assert cast["args"][1] == {"k": "dtype", "v": "same"}  # unknown: the value's own dtype
    src = HEADER + "def f(x):\n    dt = tf.float16\n    return tf.identity(tf.cast(x, dt))\n"
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.identity("))  # type: ignore[attr-defined]
    tree = slicer.Slicer(ctx, positions).tree(site.node, site.scope, site.order)  # type: ignore[arg-type]
    assert tree["args"][0]["args"][1] == {"k": "dtype", "v": "float16"}


def test_witness_keeps_parentheses_and_names():
    probe = slice_of("(x - mean) / tf.sqrt(var)", "x, mean, var")
    assert trace.render(probe["target"]["args"][0]) == "(x - mean) / sqrt(var)"
    probe = slice_of(
        "long_user_name_for_the_normaliser_tensor * 2.0", "long_user_name_for_the_normaliser_tensor"
    )
    assert probe["inputs"][0]["name"] == "long_user_name_for_the_normaliser_tensor"


LEAVES = st.sampled_from(["x", "y"])
UNARY = ["tf.exp({})", "tf.math.log(tf.abs({}) + 1.0)", "tf.tanh({})", "tf.square({})", "-({})"]
REDUCE = [
    "tf.reduce_sum({}, axis=-1, keepdims=True)",
    "tf.compat.v1.reduce_mean({}, reduction_indices=[-1], keep_dims=True)",
    "tf.reduce_max(input_tensor={}, axis=-1)",
    "K.sum({}, axis=-1)",
    "tf.nn.softmax({}, axis=-1)",
]
BINARY = [
    "({}) + ({})",
    "({}) - ({})",
    "({}) * ({})",
    "tf.maximum({}, {})",
    "tf.math.divide({}, {})",
]


def _extend(children):
    return st.one_of(
        st.tuples(st.sampled_from(UNARY), children).map(lambda t: t[0].format(t[1])),
        st.tuples(st.sampled_from(REDUCE), children).map(lambda t: t[0].format(t[1])),
        st.tuples(st.sampled_from(BINARY), children, children).map(
            lambda t: t[0].format(t[1], t[2])
        ),
    )


def _expressions():
    return st.recursive(LEAVES, _extend, max_leaves=5)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_expressions(), seed=st.integers(0, 1000))
def test_generated_expressions_trace_to_what_tensorflow_computes(expr, seed):
    compare(expr, seed)


def test_a_name_read_many_times_is_sliced_once():
    """Each level reads ``h`` three times: expanded every time, 4 levels would blow the node
    budget (3**4 copies); sliced once per binding, the probe is small and exact."""
    body = "h = x\n" + "".join("    h = tf.tanh(h) * tf.tanh(h) + tf.tanh(h)\n" for _ in range(4))
    src = HEADER + f"def f(x):\n    {body}    return tf.identity(h)\n"
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.identity("))  # type: ignore[attr-defined]
    sl = slicer.Slicer(ctx, positions)  # type: ignore[arg-type]
    tree = sl.tree(site.node, site.scope, site.order)
    assert not sl.truncated and sl.count < tools.MAX_NODES
    assert [i["name"] for i in sl.inputs.values()] == ["x"]
    program = build({"kind": "expr", "rule": "probe", "dtype": "float32", "path": PATH,
                             "line": 5, "target": tree, "loss": None,
                             "inputs": list(sl.inputs.values())})  # fmt: skip
    got = np.asarray(program.fn(*to_batch(program, np.array([[0.3]])))["t"])
    want = tf.constant([[0.3]])
    for _ in range(4):
        want = tf.tanh(want) * tf.tanh(want) + tf.tanh(want)
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-6)


def test_an_enclosing_statement_that_does_not_trace_leaves_the_target_probed():
    from tfnumlint.engine import lint_source
    from tfnumlint.source import Source

    src = textwrap.dedent(
        """
        import tensorflow as tf


        def f(z, multiples):
            p = tf.sigmoid(z)
            return tf.tile(tf.math.log(p), multiples)
        """
    )
    options = LintOptions(codes=frozenset({"TNL101"}), slice_probes=True)
    (finding,) = lint_source(Source("/virtual/f.py", src, src.encode()), options).findings
    probe = finding.probe
    assert probe["loss"] is None and not probe.get("unsupported"), probe
    assert probing.verify_expr(probe, 1e6)["status"] == "confirmed"


def test_pythons_float_spelling_of_inf_and_nan_is_a_constant_not_an_input():
    probe = slice_of('tf.where(x > 0, x, tf.ones_like(y) * float("-inf")) + float("nan") * y')
    consts = [n["v"] for n in trace.walk(probe["target"]) if n.get("k") == "const"]
    assert "-inf" in consts and "nan" in consts
    assert sorted(i["name"] for i in probe["inputs"]) == ["x", "y"]
