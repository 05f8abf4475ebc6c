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
