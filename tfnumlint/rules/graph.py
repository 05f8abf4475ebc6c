"""Graph rules: which rule a hazard of a saved model's graph is, and how it is worded.

The worker (verify/graphs) finds hazards from the op registry's facts and holds no rule code;
each family module declares, beside its source check, which graph hazards its rule covers
with :func:`graph_rule`.  So one rule code serves source and graph, and a graph rule is a
predicate over registry facts (the op, its danger zone, its input's producer), not a copy of
the source check.
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


GRAPH_RULES: list[GraphRule] = []


def graph_rule(code: str, matches: Callable[[Hazard], bool]):
    """Declare that rule ``code`` covers the graph hazards ``matches`` accepts; the decorated
    function words the finding."""

    def register(message: Callable[[Hazard], str]) -> Callable[[Hazard], str]:
        GRAPH_RULES.append(GraphRule(code, matches, message))
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
