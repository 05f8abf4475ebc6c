"""The op registry: each entry's pieces fit together, and adding an op is one entry.

An op the verifier can trace needs a signature, a builder, graph types with an interval
transfer, and (when it can produce NaN/Inf) a danger zone the interval analysis can test;
the static side needs its transfer to name a handler family that exists.  The last tests
register an op of their own (``acosh``, which tfnumlint does not know) and watch it be
recognised by the static analysis, sliced, traced, confirmed and refuted.
"""

from __future__ import annotations

import math
import textwrap

import libcst as cst
import pytest

tf = pytest.importorskip("tensorflow")

from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from tfnumlint import ops  # noqa: E402
from tfnumlint.analysis import transfer  # noqa: E402
from tfnumlint.analysis.slicing import slicer  # noqa: E402
from tfnumlint.engine import LintOptions, run_checks  # noqa: E402
from tfnumlint.rules.recipes import Recipe  # noqa: E402
from tfnumlint.verify import intervals, probing, trace_ops  # noqa: E402

DANGER_TESTS = {"reaches", "straddles", "overflows", "leaves_unit", "pow_base", "never", "branches"}
TRACED = [op for op in ops.REGISTRY.values() if op.trace]


def test_an_op_is_traced_exactly_when_it_has_a_probe_signature():
    for op in ops.REGISTRY.values():
        assert (op.trace is None) == (op.params is None), op.name


@pytest.mark.parametrize("op", TRACED, ids=lambda op: op.name)
def test_every_trace_builder_resolves_to_a_callable(op):
    assert callable(trace_ops.builder(op.trace))


def test_every_op_with_a_danger_zone_is_traced_and_its_graph_types_have_an_interval():
    dangerous = [op for op in ops.REGISTRY.values() if op.danger is not None]
    assert {"log", "sqrt", "divide", "exp", "pow"} <= {op.name for op in dangerous}
    for op in dangerous:
        assert op.danger is not None and op.danger.test in DANGER_TESTS, op.name
        assert op.trace and op.graph, op.name
        assert op.interval is not None and intervals.has_transfer(op.interval), op.name


def test_every_named_interval_transfer_exists():
    for op in ops.REGISTRY.values():
        if op.interval is not None:
            assert intervals.has_transfer(op.interval), (op.name, op.interval)
            assert op.graph, op.name


def test_every_static_transfer_names_a_handler_family():
    for op in ops.REGISTRY.values():
        if op.transfer is not None:
            assert op.transfer.rule in transfer.known_rules(), op.name
            assert transfer.handler_for(op.name) is not None


def test_no_spelling_names_two_ops():
    seen: dict[str, str] = {}
    for op in ops.REGISTRY.values():
        for spelling in op.spellings + op.probe_spellings:
            assert seen.setdefault(spelling, op.name) == op.name, spelling
    assert not set(ops.PROBE_SPELLINGS) & set(ops.SPELLINGS)


@pytest.mark.parametrize(
    "op", [op for op in ops.REGISTRY.values() if op.render], ids=lambda op: op.name
)
def test_every_fix_rendering_names_a_tensorflow_function(op):
    obj = tf
    for part in op.render[0].split("."):
        obj = getattr(obj, part)
    assert callable(obj)


# -- adding an op is one entry ---------------------------------------------------------------

ACOSH = ops.Op(
    "acosh",
    spellings=("tf.math.acosh", "tf.acosh", "keras.ops.arccosh"),
    transfer=ops.Transfer("unary", 0.0, math.inf, zero="its input is 1"),
    params=("x",),
    trace="math.acosh",
    float_only=True,
    graph=("Acosh",),
    interval="monotone:acosh",
    danger=ops.Danger(0, "reaches", 1.0, "1"),
)


@pytest.fixture
def acosh():
    assert "acosh" not in ops.REGISTRY  # else this test shows nothing
    ops.register(ACOSH)
    yield ACOSH
    ops.unregister("acosh")


def analysed(body: str):
    src = "import tensorflow as tf\n\n\ndef f(x):\n" + textwrap.indent(body, "    ")
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return ctx, positions


def probe_of(expr: str) -> dict:
    ctx, positions = analysed(f"return tf.identity({expr})\n")
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.identity("))
    sl = slicer.Slicer(ctx, positions)
    target = sl.tree(site.node, site.scope, site.order)
    return {
        "kind": "expr",
        "rule": "probe",
        "dtype": "float32",
        "path": "/virtual/registry.py",
        "line": 5,
        "target": target,
        "loss": None,
        "inputs": list(sl.inputs.values()),
        "unsupported": sl.unsupported,
    }


def static_value(expr: str):
    ctx, _ = analysed(f"y = {expr}\n")
    site = next(s for s in ctx.info.calls if ctx.code(s.node) == expr)
    return ctx.op(site.node), ctx.ev.value(site.node, site.scope, site.order)


def test_an_unknown_op_is_neither_recognised_nor_traced():
    op, val = static_value("tf.math.acosh(x)")
    assert op is None and not val.known
    probe = probe_of("tf.math.acosh(x)")
    assert '"op": "acosh"' not in repr(probe["target"]).replace("'", '"')


def test_a_registered_op_is_recognised_with_its_range(acosh):
    op, val = static_value("tf.math.acosh(x)")
    assert op == "acosh"
    assert (val.kind, val.lo, val.hi, val.zero) == ("acosh", 0.0, math.inf, "its input is 1")
    assert static_value("tf.acosh(x)")[0] == "acosh"


def test_a_registered_op_is_sliced_traced_and_confirmed(acosh):
    probe = probe_of("tf.math.acosh(x)")
    assert probe["target"]["args"][0]["op"] == "acosh"  # tf.identity(acosh(x))
    verdict = probing.verify_expr(probe, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert verdict["inputs"]["x"] < 1  # acosh is NaN below 1


def test_a_registered_op_s_danger_zone_refutes_through_its_interval(acosh):
    """sigmoid(x) + 2 >= 2: acosh's input never reaches 1, which the interval analysis shows."""
    probe = probe_of("tf.math.acosh(tf.sigmoid(x) + 2.0)")
    probe["recipe"] = Recipe(range_refutes=True).as_probe()
    verdict = probing.verify_expr(probe, 1e6)
    assert verdict["status"] == "refuted", verdict
    assert "acosh input is within [2" in verdict["detail"]
