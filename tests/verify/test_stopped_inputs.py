"""A gradient symptom with respect to a value computed from ``tf.stop_gradient`` is one the
program never computes (d_fine's distillation loss: the teacher's softmax is detached, so its
"dead gradient" at a saturated teacher logit is no hazard).  The slicer marks such a cut input
``stopped``; the gradient gate refutes a symptom resting on it alone."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from conftest import differentiated
from test_reachability import probed
from test_reachability_gate import verify

DISTILL = """\
    import tensorflow as tf


    def distill(student_logits, teacher_logits, temperature):
        teacher = tf.reshape(tf.stop_gradient(teacher_logits), [-1, 10])
        t = tf.nn.softmax(teacher / temperature, axis=-1)
        s = tf.nn.softmax(student_logits / temperature, axis=-1)
        return tf.reduce_sum(t * (tf.math.log(t + 1e-8) - tf.math.log(s + 1e-8)))
    """


def _findings(src: str):
    return sorted(
        (f for f in probed(src, select=["TNL102"]) if f.rule == "TNL102"), key=lambda f: f.column
    )


def test_the_teachers_logits_are_marked_stopped_and_the_students_are_not():
    teacher, student = _findings(DISTILL)
    [t_spec] = [s for s in teacher.probe["inputs"] if s["origin"] == "logits" and s.get("stopped")]
    assert t_spec["stopped"] == "tf.stop_gradient(teacher_logits)"
    assert not any(s.get("stopped") for s in student.probe["inputs"] if s["name"] != t_spec["name"])


def test_a_dead_gradient_of_the_detached_teacher_is_refuted_and_the_student_keeps_its_verdict():
    teacher, student = _findings(DISTILL)
    t_out, s_out = verify(teacher.probe), verify(student.probe)
    assert t_out["status"] == "refuted", t_out
    assert s_out["status"] != "refuted", s_out


@pytest.mark.parametrize("trained", [True, False])
def test_the_gate_names_the_stop_gradient_a_dead_teacher_gradient_rests_on(trained):
    """Whether the search's grid reaches the teacher's exact saturation depends on whether
    the CPU flushes subnormals (softmax's exp(-100) is 3.7e-44, or 0): the gate's reason is
    checked on the witness itself, a dead gradient with respect to the stopped input.  Without
    a training step the loss has no caller, which alone would make the symptom conditional:
    the stopped input is a code fact about the witness, and it refutes first."""
    from tfnumlint.verify import gradient_gate

    src = differentiated(DISTILL, "distill") if trained else DISTILL  # a training step's loss
    teacher, _ = _findings(src)
    assert bool(teacher.probe.get("no_gradient_likely")) is not trained
    name = next(s["name"] for s in teacher.probe["inputs"] if s.get("stopped"))
    witness = {
        "status": "confirmed",
        "symptom": "dead-gradient",
        "detail": f"at {name} = [-110, 0], log(t + 1e-08) = -18.42",
        "inputs": {name: -110.0},
        "observed": {"loss_gradient": {name: 0.0}},
    }
    out = gradient_gate.apply(teacher.probe, witness)
    assert out["status"] == "refuted", out
    assert "computed from `tf.stop_gradient(teacher_logits)`" in out["detail"], out


@pytest.mark.parametrize(
    ("expr", "stopped"),
    [
        ("tf.stop_gradient(z) / 2.0", True),
        ("tf.cast(tf.stop_gradient(z), tf.float32) * 3.0", True),
        ("z / tf.stop_gradient(tf.norm(z))", False),  # the numerator carries the gradient
        ("tf.stop_gradient(z) + z", False),
    ],
)
def test_what_counts_as_stopped(expr, stopped):
    src = f"""\
    import tensorflow as tf


    def f(z):
        return tf.math.log(tf.nn.softmax({expr}) + 1e-8)
    """
    [finding] = _findings(src)
    specs = [s for s in finding.probe["inputs"] if s["origin"] == "logits"]
    assert specs and all(bool(s.get("stopped")) == stopped for s in specs), specs
