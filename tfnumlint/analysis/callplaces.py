"""Where each call starts in a module's text, found in one pass over the text.

The project index names a call site by its line and column.  The position provider would cost
about the parse again, so the k-th call of ``f`` in walk (source) order is matched with the
k-th ``f(`` in the text instead.  Searching the text once per callee name made that quadratic
in a large file (hundreds of names times the whole text): :func:`call_starts` finds, in one
scan, every place a dotted name is followed by ``(``, for all names at once.  The scan goes
from bracket to bracket (reading each call's name backwards), not character by character.
"""

from __future__ import annotations

import re

_PART = r"[^\W\d]\w*"
_WHOLE_PART = re.compile(_PART)
_PART_START = re.compile(r"[^\W\d]")
# Searched in the reversed text: an opening bracket, then (read backwards) the word runs
# joined by dots that precede it.  A pattern that starts with a literal is searched from one
# ``(`` to the next; a pattern that starts with a look-behind is tried at every character.
_BACKWARD = re.compile(r"\(\s*(\w+(?:\s*\.\s*\w+)*)")
_RUN = re.compile(r"\w+")


def call_starts(text: str) -> dict[str, list[int]]:
    r"""Dotted callee name (spaces removed) -> the offsets where a call of it starts, in order.

    A call starts where a chain ``a . b . c (`` of names (each a word not starting with a digit)
    starts that no word character or dot precedes, nor ``def ``: the zero-width matches of
    ``(?<![\w.])(?<!def )(?=([^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*)\s*\()`` (the one-pass
    scan this replaces; tests compare the two).  Each start belongs to the one ``(`` its chain
    ends at, so the chains are read backwards from each bracket: a part is a start when it and
    the parts after it begin with a non-digit and a space (not a dot) or nothing precedes it.
    """
    out: dict[str, list[int]] = {}
    n = len(text)
    for m in reversed(list(_BACKWARD.finditer(text[::-1]))):
        end, begin = n - m.start(1), n - m.end(1)
        starts: list[int] = []
        for run in reversed(list(_RUN.finditer(text, begin, end))):
            p = run.start()
            if not _PART_START.match(text, p):
                break  # no chain through a part that starts with a digit
            if p and text[p - 1] == ".":
                continue
            if p >= 4 and text[p - 4 : p] == "def ":
                continue
            starts.append(p)
        for p in reversed(starts):
            chain = text[p:end]
            name = chain if "." not in chain else "".join(chain.split())
            out.setdefault(name, []).append(p)
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
