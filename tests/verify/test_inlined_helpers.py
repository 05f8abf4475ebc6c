"""Plain helpers of the module are inlined by the slicer: the values they read stay related to
the caller's, so the probe decides instead of a witness that sets a helper's result apart from
its input (issue 11)."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import pytest

tf = pytest.importorskip("tensorflow")

from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402
from probe_helpers import expr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_reachability import probed  # noqa: E402

from tfnumlint.analysis.slicing import slicer  # noqa: E402
from tfnumlint.engine import LintOptions, run_checks  # noqa: E402
from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.related import related_inputs_reason  # noqa: E402

HEADER = "import tensorflow as tf\n\n\n"


def probe_of(helpers: str, body: str, args: str, rule: str = "TNL201", pre: str = "") -> dict:
    """The probe of ``tf.identity(body)`` returned by ``def f(args)`` after the statement
    ``pre``, with ``helpers`` defined in the module."""
    first = f"    {pre}\n" if pre else ""
    src = HEADER + helpers + f"\n\ndef f({args}):\n{first}    return tf.identity({body})\n"
    return sliced(src, rule)


def sliced(src: str, rule: str) -> dict:
    """The probe of the argument of the one ``tf.identity(...)`` in ``src``, sliced where it
    is (whether or not a rule flags it)."""
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.identity("))
    sl = slicer.Slicer(ctx, positions)
    target = sl.tree(site.node.args[0].value, site.scope, site.order)
    return {**expr(rule, target, list(sl.inputs.values())), "unsupported": sl.unsupported}


def names(probe: dict) -> list[str]:
    return sorted(i["name"] for i in probe["inputs"])


CLAMP = '''def _clamped(x, floor=1e-6):
    """Why: keep the log finite."""
    lo = tf.cast(floor, dtype=x.dtype)
    return tf.where(x < lo, lo, tf.maximum(x, lo))
'''


def test_a_clamping_helper_is_inlined_so_the_log_of_its_result_is_refuted():
    probe = probe_of(CLAMP, "tf.math.log(_clamped(y))", "y", rule="TNL101")
    assert names(probe) == ["y"]  # the helper's result is not a free input
    assert probing.verify(probe, 1e6)["status"] == "refuted"


def test_a_helper_that_can_return_zero_is_confirmed_by_the_probe():
    helper = "def _shifted(x, by):\n    return x - by\n"
    probe = probe_of(helper, "1.0 / _shifted(y, 2.0)", "y")
    assert names(probe) == ["y"]
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed"
    assert related_inputs_reason(probe, verdict["inputs"]) is None


def test_a_helper_result_and_its_input_are_sliced_jointly():
    helper = "def _hyp(x):\n    return tf.sqrt(1.0 + tf.square(x))\n"
    probe = probe_of(helper, "x / _hyp(x)", "x")
    assert names(probe) == ["x"]
    assert probing.verify(probe, 1e6)["status"] != "confirmed"


def test_two_calls_of_one_helper_slice_each_argument():
    helper = "def _sq(x):\n    return x * x\n"
    probe = probe_of(helper, "1.0 / (_sq(a) + _sq(b) + 1.0)", "a, b")
    assert names(probe) == ["a", "b"]
    assert probing.verify(probe, 1e6)["status"] == "refuted"


def test_a_helper_that_branches_on_a_tensor_value_is_not_inlined():
    helper = "def _pick(x):\n    if x > 0:\n        return x\n    return 1.0\n"
    probe = probe_of(helper, "1.0 / _pick(y)", "y")
    assert "_pick(y)" in names(probe)  # one untraced value, as before


def test_a_helper_with_a_default_that_is_not_a_literal_is_not_inlined():
    helper = "EPS = tf.constant(1e-6)\n\n\ndef _guard(x, eps=EPS):\n    return x + eps\n"
    probe = probe_of(helper, "1.0 / _guard(y)", "y")
    assert "_guard(y)" in names(probe)


def test_a_local_assignment_shadowing_the_helper_is_not_inlined():
    helper = "def _sq(x):\n    return x * x\n"
    probe = probe_of(helper, "1.0 / g(y)", "y, g=_sq")
    assert "g(y)" in names(probe)


def test_a_value_cut_inside_a_helper_reads_the_callers_names():
    helper = "def _scaled(x):\n    return x / untraced(x)\n"
    probe = probe_of(helper, "tf.math.log(_scaled(w))", "w", rule="TNL101")
    cut = next(i for i in probe["inputs"] if i["name"] == "untraced(x)")
    assert cut["reads"] == ["w"]


def test_a_helper_whose_result_the_slice_cannot_follow_stays_one_input():
    helper = "def _odd(x):\n    return untraced(x) & other(x)\n"
    probe = probe_of(helper, "tf.where(_odd(p), y, 1.0 / p)", "y, p")
    cut = next(i for i in probe["inputs"] if i["name"] == "_odd(p)")
    assert cut["reads"] == ["p"]


def test_a_value_cut_inside_a_helper_that_is_no_call_still_reads_the_callers_names():
    helper = "def _odd(x):\n    return tf.abs(untraced(x) & other(x))\n"
    probe = probe_of(helper, "tf.where(_odd(p) > 0, y, 1.0 / p)", "y, p")
    cut = next(i for i in probe["inputs"] if "&" in i["name"])
    assert cut["origin"] == "call" and cut["reads"] == ["p"]


TFP_PAD = (
    "from tensorflow_probability.python.internal import broadcast_util as bu\n\n\n"
    "def _norm(v):\n    return tf.reduce_sum(tf.abs(v))\n"
)


def test_a_rank_padding_keeps_the_values_of_its_first_argument_only():
    probe = probe_of(TFP_PAD, "x / bu.left_justified_expand_dims_like(_norm(x) + 1.0, x)", "x")
    assert names(probe) == ["x"]  # the padded norm is computed from x, not set apart from it
    assert probing.verify(probe, 1e6)["status"] == "refuted"


def test_a_helper_whose_body_the_probe_cannot_model_stays_one_untraced_call():
    helper = "def _summed(x, axis):\n    return tf.reduce_sum(x, axis=axis)\n"
    probe = probe_of(helper, "1.0 / _summed(y, k)", "y, k")
    assert names(probe) == ["_summed(y, k)"]  # not a slice that cannot be verified
    assert probe["unsupported"] == []


def test_a_name_bound_to_a_helper_that_forwards_an_untraced_call_keeps_its_name():
    helper = "def _fwd(x):\n    return untraced(x)\n"
    probe = probe_of(helper, "1.0 / s", "y", pre="s = _fwd(y)")
    assert names(probe) == ["s"]


def test_a_helper_whose_body_makes_the_slice_too_large_stays_one_input():
    """Inlining must not turn a slice that fits into one cut for size: the finding is sliced
    again without following helpers, as before inlining existed."""
    helper = " + ".join(f"tf.square(x) * {k}.0" for k in range(1, 20))  # fits the budget
    rest = " + ".join(f"tf.square(w) * {k}.0" for k in range(1, 20))  # so does the rest
    src = HEADER + f"def _big(x):\n    return {helper}\n\n\ndef f(y, w):\n"
    src += f"    z = {rest}\n    return tf.math.log(_big(y) - z)\n"
    [finding] = [f for f in probed(src, select=["TNL104"]) if f.rule == "TNL104"]
    probe = finding.probe
    assert probe is not None and not probe["truncated"]
    assert names(probe) == ["_big(y)", "w"]


SCALE = """def scaled(x, k):
    return x * k + 1.0
"""


def test_a_helper_called_in_its_own_argument_is_inlined_at_both_calls():
    """``scaled(scaled(y, 2.0), 3.0)``: the inner call is read where the outer call is, not
    inside the helper's body, so it is no recursion; the outer call's parameters still stand
    for its own arguments after the inner call."""
    probe = probe_of(SCALE, "tf.math.log(scaled(scaled(y, 2.0), 3.0) - 4.0)", "y", rule="TNL101")
    assert names(probe) == ["y"]  # neither call stays a free input
    text = str(probe["target"])
    assert "2.0" in text and "3.0" in text
    assert probing.verify(probe, 1e6)["status"] == "confirmed"  # log(6y) at y <= 0
