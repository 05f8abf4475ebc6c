"""Parse a module with libcst, without re-validating what the parser just built.

Every libcst node validates itself on construction (``CSTNode.__post_init__`` calls
``_validate``): that a keyword has the whitespace it needs, that parentheses pair up, that a
name is an identifier.  For a tree that libcst's native parser builds from source text that it
accepted, those checks restate the grammar, and libcst's own comment there says so ("It might
make more sense to move validation work into the visitor, which would allow us to avoid
validating the tree when parsing a file").  They are about a sixth of the parse, and the parse
is most of the static pass (benchmarks/SPEED.md).  So a parse runs with the validation hook
switched off; nodes built by hand (the fix rewrites) are validated as before, and every
rewritten module is compiled before it is offered.

The hook is a class attribute, so switching it is process-wide: a counter under a lock keeps
it off while any thread parses, and restores it when the last parse ends.  A node another
thread builds in that window is not validated; the rewrites' compile check still holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst
from libcst import CSTNode

# a libcst without the hook (it is not public API) parses as it always did
_VALIDATE = CSTNode.__dict__.get("__post_init__")
_lock = threading.Lock()
_parsing = [0]


def _no_validation(self: CSTNode) -> None:
    """The parser's nodes are valid by construction (see the module docstring)."""


@contextmanager
def _unvalidated() -> Iterator[None]:
    if _VALIDATE is None:
        yield
        return
    with _lock:
        _parsing[0] += 1
        if _parsing[0] == 1:
            CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        yield
    finally:
        with _lock:
            _parsing[0] -= 1
            if _parsing[0] == 0:
                CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]


def parse_module(text: str, config: cst.PartialParserConfig | None = None) -> cst.Module:
    """``libcst.parse_module``, raising what it raises, minus the per-node validation."""
    with _unvalidated():
        if config is None:
            return cst.parse_module(text)
        return cst.parse_module(text, config)


def reparse_changed(old: cst.Module, new: cst.Module) -> cst.Module | None:
    """``new``, a splice of ``old``, as a tree the walk can take, parsing only the
    module-level statements that are not ``old``'s: a spliced statement may hold one node twice
    (an operand a rewrite copies), and the walk needs each node once.  The statements ``old``
    lends are shared, not copied.  None when a statement does not read back alone as the same
    code (its trivia would then belong elsewhere): parse ``new.code`` instead."""
    lent = {id(stmt) for stmt in old.body}
    config = new.config_for_parsing
    body: list[cst.BaseStatement] = []
    for stmt in new.body:
        if id(stmt) in lent:
            lent.discard(id(stmt))  # a second occurrence is parsed afresh
            body.append(stmt)
            continue
        code = new.code_for_node(stmt.with_changes(leading_lines=()))
        try:
            alone = parse_module(code, config)
        except cst.ParserSyntaxError:
            return None
        if len(alone.body) != 1 or alone.header or alone.footer:
            return None  # libcst reads text back as it was: the statement alone is ``code``
        body.append(alone.body[0].with_changes(leading_lines=stmt.leading_lines))
    return new.with_changes(body=body)
