"""Lazy per-statement positions agree exactly with libcst's whole-module PositionProvider."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tfnumlint.positions import Positions

ROOT = Path(__file__).resolve().parent.parent
_WHITESPACE = (
    cst.EmptyLine,
    cst.Comment,
    cst.Newline,
    cst.SimpleWhitespace,
    cst.TrailingWhitespace,
    cst.ParenthesizedWhitespace,
)

TRICKY = '''\
# header comment
import tensorflow as tf

x = 1; y = tf.math.log(x);


# leading comment
@decorator
@other(
    1)
def f(a):
    """doc"""
    return tf.math.log(a)  # c

class C:
    def g(self):
        return tf.sqrt(
            self.x
        )
if True: z = 2
s = """multi
line""" + tf.exp(q)
async def h():
    await g()
'''


def _sources():
    yield "tricky", TRICKY
    for path in (
        sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tfnumlint").rglob("*.py"))[:15]
    ):
        yield path.name, path.read_text()


@pytest.mark.parametrize(
    ("name", "text"),
    list(_sources()),
    ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "",
)
def test_lazy_positions_match_the_full_provider(name, text):
    module = cst.parse_module(text)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lazy = Positions(module, text)
    lazy.resolve(module.body)
    checked = 0
    for node, expected in full.items():
        if node is module or isinstance(node, _WHITESPACE):
            continue
        assert lazy.get(node) == expected, (name, type(node).__name__)
        checked += 1
    assert checked > 0


def test_only_the_requested_statements_are_resolved():
    module = cst.parse_module(TRICKY)
    lazy = Positions(module, TRICKY)
    target = module.body[4]  # the decorated def
    lazy.resolve([target])
    assert lazy.get(target) is not None
    assert lazy.get(module.body[0]) is None
