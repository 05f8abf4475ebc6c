"""GRIST-style gradient climbing: when no boundary point shows a symptom, the inputs climb the
gradient of the unsafe ops' inputs toward their danger zone (the objective is traced with the
program: :func:`program.climb_objective`).
"""

from __future__ import annotations

import numpy as np

from . import intervals as iv
from .program import Program, run
from .symptoms import Witness, find_symptom, flat

CLIMB_STEPS = 30


def climb(
    program: Program, rows: np.ndarray, res: dict[str, np.ndarray], thr: float
) -> Witness | None:
    """GRIST: sign-gradient steps on the inputs toward the unsafe ops' danger zone."""
    if not program.inputs:
        return None
    start = rows[np.isfinite(flat(res["t"])).all(1)][:64].copy()
    if not len(start):
        return None
    npd = iv.np_dtype(program.dtype)
    x = start
    out = run(program, x, traced=True)
    if "obj" not in out:
        return None
    for _ in range(CLIMB_STEPS):
        step = np.zeros_like(x)
        for j, spec in enumerate(program.inputs):
            g = np.nan_to_num(flat(out[f"go_{spec.ident}"]).sum(1), nan=0.0)
            step[:, j] = -np.sign(g) * np.maximum(np.abs(x[:, j]), 1e-3)
        if not step.any():
            return None
        x = np.asarray((x + step).astype(npd), dtype=np.float64)
        x = np.nan_to_num(x, nan=0.0, posinf=float(iv.finfo(program.dtype).max))
        out = run(program, x, traced=True)
        found = find_symptom(program, x, out, thr)
        if found is not None:
            return found
    return None
