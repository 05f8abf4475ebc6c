"""The fast paths of the static pass give what the slow ones gave: call places, children."""

from __future__ import annotations

import random
import re
from pathlib import Path

import libcst as cst
import pytest

from tfnumlint.analysis.callplaces import call_starts, name_starts, scannable
from tfnumlint.analysis.module import build
from tfnumlint.analysis.names import children, dotted_name

TRICKY = """\
import tensorflow as tf
def f(x): return g(x)
def  f2(y): return f(y)
a.b(1); a . b (2); a.\\
    b(3)
x.a.b(4); x. a.b(5); a.b.c(6); a.bc(7); ab(8)
s = "f(9) inside a string"  # f(10) in a comment
tf.math.log(tf.nn.softmax(z))[f(11)]
café(12); café.x(13)
"""


@pytest.mark.parametrize(
    "name", ["f", "f2", "g", "a.b", "a.b.c", "a.bc", "ab", "b", "tf.math.log", "tf.nn.softmax"]
)
def test_one_pass_scan_matches_per_name_search(name: str) -> None:
    assert call_starts(TRICKY).get(name, []) == name_starts(TRICKY, name)


def test_scan_sees_calls_after_a_spaced_dot_and_not_after_def() -> None:
    starts = call_starts(TRICKY)
    at = [TRICKY[i : i + 8] for i in starts["a.b"]]
    assert at == ["a.b(1); ", "a . b (2", "a.b(5); "]  # x.a.b(4) and a.b.c(6) are other names
    assert [TRICKY[i : i + 4] for i in starts["f"]] == ["f(y)", "f(9)", "f(10", "f(11"]
    assert TRICKY.index("def f(x)") + 4 not in starts["f"]  # a definition is not a call


def test_name_with_a_combining_mark_is_searched_on_its_own() -> None:
    decomposed = "cafe\u0301"
    assert not scannable(decomposed + ".x")
    assert scannable("café.x")
    text = f"{decomposed}.x(1)\n"
    assert name_starts(text, decomposed + ".x") == [0]


# the one-pass scan call_starts replaced: a zero-width match at every start of a call chain
_FORWARD = re.compile(r"(?<![\w.])(?<!def )(?=([^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*)\s*\()")


def _forward_scan(text: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in _FORWARD.finditer(text):
        chain = m.group(1)
        name = chain if "." not in chain else "".join(chain.split())
        out.setdefault(name, []).append(m.start())
    return out


def test_backward_scan_is_the_forward_scan_on_tricky_text() -> None:
    assert call_starts(TRICKY) == _forward_scan(TRICKY)
    assert list(call_starts(TRICKY)) == list(_forward_scan(TRICKY))


def test_backward_scan_is_the_forward_scan_on_random_text() -> None:
    rng = random.Random(27)
    pieces = [*"ab1_ .(\n\t", "def ", "x.y(", "é", "\u0663", "\u00b2", "\u00a0", "..", "d"]
    pieces += ["ef", "\u0301", "\u2115", "\x1c", "\u2028"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        got, want = call_starts(text), _forward_scan(text)
        assert got == want and list(got) == list(want), repr(text)


def _python_files() -> list[Path]:
    root = Path(__file__).resolve().parent.parent
    return sorted((root / "examples").glob("*.py")) + sorted(
        (root / "tfnumlint" / "rules").glob("*.py")
    )


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.name)
def test_every_callee_of_a_real_file_is_placed_as_before(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    info = build(cst.parse_module(text))
    starts = call_starts(text)
    names = {dotted_name(site.node.func) for site in info.calls} - {""}
    assert names
    for name in names:
        assert starts.get(name, []) == name_starts(text, name), name


@pytest.mark.parametrize("path", _python_files()[:8], ids=lambda p: p.name)
def test_fast_children_are_libcsts_children_in_order(path: Path) -> None:
    stack: list[cst.CSTNode] = [cst.parse_module(path.read_text(encoding="utf-8"))]
    seen = 0
    while stack:
        node = stack.pop()
        expected = list(node.children)
        got = children(node)
        assert len(got) == len(expected) and all(
            a is b for a, b in zip(got, expected, strict=True)
        ), node
        stack.extend(expected)
        seen += 1
    assert seen > 100


def _value_key(value) -> tuple:
    """A bound value's identity (``x += v`` binds a new ``x + v`` node each walk)."""
    if isinstance(value, cst.BinaryOperation):
        return ("binop", id(value.left), type(value.operator).__name__, id(value.right))
    return ("node", id(value))


def _walk_record(info) -> tuple:
    """What the walk recorded, with node identities and walk orders."""
    number = {id(scope): i for i, scope in enumerate(info.scopes)}
    calls = [
        (id(s.node), s.order, id(s.statement), id(s.top), number[id(s.scope)]) for s in info.calls
    ]
    binops = [(id(s.node), s.order, id(s.statement), id(s.top)) for s in info.binops]
    scopes = []
    for scope in info.scopes:
        bindings = {
            name: [
                (b.visible, b.at, _value_key(b.value), b.index, b.nested is not None) for b in bs
            ]
            for name, bs in scope.bindings.items()
        }
        returns = [(order, id(v)) for order, v in scope.returns]
        scopes.append((scope.kind, id(scope.node), bindings, returns, sorted(scope.dtype_markers)))
    return calls, binops, scopes, sorted(info.defined), sorted(info.imports.aliases.items())


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.name)
def test_leaf_shortcut_keeps_the_walk(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfnumlint.analysis import module

    tree = cst.parse_module(path.read_text(encoding="utf-8"))
    fast = _walk_record(build(tree))
    for tp in module.LEAF_TYPES:  # nothing under a leaf is visited
        assert all(module._fields(tp) == () or f == "value" for f in module._fields(tp))
    monkeypatch.setattr(module, "LEAF_TYPES", frozenset())
    assert _walk_record(build(tree)) == fast
