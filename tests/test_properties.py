"""Property-based tests of the static pass and the slicer (hypothesis + hypothesmith).

Short by default; ``pytest --slow`` runs many more examples.
"""

from __future__ import annotations

import ast
import textwrap

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfnumlint.analysis.slicing.contract import ALLOWED_OPS
from tfnumlint.discovery import Candidate
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.ruledocs import all_docs
from tfnumlint.runner import Job, analyse
from tfnumlint.source import Source


@pytest.fixture(scope="session")
def examples(request) -> int:
    return 300 if request.config.getoption("--slow") else 25


ALL_CODES = frozenset(all_docs())
OPTIONS = LintOptions(codes=ALL_CODES, slice_probes=True)

LEAVES = st.sampled_from(
    [
        "x",
        "y",
        "p",
        "z",
        "logits",
        "self.w",
        "0.0",
        "1.0",
        "1e-10",
        "1e-7",
        "89.0",
        "-1.0",
        "model(x)",
        "helper(y)",
        "eval('1')",
        "__import__('os').getpid()",
        "getattr(tf, 'exp')(x)",
    ]
)

UNARY = [
    "tf.math.log({})",
    "tf.sqrt({})",
    "tf.exp({})",
    "tf.nn.softmax({})",
    "tf.sigmoid({})",
    "tf.nn.relu({})",
    "tf.square({})",
    "tf.abs({})",
    "tf.norm({})",
    "tf.math.acos({})",
    "tf.math.rsqrt({})",
    "tf.reduce_sum({}, axis=-1)",
    "tf.reduce_mean({})",
    "-{}",
    "tf.clip_by_value({}, 1e-7, 1.0)",
    "tf.maximum({}, 1e-6)",
    "tf.math.log1p({})",
    "tf.cast({}, tf.float16)",
    "K.log({})",
    "tf.log({})",
]
BINARY = [
    "{} + {}",
    "{} - {}",
    "{} * {}",
    "{} / {}",
    "{} ** 0.5",
    "tf.where({} > 0, {}, 0.0)",
    "tf.math.divide({}, {})",
    "tf.matmul({}, {})",
]


def _expr(depth: int):
    if depth == 0:
        return LEAVES
    sub = _expr(depth - 1)
    unary = st.tuples(st.sampled_from(UNARY), sub).map(lambda t: t[0].format(t[1]))
    binary = st.tuples(st.sampled_from(BINARY), sub, sub).map(
        lambda t: (
            t[0].format(f"({t[1]})", f"({t[2]})")
            if t[0].count("{}") == 2
            else t[0].format(f"({t[1]})")
        )
    )
    return st.one_of(sub, unary, binary)


TF_EXPRS = _expr(4)


def _module(a: str, b: str) -> str:
    return textwrap.dedent(
        f"""\
        import tensorflow as tf
        from tensorflow.keras import backend as K


        class Model:
            def __init__(self):
                self.w = tf.Variable(tf.zeros([3]))

            def loss(self, x, y, p, z, logits):
                a = {a}
                return {b}


        def f(x, y, p, z, logits, model, helper):
            a = {a}
            return {b}
        """
    )


def _walk_calls(tree):
    if isinstance(tree, dict):
        if tree.get("k") == "call":
            yield tree["op"]
        for value in tree.values():
            yield from _walk_calls(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _walk_calls(item)


def _lint(text: str):
    return lint_source(Source("gen.py", text, text.encode()), OPTIONS)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=25)
@given(hypothesmith.from_grammar())
def test_static_pass_never_raises_on_random_python(code):
    text = "import tensorflow as tf\n" + code
    result = lint_source(Source("gen.py", text, text.encode()), OPTIONS)
    for err in (
        result.errors
    ):  # hypothesmith can produce code libcst rejects: a plain error, never a crash
        assert not err.message.startswith("internal error"), err.message


def test_random_tf_expressions(examples):
    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples)
    @given(TF_EXPRS, TF_EXPRS)
    def check(a, b):
        text = _module(a, b)
        result = _lint(text)
        assert not result.errors, result.errors
        for finding in result.findings:
            probe = finding.probe
            if probe is None or probe.get("kind") != "expr":
                continue
            ops = set(_walk_calls(probe["target"])) | set(_walk_calls(probe.get("loss")))
            assert ops <= ALLOWED_OPS, ops - ALLOWED_OPS
            assert "eval" not in str(probe) or all(i["name"] != "eval" for i in probe["inputs"])
        again = _lint(text)
        assert [f.to_json() for f in again.findings] == [f.to_json() for f in result.findings]
        assert [f.probe for f in again.findings] == [f.probe for f in result.findings]

    check()


def test_slicer_turns_user_calls_into_inputs():
    text = _module("eval('x') + __import__('os').getpid() + helper(x)", "tf.math.acos(a * 0.5)")
    # the slice of the acos reaches a: the user calls must become inputs, never calls
    findings = _lint(text).findings
    probes = [f.probe for f in findings if f.probe and f.probe["kind"] == "expr"]
    assert probes, "expected the acos of a computed value to be sliced"
    for probe in probes:
        assert set(_walk_calls(probe["target"])) == {"acos"}
        names = {i["name"] for i in probe["inputs"]}
        assert len(names) == 3, names  # eval(...), __import__(...).getpid(), helper(x)


def test_findings_identical_across_jobs(tmp_path, examples):
    @settings(
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        max_examples=max(3, examples // 8),
    )
    @given(st.lists(st.tuples(TF_EXPRS, TF_EXPRS), min_size=4, max_size=8))
    def check(pairs):
        for old in tmp_path.glob("*.py"):
            old.unlink()
        candidates = []
        for i, (a, b) in enumerate(pairs):
            path = tmp_path / f"m{i}.py"
            path.write_text(_module(a, b))
            candidates.append(Candidate(path, path.name))
        job = Job(OPTIONS, "prop", None)
        one = analyse(candidates, job, 1)
        two = analyse(candidates, job, 2)
        assert [[f.to_json() for f in r.findings] for r in one] == [
            [f.to_json() for f in r.findings] for r in two
        ]

    check()


def test_generated_module_puts_both_expressions_in_a_method_and_a_function():
    tree = ast.parse(_module("x + 1", "tf.math.log(a)"))
    bodies = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name != "__init__"]
    assert sorted(n.name for n in bodies) == ["f", "loss"]
    for fn in bodies:
        assert [ast.unparse(s) for s in fn.body] == ["a = x + 1", "return tf.math.log(a)"]
