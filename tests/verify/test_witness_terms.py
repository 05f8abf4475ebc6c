"""Issue 24 item 2: a witness is about the exact term its finding underlines.

For every confirmed finding the tool reports on ``examples/``, the underlined source text is
written out here by hand (the table), evaluated with TensorFlow at the witness's stated
values, and must itself show the stated symptom: an inf/NaN value, a NaN gradient, or, for a
dead gradient, a value stuck >= 1 below what the same term is at an ordinary logit with a zero
gradient.  A confirmed finding missing from the table fails the test, so a new example gets
its term written out too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

tf = pytest.importorskip("tensorflow")

from conftest import run_json  # noqa: E402

F32 = tf.float32
Term = Callable[[dict], object]

# (path, line, column) -> (the underlined text, as code over the witness's inputs)
TERMS: dict[tuple[str, int, int], tuple[str, Term]] = {
    ("examples/autoencoder_keras.py", 23, 66): (
        "tf.math.log(1e-10 + 1 - p_pred)",
        lambda v: tf.math.log(tf.constant(1e-10, F32) + 1 - v["p_pred"]),
    ),
    ("examples/autoencoder_keras.py", 23, 78): (
        "1e-10 + 1",
        lambda v: tf.constant(1e-10, F32) + tf.constant(1.0, F32),
    ),
    ("examples/autoencoder_tf1.py", 16, 23): (
        "P * tf.log(P_pred + 1e-10)",
        lambda v: v["P"] * tf.math.log(tf.sigmoid(v["logits"]) + 1e-10),
    ),
    ("examples/autoencoder_tf1.py", 16, 69): (
        "tf.log(1 - P_pred + 1e-10)",
        lambda v: tf.math.log(1 - tf.sigmoid(v["logits"]) + 1e-10),
    ),
    ("examples/metric_learning.py", 7, 13): (
        "tf.norm(anchor - positive, axis=-1)",
        lambda v: tf.norm(v["anchor"] - v["positive"], axis=-1),
    ),
    ("examples/metric_learning.py", 8, 13): (
        "tf.sqrt(tf.reduce_sum(tf.square(anchor - negative), axis=-1))",
        lambda v: tf.sqrt(tf.reduce_sum(tf.square(v["anchor"] - v["negative"]), axis=-1)),
    ),
    ("examples/metric_learning.py", 18, 12): (
        "x / activity",
        lambda v: v["x"] / tf.reduce_sum(tf.nn.relu(v["x"]), axis=-1, keepdims=True),
    ),
}
SIMULATED = ("TNL501", "TNL502", "TNL505", "TNL506")  # a training run, not a term, is the witness


@pytest.fixture(scope="module")
def findings() -> list[dict]:
    return run_json("--exit-zero", "examples")["findings"]


@pytest.fixture(scope="module")
def confirmed(findings) -> list[dict]:
    return [  # confirmed at a witness (a training run's confirmation has its own reproducer)
        f
        for f in findings
        if (f.get("verification") or {}).get("status") == "confirmed"
        and f["rule"] not in SIMULATED
        and f.get("rung") == "witness"
    ]


def _variables(inputs: dict) -> tuple[dict, dict]:
    """The witness's inputs as float32 [1, 1] variables; a probability comes from its logit."""
    watched = {}
    for name, value in inputs.items():
        if name.startswith("logit("):
            continue
        logit = inputs.get(f"logit({name})")
        watched[name] = tf.Variable([[float(logit if logit is not None else value)]], dtype=F32)
    return watched, {n: f"logit({n})" in inputs for n in watched}


def _evaluate(
    term: Term, inputs: dict, compiled: bool = False, **moved: float
) -> tuple[float, dict]:
    """The term's value and its gradient w.r.t. each input (w.r.t. the logit of a
    probability), at the witness with ``moved`` inputs (by their logit) changed; ``compiled``:
    inside a ``tf.function``, as the user's code runs, with TensorFlow's graph optimizer on."""
    watched, is_prob = _variables(inputs)
    for name, v in moved.items():
        watched[name].assign([[v]])

    def run():
        with tf.GradientTape(persistent=True) as tape:
            values = {
                n: tf.sigmoid(x) if is_prob[n] else tf.identity(x) for n, x in watched.items()
            }
            out = tf.reduce_sum(term(values))
        return out, {n: tape.gradient(out, x) for n, x in watched.items()}

    out, grads = tf.function(run)() if compiled else run()
    return float(out), {n: (0.0 if g is None else float(g[0, 0])) for n, g in grads.items()}


def _shows(symptom: str, term: Term, inputs: dict, observed: dict, detail: str = "") -> bool:
    value, grads = _evaluate(term, inputs, compiled=detail.startswith("only when compiled"))
    if symptom == "inf-value":
        return math.isinf(value)
    if symptom == "nan-value":
        return math.isnan(value)
    if symptom == "nan-gradient":
        return math.isfinite(value) and any(math.isnan(g) for g in grads.values())
    if symptom == "epsilon-absorbed":
        return value == 1.0
    if symptom == "dead-gradient":
        logits = [n for n in grads if f"logit({n})" in inputs] or [
            n for n in grads if abs(float(inputs[n])) >= 17
        ]
        ordinary, _ = _evaluate(term, inputs, **dict.fromkeys(logits, 0.0))
        stated = float(observed["value"])
        return (
            value == pytest.approx(stated, abs=1e-3)
            and all(grads[n] == 0.0 for n in logits)
            and value <= ordinary - 1.0  # the term, not another one, is stuck at its floor
        )
    raise AssertionError(f"no independent check for {symptom!r}")


def test_every_confirmed_example_finding_has_its_term_written_out(confirmed):
    missing = [
        (f["path"], f["line"], f["column"], f["rule"])
        for f in confirmed
        if (f["path"], f["line"], f["column"]) not in TERMS
    ]
    assert not missing, f"add the underlined term of these findings to TERMS: {missing}"
    # the check sees witnesses (metric_learning's `x / activity` left them: `normalise_rows`
    # has no caller, so its witness on the sign of `x` is a stated condition)
    assert len(confirmed) >= 3


def test_each_witness_shows_its_symptom_in_the_underlined_term_itself(confirmed):
    wrong = []
    for f in confirmed:
        key = (f["path"], f["line"], f["column"])
        if key not in TERMS:
            continue
        text, term = TERMS[key]
        v = f["verification"]
        if v["detail"].startswith("only when compiled"):
            continue  # grappler's folding is reproduced by the finding's --emit-repro script (test_repro)
        if not _shows(
            v["symptom"], term, v.get("inputs") or {}, v.get("observed") or {}, v["detail"]
        ):
            wrong.append(f"{key} {f['rule']} `{text}`: {v['detail']}")
    assert not wrong, "\n".join(wrong)


def test_the_two_log_terms_of_the_tf1_loss_get_witnesses_of_their_own(findings, confirmed):
    """log(P_pred + eps) is stuck at logits -> -inf with a label of 1, log(1 - P_pred + eps)
    at logits -> +inf with a label of 0: opposite logits, opposite labels.  The first needs
    logits = -100: since its logits feed `minimize` (reachability, no longer a name), they are
    driven and the far-tail gate makes that term inconclusive; its witness is unchanged."""
    by_col = {
        f["column"]: f["verification"]
        for f in findings
        if f["path"] == "examples/autoencoder_tf1.py" and f["line"] == 16
    }
    first, second = by_col[23], by_col[69]
    assert first["status"] == "inconclusive" and "past the float32 exp range" in first["detail"]
    assert first["inputs"]["logits"] < -16 and first["inputs"]["P"] == 1.0
    # the second is reached by the program's own training (compiled, 1 + 1e-10 is 1): the
    # run's first non-finite value starts at this term, on one of the program's rows
    assert (
        second["status"] == "confirmed"
        and "its value is the first to be non-finite" in second["detail"]
    )


def test_a_dead_gradient_names_the_logit_under_the_log_not_the_labels(findings):
    """In ``p * log(p_pred + 1e-10)`` the label ``p`` is modelled as a sigmoid too, but the
    gradient that dies is the one of ``p_pred``'s logit."""
    [xent] = [
        f
        for f in findings
        if f["path"] == "examples/autoencoder_keras.py" and f["rule"] == "TNL103"
    ]
    detail = xent["verification"]["detail"]
    assert "dloss/dlogit(p_pred) = 0" in detail and "dlogit(p) " not in detail
