"""Issue 25, Docs: each rule doc says whether the rule applies to saved models' graphs, and
what it says matches the code (a rule applies to graphs exactly when it declares a graph rule
in its family module, ``rules/graph.py``'s ``graph_rule``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfnumlint.rules import GRAPH_RULES, load_all

DOCS = sorted((Path(__file__).resolve().parents[1] / "rules").glob("TNL*.md"))
GRAPH_LINE = re.compile(r"^\*\*Graphs:\*\* (.+)$", re.MULTILINE)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.stem)
def test_each_rule_doc_says_whether_it_applies_to_graphs(doc):
    [line] = GRAPH_LINE.findall(doc.read_text(encoding="utf-8"))
    load_all()  # the family modules declare their graph rules when imported
    declared = doc.stem in {r.code for r in GRAPH_RULES}
    if declared:
        assert line.startswith("applies to saved models"), line
    else:
        assert line.startswith("source only"), line


def test_there_are_rule_docs():
    assert len(DOCS) >= 20
