"""Domains and relations read from identifiers: weak evidence, a convention and not a proof.

A witness outside a name-derived domain is inconclusive, never refuted.  Issue 22 wants names
out of verdicts; these are the tables that are left, each listed with its reason in
``tests/test_no_lexicons.py``."""

from __future__ import annotations

import math
import re
from typing import Any

from .domain_code import NOT_A_VALUE_NAME, PRODUCER_RANGES
from .domain_model import Domain, Relation
from .names import tokens

# Names of constants: `one = dtype(1.)` is 1 (TFP style), not a free input.  The whole name
# must be the word: `betainc_a_b_half` is not 0.5.
CONSTANT_NAMES = {
    "zero": 0.0,
    "one": 1.0,
    "half": 0.5,
    "two": 2.0,
    "np_pi": math.pi,
    "math_pi": math.pi,
    "pi": math.pi,
    "np_e": math.e,
    "math_e": math.e,
}
# `numpy_dtype(94.5)`, `np.float32(0.5)`: a literal cast to a dtype, sliced as an opaque call.
_CAST_LITERAL = re.compile(r"^(?:numpy_dtype|np_float\d+|dtype|np_dtype)_(\d+)(?:_(\d+))?$")
# Words that make a high/low pair a pair of counts or sizes, not an interval's ends.
_NOT_INTERVAL = frozenset({"count", "counts", "num", "size", "sizes", "index", "idx", "n"})
# Words in an opaque producer's name that make its value non-negative (log1psquare, abs, ...).
_NONNEG_WORDS = re.compile(r"^(?:\w*square|abs|norm|exp|softplus|relu|sqrt|variance|std)$")
# (bigger, smaller): `high` - `low` > 0 when both are free inputs of the same probe.
PAIR_WORDS = (
    ("high", "low"),
    ("upper", "lower"),
    ("max", "min"),
    ("maximum", "minimum"),
    ("hi", "lo"),
    ("big", "small"),
    ("end", "start"),
    ("stop", "start"),
    ("right", "left"),
)


def name_domain(name: str) -> Domain | None:
    """Weak domain of an input named after a constant or its producer (``half``, ``kve``,
    ``log1psquare``).  Words of meaning (``rate``, ``eps``, ``step``) give none: issue 22
    removed that lexicon, whose domains turned real witnesses into "ruled out by its name"."""
    key = re.sub(r"\W+", "_", name).strip("_")  # `np.pi` -> np_pi, `self.rate` -> self_rate
    if key.lower() in CONSTANT_NAMES:
        value = CONSTANT_NAMES[key.lower()]
        return Domain(name, value, value, False, f"by its name (`{name}`)", strong=False)
    cast = _CAST_LITERAL.match(key)
    if cast:
        value = float(f"{cast.group(1)}.{cast.group(2) or 0}")
        return Domain(name, value, value, False, f"it is the literal {value:g} cast", strong=True)
    words = [t.lower() for t in tokens(name) if not t.isdigit()]
    if not words or "log" in words:
        return None  # log_scale, log_variance, log_prob: log space has no sign
    whole = key.lower().lstrip("_")
    if whole in PRODUCER_RANGES and whole not in NOT_A_VALUE_NAME:
        lo, lo_open, hi = PRODUCER_RANGES[whole]  # `kve`, `cdf`: named after its producer
        return Domain(name, lo, hi, lo_open, f"its producer's name (`{whole}`)", False)
    if any(_NONNEG_WORDS.match(w) for w in words):
        nonneg = next(w for w in words if _NONNEG_WORDS.match(w))
        return Domain(name, 0.0, math.inf, False, f"its producer's name (`{nonneg}`)", False)
    return None


def pair_relations(names: list[str]) -> list[Relation]:
    """`x_high` and `x_low` (same other words) are an interval: high > low, by convention."""
    out = []
    lowered = {n: _comparable(n) for n in names}
    for a in names:
        if _NOT_INTERVAL & set(lowered[a]):
            continue  # high_counts / low_counts: two counts, not an interval
        for big, small in PAIR_WORDS:
            if big not in lowered[a]:
                continue
            partner = [small if t == big else t for t in lowered[a]]
            for b in names:
                if b != a and lowered[b] == partner:
                    out.append(Relation(a, ">", b, f"`{big}`/`{small}` by their names", False))
    return out


_PROB_WORDS = frozenset({"prob", "probs", "probability", "probabilities"})
_LOGIT_WORDS = ("logits", "logit")


def logit_relations(inputs: list[dict[str, Any]]) -> list[Relation]:
    """`probs` and `logits` (same other words) are one parameter, probs = sigmoid(logits), when
    the probs input comes from a sigmoid: a witness may not set them independently."""
    names = [spec["name"] for spec in inputs]
    words = {n: [t.lower() for t in tokens(n)] for n in names}
    out = []
    for spec in inputs:
        a = spec["name"]
        if spec.get("producer") != "sigmoid" or not _PROB_WORDS & set(words[a]):
            continue
        for logit in _LOGIT_WORDS:
            partner = [logit if w in _PROB_WORDS else w for w in words[a]]
            for b in names:
                if b != a and words[b] == partner:
                    why = f"`{a}` and `{b}` are one parameter (a sigmoid of the logits)"
                    out.append(Relation(a, "sigmoid", b, why, False))
    return out


_BOX_WORDS = frozenset(
    {"window", "box", "boxes", "bbox", "bboxes", "anchor", "anchors", "roi", "rois"}
)
# [ymin, xmin, ymax, xmax]: the object-detection convention for a box or a crop window.
_BOX_PAIRS = (("2", "0"), ("3", "1"))


def box_relations(names: list[str]) -> list[Relation]:
    """`window[3] - window[1]`: a box's max coordinate exceeds its min one, by convention."""
    out = []
    for a in names:
        words = [t.lower() for t in tokens(a)]
        if len(words) < 2 or words[-2] not in _BOX_WORDS:
            continue
        for big, small in _BOX_PAIRS:
            if words[-1] == big:
                b = "_".join([*tokens(a)[:-1], small])
                if b in names:
                    why = f"`{words[-2]}` is [ymin, xmin, ymax, xmax] by convention"
                    out.append(Relation(a, ">", b, why, False))
    return out


def _comparable(name: str) -> list[str]:
    """Lower-case words of a name; the slicer cuts labels at 32 characters, so the last word
    of a cut label (`..._high_i` from `..._high_if ...`) is dropped."""
    words = [t.lower() for t in tokens(name)]
    return words[:-1] if len(name) >= 32 and len(words) > 1 else words
