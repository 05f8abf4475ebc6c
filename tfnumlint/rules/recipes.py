"""How the verifier checks each rule's findings: a recipe that travels in the probe.

The verifier holds no rule codes: it reads what to do from the probe.  ``check`` picks the
procedure (boundary probing, the epsilon checks, the float64 comparison, training runs, or
nothing to probe); ``symptoms`` are looked for first, in that order; ``range_refutes`` lets
the interval analysis refute a finding whose unsafe op cannot reach its danger zone;
``extreme_ok`` keeps witnesses with inputs past 1e4 (an overflow rule needs them).  For fix
proofs: ``singular`` (the symptom is a true singularity, x / 0 or sqrt'(0): a rewrite must be
finite at every point) and ``local_gradient`` (the symptom is the local 1/eps gradient, which
the rewrite must remove; other rules' exploding gradients come from upstream factors).
``fixer`` names the rule's rewrite (``--fix``/``--diff``); ``control`` picks the control run of
a training probe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Recipe:
    check: str = "probe"  # probe | absorption | underflow | divergence | training | none
    symptoms: tuple[str, ...] = ()
    only_listed: bool = False  # no generic NaN/Inf fallback (the symptom is specific)
    range_refutes: bool = False
    extreme_ok: bool = False
    singular: bool = False
    local_gradient: bool = False
    fixer: str = ""  # the rewrite in fix/rewrites.py (FIXERS); "" for none
    control: str = ""  # training runs: "epsilon" (a larger optimizer epsilon) or the default

    def as_probe(self) -> dict[str, Any]:
        out = asdict(self)
        out["symptoms"] = list(self.symptoms)
        return out


_VALUE = ("inf-value", "nan-value", "inf-gradient", "nan-gradient")
RECIPES: dict[str, Recipe] = {
    "TNL101": Recipe(
        symptoms=(*_VALUE, "exploding-gradient"), range_refutes=True, fixer="log_of_probability"
    ),
    "TNL102": Recipe(
        symptoms=("dead-gradient", "exploding-gradient", "inf-value", "nan-value", "nan-gradient"),
        local_gradient=True,
        fixer="log_epsilon",
    ),
    # not range-refuted: with an epsilon inside the log its input is never 0, yet the
    # hand-written cross-entropy still dies at saturation; only probing shows that
    "TNL103": Recipe(
        symptoms=("inf-value", "nan-value", "dead-gradient", "exploding-gradient", "nan-gradient"),
        fixer="cross_entropy",
    ),
    "TNL104": Recipe(
        symptoms=("nan-value", "inf-value", "nan-gradient", "inf-gradient"), range_refutes=True
    ),
    "TNL105": Recipe(check="divergence", fixer="log1p_expm1"),
    "TNL106": Recipe(
        symptoms=("inf-value", "nan-value", "nan-gradient"),
        range_refutes=True,
        extreme_ok=True,
        fixer="logsumexp",
    ),
    "TNL201": Recipe(
        symptoms=(*_VALUE, "exploding-gradient"),
        range_refutes=True,
        singular=True,
        fixer="divide_no_nan",
    ),
    "TNL202": Recipe(
        symptoms=("nan-gradient", "inf-gradient", "nan-value"),
        range_refutes=True,
        singular=True,
        fixer="clamped_sqrt",
    ),
    "TNL203": Recipe(
        symptoms=("nan-gradient", "inf-gradient", "nan-value"),
        range_refutes=True,
        singular=True,
        fixer="safe_norm",
    ),
    "TNL204": Recipe(
        symptoms=("nan-value", "nan-gradient", "inf-gradient", "inf-value"), range_refutes=True
    ),
    "TNL205": Recipe(symptoms=("inf-gradient", "nan-gradient", "nan-value"), range_refutes=True),
    "TNL206": Recipe(symptoms=_VALUE, range_refutes=True),
    "TNL301": Recipe(symptoms=_VALUE, range_refutes=True, extreme_ok=True, fixer="fused_softmax"),
    "TNL302": Recipe(
        symptoms=("nan-gradient", "inf-gradient"),
        only_listed=True,
        range_refutes=True,
        fixer="double_where",
    ),
    "TNL401": Recipe(check="absorption"),
    "TNL402": Recipe(check="underflow"),
    "TNL403": Recipe(check="training", singular=True, fixer="optimizer_epsilon", control="epsilon"),
    "TNL404": Recipe(symptoms=_VALUE, extreme_ok=True),
    "TNL501": Recipe(check="training", fixer="lower_learning_rate"),
    "TNL502": Recipe(check="training"),
    # semantic rules with no numeric symptom to probe: their findings stay "skipped"
    "TNL503": Recipe(check="none", fixer="from_logits"),
    "TNL504": Recipe(check="none"),
}


def declare_recipe(code: str, recipe: Recipe) -> None:
    """A rule's recipe declared beside its check (``rule(..., recipe=...)``)."""
    if RECIPES.get(code, recipe) != recipe:
        raise ValueError(f"{code} declares two different recipes")
    RECIPES[code] = recipe


def recipe_for(code: str | None) -> Recipe:
    """A rule's recipe; a rule that declares none is probed for the generic symptoms."""
    return RECIPES.get(code or "", Recipe())
