"""Ranges of opaque producers (verify/domains.py PRODUCER_RANGES): a probe input that is the
result of a known math function the slice does not enter lies in that function's range."""

from __future__ import annotations

import textwrap
from dataclasses import asdict

import libcst as cst
import pytest

from tfnumlint.analysis import domain_code, domain_model
from tfnumlint.analysis.context import Context
from tfnumlint.analysis.module import build
from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.config import Settings
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.ruledocs import all_docs
from tfnumlint.source import Source
from tfnumlint.verify import gates


def ctx_of(src: str) -> Context:
    return Context(build(cst.parse_module(textwrap.dedent(src))), Settings())


IMPORTS = """\
    import tensorflow as tf
    import tensorflow_probability as tfp
    from gpflow.likelihoods.utils import inv_probit
    from tensorflow_probability.python.internal import special_math
    """


@pytest.mark.parametrize(
    "text, lo, lo_open, hi",
    [
        ("tfp.math.log1mexp(x)", "-inf", False, 0.0),
        ("tf.math.log_sigmoid(z)", "-inf", False, 0.0),
        ("special_math.ndtr(x)", 0.0, False, 1.0),
        ("inv_probit(f - b)", 0.0, False, 1.0),
        ("tfp.math.bessel_kve(v, z)", 0.0, True, "inf"),
        ("tf.math.softplus(x)", 0.0, False, "inf"),
        ("tf.norm(v, axis=-1)[..., tf.newaxis]", 0.0, False, "inf"),
        ("tf.eye(k)", 1.0, False, 1.0),
    ],
)
def test_a_resolved_math_function_gives_a_code_derived_range(text, lo, lo_open, hi):
    d = domain_code.call_domain(ctx_of(IMPORTS), text)
    assert d is not None and d.strong
    as_json = (domain_model.to_json_float(d.lo), d.lo_open, domain_model.to_json_float(d.hi))
    assert as_json == (lo, lo_open, hi)


@pytest.mark.parametrize(
    "text, lo, hi",
    [
        ("dist.cdf(x)", 0.0, 1.0),  # a method: the library interface it implements says it
        ("self.survival_function(y)", 0.0, 1.0),
        ("tf.math.lgamma(a)", -0.1216, "inf"),  # log Γ >= -0.1216 only for a > 0
    ],
)
def test_a_method_or_a_conditional_range_is_weak(text, lo, hi):
    d = domain_code.call_domain(ctx_of(IMPORTS), text)
    assert d is not None and not d.strong
    assert (domain_model.to_json_float(d.lo), domain_model.to_json_float(d.hi)) == (lo, hi)


@pytest.mark.parametrize(
    "text",
    [
        "tfp.math.log_add_exp(a, b)",
        "special.lbeta(a, b)",
        "x",
        # functions of the project: a name is no evidence of a range (issue 22)
        "_ndtr(x)",
        "my_normal_cdf(x)",
        "log1psquare(x)",
        # a library function outside the table: no range from a pattern of its name
        "special_math.log_ndtr_lower(x)",
        "numeric.log1psquare(x)",
    ],
)
def test_functions_outside_the_table_have_no_range(text):
    assert domain_code.call_domain(ctx_of(IMPORTS), text) is None


def probe_of(code: str, rule: str, needs: str = "") -> dict:
    text = textwrap.dedent(code)
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    result = lint_source(Source("m.py", text, text.encode()), options)
    assert not result.errors, result.errors
    [finding] = [f for f in result.findings if f.rule == rule and needs in f.source_line]
    return finding.probe


def test_a_name_bound_to_a_bessel_function_is_positive_in_the_probe():
    probe = probe_of(
        """\
        import tensorflow as tf
        import tensorflow_probability as tfp


        def ive(v, x):
            kve = tfp.math.bessel_kve(v, x)
            kvep1 = tfp.math.bessel_kve(v + 1., x)
            return tf.math.reciprocal(x * (kve - kvep1))
        """,
        "TNL206",
    )
    [d] = [d for d in probe["domains"] if d["name"] == "kve"]
    assert (d["lo"], d["lo_open"], d["strong"]) == (0.0, True, True)
    assert "bessel_kve" in d["why"]


def test_an_identity_matrix_is_probed_at_its_diagonal():
    probe = probe_of(
        """\
        import tensorflow as tf


        def ortho(ss, k):
            i_s = tf.eye(k)
            unit = i_s / tf.norm(i_s)
            return ss / tf.norm(ss) - unit
        """,
        "TNL201",
        "i_s /",
    )
    [spec] = [i for i in probe["inputs"] if i["name"] == "i_s"]
    assert spec["lo"] == spec["hi"] == 1.0


def test_a_witness_outside_a_log1mexp_range_is_refuted():
    ctx = ctx_of(IMPORTS)
    d = domain_code.call_domain(ctx, "tfp.math.log1mexp(x)")
    probe = {"domains": [{**asdict(d), "lo": "-inf", "hi": 0.0}]}
    out = {"status": "confirmed", "symptom": "inf-value", "inputs": {d.name: 100.0}}
    verdict = gates.judge(probe, out)
    assert verdict["status"] == "refuted" and "log1mexp" in verdict["detail"]


# ------------------------------------------------ indices: top_k's second output, argsort

# Review round 16 (tf-models-official's moe.py): a witness set the indices `top_k` returned
# to -1, which no top_k gives; `{indices}` binds `idx`.
ROUTE = """\
    import tensorflow as tf


    def route(p, k, n):
        {indices}
        mask = tf.one_hot(idx, n, dtype=p.dtype)
        combined = tf.expand_dims(p, axis=2) * mask
        total = tf.math.reduce_sum(mask)
        return tf.math.reduce_sum(combined) / total
    """


def route_probe(indices: str) -> dict:
    return probe_of(ROUTE.replace("{indices}", indices), "TNL201")


def index_domain(probe: dict, name: str) -> dict | None:
    found = [d for d in probe.get("domains") or [] if d["name"] == name and d.get("integer")]
    return found[0] if found else None


@pytest.mark.parametrize(
    "indices, name",
    [
        ("_, idx = tf.math.top_k(p, k=k, sorted=False)", "idx"),
        ("idx = tf.nn.top_k(p, k=k)[1]", "idx"),
        ("idx = tf.math.top_k(p, k=k).indices", "tf.math.top_k(p, k=k).indices"),
        ("idx = tf.argsort(p)", "idx"),
    ],
)
def test_indices_are_whole_numbers_at_least_zero(indices, name):
    probe = route_probe(indices)
    dom = index_domain(probe, name)
    assert dom is not None and dom["strong"] and dom["lo"] == 0.0, probe.get("domains")
    witness = {
        "status": "confirmed",
        "symptom": "nan-value",
        "detail": f"at {name} = -1, x / 0 = nan",
        "dtype": "float32",
        "inputs": {"p": 1.0, name: -1.0},
        "observed": {"needed": [name]},
    }
    verdict = gates.judge(probe, witness)
    assert verdict["status"] == "refuted", verdict
    assert "whole number" in verdict["detail"]


@pytest.mark.parametrize(
    "values, indices",
    [
        ("idx, _ = tf.math.top_k(p, k=k)", "_, idx = tf.math.top_k(p, k=k)"),
        ("idx = tf.nn.top_k(p, k=k)[0]", "idx = tf.nn.top_k(p, k=k)[1]"),
    ],
)
def test_top_k_values_are_no_indices(values, indices):
    assert index_domain(route_probe(values), "idx") is None
    assert index_domain(route_probe(indices), "idx") is not None


def test_an_index_past_the_depth_of_its_one_hot_is_no_witness():
    """Inside [0, inf), a witness can still put the index past the one_hot's depth (a row of
    zeros): no top_k over that axis gives such an index, so it does not confirm."""
    probe = route_probe("_, idx = tf.math.top_k(p, k=k, sorted=False)")
    [depth] = {n["v"] for n in walk(probe["target"]) if n.get("k") == "const" and n.get("assumed")}
    witness = {
        "status": "confirmed",
        "symptom": "nan-value",
        "detail": "x / 0 = nan",
        "dtype": "float32",
        "inputs": {"p": 1.0, "idx": float(depth) + 96.0},
        "observed": {"needed": ["idx"]},
    }
    verdict = gates.judge(probe, witness)
    assert verdict["status"] == "inconclusive", verdict
    assert f"past the depth {depth:g} of the one_hot it indexes" in verdict["detail"]
    inside = {**witness, "inputs": {"p": 1.0, "idx": 1.0}}
    assert gates.judge(probe, inside)["status"] == "confirmed"
