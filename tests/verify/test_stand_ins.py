"""A structural argument that is not a literal (`axis=self.axis`, `depth=self.n`, a reshape's
`shape`) is bound to a stand-in the probe notes, instead of ending in "cannot verify".

Every probe input is filled with one value per point, so a reduction over any valid axis gives
the same per-entry values: -1 stands in for an axis.  A class count changes what a one-hot row
holds, so a confirmation or refutation must hold at every depth tried; a flag (`keepdims`)
must give the same verdict both ways.  A reshape is flattened only when no op above it depends
on its rank, and a stand-in TensorFlow rejects falls back to "cannot
verify".
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402
from test_reachability import one_probe  # noqa: E402
from test_reachability_gate import one_verdict  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.trace import UnsupportedProbe  # noqa: E402
from tfnumlint.verify.trace_ops import _shift_axis  # noqa: E402

NORM = """\
    import tensorflow as tf


    class Norm(tf.keras.layers.Layer):
        def __init__(self, axis):
            super().__init__()
            self.axis = axis

        def call(self, x):
            sq = tf.reduce_sum(tf.square(x), axis={axis})
            return tf.sqrt(sq)
    """


def test_a_symbolic_axis_is_probed_with_minus_one_and_the_verdict_says_so():
    probe = one_probe(NORM.format(axis="self.axis"), "TNL202")
    assert not probe.get("unsupported"), probe
    [mark] = probe["assumed"]
    assert (mark["param"], mark["value"]) == ("axis", -1)
    out = one_verdict(NORM.format(axis="self.axis"), "TNL202")
    assert out["status"] == "confirmed", out
    assert out["symptom"] == "nan-gradient", out
    assert "with `axis` = -1 (`axis=self.axis` of tf.reduce_sum is not a literal" in out["detail"]


def test_the_symbolic_axis_verdict_is_what_tensorflow_shows():
    # sqrt(sum(x**2)) at x = 0: the value is 0 and the gradient 0 * inf = NaN, on any axis
    x = tf.zeros([2, 3])
    for axis in (0, 1, -1):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sqrt(tf.reduce_sum(tf.square(x), axis=axis))
        assert np.isnan(tape.gradient(y, x).numpy()).all()
    literal = one_verdict(NORM.format(axis="1"), "TNL202")
    symbolic = one_verdict(NORM.format(axis="self.axis"), "TNL202")
    assert (symbolic["status"], symbolic["symptom"]) == (literal["status"], literal["symptom"])


XENT = """\
    import tensorflow as tf


    class Xent(tf.keras.layers.Layer):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def call(self, labels, logits):
            p = tf.nn.softmax(logits)
            onehot = tf.one_hot(labels, depth={depth})
            return -tf.reduce_sum(onehot * tf.math.log(p), axis=-1)
    """


def test_a_symbolic_depth_takes_the_width_of_the_softmax_row_it_meets():
    probe = one_probe(XENT.format(depth="self.n"), "TNL103")
    assert not probe.get("unsupported"), probe
    assert [m["param"] for m in probe["assumed"]] == ["depth"]
    out = one_verdict(XENT.format(depth="self.n"), "TNL103")
    literal = one_verdict(XENT.format(depth="2"), "TNL103")
    # the probe's softmax rows take the one_hot's depth, the stand-in 4 (they were [v, 0],
    # which only a stand-in of 2 could meet)
    assert "with `depth` = 4 (`depth=self.n` of tf.one_hot is not a literal" in out["detail"]
    assert out["status"] == literal["status"], (out, literal)
    assert "cannot verify" not in out["detail"]


DEPTH = {"param": "depth", "what": "`depth=self.n` of tf.one_hot", "value": 4, "others": [2, 16]}


def depth_probe(inverse_count: float) -> dict:
    """1 / (mean(one_hot(c, depth)) - 1/count): a mean divides by the class count, so the
    value is infinite at depth == count only."""
    hot = call("one_hot", inp("c"), {"k": "const", "v": 4, "assumed": DEPTH})
    mean = call("reduce_mean", hot)
    target = binop("/", const(1.0), binop("-", mean, const(inverse_count)))
    return {**expr("TNL201", target, [free("c")]), "assumed": [DEPTH]}


def test_a_confirmation_that_needs_the_stand_in_depth_is_not_kept():
    out = probing.verify(depth_probe(0.25), 1e6)
    assert out["status"] == "inconclusive", out
    assert "the verdict depends on `depth`" in out["detail"], out
    assert "not with 2" in out["detail"], out


def test_a_refutation_that_another_depth_breaks_is_not_kept():
    out = probing.verify(depth_probe(0.5), 1e6)  # infinite at depth 2, finite at 4
    assert out["status"] == "inconclusive", out
    assert "no symptom with `depth` = 4, not with 2" in out["detail"], out


def test_a_confirmation_that_holds_at_every_depth_is_kept():
    # 1 / (sum(one_hot(c, depth)) - 1): a label in range gives 1 at every depth
    mark = {"param": "depth", "what": "`depth=self.n` of tf.one_hot", "value": 4, "others": [2, 16]}
    hot = call("one_hot", inp("c"), {"k": "const", "v": 4, "assumed": mark})
    target = binop("/", const(1.0), binop("-", call("reduce_sum", hot), const(1.0)))
    probe = {**expr("TNL201", target, [free("c")]), "assumed": [mark]}
    out = probing.verify(probe, 1e6)
    assert out["status"] == "confirmed", out
    assert "with `depth` = 4" in out["detail"], out


RESHAPE = """\
    import tensorflow as tf


    def flat_then_norm(x, shape):
        y = tf.reshape(x, shape)
        return tf.sqrt(tf.reduce_sum(tf.square(y), axis=1))


    def flat_then_log(p, shape):
        return tf.math.log(tf.reshape(tf.nn.softmax(p), shape))
    """


def test_a_reshape_under_a_rank_dependent_op_still_cannot_be_verified():
    outs = {o["detail"].startswith("cannot verify"): o for o in _reshape_verdicts()}
    refused = outs[True]["detail"]
    assert "`shape=shape` of tf.reshape, not a literal" in refused
    assert "depends on its rank" in refused


def test_a_reshape_nothing_above_depends_on_is_flattened():
    kept = [o for o in _reshape_verdicts() if not o["detail"].startswith("cannot verify")]
    assert len(kept) == 1, kept
    assert "with `shape` = [-1]" in kept[0]["detail"], kept


def _reshape_verdicts() -> list[dict]:
    from test_reachability_gate import verdicts

    return verdicts(RESHAPE, "TNL202") + verdicts(RESHAPE, "TNL101")


SCALAR_AXIS = """\
    import tensorflow as tf


    class Total(tf.keras.layers.Layer):
        def __init__(self, axis):
            super().__init__()
            self.axis = axis

        def call(self, x):
            total = tf.reduce_sum(tf.square(x))
            return tf.sqrt(tf.reduce_sum(total, axis=self.axis))
    """


def test_a_stand_in_tensorflow_rejects_falls_back_to_cannot_verify():
    # the inner sum is a scalar: no axis -1 to reduce, as TF itself would say
    out = one_verdict(SCALAR_AXIS, "TNL202")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith(
        "cannot verify: the slice has `axis=self.axis` of tf.reduce_sum, not a literal, and "
        "with `axis` = -1 it does not trace"
    ), out


def test_an_axis_beyond_the_value_s_rank_is_refused_not_reduced_over_the_points():
    assert _shift_axis(-1, 3) == -1 and _shift_axis(1, 3) == 2
    for axis in (-3, 2):
        with pytest.raises(UnsupportedProbe):
            _shift_axis(axis, 3)  # a rank-2 user value: axes -2..1


def test_an_axis_pair_from_both_ends_gets_a_rank_where_the_two_differ():
    from tfnumlint.verify.program import build

    # reduce_sum(x, axis=(1, -1)) needs a rank-3 value: at rank 2 both name the same axis
    total = call(
        "reduce_sum", call("square", inp("x")), axis={"k": "tuple", "items": [const(1), const(-1)]}
    )
    program = build(expr("TNL202", call("sqrt", total), [free("x")]))
    assert program.rank == 3
    out = probing.verify(expr("TNL202", call("sqrt", total), [free("x")]), 1e6)
    assert out["status"] == "confirmed" and out["symptom"] == "nan-gradient", out


KEEP = """\
    import tensorflow as tf


    class Norm(tf.keras.layers.Layer):
        def __init__(self, keep):
            super().__init__()
            self.keep = keep

        def call(self, x):
            sq = tf.reduce_sum(tf.square(x), axis=-1, keepdims={keep})
            return tf.sqrt(sq)
    """


def test_a_symbolic_keepdims_is_tried_both_ways_and_the_verdict_says_so():
    probe = one_probe(KEEP.format(keep="self.keep"), "TNL202")
    assert not probe.get("unsupported"), probe
    [mark] = probe["assumed"]
    assert (mark["param"], mark["value"], mark["others"]) == ("keepdims", False, [True])
    out = one_verdict(KEEP.format(keep="self.keep"), "TNL202")
    # sqrt(sum(x**2)) at x = 0 has a NaN gradient whether or not the axis is kept
    for keep in (True, False):
        x = tf.zeros([2, 3])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sqrt(tf.reduce_sum(tf.square(x), axis=-1, keepdims=keep))
        assert np.isnan(tape.gradient(y, x).numpy()).all()
    assert (out["status"], out["symptom"]) == ("confirmed", "nan-gradient"), out
    assert (
        "with `keepdims` = False (`keepdims=self.keep` of tf.reduce_sum is not a literal"
        in (out["detail"])
    )


def test_a_verdict_the_other_flag_value_does_not_reach_is_not_kept():
    from tfnumlint.verify import stand_ins

    mark = {"param": "keepdims", "what": "`keepdims=k` of tf.reduce_sum", "value": False}
    probe = {"assumed": [{**mark, "others": [True]}]}
    seen = {"status": "confirmed", "symptom": "inf-value", "detail": "at x = 0"}

    def verify_expr(p: dict) -> dict:  # what the probe would say with keepdims=True
        return {"status": "refuted", "detail": "no symptom"}

    out = stand_ins.holds_for_others(probe, seen, verify_expr)
    assert out["status"] == "inconclusive", out
    assert "inf-value with `keepdims` = False, not with True" in out["detail"], out
