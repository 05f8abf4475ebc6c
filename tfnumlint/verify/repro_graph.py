"""``--emit-repro`` for a saved model's finding: a script that loads the model and shows the
witness's non-finite value.

The script loads the model with tfnumlint's own loader (``verify/graphs/loader.py``), so it
loads it exactly as the linter did: the graph and its weights, a ``.keras`` file in safe mode
after its config is screened, and never the author's Python.  It feeds the witness the
search found (every input's exact value) and evaluates the op's output, or its gradient with
respect to the checked input.  No TensorFlow import here: this only writes text.
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..model import Finding

_BODY = """
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from tfnumlint.verify.graphs.loader import load  # the linter's safe loader
from tfnumlint.verify.graphs.search import graph_session  # the graph as written
from tfnumlint.verify.graphs.training import training_losses  # the losses the file keeps

inf, nan = float("inf"), float("nan")
MODEL = Path({model!r})
TARGET = {target!r}  # the op's output in the frozen graph
CHECKED = {checked!r}  # the input the gradient is taken by
SYMPTOM = {symptom!r}  # "value": the output is non-finite; "gradient": its gradient is;
# "training": the gradient of the training loss LOSS with respect to WEIGHT is;
# "loss-gradient": the gradient of LOSS with respect to CHECKED (the op's input) is
WEIGHT = {weight!r}
LOSS = {loss!r}
FEED = {feed}  # placeholder -> (dtype, shape, values): the witness


def main() -> int:
    loaded = load(MODEL)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(loaded.graph_def, name="")
        losses = training_losses(graph, loaded)  # built as the linter did: before the rest
        try:
            target = graph.get_tensor_by_name(TARGET)
            # the output and its gradient, fetched together as the verifier's search did,
            # in a session that runs the ops as written (no graph optimizer, which may fuse a
            # log of a softmax into a log_softmax)
            fetches = {{"value": target}}
            if CHECKED is not None and SYMPTOM != "loss-gradient":
                grad = tf.gradients(target, graph.get_tensor_by_name(CHECKED))[0]
                if grad is not None:
                    fetches["gradient"] = grad
            if SYMPTOM in ("training", "loss-gradient"):  # a loss the file keeps
                kept = [t for t in losses if t.loss.name == LOSS]
                if not kept:
                    print("the model no longer keeps its training loss")
                    return 2
                by = WEIGHT if SYMPTOM == "training" else CHECKED
                fetches[SYMPTOM] = tf.gradients(kept[0].loss, graph.get_tensor_by_name(by))[0]
            feed = {{
                graph.get_tensor_by_name(name + ":0"): np.asarray(values, dtype).reshape(shape)
                for name, (dtype, shape, values) in FEED.items()
            }}
        except KeyError as exc:
            print(f"the model no longer has the op or an input of the witness: {{exc}}")
            return 2
    with graph_session(graph) as session:
        value = np.asarray(session.run(fetches, feed_dict=feed)[SYMPTOM], np.float64)
    label = {{
        "value": TARGET,
        "gradient": f"the gradient of {{TARGET}} by {{CHECKED}}",
        "training": f"the gradient of the training loss by {{WEIGHT}}",
        "loss-gradient": f"the gradient of the training loss by {{CHECKED}}",
    }}[SYMPTOM]
    bad = ~np.isfinite(value)
    if bad.any():
        first = value[bad].reshape(-1)[0]
        print(f"{{label}} = {{first}} ({{int(bad.sum())}} of {{value.size}} entries non-finite)")
        return 1
    print(f"{{label}} is finite at the witness (max |value| {{np.abs(value).max():.6g}})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""


def script(finding: Finding, record: dict[str, Any]) -> str:
    from .repro_code import doc_safe

    v = finding.verification
    detail = doc_safe("\n".join(textwrap.wrap(v.detail, 92)) or "confirmed")
    where = doc_safe(f"{finding.path}:{finding.line} {finding.rule} ({finding.name})")
    op = doc_safe(finding.source_line)
    what = {
        "gradient": "its gradient",
        "training": "the gradient of the model's training loss with respect to a weight it reads",
        "loss-gradient": "the gradient of the model's training loss with respect to its input",
    }.get(str(record.get("symptom")), "its output")
    head = f'''#!/usr/bin/env python3
"""Reproducer for {where}.

Written by tfnumlint --emit-repro.  The verifier confirmed:

{textwrap.indent(detail, "    ")}

It loads the saved model as tfnumlint does (its loader: the graph and the weights, a .keras
file in safe mode; the author's Python is never run), feeds the witness input and evaluates
the op `{op}`, {what}.
Exit status 1: a non-finite value shows; 0: it does not (as after a fix); 2: the model has
no such op any more.  Needs TensorFlow, NumPy and tfnumlint (for its safe loader).
"""
'''
    feed = {
        str(name): (str(spec["dtype"]), list(spec["shape"]), list(spec["values"]))
        for name, spec in (record.get("feed") or {}).items()
    }
    body = _BODY.format(
        model=str(record["model"]),
        target=str(record["target"]),
        checked=record.get("checked"),
        symptom=str(record.get("symptom", "value")),
        weight=record.get("weight"),
        loss=record.get("loss"),
        feed=repr(feed),
    )
    return head + body
