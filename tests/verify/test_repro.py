"""``--emit-repro`` (issue 23): every confirmed finding gets a standalone script that rebuilds
its evidence from TensorFlow ops alone, prints the symptom and exits 1 (0 once it is gone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from tfnumlint.model import Finding, Verification
from tfnumlint.verify.repro import emit_all, file_name

SHARED = ROOT.parent / "shared"
CACHE = os.environ.get("TFNUMLINT_CACHE_DIR", str(ROOT / ".tfnumlint-test-cache"))  # not in SHARED
NON_FINITE = {"nan-value", "inf-value", "nan-gradient", "inf-gradient"}
# what a script prints as its evidence for a symptom that is not a NaN/Inf
EVIDENCE = {
    "dead-gradient": "d(loss)/d(logits)",
    "epsilon-absorbed": "without the",
    "epsilon-underflow": "0.0",
    "diverges": "relative error",
    "exploding-gradient": "largest |gradient|",
}

# Runs each script as __main__ in one interpreter (TensorFlow imported once), capturing its
# output and exit status: a batch, so the corpus's scripts cost one TF import, not one each.
DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for path in sys.argv[1:]:
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:
            code = 99
            print("ERROR", type(exc).__name__, exc)
    results[path] = [code, buf.getvalue()]
print(json.dumps(results))
"""


def run_scripts(paths: list[str], tmp_path: Path) -> dict[str, list]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
    p = subprocess.run(
        [sys.executable, str(driver), *paths],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=tmp_path,  # nothing of the project on the path: the scripts stand alone
        env=env,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def witness_finding(target: dict, logit: float, symptom: str = "inf-value") -> Finding:
    """A confirmed finding of ``log``-something over one sigmoid input, as the worker records it."""
    probe = {
        "target": target,
        "loss": None,
        "inputs": [{"name": "p", "lo": 0.0, "hi": 1.0, "prob": True, "producer": "sigmoid"}],
        "eps": None,
        "dtype": "float32",
    }
    v = Verification(
        status="confirmed",
        detail="at p = sigmoid(-100) = 0 (float32), log(p) = -inf",
        symptom=symptom,
        dtype="float32",
        inputs={"p": 0.0, "logit(p)": logit},
        repro={"rung": "witness", "probe": probe, "k": 1, "rank": 2, "threshold": 1e6},
    )
    return Finding("pkg/model.py", 12, 5, 12, 20, "TNL101", "log-of-probability", "error",
                   "log of a probability", verification=v)  # fmt: skip


LOG_P = {"k": "call", "op": "log", "args": [{"k": "input", "name": "p"}], "kw": {}}
LOG_P_EPS = {
    "k": "call",
    "op": "log",
    "args": [
        {"k": "bin", "op": "+", "l": {"k": "input", "name": "p"}, "r": {"k": "const", "v": 1e-7}}
    ],
    "kw": {},
}


def test_scripts_are_named_by_stem_line_and_code_and_never_overwrite(tmp_path: Path):
    a, b = witness_finding(LOG_P, -100.0), witness_finding(LOG_P, -100.0)
    assert file_name(a) == "model_12_TNL101.py"
    assert emit_all([a, b], tmp_path / "out") == []
    assert Path(a.repro or "").name == "model_12_TNL101.py"
    assert Path(b.repro or "").name == "model_12_TNL101_2.py"
    assert a.to_json()["rung"] == "witness" and a.to_json()["repro"] == a.repro


def test_a_script_imports_only_tensorflow_and_numpy(tmp_path: Path):
    f = witness_finding(LOG_P, -100.0)
    emit_all([f], tmp_path)
    text = Path(f.repro or "").read_text()
    imports = {
        line.split()[1] for line in text.splitlines() if line.startswith(("import ", "from "))
    }
    assert imports == {"sys", "numpy", "tensorflow"}
    compile(text, f.repro or "", "exec")


def test_a_detail_with_quotes_and_backslashes_stays_inside_the_docstring(tmp_path: Path):
    f = witness_finding(LOG_P, -100.0)
    f.verification.detail = 'at x = "a""" \\ b, log(p) = -inf'
    emit_all([f], tmp_path)
    text = Path(f.repro or "").read_text()
    namespace: dict = {}
    exec(compile(text.split("import sys")[0], "doc", "exec"), namespace)  # the docstring alone
    assert "log(p) = -inf" in namespace["__doc__"] and '"a"""' in namespace["__doc__"]


def test_unconfirmed_findings_get_no_script(tmp_path: Path):
    f = witness_finding(LOG_P, -100.0)
    f.verification.status = "inconclusive"
    assert emit_all([f], tmp_path) == [] and f.repro is None
    assert "rung" not in f.to_json() and not list(tmp_path.iterdir())


def test_the_script_exits_1_on_the_symptom_and_0_once_it_is_gone(tmp_path: Path):
    pytest.importorskip("tensorflow")
    broken, fixed = witness_finding(LOG_P, -100.0), witness_finding(LOG_P_EPS, -100.0)
    emit_all([broken], tmp_path / "broken")
    emit_all([fixed], tmp_path / "fixed")
    out = run_scripts([broken.repro or "", fixed.repro or ""], tmp_path)
    code, text = out[broken.repro or ""]
    assert code == 1 and "-inf" in text and "REPRODUCED" in text
    code, text = out[fixed.repro or ""]
    assert code == 0 and "not reproduced" in text


def corpus_dirs() -> list[Path]:
    dirs = [ROOT / "examples"]
    for sub in ("corpus", "nanruns/buggy", "nanruns/clean"):
        if (SHARED / sub).is_dir():
            dirs.append(SHARED / sub)
    return dirs


def test_every_confirmed_finding_of_the_corpora_has_a_reproducer_that_reproduces(tmp_path: Path):
    pytest.importorskip("tensorflow")
    out_dir = tmp_path / "repro"
    confirmed: list[dict] = []
    for d in corpus_dirs():
        proc = run_cli("--format", "json", "--exit-zero", "--emit-repro", str(out_dir / d.name),
                       ".", cwd=d, env={"TFNUMLINT_CACHE_DIR": CACHE}, timeout=1800)  # fmt: skip
        assert proc.stdout, proc.stderr[-2000:]
        found = json.loads(proc.stdout)["findings"]
        confirmed += [f for f in found if f["verification"]["status"] == "confirmed"]
    # examples alone confirm 8; with the shared corpus and nanruns beside the clone, 15 or more
    assert len(confirmed) >= (15 if len(corpus_dirs()) > 1 else 8)
    missing = [(f["path"], f["line"], f["rule"]) for f in confirmed if not f.get("repro")]
    assert not missing
    assert {f["rung"] for f in confirmed} <= {"witness", "training", "training-program"}
    results = run_scripts([f["repro"] for f in confirmed], tmp_path)
    failures = []
    for f in confirmed:
        code, text = results[f["repro"]]
        symptom = f["verification"]["symptom"]
        shown = ("nan" in text or "inf" in text) if symptom in NON_FINITE else True
        if f["rung"] == "witness" and symptom in EVIDENCE:
            shown = EVIDENCE[symptom] in text
        if f["rung"] == "training" and symptom == "nan-value":
            shown = "non-finite" in text
        if code != 1 or not shown:
            failures.append((f["repro"], symptom, code, text[-400:]))
    assert not failures


def test_a_divergence_confirmation_replays_its_training_run(tmp_path: Path):
    pytest.importorskip("tensorflow")
    import textwrap

    from conftest import GD_LINSPACE

    (tmp_path / "gd.py").write_text(textwrap.dedent(GD_LINSPACE.format(lr=0.1)))
    proc = run_cli("--format", "json", "--exit-zero", "--select", "TNL505", "--emit-repro",
                   "repro", "gd.py", cwd=tmp_path, env={"TFNUMLINT_CACHE_DIR": CACHE})  # fmt: skip
    (f,) = json.loads(proc.stdout)["findings"]
    assert (f["verification"]["status"], f["rung"]) == ("confirmed", "training-program")
    code, text = run_scripts([str(tmp_path / f["repro"])], tmp_path)[str(tmp_path / f["repro"])]
    step = f["verification"]["observed"]["step"]
    assert code == 1 and f"step {step}: non-finite" in text
    assert "line 0" not in text  # a whole run's break is in the loss, not at a line
