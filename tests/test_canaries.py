"""tfnumlint never runs the code it analyses, verification included.

Every place where Python would execute code on import or on a call gets a canary that
creates a file; after a full run with verification, no canary file may exist.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import run_cli


def _canary(tmp_path, name: str) -> str:
    return f"open({str(tmp_path / ('CANARY_' + name))!r}, 'w').write('ran')"


@pytest.fixture
def planted(tmp_path):
    c = lambda name: _canary(tmp_path, name)  # noqa: E731
    (tmp_path / "sibling.py").write_text(f"{c('sibling_import')}\nfactor = 1.0\n")
    (tmp_path / "train.py").write_text(
        textwrap.dedent(
            f"""\
            import tensorflow as tf
            import sibling
            from sibling import factor

            {c("top_level")}


            def deco(f):
                {c("decorator_body")}
                return f


            @deco
            def loss(logits, weight=({c("default_argument")})):
                p = tf.nn.softmax(logits * eval("{c("eval_in_slice")}"))
                q = p + __import__("os").system("touch {tmp_path / "CANARY_import_in_slice"}")
                return -tf.reduce_sum(tf.math.log(p)) + tf.math.log(q)


            class Model(tf.keras.Model):
                {c("class_body")}

                def __init__(self):
                    super().__init__()
                    self.scale = getattr(__builtins__, "exec")("{c("getattr_exec")}")

                def call(self, x):
                    probs = tf.nn.sigmoid(x * self.scale * sibling.factor)
                    exec("{c("exec_in_slice")}")
                    return tf.math.log(probs)


            def distance(a, b):
                return tf.norm(a - b + factor - factor, axis=-1)
            """
        )
    )
    cell = f"import tensorflow as tf\n{c('notebook_cell')}\np = tf.nn.softmax(tf.constant([1.0]))\nl = tf.math.log(p)\n"
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "source": cell,
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    return tmp_path


def test_no_canary_runs_with_verification_on(planted):
    proc = run_cli(
        "--format", "json", "--no-cache", "--show-refuted", ".", cwd=planted, timeout=600
    )
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    canaries = sorted(p.name for p in planted.glob("CANARY_*"))
    assert canaries == [], f"user code was executed: {canaries}"
    # verification really ran: a probe found a witness (the log(softmax) and log(sigmoid) here
    # need a logit of -100, a far tail, so they are inconclusive with the witness they saw)
    assert any(f["verification"].get("symptom") for f in report["findings"]), report["findings"]
    rules = {
        (f["path"], r) for f in report["findings"] for r in [f["rule"], *f.get("related_rules", [])]
    }
    assert ("train.py", "TNL101") in rules
    assert ("nb.ipynb", "TNL101") in rules
    assert not report["errors"], report["errors"]
    assert "Traceback" not in proc.stderr


def test_the_canaries_do_fire_when_the_code_runs(planted):
    """Control: the planted canaries are live, so the test above can fail."""
    subprocess.run([sys.executable, "sibling.py"], cwd=planted, check=True, timeout=60)
    assert (planted / "CANARY_sibling_import").exists()


def test_no_canary_runs_in_a_multi_module_project(tmp_path):
    """The project index reads every module of the tree (relative, star and package imports,
    base classes in other files); none of it is imported or run, with verification on."""
    c = lambda name: _canary(tmp_path, name)  # noqa: E731
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"{c('package_init')}\nfrom .layers import *\n")
    (pkg / "layers.py").write_text(
        textwrap.dedent(
            f"""\
            import tensorflow as tf

            {c("layers_module")}


            def dense(x, units, activation=None, scale=({c("layers_default")})):
                w = tf.Variable(tf.random.normal([4, units]))
                y = tf.matmul(x, w)
                return activation(y) if activation is not None else y


            class Base(tf.Module):
                {c("base_class_body")}

                def probs(self, x):
                    return tf.nn.sigmoid(x)
            """
        )
    )
    (pkg / "losses.py").write_text(
        textwrap.dedent(
            f"""\
            import tensorflow as tf
            from . import layers

            {c("losses_module")}


            def energy(z):
                return tf.reduce_sum(tf.exp(z), axis=-1)
            """
        )
    )
    (pkg / "train.py").write_text(
        textwrap.dedent(
            f"""\
            import tensorflow as tf
            from pkg import *
            from .losses import energy
            from .layers import Base

            {c("train_module")}


            class Head(Base):
                def loss(self, x, y):
                    return -tf.reduce_mean(y * tf.math.log(self.probs(x)))


            def step(x):
                return energy(dense(x, 8))
            """
        )
    )
    proc = run_cli(
        "--format", "json", "--no-cache", "--show-refuted", ".", cwd=tmp_path, timeout=600
    )
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    canaries = sorted(p.name for p in tmp_path.glob("CANARY_*"))
    assert canaries == [], f"user code was executed: {canaries}"
    rules = {
        (f["path"], r) for f in report["findings"] for r in [f["rule"], *f.get("related_rules", [])]
    }
    assert ("pkg/losses.py", "TNL301") in rules  # found through the index: it really ran
    assert ("pkg/train.py", "TNL101") in rules
    assert not report["errors"], report["errors"]
    # control: the planted module-level canaries are live code
    subprocess.run(
        [sys.executable, "-c", "import pkg.losses"], cwd=tmp_path, check=False, timeout=120
    )
    assert (tmp_path / "CANARY_package_init").exists()
