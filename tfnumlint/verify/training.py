"""Training probes: run the user's optimizer class and hyper-parameters for real.

The learning-rate rules declare a ``recipe`` next to their check (``rules/training*.py``) and
send a plain training spec; each recipe here replays it and reports only what it observes,
next to a control (lr / 10, the batch mean, clipping):

- ``saturation``: the sliced sigmoid/softmax output layer on separable targets, until the
  logits reach the zone where the hand-written loss's gradient is dead or NaN;
- ``divergence``: plain or momentum SGD on a squared error over the literal features;
- ``summed`` / ``summed_update``: a loss summed over the batch against its mean;
- ``clipping``: the one-layer model with and without ``clipnorm``;
- the optimizer-epsilon probe (tiny gradients in float16).

This module dispatches a training spec to its recipe: ``training_saturation.py``,
``training_steps.py`` (divergence, summed losses, clipping), or the plain output-layer run
and the optimizer-epsilon probe of ``training_base.py``.
"""

from __future__ import annotations

from typing import Any

from .trace_ops import DTYPES
from .training_base import (
    KERAS,
    compare,
    control,
    spec_config,
    train,
    verify_epsilon,
)
from .training_saturation import (
    verify_saturation,
)
from .training_steps import (
    verify_clipping,
    verify_divergence,
    verify_summed,
)


def verify_training(probe: dict[str, Any]) -> dict[str, Any]:
    """Run the configured and the control training; the verdict is what they show."""
    dtype_name = probe.get("dtype") or "float32"
    dtype = DTYPES[dtype_name]
    name = str(probe.get("optimizer") or "").lower()
    if name not in KERAS and probe.get("recipe") != "summed_update":
        return {
            "status": "inconclusive",
            "detail": f"unknown optimizer {name!r}",
            "dtype": dtype_name,
        }
    recipe = RECIPES.get(str(probe.get("recipe")))
    if recipe is not None:
        return recipe(probe, dtype_name)
    cfg = spec_config(probe)
    safe = control(probe, cfg)
    if probe.get("control") == "epsilon":
        return verify_epsilon(cfg, safe, dtype_name)
    output = probe.get("output") or "sigmoid"
    loss_eps = (
        (probe.get("loss") or {}).get("eps") if probe.get("recipe") else probe.get("loss_eps")
    )
    loss_eps = None if loss_eps is None else float(loss_eps)
    got, ref = train(cfg, output, loss_eps, dtype), train(safe, output, loss_eps, dtype)
    return compare(probe, cfg, safe, got, ref, output, dtype_name)


RECIPES = {
    "saturation": verify_saturation,
    "divergence": verify_divergence,
    "summed": verify_summed,
    "summed_update": verify_summed,
    "clipping": verify_clipping,
}
