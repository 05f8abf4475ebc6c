"""The probe contract (``analysis/slicing/contract.py``: node kinds, their keys, input spec
keys) holds for every probe the slicer makes, and catches a probe built in a shape production
does not use.

Hand-built probes in ``tests/verify`` are checked against the same contract
(``probe_helpers.expr``): if the slicer renames a key, this test fails until the contract
follows, and then every hand-built probe still using the old key fails too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfnumlint.analysis.slicing.contract import probe_errors
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.rules import load_all
from tfnumlint.source import read_source

ROOT = Path(__file__).resolve().parents[1]


def slicer_probes(*folders: Path) -> list[dict]:
    codes = frozenset(c.code for c in load_all())
    probes = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if path.name.startswith("test_"):
                continue
            result = lint_source(
                read_source(path, str(path)), LintOptions(codes, slice_probes=True)
            )
            probes += [
                f.probe for f in result.findings if f.probe and f.probe.get("kind") == "expr"
            ]
    return probes


def test_every_probe_the_slicer_makes_keeps_the_contract():
    probes = slicer_probes(ROOT / "examples", ROOT / "tests" / "rules")
    assert len(probes) >= 30, "the examples and the rule cases give probes"
    bad = {p.get("path"): probe_errors(p) for p in probes if probe_errors(p)}
    assert not bad, bad


def _probe() -> dict:
    log = {"k": "call", "op": "log", "args": [{"k": "input", "name": "p"}], "kw": {},
           "line": 3, "col": 5}  # fmt: skip
    spec = {"name": "p", "producer": "sigmoid", "lo": 0.0, "hi": 1.0, "prob": True, "role": "value"}
    return {"kind": "expr", "target": log, "loss": None, "inputs": [spec]}


def test_a_well_formed_probe_has_no_errors():
    assert probe_errors(_probe()) == []


@pytest.mark.parametrize(
    "break_it, expected",
    [
        (
            lambda p: p["target"].update(arguments=p["target"].pop("args")),
            "unknown keys ['arguments']",
        ),
        (lambda p: p["target"].update(k="function"), "unknown node kind 'function'"),
        (lambda p: p["target"].update(op="py_function"), "outside the contract"),
        (lambda p: p["inputs"][0].update(name="q"), "input 'p' is not declared"),
        (lambda p: p["inputs"][0].update(range=[0, 1]), "unknown keys ['range']"),
    ],
)
def test_a_probe_in_a_shape_production_does_not_use_is_caught(break_it, expected):
    probe = _probe()
    break_it(probe)
    assert any(expected in e for e in probe_errors(probe)), probe_errors(probe)
