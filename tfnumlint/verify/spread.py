"""Does a witness need every example of the batch to be identical?

The probe fills each input with one value, so the examples along the user's axis 0 (the batch
or sample axis) are all the same.  A reduction across that axis then sees a batch of identical
examples: a variance over axis 0 is exactly 0, a Jensen gap ``log(mean(x, 0)) - mean(log(x), 0)``
too.  Real batches rarely are (the ProGAN minibatch stddev, a Gamma MLE on a sample), unless
the value is identical by construction (a dead ReLU unit, a mask, a count), which
``preconditions.batch_inputs`` leaves out.

The check is dynamic: the probe is traced again with two examples along axis 0, and the
witness evaluated with the inputs a batch reduction reads made to differ between them (the
second example scaled by 1 + d, or d added to a logit) for a small and a moderate d,
the first example and every other input as in the witness.  When one of those points shows no
symptom at all, the witness needs identical examples: ``observed["identical_batch"]`` says so and
``preconditions.identical_batch_reason`` makes the finding inconclusive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from . import intervals as iv
from . import preconditions
from .downstream import witness_row
from .program import TRACE_ERRORS, Program, build
from .symptoms import GENERIC, flat, masks

SPREADS = (2.0**-6, 0.25)  # relative spreads tried: 1/64 is above bfloat16/float16 rounding
EXAMPLES = 2  # examples along axis 0 in the re-traced probe
CHECKED = frozenset(GENERIC) | {"exploding-gradient"}  # symptoms one point decides alone


def spread_tensors(program: Program, row: np.ndarray, spread: list[int]) -> list[tf.Tensor]:
    """Input tensors ``[len(SPREADS), EXAMPLES, 1.., k]``: example 0 is the witness; in example
    1 the ``spread`` inputs differ from it by one of :data:`SPREADS` each point."""
    out = []
    for j, spec in enumerate(program.inputs):
        arr = np.zeros((len(SPREADS), EXAMPLES, program.k), dtype=np.float64)
        arr[:, :, 0] = row[j]
        if program.k > 1 and (spec.prob or spec.scale):  # as `program.to_batch` lays a row
            arr[:, :, 1:] = row[j]
        if j in spread:
            for p, d in enumerate(SPREADS):
                for e in range(1, EXAMPLES):
                    arr[p, e] = _moved(arr[p, e], d * e, additive=spec.prob)
        arr = arr.reshape((len(SPREADS), EXAMPLES, *[1] * (program.rank - 2), program.k))
        out.append(tf.constant(arr.astype(iv.np_dtype(program.dtype))))
    return out


def _moved(v: np.ndarray, d: float, additive: bool) -> np.ndarray:
    """Entries scaled by 1 + d; a probability's logit moved by d instead (p = 0.5 at 0).  A
    zero stays zero: a batch of all-zero examples is an empty selection or a dead unit, not
    a coincidence of continuous values, and this check leaves it confirmed."""
    return v + d if additive else v * (1 + d)


def identical_batch(program: Program, out: dict[str, Any], thr: float) -> dict[str, Any]:
    """``out`` with ``observed["identical_batch"]`` when its witness loses every symptom once
    the inputs a batch reduction reads differ along axis 0.  Anything that does not trace with
    two examples keeps the verdict as it is."""
    if out.get("status") != "confirmed" or out.get("symptom") not in CHECKED:
        return out
    names = preconditions.batch_inputs(program.probe)
    spread = [j for j, spec in enumerate(program.inputs) if spec.name in names]
    point = out.get("inputs")
    found = witness_row(program, point) if isinstance(point, dict) else None
    if not spread or found is None:
        return out
    row = np.array(found, dtype=np.float64)
    try:
        wide = build(
            program.probe, program.dtype, extras=False, shape=(program.k, program.rank),
            batch=EXAMPLES,
        )  # fmt: skip
        res = wide.fn(*spread_tensors(program, row, spread))
        res = {k: np.asarray(tf.cast(v, tf.float64)) for k, v in res.items()}
    except TRACE_ERRORS:
        return out
    rows = np.repeat(row[None, :], len(SPREADS), axis=0)
    seen = masks(wide, rows, res, thr)
    loss_ok = np.isfinite(flat(res["l"])).all(1)
    clean = ~np.any([seen[s] for s in CHECKED], axis=0) & loss_ok
    if not clean.any():
        return out
    shown = [program.inputs[j].name for j in spread]
    how = f"differing by 1/{round(1 / SPREADS[int(np.argmax(clean))])} (relative)"
    observed = {**out["observed"], "identical_batch": {"inputs": shown, "how": how}}
    return {**out, "observed": observed}
