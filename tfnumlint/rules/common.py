"""Helpers shared by the rule families: epsilon detection and float facts per dtype."""

from __future__ import annotations

import math

from ..floats import exp_overflow, spacing, underflows  # noqa: F401  (re-exported for the rules)

# where exp overflows, from each dtype's largest finite value (float32: 88.72, float16: 11.09)
EXP_OVERFLOW = {d: round(exp_overflow(d), 2) for d in ("float16", "bfloat16", "float32", "float64")}
MAX_VALUE = {
    "float16": 65504.0,
    "bfloat16": 3.39e38,
    "float32": 3.4028235e38,
    "float64": 1.7976931348623157e308,
}


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"
