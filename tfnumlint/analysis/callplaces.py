"""Where each call starts in a module's text, found in one pass over the text.

The project index names a call site by its line and column.  The position provider would cost
about the parse again, so the k-th call of ``f`` in walk (source) order is matched with the
k-th ``f(`` in the text instead.  Searching the text once per callee name made that quadratic
in a large file (hundreds of names times the whole text): :func:`call_starts` finds, in one
scan, every place a dotted name is followed by ``(``, for all names at once.
"""

from __future__ import annotations

import re

_PART = r"[^\W\d]\w*"
# A zero-width match at every start of ``a . b . c (`` that no word character or dot precedes
# (nor ``def ``): the same places as a per-name ``(?<![\w.])(?<!def )a\s*\.\s*b\s*\.\s*c\s*\(``,
# because after a shorter chain the next character is a dot or part of a name, never ``(``.
_CALL_START = re.compile(r"(?<![\w.])(?<!def )(?=(" + _PART + r"(?:\s*\.\s*" + _PART + r")*)\s*\()")
_WHOLE_PART = re.compile(_PART)


def call_starts(text: str) -> dict[str, list[int]]:
    """Dotted callee name (spaces removed) -> the offsets where a call of it starts, in order."""
    out: dict[str, list[int]] = {}
    for m in _CALL_START.finditer(text):
        chain = m.group(1)
        name = chain if "." not in chain else "".join(chain.split())
        out.setdefault(name, []).append(m.start())
    return out


def scannable(name: str) -> bool:
    """A dotted name whose parts the one-pass scan recognises (a part written with a combining
    mark is not a regex word: such a name is searched on its own)."""
    return all(_WHOLE_PART.fullmatch(p) for p in name.split("."))


def name_starts(text: str, name: str) -> list[int]:
    """Offsets of the calls of one dotted name: the per-name search."""
    parts = [re.escape(p) for p in name.split(".")]
    pattern = re.compile(r"(?<![\w.])(?<!def )" + r"\s*\.\s*".join(parts) + r"\s*\(")
    return [m.start() for m in pattern.finditer(text)]
