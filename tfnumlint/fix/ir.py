"""The rewrite IR: what a rewrite builds, and the plan that carries it.

A replacement is a tiny expression tree (:class:`Call`, :class:`Src`, ...) rather than source
text, so that it can be rendered twice: as source in the user's own import spelling
(:mod:`.render`), and as a probe tree for the proof (:mod:`.proof`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import libcst as cst

from ..analysis.module import Scope


@dataclass
class Src:
    """An original sub-expression, evaluated where it originally sat."""

    node: cst.BaseExpression
    scope: Scope
    order: int


@dataclass
class Num:
    """A numeric literal, with the text to write and the value to probe."""

    text: str
    value: float


@dataclass
class Call:
    """A call of a canonical op (a key of :data:`.render.API`)."""

    op: str
    args: list[IR] = field(default_factory=list)
    kw: list[tuple[str, IR]] = field(default_factory=list)


@dataclass
class Bin:
    op: str  # + - * /
    left: IR
    right: IR


@dataclass
class Neg:
    x: IR


@dataclass
class Keep:
    """An original call re-emitted with changed keyword arguments (no new TF names)."""

    node: cst.Call
    set_kw: dict[str, IR]
    scope: Scope
    order: int


@dataclass
class Reuse:
    """An original call kept as written (layout, comments) with its first argument replaced."""

    node: cst.Call
    arg: IR
    scope: Scope
    order: int


IR: TypeAlias = "Src | Num | Call | Bin | Neg | Keep | Reuse"


def children(ir: IR) -> Iterator[IR]:
    """The IR operands of ``ir`` (the original nodes inside ``Src``/``Keep`` are not IR)."""
    if isinstance(ir, Call):
        yield from ir.args
        yield from (v for _, v in ir.kw)
    elif isinstance(ir, Bin):
        yield ir.left
        yield ir.right
    elif isinstance(ir, Neg):
        yield ir.x
    elif isinstance(ir, Keep):
        yield from ir.set_kw.values()
    elif isinstance(ir, Reuse):
        yield ir.arg


def walk(ir: IR) -> Iterator[IR]:
    """``ir`` and every IR node below it, depth first."""
    yield ir
    for child in children(ir):
        yield from walk(child)


@dataclass
class Edit:
    node: cst.CSTNode  # original node (identity) to replace
    new: IR


@dataclass
class Plan:
    """One rewrite of one hit: its edits, how safe it is by construction, and, once planned
    by :mod:`.apply`, its proof, replacement text and span."""

    rule: str
    applicability: str  # safe | unsafe | suggestion
    message: str
    edits: list[Edit] = field(default_factory=list)
    folds: list[tuple[str, Scope]] = field(default_factory=list)  # names whose assignment may die
    proof: dict[str, Any] | None = None
    replacement: str = ""
    span: tuple[int, int, int, int] = (0, 0, 0, 0)
    uses_import: bool = False  # rendered with the TensorFlow import the file lacks
    refuted: bool = False  # the finding it fixes was refuted by verification
    # set by the re-lint (:mod:`.hazards`): the rules of the hazard group it must remove, the
    # hits it removed per rule, and the group's rules it leaves or adds (then never offered)
    hazards: list[str] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    leaves: list[str] = field(default_factory=list)
    edits_text: list[Any] = field(default_factory=list)  # hazards.TextEdit: the file's changes

    @property
    def ops(self) -> set[str]:
        """Every canonical op the edits call."""
        return {n.op for e in self.edits for n in walk(e.new) if isinstance(n, Call)}
