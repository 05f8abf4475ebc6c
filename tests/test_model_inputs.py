"""Saved models on the static side (no TensorFlow): discovery, --input-range, graph-ignore,
and how a graph hazard becomes a finding of the rule that declares it."""

from __future__ import annotations

import pytest

from tfnumlint.config import ConfigError, load_config
from tfnumlint.discovery import Candidate, discover
from tfnumlint.models import (
    InputRangeError,
    ModelOptions,
    is_model,
    parse_input_ranges,
    split,
    to_result,
)
from tfnumlint.ruledocs import all_docs

ALL = frozenset(all_docs())


def _saved_model(path):
    (path / "variables").mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"")
    (path / "variables" / "variables.index").write_bytes(b"")
    (path / "assets").mkdir()
    (path / "assets" / "helper.py").write_text("x = 1\n")  # data of the model, never linted


def test_discovery_finds_models_and_treats_a_saved_model_as_one_input(tmp_path):
    _saved_model(tmp_path / "exported" / "sm")
    (tmp_path / "m.keras").write_bytes(b"")
    (tmp_path / "w.h5").write_bytes(b"")
    (tmp_path / "frozen.pb").write_bytes(b"")
    (tmp_path / "graph.pbtxt").write_text("")
    (tmp_path / "train.py").write_text("import tensorflow as tf\n")
    (tmp_path / "notes.txt").write_text("")
    found = [c.display for c in discover(["."], tmp_path)]
    assert found == ["exported/sm", "frozen.pb", "graph.pbtxt", "m.keras", "train.py", "w.h5"]
    sources, models = split(discover(["."], tmp_path))
    assert [c.display for c in sources] == ["train.py"]
    assert len(models) == 5


def test_a_saved_model_named_explicitly_is_one_input(tmp_path):
    _saved_model(tmp_path / "sm")
    assert [c.display for c in discover(["sm"], tmp_path)] == ["sm"]
    assert is_model(tmp_path / "sm")
    assert not is_model(tmp_path / "sm" / "variables")


def test_a_directory_with_variables_but_no_saved_model_pb_is_walked(tmp_path):
    (tmp_path / "d" / "variables").mkdir(parents=True)
    (tmp_path / "d" / "a.py").write_text("")
    assert [c.display for c in discover(["."], tmp_path)] == ["d/a.py"]


def test_input_ranges_parse():
    assert parse_input_ranges(["image=0:255", "t = -1.5:2e3"]) == {
        "image": [0.0, 255.0],
        "t": [-1.5, 2000.0],
    }


@pytest.mark.parametrize("bad", ["image", "image=0", "=0:1", "x=3:1", "x=a:b"])
def test_a_bad_input_range_is_a_usage_error(bad):
    with pytest.raises(InputRangeError, match="NAME=LO:HI"):
        parse_input_ranges([bad])


def test_graph_ignore_is_a_config_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tfnumlint]\ngraph-ignore = ["model/dense_1/Log", "model/head*"]\n'
    )
    assert load_config(None, tmp_path).graph_ignore == ["model/dense_1/Log", "model/head*"]
    (tmp_path / "pyproject.toml").write_text('[tool.tfnumlint]\ngraph-ignore = "x"\n')
    with pytest.raises(ConfigError, match="graph-ignore"):
        load_config(None, tmp_path)


def _hazard(**kw):
    base = {
        "pattern": "danger",
        "op": "model/dense_1/Log",
        "op_type": "Log",
        "scope": "model/dense_1",
        "canonical": "log",
        "producer": "softmax",
        "producer_op": "model/dense_1/Softmax",
        "range": [0.0, 1.0],
        "status": "confirmed",
        "detail": "at x = [10] (float32), model/dense_1/Log = -inf",
        "node": 7,
    }
    return dict(base, **kw)


def _result(hazards, **options):
    answer = {"hazards": hazards, "optimizers": []}
    cand = Candidate(__import__("pathlib").Path("m.keras"), "m.keras")
    return to_result(cand, answer, ModelOptions(codes=options.pop("codes", ALL), **options))


def test_a_hazard_becomes_the_finding_of_the_rule_that_declares_it():
    [log] = _result([_hazard()]).findings
    assert (log.rule, log.path, log.line, log.source_line) == (
        "TNL101",
        "m.keras",
        7,
        "model/dense_1/Log",
    )
    assert log.verification.status == "confirmed"
    assert log.fix is not None and log.fix.applicability == "suggestion"  # no rewrite of a graph
    # the same op on a value that is not a probability is another rule of the family
    [other] = _result([_hazard(producer="matmul")]).findings
    assert other.rule == "TNL104"


@pytest.mark.parametrize(
    ("canonical", "rule"),
    [("exp", "TNL301"), ("divide", "TNL201"), ("sqrt", "TNL202"), ("rsqrt", "TNL206"),
     ("pow", "TNL204"), ("acos", "TNL205")],
)  # fmt: skip
def test_each_danger_op_maps_to_its_rule(canonical, rule):
    [f] = _result([_hazard(canonical=canonical, producer="matmul")]).findings
    assert f.rule == rule


def test_select_and_graph_ignore_apply_to_graph_findings():
    hazards = [_hazard(), _hazard(canonical="exp", op="model/head/Exp", scope="model/head")]
    assert [f.rule for f in _result(hazards, codes=frozenset({"TNL301"})).findings] == ["TNL301"]
    kept = _result(hazards, graph_ignore=["model/dense_1/Log"]).findings
    assert [f.rule for f in kept] == ["TNL301"]
    assert _result(hazards, graph_ignore=["model/head", "model/dense_1/*"]).findings == []


def test_a_model_that_did_not_load_is_a_file_error():
    cand = Candidate(__import__("pathlib").Path("m.keras"), "m.keras")
    result = to_result(cand, {"error": "not loaded: custom object Foo"}, ModelOptions(codes=ALL))
    assert [e.message for e in result.errors] == ["not loaded: custom object Foo"]
    crashed = to_result(
        cand, {"status": "inconclusive", "detail": "internal error"}, ModelOptions(codes=ALL)
    )
    assert [e.message for e in crashed.errors] == ["internal error"]


def test_an_optimizer_epsilon_needs_float16_variables():
    opt = {"pattern": "optimizer", "op": "Adam/update", "family": "adam", "epsilon": 1e-7}
    assert [f.rule for f in _result([dict(opt, dtype="float16")]).findings] == ["TNL403"]
    assert _result([dict(opt, dtype="float32")]).findings == []
