"""Masked positive values and Gram products (issue 11).

``s = softmax(z) * mask`` is 0 only where the mask is: a witness needing ``s`` all-zero needs an
empty mask, a precondition on the batch (inconclusive), not a confirmed zero.  A ReLU output
times a mask is 0 by itself (a dead unit) and stays confirmed.  A Gram product ``sᵀ s`` of such
a value is zero only when ``s`` is: an empty selection too for a masked softmax, and never for a
plain one.  An identity matrix cut as an input is set to one value everywhere by the probe (an
all-ones matrix), so a witness resting on it is no confirmation.

Snippets are linted as a project (the value reaches the loss helper as a caller's argument) and
verified in-process.
"""

from __future__ import annotations

import libcst as cst
import pytest

tf = pytest.importorskip("tensorflow")

from test_caller_ranges import probes  # noqa: E402
from test_project import project  # noqa: E402
from test_reachability_gate import verify  # noqa: E402

from tfnumlint.analysis.domain_relations import gram_factor  # noqa: E402

POOL = """\
    import tensorflow as tf
    from tensorflow.keras import layers
    from graphkit import ops


    class Pool(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.assign = layers.Dense(self.k, "{act}")

        def select(self, x, mask=None):
            s = {product}
            self.add_loss(self.collapse_loss(s))
            self.add_loss(self.orthogonality_loss(s))
            return s

        def collapse_loss(self, s):
            return tf.norm(tf.reduce_sum(s, axis=-2), axis=-1)

        def orthogonality_loss(self, s):
            ss = {gram}
            return tf.reduce_sum(ss / tf.norm(ss, axis=(-1, -2), keepdims=True))
    """

MASKED = [
    "self.assign(x) * mask[0]",
    "tf.multiply(self.assign(x), mask)",
    "self.assign(x) * tf.cast(mask, tf.float32)",
]
GRAM = "ops.modal_dot(s, s, transpose_a=True)"


def verdicts(tmp_path, act: str, product: str, gram: str = GRAM) -> dict[str, dict]:
    """Rule -> verdict of the snippet's collapse (TNL203) and orthogonality (TNL201) findings."""
    src = POOL.format(act=act, product=product, gram=gram)
    root = project(tmp_path, {"pool.py": src})
    out = {}
    for rule in ("TNL203", "TNL201"):
        [probe] = probes(root, "pool.py", rule)
        out[rule] = verify(probe)
    return out


def assert_empty_mask(out: dict) -> None:
    assert out["status"] == "inconclusive", out
    reason = out["detail"].split(" (seen: ")[0]
    assert reason.startswith("needs an empty selection: every entry of `"), out
    assert "mask" in reason.split("`")[1], out  # the mask's own code is named


@pytest.mark.parametrize("product", MASKED)
def test_a_masked_softmax_is_zero_only_on_an_empty_mask(tmp_path, product):
    out = verdicts(tmp_path, "softmax", product)
    assert_empty_mask(out["TNL203"])  # the column sums of s
    assert_empty_mask(out["TNL201"])  # its Gram product


def test_an_augmented_masking_in_a_branch_is_the_same_masked_softmax(tmp_path):
    product = "self.assign(x)\n            if mask is not None:\n                s *= mask[0]"
    assert_empty_mask(verdicts(tmp_path, "softmax", product)["TNL203"])


def test_a_masked_relu_output_stays_confirmed(tmp_path):
    # a ReLU output is 0 by itself (a dead unit): the zero sum needs no empty mask
    out = verdicts(tmp_path, "relu", "self.assign(x) * mask[0]")
    assert out["TNL203"]["status"] == "confirmed", out


@pytest.mark.parametrize(
    "gram",
    [GRAM, "graphkit.batch_dot(s, s, transpose_b=True)", "ops.modal_dot(s, s, adjoint_a=True)"],
)
def test_the_untraced_gram_product_of_a_softmax_is_never_zero(tmp_path, gram):
    # the cut value gets the Gram domain: positive (its diagonal holds squared norms > 0)
    root = project(
        tmp_path, {"pool.py": POOL.format(act="softmax", product="self.assign(x)", gram=gram)}
    )
    [probe] = probes(root, "pool.py", "TNL201")
    [dom] = [d for d in probe["domains"] if d["name"] == "ss"]
    assert (dom["lo"], dom["lo_open"], dom["strong"]) == (0.0, True, True), dom
    assert "Gram product of the softmax output `s`" in dom["why"], dom
    out = verify(probe)
    assert out["status"] != "confirmed" and out["inputs"]["ss"] > 0, out


def test_the_untraced_product_of_a_softmax_with_another_value_gets_no_gram_domain(tmp_path):
    src = POOL.format(
        act="softmax", product="self.assign(x)", gram="ops.modal_dot(s, x, transpose_a=True)"
    )
    [probe] = probes(project(tmp_path, {"pool.py": src}), "pool.py", "TNL201")
    assert not [d for d in probe.get("domains") or [] if d["name"] == "ss"], probe


def test_the_gram_product_of_a_linear_output_stays_confirmed(tmp_path):
    # a linear layer's output is 0 for a zero input: sᵀ s = 0 is a value the code receives
    out = verdicts(tmp_path, "linear", "self.assign(x)")["TNL201"]
    assert (out.get("inputs") or {}).get("ss") == 0, out
    assert out["status"] == "confirmed", out


@pytest.mark.parametrize(
    "code, factor",
    [
        ("ops.modal_dot(s, s, transpose_a=True)", "s"),
        ("tf.matmul(s, s, transpose_b=True)", "s"),
        ("s @ tf.transpose(s)", "s"),
        ("tf.transpose(s) @ s", "s"),
        ("tf.einsum('ij,ik->jk', s, s)", "s"),
        ("tf.matmul(s, t, transpose_a=True)", None),  # two values: no Gram product
        ("tf.matmul(s, s)", None),  # s s: a square, not sᵀ s
        ("tf.matmul(s, s, transpose_a=True, transpose_b=True)", None),
        ("tf.einsum('ij,jk->ik', s, s)", None),
    ],
)
def test_gram_products_are_recognised_by_their_shape(code, factor):
    assert gram_factor(cst.parse_expression(code)) == factor


EYE = """\
    import tensorflow as tf


    def orthogonality_loss(ss, k):
        i_s = tf.eye(k, dtype=ss.dtype)
        return tf.norm(ss / tf.norm(ss, axis=(-1, -2), keepdims=True) - i_s / tf.norm(i_s),
                       axis=(-1, -2))


    def train_step(model, x, k, opt):
        # the loss is what training differentiates, so `ss` is driven (a model's output)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(orthogonality_loss(model(x), k))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    """


def eye_verdicts(tmp_path) -> list[dict]:
    return [verify(p) for p in probes(project(tmp_path, {"loss.py": EYE}), "loss.py", "TNL203")]


def test_an_identity_matrix_set_to_one_value_is_no_witness(tmp_path):
    # ss / |ss| - I / |I| = 0 at every ss only because the probe's I is all ones
    [whole] = [o for o in eye_verdicts(tmp_path) if o["observed"]["needed"] == []]
    assert whole["status"] == "inconclusive", whole
    assert whole["detail"].startswith("sets the identity matrix `i_s` to 1 everywhere"), whole


def test_a_witness_needing_another_input_next_to_the_identity_keeps_its_verdict(tmp_path):
    # norm(ss) at ss = 0: a zero Gram matrix passed in is a real hazard, whatever I is
    [zero] = [o for o in eye_verdicts(tmp_path) if o["observed"]["needed"] == ["ss"]]
    assert zero["status"] == "confirmed", zero
