"""Which files are analysed: recursive walk, skipped trees, .gitignore, explicit paths, notebooks."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import run_cli, run_json

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""


def finding_paths(report: dict) -> set[str]:
    return {f["path"] for f in report["findings"]}


def notebook(*cells: tuple[str, str], nbformat: int = 4) -> str:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": kind,
                    "metadata": {},
                    "source": src.splitlines(keepends=True),
                    **({"outputs": [], "execution_count": None} if kind == "code" else {}),
                }
                for kind, src in cells
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": nbformat,
            "nbformat_minor": 5,
        },
        indent=1,
    )


# --- the walk --------------------------------------------------------------------------------


def test_recursive_walk_finds_py_and_ipynb(tmp_path, write):
    write("top.py", RISKY)
    write("a/b/c/deep.py", RISKY)
    write("a/nb.ipynb", notebook(("code", RISKY)))
    write("a/notes.txt", RISKY)
    write("a/script", RISKY)  # no suffix: not Python as far as a directory walk knows
    write("a/data.json", RISKY)
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert finding_paths(report) == {"top.py", "a/b/c/deep.py", "a/nb.ipynb"}
    assert report["summary"]["files"] == 3
    sub = run_json("--no-verify", "a", cwd=tmp_path)
    assert finding_paths(sub) == {"a/b/c/deep.py", "a/nb.ipynb"}


@pytest.mark.parametrize(
    "skipped",
    [
        ".git/hooks/x.py",
        ".venv/lib/x.py",
        "venv/x.py",
        "env/lib/python3.11/site-packages/pkg/x.py",
        "lib/site-packages/pkg/x.py",
        "lib/dist-packages/pkg/x.py",
        "__pycache__/x.py",
        "pkg/__pycache__/x.py",
        "build/lib/x.py",
        "dist/x.py",
        ".tox/py311/x.py",
        "node_modules/x.py",
        "pkg.egg-info/x.py",
        ".ipynb_checkpoints/nb-checkpoint.py",
    ],
)
def test_skipped_trees(tmp_path, write, skipped):
    write("kept.py", RISKY)
    write(skipped, RISKY)
    assert finding_paths(run_json("--no-verify", ".", cwd=tmp_path)) == {"kept.py"}


def test_a_virtualenv_under_any_name_is_skipped(tmp_path, write):
    write("kept.py", RISKY)
    write("my-env/pyvenv.cfg", "home = /usr/bin\n")
    write("my-env/lib/python3.11/tool.py", RISKY)
    write("my-env/bin/activate_this.py", RISKY)
    assert finding_paths(run_json("--no-verify", ".", cwd=tmp_path)) == {"kept.py"}


def test_a_virtualenv_named_explicitly_is_walked(tmp_path, write):
    write("my-env/pyvenv.cfg", "home = /usr/bin\n")
    write("my-env/tool.py", RISKY)
    assert finding_paths(run_json("--no-verify", "my-env", cwd=tmp_path)) == {"my-env/tool.py"}


def _git_init(path):
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_gitignored_paths_are_skipped(tmp_path, write):
    _git_init(tmp_path)
    write(".gitignore", "generated/\n*_pb2.py\n/rootonly.py\n!keep_pb2.py\n")
    write("kept.py", RISKY)
    write("generated/model.py", RISKY)
    write("pkg/model_pb2.py", RISKY)
    write("pkg/keep_pb2.py", RISKY)
    write("rootonly.py", RISKY)
    write("pkg/rootonly.py", RISKY)  # anchored pattern: only the top-level one is ignored
    write("pkg/.gitignore", "local.py\n")
    write("pkg/local.py", RISKY)
    write("local.py", RISKY)  # pkg/.gitignore does not reach up
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert finding_paths(report) == {"kept.py", "pkg/keep_pb2.py", "pkg/rootonly.py", "local.py"}


def test_gitignore_applies_when_walking_a_subdirectory(tmp_path, write):
    _git_init(tmp_path)
    write(".gitignore", "generated/\n")
    write("src/generated/model.py", RISKY)
    write("src/ok.py", RISKY)
    assert finding_paths(run_json("--no-verify", "src", cwd=tmp_path)) == {"src/ok.py"}
    assert finding_paths(run_json("--no-verify", ".", cwd=tmp_path / "src")) == {"ok.py"}


def test_explicit_paths_are_always_checked(tmp_path, write):
    _git_init(tmp_path)
    write(".gitignore", "generated/\n")
    write("generated/model.py", RISKY)
    write("build/out.py", RISKY)
    write(".venv/lib/site-packages/pkg/mod.py", RISKY)
    write("notes.txt", RISKY)  # named explicitly: analysed whatever the suffix
    report = run_json(
        "--no-verify",
        "generated/model.py",
        "build/out.py",
        ".venv/lib/site-packages/pkg/mod.py",
        "notes.txt",
        cwd=tmp_path,
    )
    assert finding_paths(report) == {
        "generated/model.py",
        "build/out.py",
        ".venv/lib/site-packages/pkg/mod.py",
        "notes.txt",
    }


def test_duplicate_and_overlapping_paths_are_reported_once(tmp_path, write):
    write("pkg/a.py", RISKY)
    report = run_json("--no-verify", "pkg", "pkg/a.py", "./pkg", ".", cwd=tmp_path)
    assert report["summary"]["files"] == 1
    assert len(report["findings"]) == 1


def test_files_without_tensorflow_are_counted_but_quiet(tmp_path, write):
    write("plain.py", "import numpy as np\n\nx = np.log(np.array([0.0]) + 1e-10)\n")
    write("local.py", "def log(msg):\n    print(msg)\n\nlog(1 + 1e-10)\n")
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert report["findings"] == [] and report["errors"] == []
    assert report["summary"]["files"] == 2


# --- notebooks -------------------------------------------------------------------------------


NB_CELLS = [
    ("markdown", "# A notebook\nwith `tf.math.log(p + 1e-10)` in prose\n"),
    ("code", "%matplotlib inline\n!pip install tensorflow\nimport tensorflow as tf\n"),
    ("code", "%%time\np = tf.nn.sigmoid(tf.random.normal((4,)))\n"),
    ("raw", "tf.math.log(p + 1e-10)\n"),
    ("code", "x = 1\n\nloss = -tf.reduce_mean(tf.math.log(p + 1e-10))\n?tf.math.log\n"),
]


def test_notebook_code_cells_are_analysed_with_cell_positions(tmp_path, write):
    write("nb.ipynb", notebook(*NB_CELLS))
    report = run_json("--no-verify", "--select", "TNL102", "nb.ipynb", cwd=tmp_path)
    assert report["errors"] == []
    (f,) = report["findings"]  # markdown and raw cells are not code
    assert f["path"] == "nb.ipynb"
    assert f["cell"] == 5
    assert f["line"] == 3
    assert f["column"] == len("loss = -tf.reduce_mean(") + 1
    assert f["end_line"] == 3


def test_notebook_text_output_shows_the_cell(tmp_path, write):
    write("nb.ipynb", notebook(*NB_CELLS))
    proc = run_cli("--no-verify", "--select", "TNL102", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    col = len("loss = -tf.reduce_mean(") + 1
    assert lines[0].startswith(f"nb.ipynb:cell 5:3:{col}: TNL102 ")
    assert lines[2] == "3 | loss = -tf.reduce_mean(tf.math.log(p + 1e-10))"


def test_names_flow_from_cell_to_cell(tmp_path, write):
    write(
        "nb.ipynb",
        notebook(
            ("code", "import tensorflow as tf\n"),
            ("code", "probs = tf.nn.softmax(tf.random.normal((2, 3)))\n"),
            ("code", "bad = tf.math.log(probs)\n"),
        ),
    )
    report = run_json("--no-verify", "nb.ipynb", cwd=tmp_path)
    assert [(f["rule"], f["cell"], f["line"]) for f in report["findings"]] == [("TNL101", 3, 1)]


def test_notebook_source_as_a_single_string(tmp_path, write):
    nb = json.loads(notebook(("code", RISKY)))
    nb["cells"][0]["source"] = RISKY
    write("nb.ipynb", json.dumps(nb))
    report = run_json("--no-verify", "nb.ipynb", cwd=tmp_path)
    assert [(f["rule"], f["cell"], f["line"]) for f in report["findings"]] == [("TNL102", 1, 5)]


def test_notebook_with_no_tensorflow_and_empty_notebook(tmp_path, write):
    write("plain.ipynb", notebook(("code", "%pip install numpy\nprint(1)\n")))
    write("empty.ipynb", notebook())
    report = run_json("--no-verify", ".", cwd=tmp_path)
    assert report["findings"] == [] and report["errors"] == []
    assert report["summary"]["files"] == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"cells": [', "JSON"),
        ("not json at all", "JSON"),
        ("[1, 2, 3]", "cells"),
        ('{"nbformat": 4}', "cells"),
        (b'{"cells": []}\xff\xfe', "JSON"),
    ],
)
def test_a_broken_notebook_is_an_error_and_other_files_still_report(
    tmp_path, write, content, reason
):
    write("broken.ipynb", content)
    write("good.ipynb", notebook(("code", RISKY)))
    write("risky.py", RISKY)
    proc = run_cli("--no-verify", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    (err,) = report["errors"]
    assert err["path"] == "broken.ipynb"
    assert reason in err["message"]
    assert "notebook" in err["message"]
    assert finding_paths(report) == {"good.ipynb", "risky.py"}
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_notebook_with_a_syntax_error_names_the_cell(tmp_path, write):
    write("nb.ipynb", notebook(("code", "import tensorflow as tf\n"), ("code", "x = 1\ndef f(:\n")))
    report = run_json("--no-verify", "nb.ipynb", cwd=tmp_path)
    (err,) = report["errors"]
    assert err["path"] == "nb.ipynb"
    assert "cell 2" in err["message"]
    assert "line 2" in err["message"]
