"""The compiled form (issue 23): probes and fix proofs evaluated as the user's compiled code
runs them, with TensorFlow's graph optimizer on, next to the eager-exact form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from probe_helpers import binop, call, const, expr, free, inp, prob  # noqa: E402

from tfnumlint.rules.recipes import Recipe  # noqa: E402
from tfnumlint.verify import probing, proving  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def eager_numerics():
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def one_minus_sigmoid_log() -> dict:
    """log(1 - sigmoid(z) + 1e-10): the epsilon survives eagerly, not compiled."""
    s = call("sigmoid", inp("z"))
    return call("log", binop("+", binop("-", const(1), s), const(1e-10)))


def test_a_nan_inf_only_the_compiled_form_shows_is_the_verdict_and_says_why():
    out = probing.verify(expr("TNL102", one_minus_sigmoid_log(), [free("z")], eps=1e-10), 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "inf-value")
    assert out["detail"].startswith(
        "only when compiled: TensorFlow's graph optimizer folds 1 + 1e-10 to 1"
    )
    assert out["observed"]["form"] == "compiled"
    assert out["observed"]["eager_value"] == "-23.03"
    assert out["observed"]["value"] == "-inf"
    assert out["inputs"]["z"] == 17.0  # the mildest point where sigmoid rounds to 1


def test_eager_form_alone_sees_only_the_dead_gradient():
    probe = expr("TNL102", one_minus_sigmoid_log(), [free("z")], eps=1e-10)
    out = probing.verify({**probe, "forms": ["eager"]}, 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "dead-gradient")
    assert "compiled" not in out["detail"]


def test_eager_refutes_and_only_the_compiled_form_confirms():
    """A recipe that looks for NaN/Inf values only: eagerly the value is -23.03 at worst."""
    probe = expr("TNL102", one_minus_sigmoid_log(), [free("z")], eps=1e-10)
    probe["recipe"] = Recipe(symptoms=("inf-value", "nan-value"), only_listed=True).as_probe()
    eager = probing.verify({**probe, "forms": ["eager"]}, 1e6)
    assert eager["status"] == "refuted"
    both = probing.verify(probe, 1e6)
    assert (both["status"], both["symptom"]) == ("confirmed", "inf-value")
    assert "only when compiled" in both["detail"]


def test_no_compiled_verdict_where_the_compiled_form_agrees():
    """log(sigmoid(z) + 1e-10) has one constant: nothing to fold, the eager verdict stands."""
    target = call("log", binop("+", call("sigmoid", inp("z")), const(1e-10)))
    out = probing.verify(expr("TNL102", target, [free("z")], eps=1e-10), 1e6)
    assert out["status"] == "confirmed"
    assert "compiled" not in out["detail"]


def fix_job(new: dict) -> dict:
    orig = call("log", binop("+", binop("-", const(1), inp("p")), const(1e-10)))
    return {"orig": orig, "new": new, "inputs": [prob("p")], "dtype": "float32", "eps": 1e-7}


def test_a_rewrite_that_holds_only_eagerly_is_not_proven():
    """``log(1 - p + 1e-10)`` is finite eagerly at p = 1 and -inf compiled."""
    job = fix_job(call("log", binop("+", binop("-", const(1), inp("p")), const(1e-10))))
    names = ["p"]
    pts, n, _ = proving.points(job, proving.shape_for(job))
    eager = proving.evaluate(job["new"], names, pts, tf.float32, n, form="eager")
    assert np.isfinite(eager.value).all()  # the eager form alone would prove it
    out = proving.prove(job)
    assert out["verdict"] == "failed"
    assert "compiled" in out["detail"] and "non-finite" in out["detail"]


def test_a_fix_is_proven_under_both_forms():
    clipped = call("clip_by_value", binop("-", const(1), inp("p")), const(1e-7), const(1.0))
    out = proving.prove(fix_job(call("log", clipped)))
    assert out["verdict"] in ("safe", "unsafe"), out
    assert out["forms"] == ["eager", "compiled"]


def test_the_cli_confirms_the_compiled_symptom_in_a_tf_function(tmp_path: Path):
    (tmp_path / "model.py").write_text(
        "import tensorflow as tf\n\n"
        "dense = tf.keras.layers.Dense(1)\n\n\n"
        "@tf.function\n"
        "def train_step(x):\n"
        "    z = dense(x)\n"
        "    loss = tf.math.log(1 - tf.sigmoid(z) + 1e-10)\n"
        "    return loss\n"
    )
    env = {"PYTHONPATH": str(ROOT), "TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    env["TFNUMLINT_PROBE_TIMEOUT"] = "120"
    p = subprocess.run(
        [sys.executable, "-m", "tfnumlint", "--format", "json", "--exit-zero", "model.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )
    found = [f for f in json.loads(p.stdout)["findings"] if f["line"] == 9]
    assert found, p.stdout
    v = found[0]["verification"]
    assert (v["status"], v["symptom"]) == ("confirmed", "inf-value")
    assert "only when compiled: TensorFlow's graph optimizer folds 1 + 1e-10 to 1" in v["detail"]
    assert found[0]["rung"] == "witness"
