"""IEEE facts per dtype without numpy: the static pass must start fast (numpy costs ~90 ms).

Rounding uses ``struct`` ('e' is IEEE half, 'f' single); bfloat16 is the top half of a
float32, rounded to nearest-even.
"""

from __future__ import annotations

import math
import struct

_FMT = {"float16": ("e", "H"), "float32": ("f", "I")}


def _bf16_bits(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    rounding = 0x7FFF + ((bits >> 16) & 1)
    return ((bits + rounding) >> 16) & 0xFFFF


def round_to(value: float, dtype: str) -> float:
    """``value`` as ``dtype`` stores it (overflow gives ±inf)."""
    try:
        if dtype in _FMT:
            code = _FMT[dtype][0]
            return struct.unpack("<" + code, struct.pack("<" + code, value))[0]
        if dtype == "bfloat16":
            return struct.unpack("<f", struct.pack("<I", _bf16_bits(value) << 16))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, value)
    return float(value)


def underflows(value: float, dtype: str) -> bool:
    """``value`` != 0 but rounds to 0 when stored in ``dtype``."""
    return value != 0 and round_to(value, dtype) == 0.0


def spacing(magnitude: float, dtype: str) -> float:
    """Distance from |magnitude| (as stored) to the next larger value of ``dtype``."""
    m = abs(round_to(magnitude, dtype))
    if math.isinf(m):
        return math.inf
    if dtype in _FMT:
        code, int_code = _FMT[dtype]
        bits = struct.unpack("<" + int_code, struct.pack("<" + code, m))[0]
        try:
            nxt = struct.unpack("<" + code, struct.pack("<" + int_code, bits + 1))[0]
        except (OverflowError, struct.error):
            return math.inf
        return nxt - m
    if dtype == "bfloat16":
        bits = _bf16_bits(m)
        nxt = struct.unpack("<f", struct.pack("<I", (bits + 1) << 16))[0]
        return nxt - m
    return math.ulp(m)


# Bit layouts: (pack code, integer code, mantissa bits, bits of the max finite value).
_LAYOUT = {
    "float16": ("e", "H", 10, 0x7BFF),
    "float32": ("f", "I", 23, 0x7F7FFFFF),
    "bfloat16": ("f", "I", 23, 0x7F7F0000),  # the top half of a float32
}


def _from_bits(bits: int, dtype: str) -> float:
    code, int_code, _, _ = _LAYOUT[dtype]
    return struct.unpack("<" + code, struct.pack("<" + int_code, bits))[0]


def smallest_subnormal(dtype: str) -> float:
    if dtype == "bfloat16":
        return _from_bits(1 << 16, dtype)
    if dtype == "float64":
        return 5e-324
    return _from_bits(1, dtype)


def smallest_normal(dtype: str) -> float:
    if dtype == "float64":
        return 2.2250738585072014e-308
    if dtype == "bfloat16":
        return _from_bits(1 << 23, dtype)
    return _from_bits(1 << _LAYOUT[dtype][2], dtype)


def max_finite(dtype: str) -> float:
    if dtype == "float64":
        return 1.7976931348623157e308
    return _from_bits(_LAYOUT[dtype][3], dtype)


def exp_overflow(dtype: str) -> float:
    """exp(x) is inf in ``dtype`` once x passes this (log of the largest finite value)."""
    return math.log(max_finite(dtype))


def exp_underflow(dtype: str, flush_to_zero: bool = True) -> float:
    """exp(x) is exactly 0 in ``dtype`` below this.

    TensorFlow's CPU kernels run with flush-to-zero, so anything below the smallest normal
    is 0 there (float32: -87.34); with subnormals kept (GPUs, numpy), the result rounds to 0
    only below half the smallest subnormal (float32: -103.97)."""
    if flush_to_zero:
        return math.log(smallest_normal(dtype))
    return math.log(smallest_subnormal(dtype)) - math.log(2.0)


def sigmoid_one(dtype: str) -> float:
    """sigmoid(x) = 1 / (1 + exp(-x)) is exactly 1 in ``dtype`` once x passes this: 1 + exp(-x)
    rounds to 1 when exp(-x) is below half the spacing above 1 (float32: 16.6)."""
    return -math.log(spacing(1.0, dtype) / 2)
