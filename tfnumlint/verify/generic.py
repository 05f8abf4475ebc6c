"""Genericity: does a witness rest on a special value of an input nothing drives? (issue 11)

A minimised witness may still need a *free* input (a parameter of a library function, an
attribute that is not a trainable weight: ``analysis/driven.py``) at a special value (``df`` =
0.5, ``t1`` = ``t0``, ``x`` = -100 in a distribution's tail), or rest on a coincidence of several
ordinary values (the minimiser relaxes each input alone, so ``needed`` is then empty).  That is a
precondition of the API, not a hazard.  The worker re-evaluates the symptom with every free input
at generic values (:func:`generic_points`: :data:`TRIALS` seeded draws of ordinary magnitude,
log-uniform in [0.3, 3] with the witness's sign (either for 0), inside the input's known domain); driven,
fixed and computed inputs keep their witness values.  The verdict side
(:func:`special_value_reason`) reads the outcome, plain data in ``observed["generic"]``.

**Decision** (:data:`SURVIVES_IN`): the symptom survives genericity when it shows in at least
one trial.  One is enough because the trials are points of an open set of ordinary values: a
symptom there is not a coincidence of measure zero.  Asking for all trials would drop hazards
that need only a sign or an order (``log(a - b)`` needs a < b, which half the draws give).

Plain Python: no TensorFlow, no numpy (the verdict side runs in the static process too).
"""

from __future__ import annotations

import math
import random
from typing import Any

from ..analysis.domain_model import fmt_g
from . import domains, kinds

TRIALS = 4  # generic points per witness (seeded, so verdicts are stable)
SURVIVES_IN = 1  # trials that must still show the symptom (see the module docstring)
ORDINARY = (0.3, 3.0)  # magnitude range of a generic value (log-uniform)
PROBABILITY = (0.05, 0.95)  # a generic probability or value of a bounded domain (as a fraction)
MAX_DRAWS = 8 * TRIALS  # draws tried to find TRIALS points inside the domains and relations
LOGIT_SPAN = math.log(PROBABILITY[1] / PROBABILITY[0])  # a logit whose sigmoid is in PROBABILITY


def free_inputs(probe: dict[str, Any]) -> list[str]:
    """The inputs a generic trial replaces: nothing drives them and they are no setting."""
    return [s["name"] for s in probe.get("inputs") or [] if s.get("drive") == "free"]


def _whole(probe: dict[str, Any], name: str) -> bool:
    """A domain of the input says it takes whole values only (a size, an asserted count)."""
    return any(d.get("name") == name and d.get("integer") for d in probe.get("domains") or [])


def _bounds(probe: dict[str, Any], spec: dict[str, Any]) -> tuple[float, float]:
    lo, hi = float(spec.get("lo", "-inf")), float(spec.get("hi", "inf"))
    for dom in probe.get("domains") or []:
        if dom.get("name") == spec.get("name"):
            lo, hi = max(lo, float(dom["lo"])), min(hi, float(dom["hi"]))
    return lo, hi


def generic_value(rng: random.Random, spec: dict[str, Any], v: float, lo: float, hi: float):
    """One ordinary value for an input whose witness value is ``v`` (a logit for a probability
    input), inside [lo, hi]: the witness's sign (either one for 0), magnitude in
    :data:`ORDINARY`."""
    if spec.get("prob"):
        return rng.uniform(-LOGIT_SPAN / 2, LOGIT_SPAN / 2)
    if lo == hi:
        return lo
    kind = spec.get("kind")
    if kind is not None:  # a label stays 0 or 1, an index or a count whole
        return rng.choice([k for k in kinds.values_of(kind) if lo <= k <= hi] or [v])
    if spec.get("integer"):
        first = max(1, math.ceil(lo)) if math.isfinite(lo) else 1
        return float(rng.randint(first, first + 2))
    if math.isfinite(lo) and math.isfinite(hi):
        return lo + (hi - lo) * rng.uniform(*PROBABILITY)
    magnitude = math.exp(rng.uniform(math.log(ORDINARY[0]), math.log(ORDINARY[1])))
    sign_up = v > 0 or (v == 0 and rng.random() < 0.5)  # 0 has no sign: either one
    positive = lo >= 0 or (sign_up and hi > 0)
    if positive:
        return max(lo, 0.0) + magnitude
    return min(hi, 0.0) - magnitude


def _tie(probe: dict[str, Any], point: dict[str, float], free: set[str]) -> None:
    """Keep the relations a generic point cannot break by chance: a value read twice, a
    stopped copy (``==``), probabilities and their logits (``sigmoid``)."""
    for rel in probe.get("relations") or []:
        a, b, op = rel.get("a"), rel.get("b"), rel.get("op")
        if a not in point or b not in point:
            continue
        if op == "==":
            if a in free:
                point[a] = point[b]
            elif b in free:
                point[b] = point[a]
        elif op == "sigmoid" and a in free:
            point[a] = 1 / (1 + math.exp(-point[b]))


def generic_points(
    probe: dict[str, Any], witness: dict[str, float], seed: int = 0, any_sign: bool = False
) -> list[dict[str, float]]:
    """Up to :data:`TRIALS` points: the witness with every free input at a generic value, inside
    the inputs' domains and relations.  Empty when the probe has no free input.  ``any_sign``:
    each free value takes either sign, so a symptom kept at every such point does not depend
    on the free values at all (``-1e9`` in float16), unlike ``log(hi - lo)`` at hi < lo."""
    free = free_inputs(probe)
    specs = {s["name"]: s for s in probe.get("inputs") or []}
    free = [n for n in free if n in witness and n in specs]
    if not free:
        return []
    rng = random.Random(seed)
    out: list[dict[str, float]] = []
    kind_of = kinds.input_kinds(probe)
    for _ in range(MAX_DRAWS):
        point = dict(witness)
        for name in free:
            lo, hi = _bounds(probe, specs[name])
            spec = {**specs[name], "integer": True} if _whole(probe, name) else specs[name]
            if name in kind_of:
                spec = {**spec, "kind": kind_of[name]}
            seen = 0.0 if any_sign else witness[name]  # 0 has no sign: either one
            point[name] = generic_value(rng, spec, seen, lo, hi)
        _tie(probe, point, set(free))
        plain = {n: v for n, v in point.items() if not specs.get(n, {}).get("prob")}
        if not domains.broken(probe, plain):
            out.append(point)
        if len(out) == TRIALS:
            break
    return out


def summary(free: list[str], points: list[dict[str, float]], kept: list[int]) -> dict[str, Any]:
    """What the worker reports in ``observed["generic"]`` (plain data)."""
    first = points[kept[0] if kept else 0]
    return {
        "free": free,
        "trials": len(points),
        "kept": len(kept),
        "example": {n: first[n] for n in free},
    }


# ---------------------------------------------------------------- verdict side


def survives(outcome: dict[str, Any]) -> bool:
    return int(outcome.get("kept", 0)) >= SURVIVES_IN or not outcome.get("trials")


def special_value_reason(
    probe: dict[str, Any], out: dict[str, Any], say_values: bool = True
) -> str | None:
    """Why a confirmed witness is only a precondition: the free inputs it needs at special
    values, whose owner nothing shows passing them; None when the symptom survives genericity
    (or was not tested).  ``say_values=False`` when another gate's reason already gives them."""
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return None
    outcome = observed.get("generic")
    if not isinstance(outcome, dict) or survives(outcome):
        return None
    free = [n for n in outcome.get("free") or [] if isinstance(n, str)]
    point = _witness_point(out)
    moved = {n for n, v in (outcome.get("example") or {}).items() if v != point.get(n)}
    named = _named(
        [n for n in free if n in moved] or free, observed.get("needed") or [], point, out
    )
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    example = ", ".join(
        f"`{n}` = {float(v):.3g}" for n, v in (outcome.get("example") or {}).items()
    )
    needs = f"needs {', '.join(_values(named, point))}; " if say_values else ""
    return (
        f"{needs}{_owners(named, specs)}; at "
        f"{outcome.get('trials')} generic values of them ({example}, ...) the symptom is gone"
    )


def free_value_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a witness that survives genericity is still a precondition: it rests on the sign of
    a *free* input (a parameter nothing in view drives, an attribute that is no weight), ``df``
    < 0 in ``pow(x / df, 1/3)`` (``observed["generic"]["signs"]``, the worker's sign flips).
    The reason states what was seen (it shows with these signs, and is gone with one negated),
    not a necessary condition: ``x / df`` < 0 has two sign patterns.
    That the symptom shows at other values of that sign says the hazard is no coincidence; it
    does not say the program gets there (a distribution's ``df`` is positive by contract).
    Confirmed needs the value to come from the program: data, weights, training, a caller."""
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return None
    outcome = observed.get("generic")
    if not isinstance(outcome, dict) or not isinstance(outcome.get("signs"), dict):
        return None
    signs = {str(n): str(s) for n, s in outcome["signs"].items()}
    if not signs:
        return None
    point = _witness_point(out)
    conds = [f"`{n}` {'< 0' if s.startswith('negative') else '> 0'}" for n, s in signs.items()]
    either = any(sign.endswith("or another") for sign in signs.values())
    free = [n for n in outcome.get("free") or [] if n in point and n not in signs]
    where = ", ".join(f"`{n}` = {fmt_g(float(point[n]))}" for n in free)
    seen = ", ".join(f"`{n}` = {fmt_g(float(point[n]))}" for n in signs if n in point)
    if len(signs) == 1:
        flipped = "it negated"
    else:
        flipped = "all of them negated" if either else "any one of them negated"
    specs = {s.get("name"): s for s in probe.get("inputs") or []}
    return (
        f"shows with {' and '.join(conds)}{f' where {where}' if where else ''} (the witness "
        f"has {seen}) and is gone with {flipped}; "
        f"{_owners(list(signs), specs)}"
    )


def all_free_reason(probe: dict[str, Any], out: dict[str, Any]) -> str | None:
    """Why a witness that survives genericity and sign flips is still a precondition: every
    value in it is free (a parameter no caller in view passes, an attribute that is no weight)
    or fixed by the code, so nothing of the program (its data, weights, training, callers) is
    in it.  ``log(spec.maximum - spec.minimum)`` at maximum = -1, minimum = 1 shows what the
    expression does, not what the program reaches (issue 22: confirmed means the program gets
    there).  Unless the symptom shows at generic values of either sign of every free input
    (``observed["generic"]["anywhere"]``): then it does not rest on them."""
    observed = out.get("observed")
    if out.get("status") != "confirmed" or not isinstance(observed, dict):
        return None
    point = _witness_point(out)
    specs = {s.get("name"): s for s in probe.get("inputs") or [] if s.get("name") in point}
    if not specs or len(specs) < len(point):
        return None  # a witness value the probe does not declare (a logit of a probability)
    drives = {str(s.get("drive")) for s in specs.values()}
    if "free" not in drives or not drives <= {"free", "fixed"}:
        return None
    outcome = observed.get("generic")
    anywhere = outcome.get("anywhere") if isinstance(outcome, dict) else None
    if (
        isinstance(anywhere, dict)
        and anywhere.get("trials")
        and (anywhere.get("kept") == anywhere.get("trials"))
    ):
        return None  # the symptom shows at any values of them: it does not rest on them
    raw_needed = observed.get("needed")
    needed = raw_needed if isinstance(raw_needed, list) else []
    free = [n for n, s in specs.items() if s.get("drive") == "free"]
    named = _relevant([n for n in needed if n in free] or free, out)
    return f"needs {', '.join(_values(named, point))}; {_owners(named, specs)}"


def _witness_point(out: dict[str, Any]) -> dict[str, Any]:
    """The witness's numeric input values (a row shown as a list is left out)."""
    return {n: v for n, v in (out.get("inputs") or {}).items() if isinstance(v, (int, float))}


def _named(free: list[str], needed: list[str], point: dict[str, Any], out) -> list[str]:
    """The free inputs the reason names: those the symptom needs; else (a coincidence of
    several values) those at an unusual value or sharing one, unless they only share it (moved
    alone, the symptom stayed); else every free input."""
    chosen = [n for n in needed if n in free]
    if chosen:
        return _relevant(chosen, out)
    odd = [
        n
        for n in free
        if n in point
        and (
            domains.value_class(float(point[n]), out.get("dtype")) != "ordinary"
            or any(m != n and point.get(m) == point[n] for m in point)
        )
    ]
    odd = [n for n in odd if n not in _irrelevant(out)]
    return _relevant(odd or free, out)


def _relevant(names: list[str], out: dict[str, Any]) -> list[str]:
    """``names`` without the inputs that only share a value with another one: moved alone,
    the symptom stayed (``observed["generic"]["irrelevant"]``, from the worker).  Never
    empty: when all would go, all stay."""
    gone = _irrelevant(out)
    kept = [n for n in names if n not in gone]
    return kept or names


def _irrelevant(out: dict[str, Any]) -> set[str]:
    observed = out.get("observed")
    outcome = observed.get("generic") if isinstance(observed, dict) else None
    return set(outcome.get("irrelevant") or []) if isinstance(outcome, dict) else set()


def _values(names: list[str], point: dict[str, Any]) -> list[str]:
    """`df` = 0.5; `t1` = `t0` (both 1) for inputs at one shared value; a far tail noted."""
    shown: list[str] = []
    done: set[str] = set()
    for name in names:
        if name in done:
            continue
        v = point.get(name)
        same = [m for m in names if m != name and m not in done and point.get(m) == v]
        if same and isinstance(v, (int, float)):
            done.update(same)
            equal = " = ".join(f"`{m}`" for m in [name, *same])
            shown.append(f"{equal} (all {fmt_g(float(v))})")
        elif isinstance(v, (int, float)):
            tail = ", a far tail" if abs(v) > 10 * ORDINARY[1] else ""
            shown.append(f"`{name}` = {fmt_g(float(v))}{tail}")
        done.add(name)
    return shown


def _owners(names: list[str], specs: dict[Any, dict[str, Any]]) -> str:
    """`df` is a parameter of `_foo` ...: one clause per owner, the inputs grouped."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        spec = specs.get(name) or {}
        origin = spec.get("origin") if spec.get("origin") != "subscript" else spec.get("of")
        if spec.get("declared"):  # typed_domains: a Parameter with a declared transform
            origin = "parameter-weight"
        groups.setdefault((str(origin), str(spec.get("owner") or "")), []).append(name)
    clauses = []
    for (origin, owner), members in groups.items():
        shown = ", ".join(f"`{m}`" for m in members)
        many = len(members) > 1
        where = f" of `{owner}`" if owner else ""
        if origin == "param":
            what = "parameters" if many else "a parameter"
            clauses.append(
                f"{shown} {'are' if many else 'is'} {what}{where} and nothing shows its callers "
                "pass such values"
            )
        elif origin == "attr":
            what = "attributes" if many else "an attribute"
            clauses.append(
                f"{shown} {'are' if many else 'is'} {what}{where}, "
                + ("neither trainable weights nor data" if many else "not a trainable weight")
            )
        elif origin == "parameter-weight":
            clauses.append(
                f"{shown} {'are trainable `Parameter`s' if many else 'is a trainable `Parameter`'}"
                f" and nothing shows that training gives {'them' if many else 'it'} such values"
            )
        else:
            clauses.append(f"nothing shows that training gives {shown} such values")
    return "; ".join(clauses)
