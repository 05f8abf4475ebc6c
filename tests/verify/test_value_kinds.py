"""Issue 24 item 3: probe values respect a value's kind.  A binary label stays 0 or 1, the
indices of a one_hot and a count stay whole and non-negative: in the generic trials, in the
minimised witness, and in the example the verdict prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability import probed  # noqa: E402

from tfnumlint.verify import generic, probing  # noqa: E402

BCE = """\
    import tensorflow as tf


    def bce(y_true, logits):
        p = tf.sigmoid(logits)
        return -tf.reduce_mean(y_true * tf.math.log(p) + (1 - y_true) * tf.math.log(1 - p))
    """

CE = """\
    import tensorflow as tf


    def ce(labels, logits, n):
        y = tf.one_hot(labels, n)
        q = tf.nn.softmax(logits)
        return -tf.reduce_sum(y * tf.math.log(q), axis=-1)
    """


def _probes(src: str, rule: str) -> list[dict]:
    """The rule's probes in a module that is no training code: the inputs are free."""
    return [f.probe for f in probed(src, "bce.py", [rule]) if f.rule == rule and f.probe]


def test_the_label_of_a_binary_cross_entropy_is_binary_by_the_structure_of_the_loss():
    from tfnumlint.verify import kinds  # the module this issue added

    for probe in _probes(BCE, "TNL103") + _probes(BCE, "TNL101"):
        assert kinds.input_kinds(probe) == {"y_true": kinds.BINARY}


def test_a_factor_of_a_log_without_its_complement_is_no_label():
    """``w * log(p)`` alone: ``w`` may be any weight; nothing says it is 0 or 1."""
    from tfnumlint.verify import kinds  # the module this issue added

    p = call("sigmoid", inp("z"))
    probe = expr("TNL103", binop("*", inp("w"), call("log", p)), [free("w"), free("z")])
    assert kinds.input_kinds(probe) == {}


def test_the_indices_of_a_one_hot_are_whole():
    from tfnumlint.verify import kinds  # the module this issue added

    [probe] = _probes(CE, "TNL103")
    assert kinds.input_kinds(probe)["labels"] == kinds.INDEX


def test_generic_trials_keep_a_binary_label_in_its_set_and_an_index_whole():
    for src, rule, name in (
        (BCE, "TNL103", "y_true"),
        (BCE, "TNL101", "y_true"),
        (CE, "TNL103", "labels"),
    ):
        for probe in _probes(src, rule):
            for spec in probe["inputs"]:  # a generic trial replaces free inputs: free them all
                spec["drive"] = "free"
            witness = {s["name"]: 1.0 for s in probe["inputs"]}
            points = generic.generic_points(probe, witness)
            assert points
            values = {p[name] for p in points}
            assert all(v >= 0 and v == int(v) for v in values), values
            if name == "y_true":
                assert values <= {0.0, 1.0}, values


def test_a_count_a_counting_op_produced_stays_whole_in_generic_trials():
    probe = expr(
        "TNL201",
        binop("/", inp("x"), inp("n")),
        [free("x"), free("n", producer="count_nonzero")],
    )
    for spec in probe["inputs"]:
        spec["drive"] = "free"
    points = generic.generic_points(probe, {"x": 1.0, "n": 0.0})
    assert points and all(p["n"] >= 0 and p["n"] == int(p["n"]) for p in points)


def test_the_verdicts_generic_example_gives_the_label_a_label_value():
    for probe in _probes(BCE, "TNL103") + _probes(BCE, "TNL101"):
        for spec in probe["inputs"]:  # free inputs get generic trials (drive labels aside)
            spec["drive"] = "free"
        out = probing.verify(probe, 1e6)
        example = out["observed"]["generic"]["example"]
        assert example["y_true"] in (0.0, 1.0), out["detail"]
        assert "`y_true` = 2.1" not in out["detail"]


def test_the_minimised_witness_does_not_move_a_label_outside_its_set():
    """The seed loss's second term needs label 0; a replacement of 2 (which flips the sign of
    its weight) is not a label."""
    s = call("sigmoid", inp("z"))
    first = call("log", binop("+", s, const(1e-10)))
    second = call("log", binop("+", binop("-", const(1), s), const(1e-10)))
    weighted = binop("*", binop("*", const(0.55), binop("-", const(1), inp("p"))), second)
    loss = {"k": "neg", "x": call("reduce_sum", binop("+", binop("*", inp("p"), first), weighted))}
    out = probing.verify(expr("TNL102", second, [free("z"), free("p")], loss=loss, eps=1e-10), 1e6)
    assert out["status"] == "confirmed"
    assert out["inputs"]["p"] in (0.0, 1.0)
