"""A value whose every use ends in whole numbers or booleans takes no gradient (issue 22).

The wild review found dead-gradient confirmations in a DETR-style matcher: the focal cost
``-log(p + 1e-8)`` only feeds a Hungarian assignment in another module, whose results are
indices and masks, so the loss never differentiates it.  ``analysis/discrete.py`` follows the
value forward (assignments, a nested function's return to its call site, the arguments of a
project function whose every return is discrete); the project index keeps that fact per
function.  Static side, no TensorFlow: the gate reads the probe's ``no_gradient``.
"""

from __future__ import annotations

import re
import textwrap

import libcst as cst
from test_caller_ranges import probes
from test_project import project
from test_reachability import one_probe

from tfnumlint.analysis.discrete import discrete_returns
from tfnumlint.analysis.module import build
from tfnumlint.analysis.project_model import from_jsonable, to_jsonable
from tfnumlint.analysis.project_summary import function_summary
from tfnumlint.analysis.provenance import Evaluator
from tfnumlint.verify import gradient_gate

CONFIRMED = {"status": "confirmed", "detail": "at x = 0", "inputs": {}, "symptom": "nan-gradient"}

SOLVER = """\
    import tensorflow as tf


    def assign(cost):
        rows = tf.range(tf.shape(cost)[0], dtype=tf.int32)
        cols = tf.argmin(cost, axis=1)
        valid = tf.logical_and(rows >= 0, cols >= 0)
        return rows, cols, valid
    """

# A Keras loss whose matcher builds a focal cost in a nested function and hands it to the
# solver: `{use}` is where the matcher's cost goes after `assign`.
MATCHER = """\
    import tensorflow as tf
    from solver import assign


    class MatchLoss(tf.keras.losses.Loss):
        def call(self, y_true, logits):
            def cost_matrix():
                p = tf.sigmoid(logits)
                pos = -tf.math.log(p + 1e-8)
                cost = pos * 2.0
                return tf.where(y_true > 0, cost, 1e9)

            def match():
                c = cost_matrix()
                rows, cols, valid = assign(c)
                {use}
                return rows, cols, valid

            rows, cols, valid = match()
            return tf.reduce_mean(tf.square(tf.gather(logits, cols, axis=1) - y_true))
    """


def matcher_probe(tmp_path, use: str = "pass", solver: str = SOLVER) -> dict:
    root = project(tmp_path, {"solver.py": solver, "losses.py": MATCHER.replace("{use}", use)})
    [probe] = probes(root, "losses.py", "TNL102")
    return probe


def test_a_cost_that_only_feeds_an_assignment_solver_in_another_module_takes_no_gradient(
    tmp_path,
):
    reason = matcher_probe(tmp_path).get("no_gradient")
    assert reason is not None
    assert "only feeds `assign`, whose results are whole numbers or booleans" in reason


def test_the_same_cost_also_added_to_the_loss_keeps_its_gradient(tmp_path):
    probe = matcher_probe(tmp_path, use="self.add_loss(tf.reduce_mean(c))")
    assert "no_gradient" not in probe


def test_a_solver_that_returns_a_float_is_no_sink(tmp_path):
    float_solver = SOLVER.replace("return rows, cols, valid", "return rows, cols, cost")
    assert "no_gradient" not in matcher_probe(tmp_path, solver=float_solver)


# a solver in the module itself: its one return is an index
ARGMAX_ASSIGN = """\
        import tensorflow as tf


        def assign(cost):
            return tf.argmax(cost, axis=1)


"""  # indented as the test bodies appended to it (each test dedents the whole module)


def test_a_solver_in_the_same_module_is_read_from_its_own_returns():
    code = (
        ARGMAX_ASSIGN
        + """\
        def match(logits):
            p = tf.sigmoid(logits)
            cost = -tf.math.log(p + 1e-8)
            return assign(cost)
        """
    )
    reason = one_probe(code, "TNL102").get("no_gradient") or ""
    assert "only feeds `assign`" in reason


def test_a_closure_or_a_callback_ends_the_claim():
    closure = (
        ARGMAX_ASSIGN
        + """\
        def match(logits):
            p = tf.sigmoid(logits)
            cost = -tf.math.log(p + 1e-8)

            def use():
                return cost * 2.0

            return assign(cost), use
        """
    )
    assert "only feeds" not in (one_probe(closure, "TNL102").get("no_gradient") or "")
    callback = (
        ARGMAX_ASSIGN
        + """\
        def match(logits, flag):
            def cost_matrix():
                p = tf.sigmoid(logits)
                return -tf.math.log(p + 1e-8)

            return assign(cost_matrix()), tf.cond(flag, cost_matrix, cost_matrix)
        """
    )
    assert "only feeds" not in (one_probe(callback, "TNL102").get("no_gradient") or "")


# ---------------------------------------------------------------- the per-function fact


def _summary(code: str, name: str):
    text = textwrap.dedent(code)
    info = build(cst.parse_module(text))
    ev = Evaluator(info)
    scope = info.functions[name]
    return scope, ev, function_summary(ev, scope, "m")


def test_whole_number_and_boolean_returns_are_discrete():
    code = """\
        import tensorflow as tf


        def indices(x):
            order = tf.argsort(x)
            first = tf.argmax(x)
            return tf.cast(x, tf.int64), first, x > 0, tf.zeros([3], dtype="bool"), not x


        def floats(x):
            return tf.argmax(x), x * 2.0
        """
    scope, ev, summary = _summary(code, "indices")
    assert discrete_returns(scope, ev.lookup) and summary.discrete
    scope, ev, summary = _summary(code, "floats")
    assert not discrete_returns(scope, ev.lookup) and not summary.discrete


def test_the_fact_survives_the_cache_form():
    _, _, summary = _summary(SOLVER, "assign")
    assert summary.discrete
    assert from_jsonable(to_jsonable(summary)) == summary


def test_a_hazard_inside_a_lambda_makes_no_claim():
    code = (
        ARGMAX_ASSIGN
        + """\
        def match(logits, flag):
            return assign(tf.cond(flag, lambda: -tf.math.log(tf.sigmoid(logits) + 1e-8), lambda: logits))
        """
    )
    assert "only feeds" not in (one_probe(code, "TNL102").get("no_gradient") or "")


# ------------------------------------------------ a module function's value, at its callers

# Review round 16 (tf-models-official's box_list_ops): `iou`'s only caller compares its value
# with a threshold, so no gradient reaches `iou`'s tf.where; `{use}` is where the vote's
# matches go (`more`: code appended to the module).
IOU = """\
    import tensorflow as tf


    def iou(a, b):
        inter = tf.reduce_sum(a * b, axis=-1)
        unions = tf.reduce_sum(a, axis=-1) + tf.reduce_sum(b, axis=-1) - inter
        return tf.where(tf.equal(inter, 0.0), tf.zeros_like(inter), tf.truediv(inter, unions))


    def box_voting(selected, pool, thresh=0.5):
        iou_ = iou(selected, pool)
        {use}
        return tf.matmul(matches, pool)


    def refine(pool, thresh):
        return box_voting(pool, pool, thresh)
    """
COMPARED = "matches = tf.cast(tf.greater(iou_, thresh), dtype=tf.float32)"


def iou_module(use: str = COMPARED, more: str = "") -> str:
    return textwrap.dedent(IOU.replace("{use}", use)) + textwrap.dedent(more)


def iou_flow(use: str = COMPARED, more: str = "") -> dict:
    return one_probe(iou_module(use, more), "TNL302")


def test_a_module_function_whose_callers_only_compare_its_value_takes_no_gradient():
    probe = iou_flow()
    reason = probe.get("no_gradient") or ""
    assert "no_gradient_likely" not in probe
    assert reason.startswith(
        "`iou`'s value only reaches whole numbers or booleans in its callers "
        "(`box_voting` at line 11: the value only feeds `tf.greater`"
    ), reason
    out = gradient_gate.apply(probe, {**CONFIRMED})
    assert out["status"] == "refuted" and "`box_voting` at line 11" in out["detail"]


def test_a_caller_that_returns_the_value_to_a_comparing_caller_is_followed():
    use = "matches = tf.cast(tf.greater(passed(selected, pool), thresh), tf.float32)"
    more = """
    def passed(a, b):
        return iou(a, b)
    """
    reason = iou_flow(use=use, more=more).get("no_gradient") or ""
    assert "`passed` at line" in reason and "`box_voting` at line" in reason, reason


def test_a_caller_reached_through_several_calls_is_named_once():
    """``passed`` calls ``iou`` twice and returns what it computes from both: its one caller
    is named once, not once per call of ``iou``."""
    use = "matches = tf.cast(tf.greater(passed(selected, pool), thresh), tf.float32)"
    more = """
    def passed(a, b):
        first = iou(a, b)
        second = iou(b, a)
        return tf.maximum(first, second)
    """
    reason = iou_flow(use=use, more=more).get("no_gradient") or ""
    places = re.findall(r"`\w+` at line \d+", reason)
    assert "`passed` at line" in reason and len(places) == len(set(places)), reason


def discrete_claim(probe: dict) -> bool:
    return "whole numbers or booleans in its callers" in (probe.get("no_gradient") or "")


def test_a_caller_that_keeps_the_value_as_a_float_keeps_the_gradient():
    assert discrete_claim(iou_flow())  # the control: the same module with a comparison
    reason = iou_flow(use="matches = iou_ * thresh").get("no_gradient") or ""
    assert "whole numbers or booleans" not in reason
    assert "only called from functions that nothing in the project differentiates" in reason


def test_a_module_function_read_otherwise_than_called_makes_no_claim():
    for more in (
        "\ntable = {'iou': iou}\n",  # stored: called anywhere
        "\ndef scores(a, b):\n    return tf.map_fn(lambda x: iou(x, b), a)\n",  # in a lambda
        "\ndef soft(a, b):\n    return 1.0 - iou(a, b)\n",  # another caller, a float
        "\ndef local(a, b, iou):\n    return iou(a, b)\n",  # a parameter of that name
    ):
        assert not discrete_claim(iou_flow(more=more)), more
    assert discrete_claim(iou_flow())  # the control: `iou` only called, by `box_voting`


def test_a_decorated_module_function_makes_no_claim():
    code = (
        IOU.replace("{use}", COMPARED)
        .replace("{more}", "")
        .replace("    def iou(", "    @tf.function\n    def iou(")
    )
    assert not discrete_claim(one_probe(code, "TNL302"))
    assert discrete_claim(iou_flow())  # the control: undecorated


def test_a_module_function_another_module_reads_makes_no_claim(tmp_path):
    code = iou_module()
    reader = """\
        from boxes import iou


        def soft_loss(a, b):
            return 1.0 - iou(a, b)
        """
    alone = project(tmp_path / "alone", {"boxes.py": code})
    [probe] = probes(alone, "boxes.py", "TNL302")
    assert discrete_claim(probe)  # the control: no other module reads `iou`
    root = project(tmp_path / "read", {"boxes.py": code, "losses.py": reader})
    [probe] = probes(root, "boxes.py", "TNL302")
    assert not discrete_claim(probe)
