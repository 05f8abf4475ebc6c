"""keras.applications architectures (weights=None, 32x32 inputs) saved and linted: nothing
confirmed, at most one shown finding each.  Slow (minutes): run with ``--slow``.

What the graphs hold, and why none of it is shown:
- every batch norm is ``(x - mean) * rsqrt(variance + 1.001e-5)``: the Rsqrt input is the
  stored variance plus the epsilon, >= 1.001e-5 with these weights, so TNL206 is refuted by
  range; the epsilon survives ``1 + 1.001e-5`` in float32, so TNL401 does not apply;
- the classifier ends in a Softmax that nothing takes the log of (no TNL101);
- EfficientNetB0's Normalization divides by ``maximum(sqrt(variance), eps)`` of stored
  constants, and its swish is ``x * sigmoid(x)``: no danger zone is reached.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")
import keras

from tfnumlint.discovery import Candidate
from tfnumlint.models import ModelOptions, to_result
from tfnumlint.ruledocs import all_docs
from tfnumlint.verify.graphs.lint import lint_model

ARCHITECTURES = ("ResNet50", "MobileNetV2", "EfficientNetB0", "DenseNet121")
# the one finding a model may show, with the reason it is expected (none so far)
EXPLAINED: dict[str, set[str]] = {name: set() for name in ARCHITECTURES}


@pytest.fixture
def slow(request):
    if not request.config.getoption("--slow"):
        pytest.skip("builds and lints four keras.applications models: run with --slow")


@pytest.mark.slow
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_an_application_model_has_nothing_confirmed(slow, tmp_path, name):
    model = getattr(keras.applications, name)(weights=None, input_shape=(32, 32, 3))
    path = tmp_path / name
    model.export(str(path), verbose=False)
    answer = lint_model({"path": str(path)})
    assert "error" not in answer, answer
    findings = to_result(
        Candidate(path, name), answer, ModelOptions(frozenset(all_docs()))
    ).findings
    assert findings, "the batch norms' rsqrt must at least be checked (and refuted)"
    assert not [f for f in findings if f.verification.status == "confirmed"]
    shown = [f for f in findings if f.verification.status != "refuted"]
    assert len(shown) <= 1, [(f.rule, f.source_line, f.verification.detail) for f in shown]
    assert {f.rule for f in shown} <= EXPLAINED[name]
