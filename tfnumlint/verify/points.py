"""The probe points: boundary values of the dtype and of each input's range, and their grid."""

from __future__ import annotations

import itertools
import math

import numpy as np

from . import intervals as iv
from .program import Input

MAX_POINTS = 4096
LOGIT_POINTS: tuple[float, ...] = (0.0, -100.0, 100.0, -17.0, 17.0, -30.0, 30.0, -90.0, 90.0)
LOGIT_POINTS += (-104.0, 104.0, -1e4, 1e4, -5.0, 5.0, -1.0, 1.0)
SMALL_POINTS = (1e-8, -1e-8, 1e-6, 1e-4, 1e-3)


def dtype_points(dtype: str) -> list[float]:
    """Boundary values of the dtype: 0, subnormals, normals, 1 ± ulp, exp overflow, max."""
    info = iv.finfo(dtype)
    npd = iv.np_dtype(dtype)
    one = np.asarray(1.0, npd)
    up = float(np.nextafter(one, np.asarray(2.0, npd)))
    down = float(np.nextafter(one, np.asarray(0.0, npd)))
    sub, normal = float(info.smallest_subnormal), float(info.smallest_normal)
    over = math.ceil(iv.overflow_point(dtype) * 10) / 10
    return [
        0.0, 1.0, -1.0, 0.5, -0.5, 2.0,
        *LOGIT_POINTS[1:11],
        over, -over, sub, -sub, normal, -normal, up, down, -up, -down,
        *SMALL_POINTS, 1e4, -1e4, float(info.max), -float(info.max),
    ]  # fmt: skip


def candidates(spec: Input, dtype: str) -> list[float]:
    """Candidate values of one input, nice ones first so witnesses read well."""
    if spec.prob:
        return list(LOGIT_POINTS)
    npd = iv.np_dtype(dtype)
    base = [v for v in dtype_points(dtype) if spec.lo <= v <= spec.hi]
    for end, toward in ((spec.lo, spec.hi), (spec.hi, spec.lo)):
        if math.isfinite(end):
            base.append(end)
            inside = np.nextafter(np.asarray(end, npd), np.asarray(toward, npd))
            base.append(float(inside))
    seen: list[float] = []
    for v in base:
        v = float(np.asarray(v, npd))
        if v not in seen and not math.isnan(v):
            seen.append(v)
    return seen or [0.0]


def point_grid(inputs: list[Input], dtype: str) -> np.ndarray:
    """Rows of candidate values: the full product when small, else a structured sample."""
    cands = [candidates(i, dtype) for i in inputs]
    if not inputs:
        return np.zeros((1, 0))
    total = math.prod(len(c) for c in cands)
    if total <= MAX_POINTS:
        return np.array(list(itertools.product(*cands)), dtype=np.float64)
    rows = []
    longest = max(len(c) for c in cands)
    for j in range(longest):  # every input the same value (a == b)
        rows.append([c[min(j, len(c) - 1)] for c in cands])
    for i, c in enumerate(cands):  # one input varies, the others at their first candidates
        for anchor in range(min(4, longest)):
            for v in c:
                row = [cc[min(anchor, len(cc) - 1)] for cc in cands]
                row[i] = v
                rows.append(row)
    rng = np.random.default_rng(0)
    while len(rows) < MAX_POINTS:
        rows.append([c[rng.integers(len(c))] for c in cands])
    return np.array(rows[:MAX_POINTS], dtype=np.float64)
