"""Parse each file once per run: a file re-linted in a later project round reuses its tree,
in the serial path and in the worker that linted it first."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import libcst
import pytest
from test_project import MODEL_LOSS_TRAIN, lint_tree, project

from tfnumlint import incremental
from tfnumlint.config import load_config, resolve_codes
from tfnumlint.discovery import Candidate, discover
from tfnumlint.engine import LintOptions
from tfnumlint.incremental import Job, analyse_project


def counting_parses(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Every parse appends the digest of its text to ``log`` (forked workers too)."""
    real = libcst.parse_module

    def parse(text, *args, **kwargs):
        with log.open("a") as out:
            out.write(hashlib.sha1(str(text).encode()).hexdigest() + "\n")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", parse)


def run_rounds(root: Path, jobs: int) -> list[tuple[int, int]]:
    config = load_config(None, root)
    codes = resolve_codes(config, None, None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    job = Job(LintOptions(codes=codes), config.fingerprint(codes), None)
    rounds: list[tuple[int, int]] = []
    analyse_project(candidates, job, jobs, on_round=lambda n, k: rounds.append((n, k)))
    return rounds


def with_extras() -> dict[str, str]:
    files = dict(MODEL_LOSS_TRAIN)
    for i in range(6):  # enough files for the process pool
        files[f"pkg/extra_{i}.py"] = (
            "import tensorflow as tf\nfrom .losses import energy\n\n\n"
            f"def f{i}(x, w):\n    return energy(tf.matmul(x, w) * {i + 1}.0)\n"
        )
    return files


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_relinted_in_a_later_round_is_not_parsed_again(
    jobs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "tree", with_extras())
    log = tmp_path / "parses.log"
    counting_parses(monkeypatch, log)
    rounds = run_rounds(root, jobs)
    assert rounds and rounds[0][1] >= 1  # losses.py is linted again once its callers are known
    parsed = log.read_text().split()
    tf_files = [p for p in root.rglob("*.py") if "tensorflow" in p.read_text()]
    assert len(parsed) == len(tf_files)  # each file once, whatever the rounds
    assert len(set(parsed)) == len(parsed)


def test_reusing_trees_changes_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, with_extras())
    kept = lint_tree(root, jobs=1)
    monkeypatch.setattr(incremental, "KEEP_BYTES", 0)  # nothing kept: every round parses
    assert lint_tree(root, jobs=1) == kept
    assert any(rule == "TNL301" and path == "pkg/losses.py" for path, _, rule, _, _ in kept)


def test_no_tree_outlives_the_run(tmp_path: Path) -> None:
    run_rounds(project(tmp_path, with_extras()), 1)
    assert incremental._TREES == {}


def test_workers_share_the_files_by_size(tmp_path: Path) -> None:
    sizes = [900, 100, 500, 400, 300, 200]
    candidates = []
    for i, n in enumerate(sizes):
        path = tmp_path / f"f{i}.py"
        path.write_text("#" * n)
        candidates.append(Candidate(path, path.name))
    owners = incremental._owners(candidates, 2)
    load = [sum(n for n, o in zip(sizes, owners, strict=True) if o == w) for w in (0, 1)]
    assert sorted(load) == [1200, 1200]
    assert incremental._owners(candidates, 2) == owners  # the same split every round


def _warm_job(root: Path, cache_dir: Path) -> tuple[list[Candidate], Job]:
    config = load_config(None, root)
    codes = resolve_codes(config, None, None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    return candidates, Job(LintOptions(codes=codes), config.fingerprint(codes), cache_dir)


def test_a_warm_parallel_run_sends_no_file_to_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent reads the cache: only the files it misses go to the workers (and a run
    with nothing to lint starts none); the results are those of a serial run."""
    root = project(tmp_path / "tree", with_extras())
    candidates, job = _warm_job(root, tmp_path / "cache")
    serial = [r.findings for r in analyse_project(candidates, job, 1)]
    sent: list[list[str]] = []
    real = incremental._Workers.run

    def run(self, items, *args):
        sent.append([c.display for c, _, _ in items])
        return real(self, items, *args)

    monkeypatch.setattr(incremental._Workers, "run", run)
    assert [r.findings for r in analyse_project(candidates, job, 2)] == serial
    assert sent == []
    (root / "pkg" / "extra_3.py").write_text((root / "pkg" / "extra_3.py").read_text() + "\n")
    changed = analyse_project(candidates, job, 2)
    assert [r.findings for r in changed] == serial
    assert sent and all(chunk == ["pkg/extra_3.py"] for chunk in sent)  # in each round


def test_a_summary_reads_back_equal_from_its_json() -> None:
    from tfnumlint.analysis import project_model as pm
    from tfnumlint.analysis.values import Val

    inf = Val("exp", lo=0.0, desc="exp(x)", origin=("a.py", 3, 4, "f(x)", "x", "exp"))
    summary = pm.ModuleSummary(
        module="pkg.m",
        path="pkg/m.py",
        imports=(("tf", "tensorflow", None), ("f", "pkg.n", "f")),
        stars=("pkg.o",),
        functions=(
            (
                "f",
                pm.FunctionSummary(
                    "pkg.m", "f", ("x",), ("t",), (("t", Val(const=1e-7), False),), ()
                ),
            ),
        ),
        classes=(("C", pm.ClassSummary("C", ("Base",), (("d", inf),), ("f",))),),
        bindings=(("EPS", Val(const=float("inf"), tuple_items=(Val(), inf))),),
        calls=(pm.CallSite(("sym", "pkg.m", "f"), (inf, None), (("t", Val()),), inf.origin or ()),),
    )
    back = pm.loads(pm.dumps(summary))
    assert back == summary and repr(back) == repr(summary)  # the digests are of the repr
    for bad in ('{"d": "Nope", "f": {}}', '{"t": [1]}', "[]", '{"d": "Val", "f": {"x": 1}}', 3):
        with pytest.raises(ValueError):
            pm.loads(bad)  # type: ignore[arg-type]


def json_findings(root: Path, monkeypatch: pytest.MonkeyPatch, capsys, *extra: str) -> list:
    """The JSON report's findings (with their fixes) of an in-process run in ``root``."""
    from tfnumlint import cli

    monkeypatch.chdir(root)
    capsys.readouterr()
    args = ["--no-verify", "--no-cache", "--exit-zero", "--format", "json", *extra, "."]
    assert cli.main(args) == 0
    return json.loads(capsys.readouterr().out)["findings"]


def test_fix_descriptions_start_from_the_trees_lint_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    root = project(tmp_path / "tree", with_extras())
    log = tmp_path / "parses.log"
    counting_parses(monkeypatch, log)
    findings = json_findings(root, monkeypatch, capsys, "--jobs", "1")
    assert any(f["fix"] and f["fix"]["edits"] for f in findings)  # fixes were described
    parsed = log.read_text().split()
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "tensorflow" in text:  # parsed by lint, not again for its fixes (rewrites are)
            assert parsed.count(hashlib.sha1(text.encode()).hexdigest()) == 1, path
    assert incremental._FIXABLE == {} and incremental._TREES == {}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fix_descriptions_from_kept_trees_are_those_of_a_fresh_parse(
    jobs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    root = project(tmp_path / "tree", with_extras())
    kept = json_findings(root, monkeypatch, capsys, "--jobs", jobs)
    assert any(f["fix"] and f["fix"]["edits"] for f in kept)
    monkeypatch.setattr(incremental, "_keep_fixable", lambda *_args: False)
    assert json_findings(root, monkeypatch, capsys, "--jobs", jobs) == kept


def test_only_files_with_a_fixable_finding_keep_their_tree(tmp_path: Path) -> None:
    root = project(tmp_path, with_extras())
    config = load_config(None, root)
    codes = resolve_codes(config, None, None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    job = Job(LintOptions(codes=codes), config.fingerprint(codes), None)
    run = incremental.run_project(candidates, job, 1, keep_fixable=True)
    from tfnumlint.fix.rewrites import fixable

    with_fix = {r.path for r in run.results if any(fixable(f.rule) for f in r.findings)}
    assert with_fix and set(run.trees) == with_fix
    for display, (raw, parsed) in run.trees.items():
        assert raw == (root / display).read_bytes()
        assert parsed.module.code == raw.decode()
    run.release_trees()
    assert run.trees == {} and incremental._FIXABLE == {}
    assert incremental.run_project(candidates, job, 1).trees == {}  # not asked: none kept
