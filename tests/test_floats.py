"""tfnumlint.floats (struct-based, numpy-free) agrees with numpy/ml_dtypes on every value."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tfnumlint.floats import round_to, spacing, underflows

FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
POSITIVE = st.floats(min_value=1e-12, max_value=6e4, allow_nan=False)


def _np(dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"float16": np.float16, "float32": np.float32}[dtype]


@settings(max_examples=300)
@given(FINITE, st.sampled_from(["float16", "float32", "bfloat16"]))
def test_round_to_matches_numpy(value, dtype):
    with np.errstate(over="ignore"):
        expected = float(_np(dtype)(value))
    got = round_to(value, dtype)
    assert got == expected or (math.isinf(got) and math.isinf(expected) and got == expected)


@settings(max_examples=300)
@given(POSITIVE, st.sampled_from(["float16", "float32"]))
def test_spacing_matches_numpy(magnitude, dtype):
    t = _np(dtype)
    with np.errstate(over="ignore"):
        stored = t(magnitude)
        expected = float(np.spacing(stored))
    assert spacing(magnitude, dtype) == expected


def test_known_facts():
    assert underflows(1e-8, "float16") and underflows(1e-9, "float16")
    assert not underflows(1e-4, "float16") and not underflows(1e-8, "float32")
    assert spacing(1.0, "float32") == 2.0**-23
    assert spacing(1.0, "float16") == 2.0**-10
    assert spacing(1.0, "bfloat16") == 2.0**-7
    assert round_to(70000.0, "float16") == math.inf
    assert round_to(1.0 + 1e-10, "float32") == 1.0
