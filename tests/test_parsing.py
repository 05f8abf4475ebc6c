"""The parse without libcst's per-node validation: the same trees, the same errors, and the
validation back on for nodes built by hand once no parse is running."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from tfnumlint.parsing import parse_module

ROOT = Path(__file__).resolve().parent.parent


def _sources() -> list[Path]:
    """The examples and every third module of the package: a spread of the code it parses
    (every module takes most of a minute, for no other construct)."""
    modules = sorted((ROOT / "tfnumlint").rglob("*.py"))[::3]
    return sorted([*(ROOT / "examples").rglob("*.py"), *modules])


def test_same_tree_as_the_validating_parse() -> None:
    files = _sources()
    assert len(files) > 50
    for path in files:
        text = path.read_text(encoding="utf-8")
        ours, theirs = parse_module(text), cst.parse_module(text)
        assert ours.deep_equals(theirs), path
        assert ours.code == text


@pytest.mark.parametrize("text", ["def f(:\n", "x = (1,\n", "lambda: (yield)\nclass\n"])
def test_syntax_errors_still_raise(text: str) -> None:
    with pytest.raises(cst.ParserSyntaxError):
        cst.parse_module(text)
    with pytest.raises(cst.ParserSyntaxError):
        parse_module(text)


def test_hand_built_nodes_are_validated_after_a_parse() -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not an identifier")
    with pytest.raises(cst.CSTValidationError):  # `not` needs whitespace before a name
        cst.UnaryOperation(cst.Not(whitespace_after=cst.SimpleWhitespace("")), cst.Name("x"))


def test_hand_built_nodes_are_validated_after_a_failed_parse() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")


def test_concurrent_parses_restore_validation_when_the_last_ends() -> None:
    text = (ROOT / "tfnumlint" / "engine.py").read_text(encoding="utf-8")
    errors: list[BaseException] = []

    def parse_many() -> None:
        try:
            for _ in range(3):
                parse_module(text)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=parse_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with pytest.raises(cst.CSTValidationError):
        cst.Name("a b")


# -- reparse_changed: the relint of a fix parses only the statements the fix changed ----------

SPLICED = '''"""Doc."""
import tensorflow as tf

# a comment that leads the function
@tf.function
def loss(p, y):
    if p is None:
        return 0.0
    return -tf.reduce_mean(y * tf.math.log(p))  # trailing


class Model:
    def call(self, x):
        return tf.math.log(x)
'''


class _Double(cst.CSTTransformer):
    """``tf.math.log(p)`` -> ``tf.math.log(p) + p``: the rewrite holds the node ``p`` twice, as
    a fix's copied operand does."""

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        arg = updated.args[0].value if updated.args else None
        if isinstance(arg, cst.Name) and arg.value == "p":
            return cst.BinaryOperation(updated, cst.Add(), arg)
        return updated


def _spliced(old: cst.Module, transformer: cst.CSTTransformer, index: int) -> cst.Module:
    """``old`` with only module-level statement ``index`` rewritten, as the fix's splice does."""
    body = list(old.body)
    body[index] = body[index].visit(transformer)
    return old.with_changes(body=body)


def _ids(node: cst.CSTNode) -> list[int]:
    found: list[int] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(id(n))
            return True

    node.visit(Walk())
    return found


def test_a_reparsed_splice_is_the_tree_a_full_parse_gives() -> None:
    from tfnumlint.parsing import reparse_changed

    old = parse_module(SPLICED)
    new = _spliced(old, _Double(), 2)
    assert len(_ids(new)) != len(set(_ids(new)))  # the splice holds a node twice
    tree = reparse_changed(old, new)
    assert tree is not None
    assert tree.code == new.code
    assert tree.deep_equals(parse_module(new.code))
    assert len(_ids(tree)) == len(set(_ids(tree)))  # ... the tree the walk takes does not
    assert tree.body[0] is old.body[0] and tree.body[3] is old.body[3]  # lent, not copied
    assert tree.body[2] is not new.body[2]


def test_a_statement_that_does_not_read_back_alone_asks_for_a_full_parse() -> None:
    from tfnumlint.parsing import reparse_changed

    class Keyword(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value="lambda") if updated.value == "y" else updated

    old = parse_module(SPLICED)
    assert reparse_changed(old, _spliced(old, Keyword(), 2)) is None
