"""A witness is a state of the sources, never a free value for an intermediate (round 16/17
reviews, mechanism 1): two cut values the code computes from one source (through locals, method
calls on one object, the items of one call) are not set independently, neither as a
confirmation nor as a stated condition.  Values of unrelated sources still are."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from probe_helpers import binop, expr, free, inp
from test_related_inputs import HEADER, sliced

from tfnumlint.verify import probing
from tfnumlint.verify.related import related_inputs_reason


def verdict_of(rule: str, body: str) -> tuple[dict, dict]:
    """(the verdict, the probe's inputs by name) of the ``tf.identity(...)`` in ``body``."""
    sl, target = sliced(HEADER + body)
    probe = {**expr(rule, target, list(sl.inputs.values())), "unsupported": sl.unsupported}
    return probing.verify(probe, 1e6), sl.inputs


def changed_by(verdict: dict) -> list[str]:
    return [step["gate"] for step in verdict.get("trail", []) if "why" in step]


def test_an_overlap_and_an_area_of_one_box_are_not_set_apart_as_a_condition():
    """inter(b1, b2) = 2 beside measure(b1) = 1: no pair of boxes gives it, so it is no
    condition to state (it was `breaks only if i = 2 ...`)."""
    verdict, _ = verdict_of(
        "TNL201",
        "def f(b1, b2, inter, measure, size):\n"
        "    i = inter(b1, b2)\n"
        "    a1 = measure(b1)\n"
        "    a2 = size(b2)\n"
        "    return tf.identity(i / (a1 + a2 - i))\n",
    )
    assert verdict["status"] == "inconclusive"
    detail = verdict["detail"].split(" (seen: ")[0]
    assert "independently, though both are computed from `b" in detail, detail
    assert "breaks only if" not in detail
    assert changed_by(verdict) == ["related inputs"]


def test_method_calls_on_one_object_read_that_object():
    verdict, inputs = verdict_of(
        "TNL201",
        "def f(b1, b2, inter, measure, size):\n"
        "    i = inter(b1.get(), b2.get())\n"
        "    a1 = measure(b1.get())\n"
        "    a2 = size(b2.get())\n"
        "    return tf.identity(i / (a1 + a2 - i))\n",
    )
    assert inputs["i"]["reads"] == ["b1", "b2"]
    assert inputs["a1"]["reads"] == ["b1"]
    assert verdict["status"] == "inconclusive"
    assert "independently, though both are computed from `b1`" in verdict["detail"]


def test_a_computed_value_is_not_set_apart_from_the_parameter_it_reads():
    verdict, _ = verdict_of(
        "TNL301",
        "def f(p, df, quantile):\n    x = quantile(p, df)\n    return tf.identity(tf.exp(x * df))\n",
    )
    assert verdict["status"] == "inconclusive"
    detail = verdict["detail"].split(" (seen: ")[0]
    assert "though the first is computed from the second" in detail, detail
    assert "breaks only if" not in detail


LOOP = (
    "def f(a, b, fa, fb, pick, objective):\n"
    "    def body(a, b, fa, fb):\n"
    "        fnew = objective(0.5 * (a + b))\n"
    "        a, b, fa, fb = pick(\n"
    "            tf.equal(tf.sign(fnew), tf.sign(fa)), (a, b, fnew, fb), (a, b, fa, fnew)\n"
    "        )\n"
    "        t = tf.identity(fa / (fb - fa))\n"
    "        return a, b, fa, fb, t\n"
    "    return tf.while_loop(lambda *v: True, body, (a, b, fa, fb))\n"
)


def test_loop_values_one_select_returns_are_not_set_apart():
    """`fa`, `fb` are items of one select of the loop body, which keeps them of opposite
    signs: `fa` = `fb` is no state of the loop."""
    verdict, inputs = verdict_of("TNL201", LOOP)
    # the items read what the select reads, not the names the assignment rebinds
    assert "fa" not in inputs["fb"]["reads"] and "fb" not in inputs["fa"]["reads"]
    assert "fnew" in inputs["fa"]["reads"]
    assert verdict["status"] == "inconclusive"
    detail = verdict["detail"].split(" (seen: ")[0]
    assert detail.startswith("sets `fa` = "), detail
    assert "independently, though both are returned by one call `pick(" in detail


def test_items_a_call_maps_one_by_one_stay_apart():
    """`cast([dims[1], size[1]], tf.float32)` maps item to item: the two items read unrelated
    values, so the witness keeps its stated condition."""
    verdict, inputs = verdict_of(
        "TNL201",
        "def f(dims, size, cast):\n"
        "    ow, w = cast([dims[1], size[1]], tf.float32)\n"
        "    return tf.identity(w / ow)\n",
    )
    assert inputs["ow"]["reads"] == ["dims", "tf.float32"]
    assert inputs["w"]["reads"] == ["size", "tf.float32"]
    assert verdict["status"] == "inconclusive"
    assert verdict["detail"].startswith("breaks only if `ow` = "), verdict["detail"]
    assert "independently" not in verdict["detail"]


def test_an_incidental_related_pair_does_not_hide_the_condition_the_witness_needs():
    """`g(v)` and `v` are related but the symptom does not need their values: the condition
    stays `h(w)` = 0 (it read `sets gv = 0.5 and v = 1 independently ...`)."""
    verdict, _ = verdict_of(
        "TNL201",
        "def f(x, w, v, g, h):\n    gv = g(v)\n    return tf.identity(x * gv * v / h(w))\n",
    )
    assert verdict["status"] == "inconclusive"
    assert verdict["detail"].startswith("breaks only if `h(w)` = 0"), verdict["detail"]
    assert "independently" not in verdict["detail"]


def test_two_parameters_of_a_function_stay_independent():
    verdict, _ = verdict_of("TNL201", "def f(x, a, b):\n    return tf.identity(x / (a - b))\n")
    assert verdict["status"] == "confirmed"
    assert verdict["inputs"]["a"] == verdict["inputs"]["b"]


@pytest.mark.parametrize(
    "body",
    [
        "def f(x, a, b, g, h):\n    return tf.identity(x / (g(a) - h(b)))\n",
        "def f(x, a, g):\n    return tf.identity(x / (g(a) - 1.0))\n",
    ],
)
def test_values_of_unrelated_sources_keep_their_condition(body):
    verdict, _ = verdict_of("TNL201", body)
    assert verdict["status"] == "inconclusive"
    assert verdict["detail"].startswith("breaks only if `g(a)` = "), verdict["detail"]
    assert "independently" not in verdict["detail"]


def test_the_methods_own_receiver_is_no_common_source():
    """Two methods of one object read their own parameters (a location, a scale): the
    receiver of the enclosing method ties nothing."""
    _, inputs = verdict_of(
        "TNL201",
        "class D:\n"
        "    def f(this, x):\n"
        "        return tf.identity(x / (this.loc_of(x) - this.scale_of()))\n",
    )
    assert "this" not in inputs["this.scale_of()"].get("reads", [])


def test_items_of_two_calls_or_an_item_and_a_parameter_are_not_tied():
    def item(name: str, source: str, element: int) -> dict:
        return {**free(name), "origin": "call", "source": source, "element": element}

    def diff(x: str, y: str) -> dict:
        return binop("-", inp(x), inp(y))

    one, two = item("u", "g(a)", 0), item("v", "h(a)", 1)
    witness = {"u": 1.0, "v": 1.0, "w": 1.0}
    assert related_inputs_reason({"inputs": [one, two], "target": diff("u", "v")}, witness) is None
    alone = {"inputs": [one, free("w")], "target": diff("u", "w")}
    assert related_inputs_reason(alone, witness) is None
    same = {"inputs": [one, item("v", "g(a)", 1)], "target": diff("u", "v")}
    assert "returned by one call `g(a)`" in (related_inputs_reason(same, witness) or "")


def test_a_shape_read_is_not_a_read_of_the_values():
    """``sequence_mask(lengths, tf.shape(scores)[-1])`` is computed from ``lengths``: it reads
    only the shape of ``scores``, so a witness may set ``scores`` and the mask apart."""
    import libcst as cst

    from tfnumlint.analysis.slicing.tools import names_read
    from tfnumlint.analysis.slicing.uses import SHAPE_CALLS

    node = cst.parse_expression("tf.sequence_mask(lengths, tf.shape(scores)[-1])")
    assert names_read(node, SHAPE_CALLS) == ["lengths"]
    assert names_read(node) == ["lengths", "scores"]
