"""What the code says around a recipe's names: constant folding, mentions.

Plain facts read from the module's tree, shared by the recipe builder (``recipe.py``).
"""

from __future__ import annotations

import math
import weakref
from collections import Counter

import libcst as cst

from .module import ModuleInfo
from .names import descendants
from .recipe_tables import Unknown

MAX_POWER = 1024  # 2 ** 10**9 is not folded

BINARY = {
    cst.Add: "+",
    cst.Subtract: "-",
    cst.Multiply: "*",
    cst.Divide: "/",
    cst.Power: "**",
    cst.MatrixMultiply: "@",
    cst.FloorDivide: "//",
    cst.Modulo: "%",
    cst.BitAnd: "&",
    cst.BitOr: "|",
}
COMPARE = {
    cst.LessThan: "<",
    cst.GreaterThan: ">",
    cst.LessThanEqual: "<=",
    cst.GreaterThanEqual: ">=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}


def fold(op: str, a: float, b: float) -> float | None:
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        if op == "//":
            return a // b
        if op == "%":
            return a % b
        if op == "**":
            if abs(b) > MAX_POWER:
                return None
            got = a**b
            return got if isinstance(got, (int, float)) else None
    except (ZeroDivisionError, OverflowError):
        return None
    return None


def product(shape: list[int] | None) -> int:
    return math.prod(shape) if shape else 1


_MENTIONS: weakref.WeakKeyDictionary[ModuleInfo, Counter[str]] = weakref.WeakKeyDictionary()


def mentions(info: ModuleInfo) -> Counter[str]:
    """How often each identifier appears in the module (counted once per module)."""
    known = _MENTIONS.get(info)
    if known is None:
        known = Counter(n.value for n in descendants(info.module) if isinstance(n, cst.Name))
        _MENTIONS[info] = known
    return known


def reachable(root: dict, defs: dict) -> dict:
    """The defs a recipe's root reaches, through refs (a def built and then left unread, as
    one read only for its shape, is not drawn)."""
    reached: dict = {}
    stack: list = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            key = item.get("id") if item.get("k") == "ref" else None
            if key is not None and key not in reached and defs.get(key) is not None:
                reached[key] = defs[key]
                stack.append(reached[key])
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
    return reached


def _sequence(tree: dict, defs: dict) -> dict | None:
    """The Python list/tuple literal a tree is (through refs), or None for an array."""
    while tree.get("k") == "ref":
        found = defs.get(tree["id"])
        if found is None:
            return None
        tree = found
    return tree if tree.get("k") in ("array", "list", "tuple") else None


def sequence_op(op: str, a: dict, b: dict, defs: dict, limit: int) -> dict | None:
    """Python's own meaning of ``+``/``*`` on two lists or a list and an int (``[0] * n +
    [1] * m`` concatenates and repeats, NumPy would add and scale); None when an operand is
    an array, where NumPy's meaning is Python's too."""
    left, right = _sequence(a, defs), _sequence(b, defs)
    if left is None and right is None:
        return None
    if left is not None and right is not None:
        if op != "+" or left["k"] != "array" or right["k"] != "array":
            raise Unknown("an operation on two Python sequences")
        return {"k": "array", "v": [*left["v"], *right["v"]]}
    seq, other = (left, b) if left is not None else (right, a)
    if other.get("k") != "const":
        return None  # a list and an array: NumPy's broadcast, as in Python
    whole = isinstance(other["v"], int) and not isinstance(other["v"], bool)
    if op != "*" or not whole or seq["k"] != "array":  # type: ignore[index]
        raise Unknown("a Python sequence with a number")  # a TypeError, or not a literal
    if len(seq["v"]) * max(other["v"], 0) > limit:  # type: ignore[index]
        raise Unknown("too large")
    return {"k": "array", "v": seq["v"] * max(other["v"], 0)}  # type: ignore[index]


def tuple_valued(tree: dict, defs: dict) -> bool:
    """Is the tree a tuple of values (through refs): a loader's result, not an array?"""
    while tree.get("k") == "ref":
        tree = defs.get(tree["id"]) or {}
    return tree.get("k") == "tuple"


def element(tree: dict, path: tuple[int, ...], defs: dict) -> dict:
    """The item at ``path`` of a tuple-valued tree (a loader's result, or a name bound to it):
    ``(1, 0)`` of ``((a, b), (c, d))`` is ``c``."""
    for index in path:
        while tree["k"] == "ref" and (defs.get(tree["id"]) or {}).get("k") == "tuple":
            tree = defs[tree["id"]]
        if tree["k"] != "tuple" or not -len(tree["items"]) <= index < len(tree["items"]):
            raise Unknown("an unpacked value")
        tree = tree["items"][index]
    return tree
