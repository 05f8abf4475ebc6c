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
    return sorted([*(ROOT / "examples").rglob("*.py"), *(ROOT / "tfnumlint").rglob("*.py")])


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
