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


@pytest.mark.parametrize(
    ("name", "text"),
    list(_nested_sources()),
    ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "",
)
def test_positions_by_statement_match_the_full_provider(name, text):
    """Every call and operator site, and its statement, resolved by its own statement inside
    classes, methods and every kind of block, is where the whole-module provider puts it."""
    from tfnumlint.analysis.module import build

    module = cst.parse_module(text)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    sites = [*build(module).calls, *build(module).binops]
    lazy = Positions(module, text)
    lazy.resolve_statements([(s.statement, s.top) for s in sites])
    for site in sites:
        assert lazy.get(site.node) == full[site.node], (name, module.code_for_node(site.node))
        assert lazy.get(site.statement) == full[site.statement], name
    assert sites or name != "nested"


def test_a_statement_in_a_method_does_not_resolve_its_class():
    module = cst.parse_module(NESTED)
    info_sites = [
        s
        for s in __import__("tfnumlint.analysis.module", fromlist=["build"]).build(module).calls
        if module.code_for_node(s.node) == "tf.sqrt(q)"
    ]
    (site,) = info_sites
    lazy = Positions(module, NESTED)
    lazy.resolve_statements([(site.statement, site.top)])
    assert lazy.get(site.node) is not None
    cls = module.body[1]
    assert isinstance(cls, cst.ClassDef)
    assert lazy.get(cls) is None  # the class was not generated
    assert lazy.get(cls.name) is None
