"""Ranges of well-known special functions from their arguments' ranges (static, no TensorFlow).

A probe input computed by an untraced call (`special.lbeta(half, half * safe_df)`) is free in
the probe, so a witness may set it to any value.  When the call is one of the functions below
and the static analysis bounds its arguments, the value lies in a range this module derives,
so a witness outside it is no witness.  Each bound rests on a monotonicity or convexity fact
stated where it is used; the bounds are widened outward by a small margin to cover float64
rounding and the truncated Stirling series.  Only finite arguments are covered: an infinite
bound of an argument is taken as the largest finite value of the probe's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INF = math.inf
LGAMMA_MIN_AT = 1.4616321449683622  # log Γ is decreasing on (0, this], increasing after
LGAMMA_MIN = -0.12148629053584961  # log Γ(1.46163...): its minimum on x > 0
STIRLING_FROM = 1e7  # above this, lgamma differences use the cancelling Stirling form
Interval = tuple[float, float]
# the library functions (TF, TFP, SciPy) whose ranges special_range computes
SPECIAL_FUNCTIONS = frozenset({"lbeta", "log_gamma_difference", "lgamma", "digamma"})


@dataclass(frozen=True)
class SpecialRange:
    """The call's value lies in [lo, hi]; ``why`` says which fact bounds it."""

    lo: float
    hi: float
    why: str


def _widen(lo: float, hi: float) -> Interval:
    """Outward by a relative 1e-9 (and 1e-12): float64 rounding of the formulas below."""
    return (lo - 1e-9 * abs(lo) - 1e-12, hi + 1e-9 * abs(hi) + 1e-12)


def _lgamma(x: float) -> float:
    return INF if x <= 0 else math.lgamma(x)


def log_gamma_difference(a: float, b: float) -> float:
    """lgamma(b) - lgamma(a + b) for a >= 0, b > 0, without cancelling two huge lgammas."""
    if b <= 0:
        return INF
    if b < STIRLING_FROM:
        return math.lgamma(b) - math.lgamma(a + b)
    # Stirling: lgamma(z) = (z - 1/2) log z - z + log(2 pi)/2 + 1/(12 z) - O(1/z^3); the
    # difference cancels the large terms symbolically.
    s = a + b
    return -(b - 0.5) * math.log1p(a / b) - a * math.log(s) + a + (1 / (12 * b) - 1 / (12 * s))


def lbeta_value(x: float, y: float) -> float:
    """log B(x, y) = lgamma(min) + (lgamma(max) - lgamma(x + y)), for x, y > 0."""
    small, big = min(x, y), max(x, y)
    return _lgamma(small) + log_gamma_difference(small, big)


def _lgamma_min(lo: float, hi: float) -> float:
    """Smallest log Γ on [lo, hi] (lo > 0): log Γ is unimodal with its minimum at 1.4616."""
    if lo <= LGAMMA_MIN_AT <= hi:
        return LGAMMA_MIN
    return min(_lgamma(lo), _lgamma(hi))


def lgamma_range(x: Interval) -> Interval | None:
    """log Γ on x > 0: decreasing up to 1.4616, increasing after, so its ends bound it."""
    if x[0] <= 0:
        return None  # log|Γ| of negative arguments is unbounded below
    return _widen(_lgamma_min(*x), max(_lgamma(x[0]), _lgamma(x[1])))


def digamma_value(x: float) -> float:
    """ψ(x) for x > 0: the recurrence ψ(x) = ψ(x + 1) - 1/x up to 10, then the asymptotic series
    (its truncation error at x >= 10 is below 1e-10)."""
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    inv = 1 / (x * x)
    series = math.log(x) - 0.5 / x - inv * (1 / 12 - inv * (1 / 120 - inv / 252))
    return shift + series


def digamma_range(x: Interval) -> Interval | None:
    """ψ is increasing on x > 0 (its derivative, the trigamma, is positive)."""
    if x[0] <= 0:
        return None  # poles at 0, -1, -2, ...
    return _widen(digamma_value(x[0]), digamma_value(x[1]))


def lbeta_range(x: Interval, y: Interval) -> Interval | None:
    """log B(x, y) for x, y > 0 decreases in each argument (d/dx = ψ(x) - ψ(x + y) < 0, ψ
    increasing), so the ends of the box bound it."""
    if x[0] <= 0 or y[0] <= 0:
        return None
    return _widen(lbeta_value(x[1], y[1]), lbeta_value(x[0], y[0]))


def log_gamma_difference_range(x: Interval, y: Interval) -> Interval | None:
    """lgamma(y) - lgamma(x + y) for x >= 0, y > 0 (TFP's documented domain).  It decreases in y
    (d/dy = ψ(y) - ψ(x + y) < 0), and in x it is -lgamma(x + y) + c, concave (log Γ is convex):
    its minimum is at an end of x with y at its top, its maximum at y's bottom where
    lgamma(x + y) is smallest.  Arguments are taken inside the documented domain (a call outside
    it breaks the library's contract, not this bound); y's bottom at 0 leaves the top open."""
    x, y = (max(x[0], 0.0), x[1]), (max(y[0], 0.0), y[1])
    if x[1] < 0 or y[1] <= 0:
        return None
    lo = min(log_gamma_difference(x[0], y[1]), log_gamma_difference(x[1], y[1]))
    hi = _lgamma(y[0]) - _lgamma_min(x[0] + y[0], x[1] + y[0])
    return _widen(lo, hi)


def _capped(iv: Interval, dtype_max: float) -> Interval:
    return (max(iv[0], -dtype_max), min(iv[1], dtype_max))


def _show(v: float) -> str:
    return "inf" if v == INF else "-inf" if v == -INF else f"{v:.4g}"


def _span(iv: Interval) -> str:
    return f"[{_show(iv[0])}, {_show(iv[1])}]"


def _arg(name: str, iv: Interval) -> str:
    return f"{name} = {_show(iv[0])}" if iv[0] == iv[1] else f"{name} in {_span(iv)}"


def special_range(word: str, args: list[Interval], dtype_max: float) -> SpecialRange | None:
    """The range of ``word(*args)`` for the functions of the table, or None when the function is
    not in it or an argument is outside the domain its bound needs (then nothing is known)."""
    capped = [_capped(a, dtype_max) for a in args]
    if word == "log_gamma_difference":
        capped = [(max(a[0], 0.0), a[1]) for a in capped]
    found: Interval | None = None
    if word == "lbeta" and len(capped) == 2:  # TFP's special.lbeta(x, y); tf.math.lbeta has one
        found = lbeta_range(*capped)
        fact = "log B(x, y) decreases in x and in y"
    elif word == "log_gamma_difference" and len(capped) == 2:
        found = log_gamma_difference_range(*capped)
        fact = "lgamma(y) - lgamma(x + y) decreases in y and is concave in x; x >= 0, y > 0 as TFP documents"
    elif word == "lgamma" and len(capped) == 1:
        found = lgamma_range(capped[0])
        fact = "log Γ decreases up to 1.4616 and increases after"
    elif word == "digamma" and len(capped) == 1:
        found = digamma_range(capped[0])
        fact = "ψ increases on x > 0"
    if found is None:
        return None
    shown = ", ".join(_arg(n, a) for n, a in zip("xy", capped, strict=False))
    names = ", ".join("xy"[: len(capped)])
    why = f"`{word}({names})` lies in {_span(found)} for {shown} ({fact})"
    return SpecialRange(found[0], found[1], why)
