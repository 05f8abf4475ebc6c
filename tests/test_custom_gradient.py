"""Gradient-only symptoms inside custom-gradient code are not confirmed: the decorated function
and the forward passed to ``custom_gradient`` have their gradient replaced, the gradient rules
are derivatives nobody differentiates again, and private helpers called only from there
inherit it.  One snippet per context; value symptoms still count everywhere."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tfnumlint.analysis import gradflow
from tfnumlint.analysis.module import build
from tfnumlint.verify import gradient_gate

TFP_STYLE = """\
    import tensorflow as tf
    import tensorflow_probability as tfp
    from tensorflow_probability.python.internal import custom_gradient as tfp_custom_gradient


    def _impl(x):
        return tf.where(x > 0, tf.math.log(x), x)


    def _helper_of_helper(x):
        return tf.sqrt(x)


    def _partials(x):
        return 1. / _helper_of_helper(x)


    def _fwd(x):
        return _impl(x), x


    def _bwd(x, g):
        return g * _partials(x)


    def _jvp(primals, tangents):
        return _impl(primals[0]), tangents[0] / primals[0]


    @tfp_custom_gradient.custom_gradient(vjp_fwd=_fwd, vjp_bwd=_bwd, jvp_fn=_jvp)
    def _with_gradient(x):
        return _impl(x)


    def _shared(x):
        return tf.math.log(x)


    def public(x):
        return _with_gradient(x) + _shared(x)


    def other(x):
        return _shared(x)


    @tf.custom_gradient
    def clipped(x):
        def grad(dy):
            return dy / tf.norm(x)
        return tf.identity(x), grad


    def _plain_forward(x):
        return tf.sqrt(x)


    wrapped = tf.custom_gradient(_plain_forward)
    lam = tfp_custom_gradient.custom_gradient(
        vjp_fwd=lambda x: (_lambda_only(x), x), vjp_bwd=lambda x, dy: dy)(public)


    def _lambda_only(x):
        return tf.math.log(x)


    def _expansion(x):
        return tf.sqrt(tf.math.log1p(tf.square(x)))


    def _partials_by_autodiff(x, g):
        return g * tfp.math.gradient.value_and_gradient(lambda z: _expansion(z), x)[1]


    def _plain_bwd_helper(x):
        return _expansion(x)


    late = tfp_custom_gradient.custom_gradient(
        vjp_fwd=_fwd, vjp_bwd=_partials_by_autodiff)(_plain_bwd_helper)
    """


@pytest.fixture(scope="module")
def scopes():
    info = build(cst.parse_module(textwrap.dedent(TFP_STYLE)))
    out = {}
    for site in info.calls:
        s = site.scope
        while s is not None and s.kind == "function" and not hasattr(s.node, "name"):
            s = s.parent  # a lambda: name it by the function around it, if any
        name = s.name if s is not None and s.kind == "function" else "<module>"
        out.setdefault(name, site.scope)
    return out


def reason(scopes, name):
    return gradflow.context_of_scope(scopes[name], "special.py")


def test_the_decorated_function_defines_its_own_gradient(scopes):
    assert "defines its own gradient" in reason(scopes, "_with_gradient")


def test_the_forward_passed_to_custom_gradient(scopes):
    assert "`_fwd` is the forward of a custom_gradient" in reason(scopes, "_fwd")


def test_tf_custom_gradient_applied_to_a_function_marks_it_as_a_forward(scopes):
    assert "`_plain_forward` is the forward" in reason(scopes, "_plain_forward")


@pytest.mark.parametrize("name", ["_bwd", "_jvp"])
def test_gradient_rules_are_not_differentiated_again(scopes, name):
    assert "second derivative" in reason(scopes, name)


def test_the_nested_grad_of_a_decorated_function(scopes):
    assert "`clipped` defines its own gradient" in reason(scopes, "grad")


@pytest.mark.parametrize("name", ["_impl", "_partials", "_helper_of_helper", "_lambda_only"])
def test_private_helpers_called_only_from_custom_gradient_code(scopes, name):
    assert "only called from custom-gradient code" in reason(scopes, name)


@pytest.mark.parametrize("name", ["_shared", "public", "other"])
def test_helpers_with_an_ordinary_caller_keep_their_gradient(scopes, name):
    assert reason(scopes, name) is None


def test_a_gradient_symptom_there_is_refuted_and_a_value_symptom_is_not():
    probe = {"no_gradient": "`_bwd` is the gradient rule of a custom_gradient"}
    grad = gradient_gate.apply(probe, {"status": "confirmed", "symptom": "nan-gradient"})
    value = gradient_gate.apply(probe, {"status": "confirmed", "symptom": "inf-value"})
    assert grad["status"] == "refuted" and "gradient rule" in grad["detail"]
    assert value["status"] == "confirmed"


def test_a_helper_a_gradient_rule_differentiates_explicitly_keeps_its_gradient(scopes):
    assert "second derivative" in reason(scopes, "_partials_by_autodiff")
    assert reason(scopes, "_expansion") is None  # value_and_gradient takes its derivative
