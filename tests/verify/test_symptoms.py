"""Each symptom confirmed on a minimal probe and refuted on its safe twin (in-process TF)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, cmp, const, expr, free, inp, prob, seed_loss  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def eager_numerics():
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def verify(probe):
    return probing.verify(probe, 1e6)


def test_seed_loss_has_a_dead_gradient_at_z_minus_100():
    target, loss = seed_loss()
    out = verify(expr("TNL102", target, [free("z"), free("p")], loss=loss, eps=1e-10))
    assert out["status"] == "confirmed"
    assert out["symptom"] == "dead-gradient"
    assert out["inputs"] == {"z": -100.0, "p": 1.0}
    assert out["observed"]["loss"] == pytest.approx(23.03, abs=0.01)
    assert out["observed"]["loss_gradient"]["z"] == 0.0
    assert out["detail"].startswith(
        "at z = -100, p = 1 (float32), log(sigmoid(z) + 1e-10) = -23.03 and the loss (23.03) "
        "gets dloss/dz = 0 through it"
    )
    assert "1e-10 floor blocks the gradient" in out["detail"]


def test_the_other_log_term_of_the_seed_loss_is_witnessed_where_it_saturates_itself():
    """log(1 - sigmoid(z) + 1e-10) is stuck at z = +100 with label 0: at z = -100 (where the
    loss is stuck because of the other term) this term is log(1) = 0 and weighs nothing."""
    _, loss = seed_loss()
    s = call("sigmoid", inp("z"))
    second = call("log", binop("+", binop("-", const(1), s), const(1e-10)))
    # the eager form: compiled, grappler folds 1 + 1e-10 to 1 and the term is -inf instead
    # (tests/verify/test_compiled.py); this test is about which term the eager witness is for
    probe = expr("TNL102", second, [free("z"), free("p")], loss=loss, eps=1e-10)
    out = verify({**probe, "forms": ["eager"]})
    assert (out["status"], out["symptom"]) == ("confirmed", "dead-gradient")
    assert out["inputs"] == {"z": 100.0, "p": 0.0}
    assert out["observed"]["value"] == pytest.approx(-23.03, abs=0.01)
    assert out["observed"]["gradient_through_term"]["z"] == 0.0
    assert out["detail"].startswith(
        "at z = 100, p = 0 (float32), log(1 - sigmoid(z) + 1e-10) = -23.03 and the loss (12.66) "
        "gets dloss/dz = 0 through it"
    )


def test_log_of_probability_inf_value_and_clipped_twin():
    bad = verify(expr("TNL101", call("log", inp("p")), [prob("p")]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "inf-value")
    assert bad["inputs"]["p"] == 0.0 and bad["observed"]["value"] == "-inf"
    clipped = call("log", call("clip_by_value", inp("p"), const(1e-7), const(1 - 1e-7)))
    safe = verify(expr("TNL101", clipped, [prob("p")]))
    assert safe["status"] == "refuted"
    assert safe["detail"] == "log input is within [1e-07, 1] in float32: never 0"


def test_division_inf_value_and_maximum_twin():
    denom = call("reduce_sum", call("relu", inp("d")), axis=const(-1))
    bad = verify(expr("TNL201", binop("/", inp("x"), denom), [free("x"), free("d")]))
    assert bad["status"] == "confirmed" and bad["symptom"] in ("inf-value", "nan-value")
    guarded = binop("/", inp("x"), call("maximum", inp("d"), const(1e-6)))
    safe = verify(expr("TNL201", guarded, [free("x"), free("d")]))
    assert safe["status"] == "refuted" and "denominator is within [1e-06, inf]" in safe["detail"]


def test_sqrt_of_distance_nan_gradient_and_eps_twin():
    dist = call("reduce_sum", call("square", binop("-", inp("a"), inp("b"))))
    bad = verify(expr("TNL202", call("sqrt", dist), [free("a"), free("b")]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "nan-gradient")
    assert bad["inputs"]["a"] == bad["inputs"]["b"]
    assert bad["observed"]["value"] == 0.0 and bad["observed"]["gradient"]["a"] == "nan"
    safe = verify(
        expr("TNL202", call("sqrt", binop("+", dist, const(1e-12))), [free("a"), free("b")])
    )
    assert safe["status"] == "refuted"


def test_norm_of_difference_nan_gradient_at_a_equals_b():
    bad = verify(
        expr("TNL203", call("norm", binop("-", inp("a"), inp("b"))), [free("a"), free("b")])
    )
    assert (bad["status"], bad["symptom"]) == ("confirmed", "nan-gradient")


def test_where_nan_gradient_and_double_where_twin():
    x_pos = cmp(">", inp("x"), const(0))
    bad = verify(
        expr("TNL302", call("where", x_pos, call("log", inp("x")), const(0.0)), [free("x")])
    )
    assert (bad["status"], bad["symptom"]) == ("confirmed", "nan-gradient")
    assert bad["inputs"] == {"x": 0.0} and bad["observed"]["value"] == 0.0
    inner = call("where", x_pos, inp("x"), const(1.0))
    safe = verify(expr("TNL302", call("where", x_pos, call("log", inner), const(0.0)), [free("x")]))
    assert safe["status"] == "refuted"
    assert "no symptom" in safe["detail"] and "gradient climb" in safe["detail"]


def test_acos_inf_gradient_and_clipped_twin():
    bad = verify(expr("TNL205", call("acos", inp("c")), [free("c", -1.0, 1.0)]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "inf-gradient")
    assert abs(bad["inputs"]["c"]) == 1.0
    clipped = call("clip_by_value", inp("c"), const(-1 + 1e-7), const(1 - 1e-7))
    assert verify(expr("TNL205", call("acos", clipped), [free("c")]))["status"] == "refuted"


def test_exp_overflow_inf_value_and_clipped_twin():
    bad = verify(expr("TNL301", call("exp", inp("x")), [free("x")]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "inf-value")
    assert bad["inputs"]["x"] > 88.72
    clipped = call("exp", call("clip_by_value", inp("x"), const(-50.0), const(50.0)))
    assert verify(expr("TNL301", clipped, [free("x")]))["status"] == "refuted"


def test_float16_exp_overflows_past_11():
    bad = verify(expr("TNL301", call("exp", inp("x")), [free("x", 0.0, 12.0)], dtype="float16"))
    assert bad["status"] == "confirmed" and bad["inputs"]["x"] > 11.09
    safe = verify(expr("TNL301", call("exp", inp("x")), [free("x", -5.0, 10.0)], dtype="float16"))
    assert safe["status"] == "refuted" and "never overflows" in safe["detail"]


def test_fractional_power_nan_value_and_guarded_twin():
    bad = verify(expr("TNL204", call("pow", inp("x"), const(0.5)), [free("x")]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "nan-value")
    assert bad["inputs"]["x"] < 0
    guarded = call("pow", call("maximum", inp("x"), const(1e-6)), const(0.5))
    assert verify(expr("TNL204", guarded, [free("x")]))["status"] == "refuted"


def test_rsqrt_of_variance_and_eps_twin():
    var = free("v", 0.0, "inf", producer="reduce_sum")
    bad = verify(expr("TNL206", call("rsqrt", inp("v")), [var]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "inf-value")
    safe = verify(expr("TNL206", call("rsqrt", binop("+", inp("v"), const(1e-5))), [var]))
    assert safe["status"] == "refuted"


def test_exploding_gradient_of_log_floor_and_wide_floor_twin():
    x = free("x", 0.0, "inf", producer="relu")
    bad = verify(expr("TNL102", call("log", binop("+", inp("x"), const(1e-10))), [x], eps=1e-10))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "exploding-gradient")
    assert bad["observed"]["gradient"]["x"] == pytest.approx(1e10, rel=1e-3)
    safe = verify(expr("TNL102", call("log", binop("+", inp("x"), const(1.0))), [x], eps=1.0))
    assert safe["status"] == "refuted"


def test_epsilon_absorbed_and_reordered_twin():
    bad = verify(
        expr(
            "TNL401",
            binop("-", binop("+", const(1e-10), const(1)), inp("p")),
            [prob("p")],
            eps=1e-10,
        )
    )
    assert (bad["status"], bad["symptom"]) == ("confirmed", "epsilon-absorbed")
    assert bad["observed"]["value"] == 0.0 and bad["inputs"]["p"] == 1.0
    assert "(1 + 1e-10 == 1 in float32)" in bad["detail"]
    twin = binop("+", binop("-", const(1), inp("p")), const(1e-10))
    assert verify(expr("TNL401", twin, [prob("p")], eps=1e-10))["status"] == "refuted"


def test_epsilon_underflow_in_float16_and_representable_twin():
    x = free("x", 0.0, "inf")
    bad = verify(
        expr(
            "TNL402",
            call("log", binop("+", inp("x"), const(1e-8))),
            [x],
            None,
            1e-8,
            "float16",
        )
    )
    assert (bad["status"], bad["symptom"]) == ("confirmed", "epsilon-underflow")
    assert "1e-08 rounds to 0 in float16" in bad["detail"] and "-inf" in bad["detail"]
    safe = verify(
        expr("TNL402", call("log", binop("+", inp("x"), const(1e-4))), [x], None, 1e-4, "float16")
    )
    assert safe["status"] == "refuted"
    same_in_float32 = verify(
        expr("TNL402", call("log", binop("+", inp("x"), const(1e-8))), [x], None, 1e-8)
    )
    assert same_in_float32["status"] == "refuted"


def test_log_of_one_plus_x_diverges_and_log1p_twin():
    bad = verify(expr("TNL105", call("log", binop("+", const(1), inp("x"))), [free("x")]))
    assert (bad["status"], bad["symptom"]) == ("confirmed", "diverges")
    assert bad["observed"]["value"] == 0.0
    assert bad["observed"]["exact"] == pytest.approx(bad["inputs"]["x"], rel=1e-6)
    assert verify(expr("TNL105", call("log1p", inp("x")), [free("x")]))["status"] == "refuted"


def test_logsumexp_by_hand_overflows_and_builtin_twin():
    bad = verify(
        expr("TNL106", call("log", call("reduce_sum", call("exp", inp("x")))), [free("x")])
    )
    assert bad["status"] == "confirmed" and bad["symptom"] in ("inf-value", "nan-value")
    safe = verify(expr("TNL106", call("reduce_logsumexp", inp("x")), [free("x", -1e4, 1e4)]))
    assert safe["status"] != "confirmed"


def test_truncated_slice_is_inconclusive():
    probe = expr("TNL101", call("log", inp("p")), [prob("p")])
    probe["truncated"] = True
    out = verify(probe)
    assert out["status"] == "inconclusive" and "slice too large" in out["detail"]


def test_shape_mixing_reduction_is_inconclusive_not_wrong():
    target = call("log", call("reduce_sum", inp("x"), axis=const(0)))
    out = verify(expr("TNL104", target, [free("x")]))
    assert out["status"] in ("confirmed", "inconclusive")
    if out["status"] == "confirmed":  # then at a real point of the full reduction
        assert out["symptom"] in ("inf-value", "nan-value", "inf-gradient", "nan-gradient")
