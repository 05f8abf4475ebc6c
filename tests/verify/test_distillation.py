"""A distillation KL between a teacher and a student softmax: the student's eps-guarded log
loses its gradient once the student saturates, even though the teacher's logits keep a live
gradient of their own (they are not what the flagged log reads)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from conftest import differentiated  # noqa: E402
from test_reachability_gate import verdicts  # noqa: E402

KL = """\
    import tensorflow as tf


    def distill(student_logits, teacher_logits, temperature):
        student = tf.nn.softmax(student_logits / temperature, axis=-1)
        teacher = tf.nn.softmax(teacher_logits / temperature, axis=-1)
        kl = tf.reduce_sum(
            teacher * (tf.math.log(teacher + 1e-8) - tf.math.log(student + 1e-8)), axis=-1
        )
        return tf.reduce_mean(kl)
"""
# the batch mean makes `distill` a training objective by its structure (its logits are driven);
# it was one before by the word `distill` in its name


def test_the_students_guarded_log_has_a_dead_gradient_in_a_kl_against_a_teacher():
    # a training step differentiates `distill`: its gradient symptoms are those of a loss
    teacher_term, student_term = verdicts(differentiated(KL, "distill"), "TNL102")
    # found and reported; it needs a logit gap past 100, a far tail (preconditions.py)
    assert student_term["status"] == "inconclusive", student_term
    assert "past the float32 exp range" in student_term["detail"].split(" (seen: ")[0]
    assert student_term["symptom"] == "dead-gradient"
    assert student_term["observed"]["loss_gradient"]["student_logits / temperature"] == 0.0
    assert "dloss/d(student_logits / temperature) = 0" in student_term["detail"]
    # the teacher's own log: its gradient is alive wherever the loss is above its minimum
    assert teacher_term["status"] != "confirmed", teacher_term


def test_a_kl_whose_student_is_clipped_leaves_only_the_teachers_log_unconfirmed():
    clipped = KL.replace(
        "tf.math.log(student + 1e-8)", "tf.math.log(tf.clip_by_value(student, 1e-7, 1.0))"
    )
    [teacher_term] = verdicts(clipped, "TNL102")
    assert teacher_term["status"] != "confirmed", teacher_term
