"""Issue #11: "confirmed" means reachable and harmful.

Static side, no TensorFlow: which values are TensorFlow tensors, where gradients flow, the
inputs' domains, float16 context from real dtype positions, one hazard one finding, and the
pattern misfires.  Each class of the issue's "What went wrong" has snippets written for it.
"""

from __future__ import annotations

import math
import textwrap

import pytest
from conftest import differentiated, hits, lint

from tfnumlint.analysis import domain_code, domain_model, probe_annotate
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.grouping import merge_same_hazard
from tfnumlint.model import Finding, Verification
from tfnumlint.ruledocs import all_docs
from tfnumlint.source import Source
from tfnumlint.verify import domains, gates, gradient_gate


def probed(code: str, path: str = "model.py", select: list[str] | None = None) -> list[Finding]:
    """Findings with their probe programs attached, as the verifier receives them."""
    text = textwrap.dedent(code)
    codes = frozenset(select or all_docs())
    result = lint_source(
        Source(path, text, text.encode()), LintOptions(codes=codes, slice_probes=True)
    )
    assert not result.errors, result.errors
    return result.findings


def one_probe(code: str, rule: str, path: str = "model.py") -> dict:
    [finding] = [f for f in probed(code, path, [rule]) if f.rule == rule]
    assert finding.probe is not None
    return finding.probe


# ---------------------------------------------------------------- not TensorFlow at all


def test_steps_per_second_from_time_time_is_not_a_tensorflow_division():
    src = """\
        import time

        import tensorflow as tf


        class Timer:
            def __init__(self, log_steps):
                self.start_time = time.time()
                self.log_steps = log_steps

            def on_batch_end(self):
                elapsed_time = time.time() - self.start_time
                return self.log_steps / elapsed_time
        """
    assert hits("TNL201", src) == []


def test_numpy_normalisation_denominator_is_not_a_tensorflow_hazard():
    src = """\
        import numpy as np
        import tensorflow as tf


        def gumbel_scale(y3, y1, p1, p3):
            return (y3 - y1) / (np.log(-np.log(p1)) - np.log(-np.log(p3)))
        """
    assert hits("TNL201", src) == []


def test_python_hyper_parameter_arithmetic_is_not_reported():
    src = """\
        import tensorflow as tf


        def cosine(step, total_steps: int, warmup_steps: int):
            step = tf.cast(step, tf.float32)
            return step / (total_steps - warmup_steps)
        """
    assert hits("TNL201", src) == []


def test_pytorch_values_are_not_tensorflow_values():
    src = """\
        import tensorflow as tf
        import torch


        def normalise(a, b):
            d = torch.sum(a) - torch.sum(b)
            return a / d
        """
    assert hits("TNL201", src) == []


def test_a_tensorflow_denominator_is_still_reported():
    src = """\
        import tensorflow as tf


        def normalise(x, y):
            d = tf.reduce_sum(x) - tf.reduce_sum(y)
            return x / d
        """
    assert [f.line for f in hits("TNL201", src)] == [6]


def test_epsilon_rules_are_exempt_from_tensorflow_provenance():
    # A Python constant meets a float32 tensor later: its rounding is TNL401's hazard.
    src = """\
        import tensorflow as tf

        CLIP = 1.0 - 1e-10


        def clipped(p):
            return tf.clip_by_value(p, 0.0, CLIP)
        """
    assert [f.rule for f in hits("TNL401", src)] == ["TNL401"]


# ---------------------------------------------------------------- where gradients flow


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (  # optimizer update step
            """\
            import tensorflow as tf


            class Lars(tf.keras.optimizers.Optimizer):
                def _resource_apply_dense(self, grad, param):
                    return tf.norm(param, ord=2)
            """,
            "_resource_apply_dense",
        ),
        (  # metric update_state
            """\
            import tensorflow as tf


            class Spread(tf.keras.metrics.Metric):
                def update_state(self, y_true, y_pred):
                    return tf.norm(y_true - y_pred)
            """,
            "update_state",
        ),
        (  # metric result
            """\
            import tensorflow as tf


            class Spread(tf.keras.metrics.Metric):
                def result(self):
                    return tf.norm(self.a - self.b)
            """,
            "result",
        ),
        (  # initializer class
            """\
            import tensorflow as tf


            class Orthogonal(tf.keras.initializers.Initializer):
                def __call__(self, shape, w=None):
                    return tf.norm(w)
            """,
            "initializer",
        ),
        (  # under tf.stop_gradient
            """\
            import tensorflow as tf


            def f(a, b):
                return tf.stop_gradient(tf.norm(a - b))
            """,
            "stop_gradient",
        ),
        (  # a runtime assertion
            """\
            import tensorflow as tf


            def f(a):
                tf.debugging.assert_less(tf.abs(1.0 - tf.norm(a, axis=-1)), 1e-3)
                return a
            """,
            "assert",
        ),
        (  # a custom gradient's forward pass
            """\
            import tensorflow as tf


            @tf.custom_gradient
            def safe(a, b):
                return tf.norm(a - b), None
            """,
            "custom_gradient",
        ),
    ],
)
def test_gradient_free_contexts_are_named(code, words):
    probe = one_probe(code, "TNL203")
    assert words in probe["no_gradient"]


def test_sampler_inputs_carry_no_gradient():
    src = """\
        import tensorflow as tf


        def gumbel(logits):
            u = tf.random.uniform(tf.shape(logits))
            return -tf.math.log(u + 1e-9)
        """
    probe = one_probe(src, "TNL102")
    assert "random draws" in probe["no_gradient"]


def test_a_vae_reparameterisation_is_differentiated():
    """`def sampling(args)` is the Keras VAE's reparameterisation: gradients flow through it
    (here a training step differentiates it) and its name does not make it a sampler, so its
    loose-clip underflow (sqrt(exp(-100)) = 0, NaN gradient) must stay confirmable."""
    src = """\
        import tensorflow as tf


        def sampling(args):
            z_mean, z_log_var = args
            epsilon = tf.random.normal(shape=tf.shape(z_mean))
            std = tf.sqrt(tf.exp(tf.clip_by_value(z_log_var, -100.0, 87.0)))
            return z_mean + std * epsilon
        """
    probe = one_probe(differentiated(src, "sampling"), "TNL202")
    assert not probe.get("no_gradient")


def test_a_loss_keeps_its_gradient():
    """A distance a training step differentiates: nothing gates its gradient."""
    src = """\
        import tensorflow as tf


        def triplet(anchor, negative):
            return tf.norm(anchor - negative, axis=-1)
        """
    assert "no_gradient" not in one_probe(differentiated(src, "triplet"), "TNL203")


def _confirmed(symptom: str) -> dict:
    return {"status": "confirmed", "symptom": symptom, "detail": "at a = 0, norm = 0", "inputs": {}}


@pytest.mark.parametrize(
    "symptom", ["nan-gradient", "inf-gradient", "exploding-gradient", "dead-gradient"]
)
def test_gradient_only_symptoms_are_refuted_where_no_gradient_flows(symptom):
    probe = {"kind": "expr", "no_gradient": "it is in the optimizer update `_resource_apply_dense`"}
    out = gradient_gate.apply(probe, _confirmed(symptom))
    assert out["status"] == "refuted"
    assert "no gradient flows here" in out["detail"]
    assert "_resource_apply_dense" in out["detail"]


@pytest.mark.parametrize("symptom", ["nan-value", "inf-value"])
def test_value_symptoms_still_confirm_where_no_gradient_flows(symptom):
    probe = {"kind": "expr", "no_gradient": "it is in a metric update"}
    assert gradient_gate.apply(probe, _confirmed(symptom))["status"] == "confirmed"


def test_gradient_symptoms_confirm_where_gradients_flow():
    assert (
        gradient_gate.apply({"kind": "expr"}, _confirmed("nan-gradient"))["status"] == "confirmed"
    )


# ---------------------------------------------------------------- input domains


def test_producer_domain_for_an_accumulator():
    import libcst as cst

    from tfnumlint.analysis.context import Context
    from tfnumlint.analysis.module import build
    from tfnumlint.config import Settings

    src = textwrap.dedent(
        """\
        import tensorflow as tf


        def step(g):
            accum = tf.zeros_like(g)
            accum = accum + tf.square(g)
            return accum
        """
    )
    info = build(cst.parse_module(src))
    ctx = Context(info, Settings())
    scope = info.functions["step"]
    d = domain_code.producer_domain(ctx, "accum", scope)
    assert d is not None and d.strong and d.lo == 0
    assert "accum + tf.square(g)" in d.why or "tf.zeros_like(g)" in d.why


def test_in_scope_assertions_give_strong_domains():
    src = """\
        import tensorflow as tf


        def gumbel_forward(x, loc, scale):
            tf.debugging.assert_positive(scale)
            z = (x - loc) / scale
            return tf.exp(-tf.exp(-z))
        """
    probe = one_probe(src, "TNL301")
    [d] = [d for d in probe["domains"] if d["name"] == "scale"]
    assert d["strong"] and d["lo_open"] and d["lo"] == 0
    assert "assert_positive" in d["why"]


def test_assert_greater_between_two_inputs_is_a_relation():
    src = """\
        import tensorflow as tf


        def pdf(x, a, b):
            tf.debugging.assert_greater(a, b)
            return x / (a - b)
        """
    probe = one_probe(src, "TNL201")
    assert {"a": "a", "op": ">", "b": "b"}.items() <= probe["relations"][0].items()
    assert probe["relations"][0]["strong"]


def test_shifted_slices_of_a_sorted_array_are_related():
    src = """\
        import tensorflow as tf


        def widths(x):
            y = tf.sort(x)
            return tf.math.log(y[..., 1:] - y[..., :-1])
        """
    probe = one_probe(src, "TNL104")
    [rel] = probe["relations"]
    assert (rel["a"], rel["op"], rel["b"], rel["strong"]) == (
        "y[..., 1:]",
        ">=",
        "y[..., :-1]",
        True,
    )


def test_witness_outside_a_strong_domain_is_refuted_with_the_reason():
    probe = {
        "kind": "expr",
        "domains": [
            {
                "name": "accum",
                "lo": 0.0,
                "hi": "inf",
                "lo_open": False,
                "why": "its producer `accum + square(g)`",
                "strong": True,
            }
        ],
    }
    out = gates.judge(probe, {"status": "confirmed", "inputs": {"accum": -1.0}, "detail": "w"})
    assert out["status"] == "refuted"
    assert (
        "breaks only if `accum` < 0, and its producer `accum + square(g)` rules that out"
        in (out["detail"])
    )


def test_witness_outside_a_weak_domain_is_inconclusive():
    # a weak domain (a caller passing an unknown value too): inconclusive, never refuted
    probe = {"kind": "expr", "relations": []}
    why = "what some callers pass"
    probe["domains"] = [vars(domain_model.Domain("y", 0.0, math.inf, False, why, False))]
    out = gates.judge(probe, {"status": "confirmed", "inputs": {"y": -2.0}, "detail": "w"})
    assert out["status"] == "inconclusive"
    assert "`y`" in out["detail"] and why in out["detail"]


def test_witness_inside_its_domains_stays_confirmed():
    probe = {"kind": "expr"}
    probe["relations"] = [vars(domain_model.Relation("high", ">", "low", "asserted", False))]
    out = gates.judge(
        probe, {"status": "confirmed", "inputs": {"high": 2.0, "low": 1.0}, "detail": "w"}
    )
    assert out["status"] == "confirmed"


def test_probing_keeps_points_inside_the_domains():
    import numpy as np

    probe = {"relations": [vars(domain_model.Relation("high", ">", "low", "asserted", False))]}
    rows = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    inside, outside = domains.split_rows(probe, ["high", "low"], rows)
    assert inside.tolist() == [[1.0, 0.0]]
    assert outside.tolist() == [[0.0, 0.0], [0.0, 1.0]]


def test_names_give_the_probe_no_relation():
    src = """\
        import tensorflow as tf


        def uniform_prob(x, high, low):
            return tf.ones_like(x) / (high - low)
        """
    probe = one_probe(src, "TNL201")
    assert "relations" not in probe  # `high` > `low` was a convention of their names


# ---------------------------------------------------------------- float16 context


@pytest.mark.parametrize(
    "src",
    [
        # np.finfo(np.float16) as a dict key
        """\
        import numpy as np
        import tensorflow as tf

        _TINY = {np.finfo(np.float16).tiny: "f16"}


        def f(x):
            return tf.exp(x * 2.0 - 1.0)
        """,
        # a local named `half`
        """\
        import tensorflow as tf


        def f(x, helper):
            half = 0.5
            helper(half)
            return tf.exp(x * half)
        """,
    ],
)
def test_float16_is_not_guessed_from_unrelated_words(src):
    assert not any(f.rule == "TNL404" for f in lint(src))
    assert all("float16" not in f.message for f in lint(src))


@pytest.mark.parametrize(
    "setting",
    [
        "y = tf.cast(x, tf.float16)",
        "y = tf.cast(x, dtype='float16')",
        "dt = tf.float16\n    y = tf.cast(x, dt)",
        "v = tf.Variable(tf.zeros([3]), dtype=tf.float16)\n    y = tf.convert_to_tensor(x)",
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n    y = tf.convert_to_tensor(x)",
        "y = x.astype('float16')",
    ],
)
def test_float16_comes_from_real_dtype_positions(setting):
    src = f"import tensorflow as tf\n\n\ndef f(x):\n    {setting}\n    return tf.exp(y)\n"
    messages = [f.message for f in lint(src, ["TNL301", "TNL404"])]
    assert messages and all("float16" in m for m in messages)


# ---------------------------------------------------------------- one hazard, one finding


def _finding(rule, line, col, end_line, end_col, status="confirmed") -> Finding:
    return Finding(
        "m.py",
        line,
        col,
        end_line,
        end_col,
        rule,
        rule.lower(),
        "warning",
        f"{rule} says so",
        verification=Verification(status=status),
    )


def test_same_expression_findings_become_one_listing_the_related_rules():
    merged = merge_same_hazard([_finding("TNL101", 3, 20, 3, 35), _finding("TNL103", 3, 15, 3, 35)])
    [f] = merged
    assert f.rule == "TNL103" and f.related_rules == ["TNL101"]
    assert "same hazard: TNL101" in f.message
    assert f.to_json()["related_rules"] == ["TNL101"]


def test_a_confirmed_finding_wins_over_a_refuted_one_of_the_same_hazard():
    [f] = merge_same_hazard(
        [_finding("TNL103", 3, 15, 3, 35, "refuted"), _finding("TNL101", 3, 20, 3, 35)]
    )
    assert f.rule == "TNL101" and f.related_rules == ["TNL103"]


def test_where_absorbs_the_hazard_in_its_branch():
    [f] = merge_same_hazard([_finding("TNL302", 5, 10, 5, 60), _finding("TNL201", 5, 30, 5, 40)])
    assert f.rule == "TNL302" and f.related_rules == ["TNL201"]


def test_different_hazards_in_one_statement_stay_apart():
    findings = [_finding("TNL301", 5, 10, 5, 60), _finding("TNL201", 5, 30, 5, 40)]
    assert len(merge_same_hazard(findings)) == 2
    other_line = [_finding("TNL101", 3, 20, 3, 35), _finding("TNL103", 4, 15, 4, 35)]
    assert len(merge_same_hazard(other_line)) == 2


def test_noqa_still_works_per_rule_before_merging():
    src = """\
        import tensorflow as tf


        def loss(y, z):
            p = tf.sigmoid(z)
            return -tf.reduce_sum(y * tf.math.log(p))  # noqa: TNL103
        """
    rules = [f.rule for f in lint(src)]
    assert "TNL103" not in rules and "TNL101" in rules


# ---------------------------------------------------------------- pattern misfires


def test_a_constant_factor_is_not_a_cross_entropy_label():
    src = """\
        import tensorflow as tf


        def approx(p):
            return tf.math.sqrt(-2 * tf.math.log(p))
        """
    assert hits("TNL103", src) == []


def test_a_label_tensor_is_still_a_cross_entropy():
    src = """\
        import tensorflow as tf


        def loss(y, z):
            p = tf.sigmoid(z)
            return -tf.reduce_sum(y * tf.math.log(p))
        """
    assert [f.rule for f in hits("TNL103", src)] == ["TNL103"]


@pytest.mark.parametrize(
    "shift",
    [
        "tf.gather(tf.math.unsorted_segment_max(x, ids, n), ids)",
        "tf.stop_gradient(tf.reduce_max(x, axis=-1, keepdims=True))",
        "tf.expand_dims(tf.math.segment_max(x, ids), -1)",
    ],
)
def test_max_shifted_softmax_is_recognised(shift):
    src = f"import tensorflow as tf\n\n\ndef f(x, ids, n):\n    m = {shift}\n    return tf.exp(x - m)\n"
    assert hits("TNL301", src) == []


def test_unshifted_exp_is_still_reported():
    src = "import tensorflow as tf\n\n\ndef f(x, y):\n    return tf.exp(x - y)\n"
    assert [f.rule for f in hits("TNL301", src)] == ["TNL301"]


def test_dead_gradient_of_summed_log_softmax_is_no_evidence():
    target = {
        "k": "call",
        "op": "log",
        "args": [
            {
                "k": "bin",
                "op": "+",
                "l": {"k": "call", "op": "softmax", "args": [{"k": "input", "name": "s"}]},
                "r": {"k": "const", "v": 1e-10},
            }
        ],
    }
    probe = {"kind": "expr", "target": target, "loss": None}
    out = gradient_gate.apply(probe, _confirmed("dead-gradient"))
    assert out["status"] == "inconclusive"
    assert "by construction" in out["detail"]
    with_loss = {**probe, "loss": {"k": "bin", "op": "*", "l": target, "r": target}}
    assert gradient_gate.apply(with_loss, _confirmed("dead-gradient"))["status"] == "confirmed"


def test_inf_is_not_a_domain_bound_it_cannot_hold():
    d = domain_model.Domain("x", 0.0, math.inf, False, "w", False)
    assert d.holds(math.inf) and not d.holds(-math.inf)


def test_a_correction_to_a_tabulated_constant_is_not_an_absorbed_guard():
    src = """\
        import tensorflow as tf

        _P2 = (0.564424843456014, 0.435575156943986 - 4e-10)
        """
    assert hits("TNL401", src) == []


def test_a_division_in_a_where_branch_guarded_by_its_denominator_is_value_safe():
    src = """\
        import tensorflow as tf


        def trust(w, g):
            w_norm = tf.norm(w, ord=2)
            g_norm = tf.norm(g, ord=2)
            return tf.where(tf.greater(g_norm, 0), w_norm / g_norm, 1.0)
        """
    probe = one_probe(differentiated(src, "trust"), "TNL201")
    assert "tests `g_norm`" in probe["value_guarded"]
    out = gradient_gate.apply(probe, _confirmed("inf-value"))
    assert out["status"] == "refuted" and "never selected" in out["detail"]
    # its gradient still leaks through the untaken branch (TNL302's hazard): not refuted; a
    # training step differentiates `trust`, so the witness stays confirmed
    leaked = gradient_gate.apply(probe, _confirmed("nan-gradient"))
    assert leaked["status"] == "confirmed" and "never selected" not in leaked["detail"]


def test_a_where_testing_something_else_does_not_guard():
    src = """\
        import tensorflow as tf


        def f(w, g, mask):
            d = tf.reduce_sum(g) - tf.reduce_sum(w)
            return tf.where(mask, w / d, 1.0)
        """
    assert "value_guarded" not in one_probe(src, "TNL201")


def test_a_lone_learnable_looking_hyper_parameter_keeps_its_gradient():
    """A parameter named `learning_rate`, in a function a training step differentiates: its
    name does not make it a hyper-parameter no gradient reaches."""
    src = """\
        import tensorflow as tf


        def f(learning_rate):
            return tf.math.log(learning_rate + 1e-20)
        """
    assert "no_gradient" not in one_probe(differentiated(src), "TNL102")


def test_an_attribute_read_twice_is_one_value():
    src = """\
        import tensorflow as tf


        class Triangular:
            def pdf_at_peak(self):
                return (self.peak - self.low) / (self.high - self.low)
        """
    probe = one_probe(src, "TNL201")
    rels = {(r["a"], r["op"], r["b"], r["strong"]) for r in probe.get("relations", [])}
    assert [s["name"] for s in probe["inputs"]].count("self.low") == 1  # one input, not two
    assert ("self.high", ">", "self.low", False) not in rels  # no order from their names


def test_repeated_read_relation_holds_only_for_equal_values():
    rel = domain_model.Relation("self_low_2", "==", "self_low", "the same value, read twice", True)
    assert rel.holds(1.0, 1.0) and not rel.holds(0.0, -1.0)


def test_constants_sliced_as_inputs_are_pinned_to_their_value():
    src = """\
        import numpy as np
        import tensorflow as tf


        def sinc(x):
            x = np.pi * x
            return tf.where(x != 0.0, tf.math.sin(x) / x, 1.0)
        """
    probe = one_probe(src, "TNL302")
    # np.pi is sliced as the constant itself, never as a free input
    assert "np.pi" not in {s["name"] for s in probe["inputs"]}
    assert str(math.pi) in str(probe["target"])


def test_python_statistics_in_a_function_without_tensorflow_are_not_reported():
    src = """\
        import tensorflow as tf


        def build_stats(callback):
            log = callback.timestamp_log
            return (
                callback.batch_size * (len(log) - 1) / (log[-1].timestamp - log[0].timestamp)
            )
        """
    assert hits("TNL201", src) == []


def test_the_same_arithmetic_next_to_tensorflow_is_still_reported():
    src = """\
        import tensorflow as tf


        def rate(values, log):
            total = tf.reduce_sum(values)
            return total * (len(log) - 1) / (log[-1].timestamp - log[0].timestamp)
        """
    assert [f.rule for f in hits("TNL201", src)] == ["TNL201"]


def test_a_negative_literal_is_not_evidence_of_python_arithmetic():
    src = """\
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")


        def masked_scores(scores, mask):
            return scores + (1.0 - mask) * -1e9
        """
    assert [f.rule for f in hits("TNL404", src)] == ["TNL404"]


def test_a_stop_gradient_copy_equals_its_argument():
    src = """\
        import tensorflow as tf


        def expectation(fx, logpx):
            stop = tf.stop_gradient
            return fx * tf.exp(logpx - stop(logpx))
        """
    probe = one_probe(src, "TNL301")
    rels = {(r["a"], r["op"], r["b"], r["strong"]) for r in probe["relations"]}
    assert ("stop(logpx)", "==", "logpx", True) in rels


def test_a_nan_gradient_only_with_respect_to_a_data_input_trains_nothing():
    """The inputs' origins decide (a placeholder is data), not their names."""
    out = {
        "status": "confirmed",
        "symptom": "nan-gradient",
        "detail": "w",
        "observed": {"gradient": {"qz": "nan", "output": 0.5}},
    }
    probe = {"kind": "expr", "inputs": [{"name": "qz", "origin": "data"}, {"name": "output"}]}
    refuted = gradient_gate.apply(probe, out)
    assert refuted["status"] == "refuted" and "`qz`, a data input" in refuted["detail"]
    out["observed"]["gradient"]["output"] = "nan"
    assert gradient_gate.apply(probe, out)["status"] == "confirmed"
    named = {"kind": "expr", "inputs": [{"name": "target"}, {"name": "output"}]}
    out["observed"]["gradient"] = {"target": "nan", "output": 0.5}
    assert gradient_gate.apply(named, out)["status"] == "confirmed"  # a name alone decides nothing


def test_a_helper_called_only_under_a_cond_on_its_denominator_is_guarded():
    src = """\
        import tensorflow as tf


        def autocontrast(image):
            lo = tf.cast(tf.reduce_min(image), tf.float32)
            hi = tf.cast(tf.reduce_max(image), tf.float32)

            def scale_values(im):
                return im * (255.0 / (hi - lo))

            return tf.cond(hi > lo, lambda: scale_values(image), lambda: image)
        """
    probe = one_probe(src, "TNL206")
    assert "tf.cond around it tests `hi`" in probe["guarded"]
    for symptom in ("inf-value", "nan-gradient"):
        assert gradient_gate.apply(probe, _confirmed(symptom))["status"] == "refuted"


def test_an_if_on_the_denominator_guards_its_body():
    src = """\
        import tensorflow as tf


        def positive_mean(values):
            valid = tf.cast(values > 0, tf.float32)
            count = tf.reduce_sum(valid)
            if count > 0:
                return tf.reduce_sum(values * valid) / count
            return tf.zeros_like(count)
        """
    probe = one_probe(src, "TNL201")
    assert "`if` around it tests `count`" in probe["guarded"]


def test_a_cond_on_something_else_does_not_guard():
    src = """\
        import tensorflow as tf


        def autocontrast(image, flag):
            lo = tf.reduce_min(image)
            hi = tf.reduce_max(image)
            return tf.cond(flag, lambda: 255.0 / (hi - lo), lambda: image)
        """
    assert "guarded" not in one_probe(src, "TNL206")


def test_a_root_inside_a_division_is_the_division_hazard():
    [f] = merge_same_hazard([_finding("TNL201", 7, 10, 7, 50), _finding("TNL202", 7, 30, 7, 48)])
    assert f.rule == "TNL201" and f.related_rules == ["TNL202"]
    # a norm around divisions is a different hazard (the outer vector being zero)
    outer_norm = [_finding("TNL203", 7, 10, 7, 60), _finding("TNL201", 7, 20, 7, 40)]
    assert len(merge_same_hazard(outer_norm)) == 2


def test_a_malformed_domain_never_costs_the_verdict():
    out = {"status": "confirmed", "symptom": "inf-value", "inputs": {"x": 0.0}, "detail": "w"}
    assert gates.judge({"kind": "expr", "domains": [{"name": "x"}]}, out) == out


def test_an_annotation_failure_keeps_the_file_and_its_findings(monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("boom")

    monkeypatch.setattr(probe_annotate, "annotate", broken)
    src = """\
        import tensorflow as tf


        def f(a, b):
            return tf.norm(a - b)
        """
    [finding] = probed(src, select=["TNL203"])
    assert finding.probe is not None and "domains" not in finding.probe


def test_configuration_rules_on_one_call_stay_apart():
    findings = [_finding("TNL501", 29, 13, 29, 57), _finding("TNL502", 29, 13, 29, 57)]
    assert len(merge_same_hazard(findings)) == 2


def test_host_constants_are_numbers_not_inputs():
    """`np.log(2. * np.pi)`, `np.sqrt(2 / np.pi)`, `tf.constant(np.inf)`: numbers the code fixes,
    never free inputs a witness could set to 0 or 100; a numpy call on a user value stays one."""
    src = """\
        import numpy as np
        import tensorflow as tf


        def log_prob(x, scale):
            c = tf.constant(np.inf)
            half_log_two_pi = 0.5 * np.log(2.0 * np.pi)
            return tf.exp(x * np.sqrt(2 / np.pi) - c) - half_log_two_pi - np.log(scale)
        """
    probe = one_probe(src, "TNL301")
    names = {s["name"] for s in probe["inputs"]}
    assert names == {"x", "np.log(scale)"}
    target = str(probe["target"])
    assert str(math.sqrt(2 / math.pi)) in target and "'inf'" in target
    assert str(0.5 * math.log(2.0 * math.pi)) in str(probe)
