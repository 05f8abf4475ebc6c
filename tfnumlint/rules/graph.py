"""Graph rules: which rule a hazard of a saved model's graph is, and how it is worded.

The worker (verify/graphs) finds hazards from the op registry's facts and holds no rule code;
each family module declares, beside its source check, which graph hazards its rule covers
with :func:`graph_rule`.  So one rule code serves source and graph, and a graph rule is a
predicate over registry facts (the op, its danger zone, its input's producer), not a copy of
the source check.  Every rule whose predicate accepts a hazard reports it (an optimizer record
can be both an epsilon and a learning-rate finding).

A training rule's graph half may also declare ``probe``: the training spec its source check
hands the verifier, built from what the worker read of the model (the optimizer's
hyper-parameters, the dense stack, the loss's form: ``verify/graphs/stack.py``); the finding
is then verified by the same recipe as in source (``verify/training.py``), not by the worker's
model job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import ops as ops_

Hazard = dict[str, Any]  # one hazard as the worker reports it (verify/graphs/lint.py)


@dataclass(frozen=True)
class GraphRule:
    code: str
    matches: Callable[[Hazard], bool]
    message: Callable[[Hazard], str]
    probe: Callable[[Hazard], dict[str, Any] | None] | None = None


GRAPH_RULES: list[GraphRule] = []


def graph_rule(
    code: str,
    matches: Callable[[Hazard], bool],
    probe: Callable[[Hazard], dict[str, Any] | None] | None = None,
):
    """Declare that rule ``code`` covers the graph hazards ``matches`` accepts; the decorated
    function words the finding; ``probe``, when given, builds the training spec that verifies
    it."""

    def register(message: Callable[[Hazard], str]) -> Callable[[Hazard], str]:
        GRAPH_RULES.append(GraphRule(code, matches, message, probe))
        return message

    return register


# ---------------------------------------------------------------- predicates on registry facts


def op_entry(hazard: Hazard) -> ops_.Op | None:
    return ops_.REGISTRY.get(str(hazard.get("canonical")))


def producer_entry(hazard: Hazard) -> ops_.Op | None:
    return ops_.REGISTRY.get(str(hazard.get("producer")))


def danger_test(hazard: Hazard) -> str | None:
    entry = op_entry(hazard)
    return entry.danger.test if entry is not None and entry.danger is not None else None


def is_danger(hazard: Hazard, *canonical: str) -> bool:
    return hazard.get("pattern") == "danger" and (
        not canonical or hazard.get("canonical") in canonical
    )


def producer_is_probability(hazard: Hazard) -> bool:
    entry = producer_entry(hazard)
    return entry is not None and entry.probability


def where_op(hazard: Hazard) -> str:
    """How a message names the op: its name, then its Keras layer where the model file
    records it (else its name scope), then the author's line where debug info gives it."""
    scope, layer = hazard.get("scope"), hazard.get("layer")
    text = f"`{hazard['op']}`"
    if layer:
        text += f" ({layer_text(hazard)})"
    elif scope:
        text += f" (name scope `{scope}`)"
    origin = hazard.get("origin")
    if origin:
        text += f" created at `{origin['path']}:{origin['line']}`"
    return text


def layer_text(hazard: Hazard) -> str:
    """``layer `dense_1` of model `m``` (functional), ``layer attribute `block.proj``` or, in a
    graph that records no layers, ``layer `energy`, by its weights' name scope``."""
    layer, model = hazard.get("layer"), hazard.get("model")
    if hazard.get("layer_kind") == "attribute":
        return f"layer attribute `{layer}` of the saved model"
    if hazard.get("layer_kind") == "scope":  # no layer record: where its weights are read
        return f"layer `{layer}`, by its weights' name scope"
    return f"layer `{layer}`" + (f" of model `{model}`" if model else "")


def producer_text(hazard: Hazard) -> str:
    op = hazard.get("producer_op")
    if not op:
        return str(hazard.get("producer"))
    layer = hazard.get("producer_layer")
    where = f", layer `{layer}`" if layer else ""
    return f"`{op}` ({hazard.get('producer')}{where})"


def range_text(hazard: Hazard) -> str:
    lo, hi = hazard.get("range") or (None, None)
    return f"[{lo:.4g}, {hi:.4g}]" if lo is not None else "unknown"


# ---------------------------------------------------------------- an optimizer the graph keeps


def is_optimizer(hazard: Hazard) -> bool:
    return hazard.get("pattern") == "optimizer"


def high_learning_rate(hazard: Hazard) -> bool:
    """The optimizer's learning rate is above the family's threshold (the config's
    ``learning-rate-thresholds``, set on the hazard by the parent)."""
    lr, threshold = hazard.get("learning_rate"), hazard.get("lr_threshold")
    return is_optimizer(hazard) and lr is not None and threshold is not None and lr > threshold


def optimizer_spec(hazard: Hazard) -> dict[str, Any]:
    """The optimizer as the training recipes rebuild it (``analysis/optimizer_calls``'s
    ``optimizer_spec`` for source): family, TF1 or Keras, learning rate, momentum, clipping."""
    return {
        "optimizer": hazard.get("family"),
        "tf1": bool(hazard.get("tf1")),
        "learning_rate": hazard.get("learning_rate"),
        "momentum": hazard.get("momentum") or 0.0,
        "clipnorm": hazard.get("clipnorm"),
    }


def optimizer_text(hazard: Hazard) -> str:
    """``the optimizer `Adam` the graph keeps`` / ``the compile config's optimizer (Adam)``."""
    op = str(hazard.get("op", ""))
    if op.startswith("optimizer "):
        return f"the compile config's optimizer ({op.removeprefix('optimizer ')})"
    return f"the optimizer `{op}` the graph keeps"
