"""Feeds the training rung draws as their producer's output (a probability op's, read from the
code by ``analysis/slicing/program_producers.py``).

A teacher's softmax output fed to a student's step (``step(lab[pick], soft[pick])``) has no
data code the rung can replay: the trained teacher's values are not read.  Its producer says
what it holds, so the rung draws it as that producer's output on random inputs: for an op whose
output couples each row (softmax), ``exp(z) / sum(exp(z))`` of standard-normal ``z`` per row
(entries in (0, 1), each row summing to 1); for an elementwise one (sigmoid), ``1 / (1 +
exp(-z))``.  Such a draw lies inside what the producing code emits, which is what makes a run on
it the program's own evidence; it is not the teacher's own values, and it is paired with the
other feeds at random, which the verdict says.

Plain Python over the spec's JSON, and the script text that draws the feed.
"""

from __future__ import annotations

from typing import Any

from .. import ops


def producer(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The probability op producing feed ``name``, when the rung draws it from it: the
    feed has no data code and no fed range, and its producer is a probability op."""
    feed = ((spec["data"].get(name) or {}).get("feeds") or [{}])[0]
    got = feed.get("producer")
    if feed.get("data") is not None or feed.get("range") is not None or not got:
        return None
    return got if got.get("op") in ops.PROBABILITY else None


def produced(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every feed drawn as its producer's output, with that producer."""
    return {n: p for n in spec["data"] if (p := producer(spec, n)) is not None}


def width(got: dict[str, Any]) -> int | None:
    """The producer's last dimension, when the code gives it."""
    w = got.get("width")
    return w if isinstance(w, int) and w > 0 else None


def draw_lines(ident: str, got: dict[str, Any], rows: int | str, dims: str) -> list[str]:
    """The script lines of ``data()`` that draw the feed: the producer applied to
    standard-normal inputs, row by row for a row-coupled op (a softmax)."""
    z = f"RNG.normal(0.0, 1.0, size=({rows}, {dims}))"
    if ops.REGISTRY[got["op"]].row_coupled:
        return [
            f"    e = np.exp({z})",
            f"    out[{ident!r}] = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)",
        ]
    return [f"    out[{ident!r}] = (1.0 / (1.0 + np.exp(-{z}))).astype(np.float32)"]


def described(got: dict[str, Any], steer: bool | str) -> str:
    """What the feed was drawn as, and what that assumes, for the verdict's text."""
    op = got["op"]
    coupled = ops.REGISTRY[op].row_coupled
    what = f"{op} rows" if coupled else f"{op} values"
    what = f"one of its {what}, repeated" if steer else f"{what} of standard-normal inputs"
    bounds = "entries in [0, 1], each row summing to 1" if coupled else "entries in (0, 1)"
    of, code = got.get("of") or "", got.get("code") or ""
    producer = f"`{of}`'s producer `{code}`" if of not in ("", code) else f"`{code}`"
    if got.get("model"):
        producer += f" (a model whose output activation is a {op})"
    return (
        f"{what} ({bounds}, as {producer} emits them: not the values it produced in the "
        "program, paired with the other feeds at random)"
    )
