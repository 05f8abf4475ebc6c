"""Tree -> AST -> tf.function: user lines in op.traceback, and nothing but the op table runs."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import PATH, binop, call, const, expr, free, inp  # noqa: E402

from tfnumlint.verify import probing, trace  # noqa: E402
from tfnumlint.verify.program import build, run  # noqa: E402


def test_ops_map_back_to_the_users_source_lines():
    target = binop("/", call("log", inp("x"), line=7), call("sqrt", inp("y"), line=9), line=8)
    program = build(expr("TNL201", target, [free("x"), free("y")]))
    lines = {
        op.type: trace.user_line(op, PATH)
        for op in program.graph.get_operations()
        if op.name.startswith("target/")
    }
    assert lines["Log"] == 7
    assert lines["Sqrt"] == 9
    assert lines["RealDiv"] == 8
    unsafe = {op.type for op in trace.unsafe_ops(program.graph, PATH, "target/")}
    assert unsafe == {"Log", "Sqrt", "RealDiv"}


def test_placeholders_have_no_user_frame_and_gradient_ops_are_not_user_ops():
    program = build(expr("TNL101", call("log", inp("x")), [free("x")]))
    for op in program.graph.get_operations():
        if op.type == "Placeholder" or "gradients" in op.name:
            assert trace.user_line(op, PATH) is None, op.name


@pytest.mark.parametrize("op", ["__import__", "eval", "exec", "open", "getattr", "print"])
def test_ops_outside_the_table_are_refused_and_nothing_runs(op, tmp_path):
    canary = tmp_path / "canary"
    code = f"open({str(canary)!r}, 'w').write('ran')"
    tree = call(op, {"k": "str", "v": code})
    result = probing.verify(expr("TNL101", tree, [], hostile=True), 1e6)
    assert result["status"] == "inconclusive"
    assert "allow-list" in result["detail"]
    assert not canary.exists()


def test_evaluation_has_no_builtins():
    code, _ = trace.compile_tree(call("log", inp("x")), {"x": "in_0"}, PATH, 3)
    assert "__import__" not in code.co_names
    assert set(code.co_names) <= {"op_log", "in_0"}
    with pytest.raises(NameError):
        eval(compile("__import__('os')", PATH, "eval"), {"__builtins__": {}}, trace.namespace({}))


def test_unknown_node_kinds_and_keywords_are_refused():
    with pytest.raises(trace.UnsupportedProbe):
        trace.compile_tree({"k": "attr", "v": "os.system"}, {}, PATH, 1)
    with pytest.raises(trace.UnsupportedProbe):
        trace.compile_tree(call("log", inp("x"), name=const(1)), {"x": "in_0"}, PATH, 1)
    with pytest.raises(trace.UnsupportedProbe):
        trace.compile_tree(inp("undeclared"), {}, PATH, 1)


def test_traces_in_the_probe_dtype():
    program = build(expr("TNL301", call("exp", inp("x")), [free("x")], dtype="float16"))
    exp = next(op for op in program.graph.get_operations() if op.type == "Exp")
    assert exp.outputs[0].dtype == tf.float16


def test_full_reductions_never_mix_probe_points():
    target = call("reduce_sum", call("square", inp("x")))
    program = build(expr("TNL202", target, [free("x")]))
    import numpy as np

    res = run(program, np.array([[1.0], [2.0], [3.0]]))
    assert res["t"].ravel().tolist() == [1.0, 4.0, 9.0]
