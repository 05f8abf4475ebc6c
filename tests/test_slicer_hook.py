"""The slicer's ``substitute`` hook: how the fix proofs slice a rewrite without subclassing it."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfnumlint.analysis.slicing.slicer import Slicer
from tfnumlint.engine import LintOptions, run_checks
from tfnumlint.fix import proof

SRC = "import tensorflow as tf\n\n\ndef f(x, y):\n    return tf.math.log(x + y)\n"


def _context():
    module = cst.parse_module(SRC)
    _hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset()))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    site = next(s for s in ctx.info.calls if ctx.code(s.node).startswith("tf.math.log("))
    return ctx, positions, site


def test_a_substitute_replaces_the_node_it_answers_for_and_leaves_the_rest():
    ctx, positions, site = _context()
    y = site.node.args[0].value.right  # the `y` of log(x + y)

    def only_y(node, scope, order, depth):
        return {"k": "const", "v": 7.0} if node is y else None

    tree = Slicer(ctx, positions, substitute=only_y).tree(site.node, site.scope, site.order)
    plain = Slicer(ctx, positions).tree(site.node, site.scope, site.order)
    assert tree["op"] == plain["op"] == "log"
    assert tree["args"][0]["r"] == {"k": "const", "v": 7.0}
    assert tree["args"][0]["l"] == plain["args"][0]["l"]  # x is sliced as usual
    assert plain["args"][0]["r"] != {"k": "const", "v": 7.0}


def test_a_slicer_with_a_substitute_shares_no_subtrees():
    ctx, positions, _ = _context()
    assert Slicer(ctx, positions).memo == {}
    assert Slicer(ctx, positions, substitute=lambda *a: None).memo is None


def test_the_proof_composes_the_slicer_instead_of_subclassing_it():
    classes = [v for v in vars(proof).values() if isinstance(v, type)]
    assert not [c for c in classes if issubclass(c, Slicer) and c is not Slicer]
    ctx, positions, _ = _context()
    assert isinstance(proof.RewriteSlice(ctx, positions).slicer, Slicer)
