"""Which free inputs' signs a witness rests on (issue 22): ``df`` = -1 in ``pow(x / df, 1/3)``.

Genericity (``verify/generic.py``) keeps each free input's sign, so a symptom that needs only a
sign survives it; this negation test tells the verdict side that the witness rests on the sign
of a parameter nothing drives, which is the finding's condition, not a confirmation.
"""

from __future__ import annotations

import numpy as np

from . import domains, kinds
from .program import Program, run
from .symptoms import masks


def needed_signs(
    program: Program, rows: np.ndarray, free: list[str], symptom: str, thr: float
) -> dict[str, str]:
    """Free inputs whose sign the symptom needs: each one alone is flipped in the generic rows
    that kept the symptom, and the symptom is gone in all of them (``df`` = -1 in a
    ``pow(x / df, 1/3)``).  A witness of ordinary values is never relaxed by the minimiser, so
    this is how the verdict learns that it rests on a free parameter's sign, a precondition of
    its callers (``generic.free_value_reason``).  The driven inputs flip with it where their
    domains allow; when no single flip removes the symptom, the negative free inputs flipped
    together are tried (it then needs one of them negative).  Flips outside the inputs'
    domains, labels and probabilities (probed as logits) are not tried."""
    if not len(rows):
        return {}
    names = [i.name for i in program.inputs]
    kind_of = kinds.input_kinds(program.probe)
    drives = {s.get("name"): s.get("drive") for s in program.probe.get("inputs") or []}

    def inside(flipped: np.ndarray) -> bool:
        return not any(
            domains.broken(program.probe, dict(zip(names, map(float, r), strict=True)))
            for r in flipped
        )

    def flippable(j: int) -> bool:
        spec = program.inputs[j]
        one_sign = bool(np.all(rows[:, j] > 0) or np.all(rows[:, j] < 0))  # a 0 draws either
        return not spec.prob and spec.name not in kind_of and one_sign

    # what the program drives (weights, data) may change sign with the free input: exp(x @ w)
    # overflows for either sign of `x`, once training gives `w` the matching one
    driven = [j for j, n in enumerate(names) if drives.get(n) == "driven" and flippable(j)]

    def flip(cols: list[int]) -> np.ndarray | None:
        flipped = rows.copy()
        flipped[:, cols] = -flipped[:, cols]
        if not inside(flipped):
            return None
        for k in driven:
            along = flipped.copy()
            along[:, k] = -along[:, k]
            if inside(along):
                flipped = along
        return flipped

    cols = [names.index(n) for n in free if flippable(names.index(n))]
    tried = [([j], flip([j])) for j in cols]
    negative = [j for j in cols if rows[0, j] < 0]
    if len(negative) > 1:  # df < 0 or nc < 0: each alone keeps the NaN, both positive do not
        tried.append((negative, flip(negative)))
    tried = [(js, f) for js, f in tried if f is not None]
    if not tried:
        return {}
    batch = np.concatenate([f for _, f in tried])
    hit = masks(program, batch, run(program, batch), thr)[symptom]
    gone = [
        js
        for k, (js, _) in enumerate(tried)
        if not np.any(hit[k * len(rows) : (k + 1) * len(rows)])
    ]
    singles = [js[0] for js in gone if len(js) == 1]
    chosen = singles or (gone[0] if gone else [])
    sign = {j: "negative" if rows[0, j] < 0 else "positive" for j in chosen}
    out = {names[j]: sign[j] for j in chosen}
    if chosen and not singles:
        out = {n: f"{s}, or another" for n, s in out.items()}  # one of them suffices
    return out
