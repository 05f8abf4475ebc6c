"""Issue 22: a gradient symptom needs a path from the hazard to a differentiation root.  A
function with no caller in the project has free inputs and nothing in view differentiates
it, so its gradient-only symptom is conditional on a caller that does (``analysis/roots.py``,
``analysis/gradflow.py``); the same function differentiated by a training step keeps its
confirmation, at the same witness.

Snippets are sliced by the real static pass and verified in-process.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from conftest import func, trained_func
from test_reachability_gate import one_verdict

# the norm of a difference is 0 where x = y, and its gradient there is nan (a gradient-only
# symptom: the value itself is a finite 0)
BODY = "return tf.reduce_mean(tf.norm(x - y, axis=-1))"


def test_a_gradient_symptom_without_a_caller_is_conditional_and_confirmed_once_trained():
    free = one_verdict(func(BODY, "x, y"), "TNL203")
    trained = one_verdict(trained_func(BODY, "x, y"), "TNL203")

    assert trained["status"] == "confirmed", trained
    assert trained["symptom"] == "nan-gradient", trained

    assert free["status"] == "inconclusive", free
    assert free["symptom"] == trained["symptom"], free
    assert free["inputs"] == trained["inputs"], (free, trained)  # the same witness
    seen, _, condition = free["detail"].partition("; conditional: ")
    assert seen == trained["detail"], (free, trained)
    assert condition.startswith("`f` has no caller in the project"), free
    # the condition is its own gate, after those that may state a sharper one
    step = [s for s in free["trail"] if s["gate"] == "conditional"]
    assert step and step[0]["status"] == "inconclusive", free["trail"]
    assert "no caller in the project" in step[0]["why"], free["trail"]
    step = [s for s in trained["trail"] if s["gate"] == "conditional"]
    assert step and step[0]["status"] == "confirmed", trained["trail"]
