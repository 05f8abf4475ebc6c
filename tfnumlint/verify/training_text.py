"""What a training simulation trained, in words: the user's layers and loss as the source
shows them, and, said plainly, what the simulation assumed in their place (issue 24).

Plain Python: the wording of ``training.py``'s verdicts, kept apart from the simulations.
"""

from __future__ import annotations

from typing import Any

from .trace import format_number

MSE_NAMES = frozenset({"mse", "mean_squared_error", "MeanSquaredError"})


def assumed(items: list[str]) -> str:
    """' (assumed: a; b)', or '' when nothing was."""
    return f" (assumed: {'; '.join(items)})" if items else ""


def loss_guard(loss: dict[str, Any] | None) -> str:
    """The hand-written log the source guards its probabilities with: 'log(p + 1e-07)'."""
    loss = loss or {}
    eps = format_number(float(loss.get("eps") or 0.0))
    return {
        "log_eps": f"log(p + {eps})",
        "clip": f"log(clip(p, {eps}, 1 - {eps}))",
    }.get(str(loss.get("form") or "log"), "log(p)")


def origin(probe: dict[str, Any]) -> str:
    """Where the spec was read: the source, or a saved model's graph (``rules/graph.py``)."""
    return "the model's graph" if probe.get("graph") else "the source"


def loss_501(probe: dict[str, Any]) -> tuple[str, list[str]]:
    """The loss the saturation simulation trains, and what it stands in for: the cross-entropy
    written with the source's guarded log, in place of the whole compiled loss."""
    kind = "categorical" if probe.get("output") == "softmax" else "binary"
    what = f"a {kind} cross-entropy written with {loss_guard(probe.get('loss'))}"
    code = probe.get("loss_code")
    if not code:
        return f"{what}, as {origin(probe)} writes it", []
    return f"{what}, as in `{code}`", [f"that cross-entropy stands in for the whole of `{code}`"]


def output_assumptions(probe: dict[str, Any], units: int, fan_in: int) -> list[str]:
    """The output layer's widths the simulation chose: the source's are missing or differ."""
    out = []
    declared = probe.get("units")
    if not declared:
        out.append(f"{units} output units")
    elif int(declared) < units:
        out.append(f"{units} output units simulated for its {declared}")
    if not probe.get("fan_in"):
        out.append(f"{fan_in} inputs to the output layer")
    return out


def units_text(probe: dict[str, Any], units: int) -> str:
    """The output layer's width as the source gives it (the simulated one when it does not)."""
    shown = int(probe.get("units") or units)
    return f"{shown} unit{'s' if shown != 1 else ''}"


def stack_502(stack: dict[str, Any], norm_inputs: int) -> tuple[str, list[str]]:
    """The user's Dense stack as the source writes it, and the input width when assumed."""
    layers = stack["layers"]
    hidden = {tuple(layer) for layer in layers[:-1]}
    if len(hidden) == 1:
        units, act = next(iter(hidden))
        count = len(layers) - 1
        body = f"{count} Dense({units}, {act}) layer{'s' if count != 1 else ''}"
    else:
        body = " -> ".join(f"Dense({u}, {a})" for u, a in layers[:-1]) or "no hidden layer"
    units, act = layers[-1]
    parts = [body, f"a Dense({units}, {act}) output"]
    inputs = stack.get("inputs")
    if inputs:
        parts.insert(0, f"{inputs} inputs")
    return f"the Dense stack ({', '.join(parts)})", [] if inputs else [f"{norm_inputs} inputs"]


def task_502(probe: dict[str, Any]) -> tuple[str, list[str]]:
    """The task the norm simulation trains (an MSE regression), and what that stands in for."""
    code = str(probe.get("loss_code") or "")
    if code.strip("'\"") in MSE_NAMES:
        return f"on a regression of standardised features with its loss `{code}`", [
            "standardised features and targets"
        ]
    instead = (
        f"an MSE regression in place of `{code}`, which the simulation does not train"
        if code
        else f"an MSE regression ({origin(probe)}'s loss is not what the simulation trains)"
    )
    return "on a regression of standardised features", [instead]
