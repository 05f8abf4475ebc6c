"""Related inputs, attribution and known-call ranges (issue 11): a witness must respect what
the slice knows about how its values are computed, and the flagged op must be where the
symptom starts."""

from __future__ import annotations

import libcst as cst
import pytest

tf = pytest.importorskip("tensorflow")

from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402
from probe_helpers import binop, call, const, expr, free, inp  # noqa: E402

from tfnumlint.analysis.slicing import slicer  # noqa: E402
from tfnumlint.engine import LintOptions, run_checks  # noqa: E402
from tfnumlint.verify import probing  # noqa: E402
from tfnumlint.verify.related import related_inputs_reason  # noqa: E402

HEADER = "import tensorflow as tf\n\n\n"


def slice_of(body: str, args: str) -> dict:
    """The probe of the returned expression of ``def f(args)``, by the real slicer."""
    src = HEADER + f"def f({args}):\n    return tf.identity({body})\n"
    sl, target = sliced(src)
    return {**expr("TNL201", target, list(sl.inputs.values())), "unsupported": sl.unsupported}


def sliced(src: str) -> tuple[slicer.Slicer, dict]:
    """The real slicer and the tree of the argument of the ``tf.identity(...)`` in ``src``."""
    module = cst.parse_module(src)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.identity("))
    sl = slicer.Slicer(ctx, positions)
    return sl, sl.tree(site.node.args[0].value, site.scope, site.order)


def test_a_fractional_part_is_traced_so_its_log_with_an_epsilon_is_refuted():
    probe = slice_of("tf.math.log(y - tf.math.floor(y) + 1e-6)", "y")
    assert [i["name"] for i in probe["inputs"]] == ["y"]  # floor(y) is not a free input
    assert probing.verify({**probe, "rule": "TNL101"}, 1e6)["status"] == "refuted"


def test_a_divisor_of_bessel_i0e_is_refuted_by_its_range():
    probe = slice_of("x / tf.math.bessel_i0e(concentration)", "x, concentration")
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "refuted"
    assert "denominator" in verdict["detail"]


def test_cosine_keeps_its_range_and_its_input():
    probe = slice_of("tf.math.acos(0.5 * tf.math.cos(a))", "a")
    assert [i["name"] for i in probe["inputs"]] == ["a"]
    assert probing.verify({**probe, "rule": "TNL101"}, 1e6)["status"] == "refuted"


def test_a_vector_divided_by_its_own_norm_keeps_the_norm_of_that_vector():
    probe = slice_of("v / tf.norm(v, ord=2, axis=-1)[..., tf.newaxis]", "v")
    assert [i["name"] for i in probe["inputs"]] == ["v"]
    verdict = probing.verify(probe, 1e6)
    # the only witness is the zero vector itself: the norm is never set apart from `v`
    assert verdict["status"] in ("confirmed", "inconclusive")
    assert verdict.get("inputs", {"v": 0.0})["v"] == 0.0
    assert "independently" not in verdict["detail"]


def test_new_axis_indexing_is_expand_dims_and_other_indexing_stays_cut():
    kept = slice_of("v[:, None] + v[..., tf.newaxis, :]", "v")
    assert [i["name"] for i in kept["inputs"]] == ["v"]
    cut = slice_of("v[0] + v", "v")
    element = next(i for i in cut["inputs"] if i["name"] == "v[0]")
    assert element["reads"] == ["v"]


def test_a_negated_comparison_is_traced_so_the_mask_follows_the_count():
    probe = slice_of("tf.where(~tf.equal(counts, 0), totals / counts, 0.)", "counts, totals")
    assert sorted(i["name"] for i in probe["inputs"]) == ["counts", "totals"]
    verdict = probing.verify({**probe, "rule": "TNL201"}, 1e6)
    assert "~tf.equal" not in verdict["detail"]


def test_a_cut_call_set_apart_from_the_input_it_reads_does_not_confirm():
    # `dot` names a producer whose everyday values the reachability gate accepts
    probe = slice_of("tf.math.log(y - dot(y, y) + 0.1)", "y, dot")
    cut = next(i for i in probe["inputs"] if i["name"] == "dot(y, y)")
    assert cut["reads"] == ["y"]
    verdict = probing.verify({**probe, "rule": "TNL101"}, 1e6)
    assert verdict["status"] == "inconclusive"
    assert "independently, though the first is computed from the second" in verdict["detail"]


def test_a_cut_call_of_other_inputs_only_is_not_related():
    spec = {**free("g(z)"), "reads": ["z"]}
    assert related_inputs_reason({"inputs": [spec, free("y")]}, {"g(z)": 1, "y": 0}) is None


def test_an_inf_that_enters_the_flagged_division_from_upstream_is_not_confirmed():
    # t = 1 / sqrt(w) is inf at w = 0; the flagged divisor 2 * v_abs is never 0 (v_abs >= 1)
    t = call("reciprocal", call("sqrt", inp("w")))
    target = binop("/", t, binop("*", const(2.0), inp("v_abs")))
    probe = expr("TNL201", target, [free("w", 0.0, "inf"), free("v_abs", 1.0, "inf")])
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "inconclusive"
    assert "numerator `reciprocal(sqrt(w))` is already inf" in verdict["detail"]


def test_a_division_by_a_zero_divisor_is_still_confirmed():
    target = binop("/", inp("x"), binop("-", inp("a"), const(1.0)))
    probe = expr("TNL201", target, [free("x", 1.0, 2.0), free("a", 0.0, 2.0)])
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed"
    assert verdict["inputs"]["a"] == 1.0


def test_a_nan_gradient_from_elsewhere_is_not_the_flagged_log():
    # log(1 + sqrt(w)): the log's argument is >= 1; the inf gradient at w = 0 is the sqrt's
    target = call("log", binop("+", const(1.0), call("sqrt", inp("w"))))
    probe = expr("TNL101", target, [free("w", 0.0, "inf")])
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "inconclusive"
    assert (
        "argument `1 + sqrt(w)` = 1 at the witness, away from its danger zone"
        in (verdict["detail"])
    )


@pytest.mark.parametrize("ends", [("bins_upper", "bins_lower"), ("p", "q")])
def test_one_untraced_function_at_two_arguments_does_not_confirm(ends):
    """`dot(hi, f)` - `dot(lo, f)`: one function ties its two values, whatever the names."""
    hi, lo = ends
    body = f"tf.math.log(dot({hi}, f) - dot({lo}, f) + 1e-6)"
    probe = slice_of(body, f"{hi}, {lo}, f, dot")
    verdict = probing.verify({**probe, "rule": "TNL101"}, 1e6)
    assert verdict["status"] == "inconclusive"
    assert "independently, though both are" in verdict["detail"], verdict["detail"]


def test_two_calls_of_one_function_are_tied_by_it_and_of_two_functions_are_not():
    a = {**free("cdf(a)"), "origin": "call", "source": "cdf(a)"}
    b = {**free("cdf(b)"), "origin": "call", "source": "cdf(b)"}
    g = {**free("g(c)"), "origin": "call", "source": "g(c)"}
    witness = dict.fromkeys(["cdf(a)", "cdf(b)", "g(c)"], 0.5)

    def diff(x: str, y: str) -> dict:
        return {
            "k": "bin",
            "op": "-",
            "l": {"k": "input", "name": x},
            "r": {"k": "input", "name": y},
        }

    tied = {"inputs": [a, b, g], "target": diff("cdf(a)", "cdf(b)")}
    assert "values of one function `cdf`" in (related_inputs_reason(tied, witness) or "")
    untied = {"inputs": [a, g], "target": diff("cdf(a)", "g(c)")}
    assert related_inputs_reason(untied, witness) is None


def test_a_cut_call_reads_what_its_arguments_are_computed_from():
    probe = slice_of("tf.math.log(y - untraced(z))", "y, untraced, z=None")
    # z is a parameter here: the call reads z only; with z computed from y it reads y
    assert next(i for i in probe["inputs"] if i["name"] == "untraced(z)")["reads"] == ["z"]
    src = HEADER + "def f(y, untraced):\n    z = 2.0 * y\n    return tf.identity(untraced(z))\n"
    sl, _ = sliced(src)
    assert sl.inputs["untraced(z)"]["reads"] == ["y", "z"]


def test_two_untraced_calls_on_one_value_do_not_confirm_a_cosine_out_of_range():
    body = "tf.math.acos(dot(u, w) / dot(u, u))"
    probe = slice_of(body, "u, w, dot")
    verdict = probing.verify({**probe, "rule": "TNL205"}, 1e6)
    assert verdict["status"] == "inconclusive"
    assert "independently, though both are computed from `u`" in verdict["detail"]


def test_a_squared_difference_is_traced_with_its_operands():
    probe = slice_of("tf.math.squared_difference(a, b) / tf.math.square(b)", "a, b")
    assert sorted(i["name"] for i in probe["inputs"]) == ["a", "b"]
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed"
    assert verdict["inputs"]["b"] == 0.0


def test_names_bound_to_untraced_calls_record_what_they_read():
    src = HEADER + (
        "def f(x, x2, dot):\n"
        "    den = tf.sqrt(dot(x, x))\n"
        "    numerator = dot(x, x2)\n"
        "    return tf.identity(tf.math.acos(numerator / den))\n"
    )
    sl, target = sliced(src)
    assert sl.inputs["numerator"]["reads"] == ["x", "x2"]
    verdict = probing.verify(expr("TNL205", target, list(sl.inputs.values())), 1e6)
    assert verdict["status"] == "inconclusive"
    assert "though both are computed from `x`" in verdict["detail"]


def test_inputs_read_only_as_gather_indices_are_not_related_values():
    src = HEADER + (
        "def f(x, i, pick):\n"
        "    index_n = pick(i)\n"
        "    index_k = pick(i + 1)\n"
        "    x_n = tf.gather(x, index_n)\n"
        "    x_k = tf.gather(x, index_k)\n"
        "    return tf.identity(tf.reduce_sum(x_n * x_k, -1) / tf.norm(x_n, axis=-1))\n"
    )
    sl, target = sliced(src)
    verdict = probing.verify(expr("TNL201", target, list(sl.inputs.values())), 1e6)
    assert verdict["status"] == "confirmed"  # the zero vector x, whatever it picks
    assert verdict["inputs"]["x"] == 0.0
