"""Lazy per-statement positions agree exactly with libcst's whole-module PositionProvider."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tfnumlint.analysis.module import Site, build
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


def _short_ids(v: object) -> str:
    return v if isinstance(v, str) and len(v) < 60 else ""


@pytest.mark.parametrize(("name", "text"), list(_sources()), ids=_short_ids)
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


NESTED = '''\
import tensorflow as tf


class Model(tf.keras.Model):
    """A class whose methods hold the hits."""

    scale = tf.exp(2.0)

    @tf.function(
        jit_compile=True)
    def call(self, x, training=False):
        # a comment line inside
        if training:
            y = tf.math.log(x)
        elif x is None: return tf.sqrt(-1.0)
        elif tf.reduce_sum(x) > 0:
            y = tf.math.log(
    x + 1e-10
)
        else:
            y = x / tf.reduce_sum(x); z = tf.exp(y)
        for i in range(3):
            y = y / (i + 1)
        else:
            y = tf.math.log(y)
        while False:
            pass
        try:
            q = 1 / tf.reduce_max(x)
        except ValueError as e:
            q = tf.math.log(2.0)
        else:
            q = tf.sqrt(q)
        finally:
            r = tf.exp(q)
        with tf.name_scope("s"):
            s = """a multi
line string""" + tf.strings.as_string(tf.exp(x))
            t = tf.math.log(x) \\
                + 1.0
        match training:
            case True:
                u = tf.math.log(x)
            case _:
                u = 0
        def inner(a):
          return tf.math.log(a)  # a two-space block
        return y + inner(x)

    async def other(self):
        if True: v = tf.exp(1.0); w = 1 / tf.reduce_sum(v)
        return await tf.sqrt(2.0)
'''


def _nested_sources():
    yield "nested", NESTED
    for path in sorted((ROOT / "tfnumlint").rglob("*.py"))[:40]:
        yield path.name, path.read_text()


def _by_statement(text: str) -> tuple[cst.Module, list[Site], Positions]:
    """The module, its call and operator sites, and positions resolved by their statements."""
    module = cst.parse_module(text)
    info = build(module)
    sites = [*info.calls, *info.binops]
    lazy = Positions(module, text)
    lazy.resolve_statements([(s.statement, s.top) for s in sites])
    return module, sites, lazy


@pytest.mark.parametrize(("name", "text"), list(_nested_sources()), ids=_short_ids)
def test_positions_by_statement_match_the_full_provider(name, text):
    """Every call and operator site, and its statement, resolved by its own statement inside
    classes, methods and every kind of block, is where the whole-module provider puts it."""
    module, sites, lazy = _by_statement(text)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for site in sites:
        assert lazy.get(site.node) == full[site.node], (name, module.code_for_node(site.node))
        assert lazy.get(site.statement) == full[site.statement], name


def test_statements_in_a_class_do_not_resolve_the_class():
    """No site of the fixture falls back to generating its module-level class."""
    module, sites, lazy = _by_statement(NESTED)
    cls = module.body[1]
    assert isinstance(cls, cst.ClassDef)
    inside = [s for s in sites if s.top is cls]
    assert len(inside) > 30
    assert all(lazy.get(s.node) is not None for s in inside)
    assert lazy.get(cls) is None  # the class itself was never generated
    assert lazy.get(cls.name) is None
