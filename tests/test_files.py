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


def test_one_bad_notebook_cell_does_not_cost_the_other_cells(tmp_path, write):
    write(
        "nb.ipynb",
        notebook(
            ("code", "import tensorflow as tf\n"),
            ("code", "x = 1\ndef f(:\n"),
            ("markdown", "# notes"),
            ("code", "def loss(p_pred):\n    return tf.math.log(p_pred + 1e-10)\n"),
        ),
    )
    proc = run_cli("--no-verify", "--format", "json", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    (err,) = report["errors"]
    assert err["message"].startswith("cell 2: syntax error at line 2")
    assert "the other cells were analysed" in err["message"]
    assert [(f["cell"], f["line"], f["rule"]) for f in report["findings"]] == [(4, 2, "TNL102")]


# --- Python 2 files --------------------------------------------------------------------------

PY2_CASES = [
    ("print 'loss', loss\n", "print statement"),
    ("exec 'x = 1'\n", "exec statement"),
    ("raise ValueError, 'bad'\n", "'raise E, message'"),
    ("x = `loss`\n", "backquote repr"),
    ("if a <> b:\n    pass\n", "'<>' operator"),
    ("mode = 0755\n", "octal literal without 0o"),
]


@pytest.mark.parametrize(("code", "construct"), PY2_CASES)
def test_python2_files_are_reported_as_python2_at_the_right_line(tmp_path, write, code, construct):
    head = (
        "import sys\nimport tensorflow as tf\n\n\ndef loss(p):\n    return tf.reduce_mean(p)\n\n\n"
    )
    write("old.py", head + code)
    write("risky.py", RISKY)
    bad_line = len(head.splitlines()) + next(
        i for i, line in enumerate(code.splitlines(), 1) if construct_line(line)
    )
    report = run_json("--no-verify", ".", cwd=tmp_path)
    (err,) = report["errors"]
    assert err["path"] == "old.py"
    assert err["message"].startswith(f"Python 2 syntax at line {bad_line}")
    assert f"({construct})" in err["message"]
    assert finding_paths(report) == {"risky.py"}


def construct_line(line: str) -> bool:
    """The line of each case above that only Python 2 accepts."""
    markers = ("print ", "exec ", "except ValueError,", "raise ValueError,", "`", "<>", "0755")
    return any(m in line for m in markers)


def test_a_python3_syntax_error_is_not_called_python2(tmp_path, write):
    write("bad.py", "import tensorflow as tf\n\n\ndef f(:\n    pass\n")
    (err,) = run_json("--no-verify", ".", cwd=tmp_path)["errors"]
    assert err["message"].startswith("syntax error at line 4")
    assert "Python 2" not in err["message"]


# --- excludes on the command line ------------------------------------------------------------


def test_exclude_and_extend_exclude_flags(tmp_path, write):
    write("src/a.py", RISKY)
    write("vendored/b.py", RISKY)
    write("gen/c.py", RISKY)
    write("build/d.py", RISKY)
    paths = finding_paths(
        run_json("--no-verify", "--extend-exclude", "vendored,gen/", ".", cwd=tmp_path)
    )
    assert paths == {"src/a.py"}
    # --exclude replaces the defaults, so build/ is walked again
    paths = finding_paths(run_json("--no-verify", "--exclude", "vendored", ".", cwd=tmp_path))
    assert paths == {"src/a.py", "gen/c.py", "build/d.py"}


def test_force_exclude_applies_excludes_to_files_named_explicitly(tmp_path, write):
    write("pyproject.toml", '[tool.tfnumlint]\nextend-exclude = ["third_party"]\n')
    write("third_party/lib/x.py", RISKY)
    write("build/y.py", RISKY)
    write("src/z.py", RISKY)
    named = ["third_party/lib/x.py", "build/y.py", "src/z.py"]
    assert finding_paths(run_json("--no-verify", *named, cwd=tmp_path)) == set(named)
    report = run_json("--no-verify", "--force-exclude", *named, cwd=tmp_path)
    assert finding_paths(report) == {"src/z.py"}
    assert report["summary"]["files"] == 1
    # from a subdirectory, patterns stay relative to the project root
    sub = tmp_path / "src"
    report = run_json("--no-verify", "--force-exclude", "../third_party/lib/x.py", "z.py", cwd=sub)
    assert finding_paths(report) == {"z.py"}


def test_force_exclude_from_config(tmp_path, write):
    write("pyproject.toml", '[tool.tfnumlint]\nforce-exclude = true\nextend-exclude = ["gen"]\n')
    write("gen/x.py", RISKY)
    proc = run_cli("--no-verify", "gen/x.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "All clear: no findings in 0 files." in proc.stdout


# --- standard input --------------------------------------------------------------------------


def stdin_cli(tmp_path, data: str, *args: str):
    import os
    import sys

    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(tmp_path / ".cache"))
    return subprocess.run(
        [sys.executable, "-m", "tfnumlint", *args],
        input=data,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_stdin_is_linted_as_the_stdin_filename_with_its_config(tmp_path, write):
    write("pkg/pyproject.toml", '[tool.tfnumlint]\nignore = ["TNL202"]\n')
    code = RISKY + "\n\ndef dist(a, b):\n    return tf.sqrt(tf.reduce_sum(tf.square(a - b)))\n"
    proc = stdin_cli(
        tmp_path,
        code,
        "--no-verify",
        "--output-format",
        "concise",
        "-",
        "--stdin-filename",
        "pkg/m.py",
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pkg/m.py:5:28: TNL102 ")
    assert "TNL202" not in proc.stdout  # the config beside pkg/m.py applies
    assert not (tmp_path / "pkg" / "m.py").exists()
    # the same without a name: shown as "-", the nearest config is the working directory's
    proc = stdin_cli(tmp_path, code, "--no-verify", "--output-format", "concise", "-")
    assert {line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()[:-1]} == {
        "TNL102",
        "TNL202",
    }
    assert proc.stdout.startswith("-:5:28: TNL102")


def test_stdin_with_force_exclude_and_an_excluded_name_reports_nothing(tmp_path, write):
    proc = stdin_cli(
        tmp_path, RISKY, "--no-verify", "--force-exclude", "-", "--stdin-filename", "build/m.py"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TNL102" not in proc.stdout


def test_stdin_syntax_error_is_reported_for_the_stdin_filename(tmp_path):
    proc = stdin_cli(
        tmp_path, "import tensorflow as tf\nprint 'x'\n", "--no-verify", "--stdin-filename", "m.py"
    )
    assert proc.returncode == 2
    assert "m.py: error: Python 2 syntax at line 2" in proc.stdout


def test_cells_in_another_language_are_skipped_not_errors(tmp_path, write):
    write(
        "nb.ipynb",
        notebook(
            ("code", "import tensorflow as tf\n"),
            ("code", "%%bash\nif [ -d data ]; then ls data; fi\n"),
            ("code", "%%time\ndef loss(p_pred):\n    return tf.math.log(p_pred + 1e-10)\n"),
        ),
    )
    report = run_json("--no-verify", "nb.ipynb", cwd=tmp_path)
    assert report["errors"] == []
    assert [(f["cell"], f["line"], f["rule"]) for f in report["findings"]] == [(3, 3, "TNL102")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("if a <> b:", "'<>' operator"),
        ('x = "a <> b" + (', None),  # inside a string: not evidence of Python 2
        ("x = f(  # `tick` in a comment", None),
        ("printer = (", None),
        ('s = ur"raw"', "ur'' string prefix"),
        ("n = 10L", "long integer literal"),
    ],
)
def test_python2_evidence_comes_from_code_not_strings(line, expected):
    from tfnumlint.source import python2_construct

    assert python2_construct("invalid syntax", line) == expected
