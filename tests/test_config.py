"""``[tool.tfnumlint]`` in the nearest pyproject.toml, its errors, and its precedence under CLI flags."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_cli, run_json

# TNL102 (warning) and TNL202 (error) in one file.
TWO_FAMILIES = """\
import tensorflow as tf


def loss(p_pred, a, b):
    d = tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10)) + d
"""

AUTOENCODER = """\
import tensorflow as tf

inputs = tf.keras.Input(shape=(16,))
outputs = tf.keras.layers.Dense(16, activation="sigmoid")(inputs)
model = tf.keras.Model(inputs, outputs)
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate={lr}), loss=lambda y, p: -tf.math.log(p + 1e-7))
"""

UNCHECKED_INPUT = """\
import tensorflow as tf

ds = tf.data.Dataset.from_tensor_slices(tf.random.uniform((8, 4))).batch(2)
"""


def pyproject(tmp_path, body: str, name: str = "pyproject.toml"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def rules(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"]}


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tfnumlint: error:")
    return lines[0]


@pytest.fixture
def project(tmp_path, write):
    write("two.py", TWO_FAMILIES)
    return tmp_path


# --- selection -------------------------------------------------------------------------------


def test_no_config_reports_the_defaults(project):
    assert rules(run_json("--no-verify", "two.py", cwd=project)) == {"TNL102", "TNL202"}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('select = ["TNL1"]', {"TNL102"}),
        ('select = ["TNL202"]', {"TNL202"}),
        ('ignore = ["TNL102"]', {"TNL202"}),
        ('ignore = ["TNL2"]', {"TNL102"}),
        ('select = ["TNL1", "TNL2"]\nignore = ["TNL102"]', {"TNL202"}),
        ('select = ["TNL1"]\nextend-select = ["TNL202"]', {"TNL102", "TNL202"}),
    ],
)
def test_select_ignore_extend_select(project, table, expected):
    pyproject(project, f"[tool.tfnumlint]\n{table}\n")
    assert rules(run_json("--no-verify", "two.py", cwd=project)) == expected


def test_extend_select_enables_an_off_by_default_rule(tmp_path, write):
    write("data.py", UNCHECKED_INPUT)
    before = run_json("--no-verify", "data.py", cwd=tmp_path)
    assert "TNL504" not in rules(before)
    pyproject(tmp_path, '[tool.tfnumlint]\nextend-select = ["TNL504"]\n')
    assert "TNL504" in rules(run_json("--no-verify", "data.py", cwd=tmp_path))


def test_config_is_read_from_the_nearest_pyproject(project, write):
    pyproject(project, '[tool.tfnumlint]\nselect = ["TNL1"]\n')
    sub = project / "sub" / "deeper"
    write("sub/deeper/two.py", TWO_FAMILIES)
    assert rules(run_json("--no-verify", "two.py", cwd=sub)) == {"TNL102"}  # found two levels up
    pyproject(project, '[tool.tfnumlint]\nselect = ["TNL2"]\n', name="sub/pyproject.toml")
    assert rules(run_json("--no-verify", "two.py", cwd=sub)) == {"TNL202"}  # the nearer one wins


def test_other_tools_tables_are_ignored(project):
    pyproject(
        project,
        """\
        [project]
        name = "demo"

        [tool.ruff]
        line-length = 100
        nonsense = true
    """,
    )
    assert rules(run_json("--no-verify", "two.py", cwd=project)) == {"TNL102", "TNL202"}


# --- CLI wins --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "flags", "expected"),
    [
        ('select = ["TNL2"]', ["--select", "TNL1"], {"TNL102"}),
        ('select = ["TNL1", "TNL2"]', ["--ignore", "TNL1"], {"TNL202"}),
        # ruff semantics: --select replaces the configured selection, ignores included
        ('ignore = ["TNL102"]', ["--select", "TNL102"], {"TNL102"}),
        ('extend-select = ["TNL202"]', ["--select", "TNL102"], {"TNL102"}),
        ('[tool.tfnumlint.severity]\nTNL102 = "error"', ["--select", "TNL102"], {"TNL102"}),
    ],
)
def test_cli_flags_win_over_config(project, table, flags, expected):
    pyproject(project, f"[tool.tfnumlint]\n{table}\n")
    assert rules(run_json("--no-verify", *flags, "two.py", cwd=project)) == expected


# --- per-file-ignores, exclude, extend-exclude -----------------------------------------------


def test_per_file_ignores(project, write):
    write("tests/test_two.py", TWO_FAMILIES)
    write("gen/model_pb.py", TWO_FAMILIES)
    pyproject(
        project,
        """\
        [tool.tfnumlint.per-file-ignores]
        "tests/*.py" = ["TNL102"]
        "*_pb.py" = ["TNL1", "TNL2"]
    """,
    )
    report = run_json("--no-verify", ".", cwd=project)
    by_path: dict[str, set[str]] = {}
    for f in report["findings"]:
        by_path.setdefault(f["path"], set()).add(f["rule"])
    assert by_path == {"two.py": {"TNL102", "TNL202"}, "tests/test_two.py": {"TNL202"}}


def test_per_file_ignores_are_relative_to_the_project_root(project, write):
    write("pkg/tests/test_two.py", TWO_FAMILIES)
    pyproject(project, '[tool.tfnumlint.per-file-ignores]\n"pkg/tests/*.py" = ["TNL102"]\n')
    from_root = run_json("--no-verify", "pkg", cwd=project)
    from_sub = run_json("--no-verify", ".", cwd=project / "pkg")
    assert rules(from_root) == rules(from_sub) == {"TNL202"}


def test_exclude_replaces_and_extend_exclude_extends_the_defaults(project, write):
    write("generated/gen.py", TWO_FAMILIES)
    write("build/out.py", TWO_FAMILIES)
    paths = lambda: {f["path"] for f in run_json("--no-verify", ".", cwd=project)["findings"]}  # noqa: E731
    assert paths() == {"two.py", "generated/gen.py"}  # build/ is excluded by default
    pyproject(project, '[tool.tfnumlint]\nextend-exclude = ["generated"]\n')
    assert paths() == {"two.py"}
    pyproject(project, '[tool.tfnumlint]\nexclude = ["generated"]\n')
    assert paths() == {"two.py", "build/out.py"}  # the defaults are replaced
    pyproject(project, '[tool.tfnumlint]\nextend-exclude = ["two.py", "gen*/"]\n')
    assert paths() == set()


def test_excluded_file_named_explicitly_is_still_checked(project):
    pyproject(project, '[tool.tfnumlint]\nextend-exclude = ["two.py"]\n')
    assert run_json("--no-verify", ".", cwd=project)["findings"] == []
    assert rules(run_json("--no-verify", "two.py", cwd=project)) == {"TNL102", "TNL202"}


# --- severity and thresholds -----------------------------------------------------------------


def test_severity_overrides(project):
    default = {
        f["rule"]: f["severity"] for f in run_json("--no-verify", "two.py", cwd=project)["findings"]
    }
    assert default == {"TNL102": "warning", "TNL202": "error"}
    pyproject(project, '[tool.tfnumlint.severity]\nTNL102 = "error"\nTNL202 = "info"\n')
    report = run_json("--no-verify", "two.py", cwd=project)
    assert {f["rule"]: f["severity"] for f in report["findings"]} == {
        "TNL102": "error",
        "TNL202": "info",
    }
    github = run_cli("--no-verify", "--format", "github", "two.py", cwd=project).stdout
    assert "::notice " in github and "::error " in github and "::warning " not in github


@pytest.mark.parametrize(
    ("lr", "threshold", "flagged"),
    [
        ("0.01", None, True),  # default adam threshold 0.003
        ("0.001", None, False),
        ("0.01", "0.05", False),  # raised threshold
        ("0.001", "0.0005", True),  # lowered threshold
    ],
)
def test_learning_rate_thresholds_change_tnl501(tmp_path, write, lr, threshold, flagged):
    write("ae.py", AUTOENCODER.format(lr=lr))
    if threshold is not None:
        pyproject(tmp_path, f"[tool.tfnumlint.learning-rate-thresholds]\nadam = {threshold}\n")
    report = run_json("--no-verify", "--select", "TNL501", "ae.py", cwd=tmp_path)
    assert ("TNL501" in rules(report)) is flagged


def test_thresholds_are_part_of_the_cache_key(tmp_path, write):
    write("ae.py", AUTOENCODER.format(lr="0.01"))
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    assert "TNL501" in rules(run_json("--no-verify", "ae.py", cwd=tmp_path, env=env))
    pyproject(tmp_path, "[tool.tfnumlint.learning-rate-thresholds]\nadam = 0.05\n")
    assert "TNL501" not in rules(run_json("--no-verify", "ae.py", cwd=tmp_path, env=env))


# --- --config FILE ---------------------------------------------------------------------------


def test_config_flag_reads_a_given_pyproject(project):
    pyproject(project, '[tool.tfnumlint]\nselect = ["TNL2"]\n')  # would apply without --config
    other = pyproject(
        project, '[tool.tfnumlint]\nselect = ["TNL1"]\n', name="configs/pyproject.toml"
    )
    assert rules(run_json("--no-verify", "--config", str(other), "two.py", cwd=project)) == {
        "TNL102"
    }


def test_config_flag_reads_a_dedicated_toml_file(project):
    path = pyproject(project, 'ignore = ["TNL1"]\n', name="tfnumlint.toml")
    assert rules(run_json("--no-verify", "--config", str(path), "two.py", cwd=project)) == {
        "TNL202"
    }


def test_config_flag_missing_file_is_an_error(project):
    line = one_line_error(run_cli("--no-verify", "--config", "nope.toml", "two.py", cwd=project))
    assert "nope.toml" in line


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('[tool.tfnumlint]\nselct = ["TNL1"]\n', "selct"),
        ("[tool.tfnumlint]\nline-length = 100\n", "line-length"),
    ],
)
def test_unknown_key_is_an_error_naming_it(project, body, named):
    pyproject(project, body)
    line = one_line_error(run_cli("--no-verify", "two.py", cwd=project))
    assert f"'{named}'" in line
    assert "pyproject.toml" in line


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('select = "TNL1"', "select"),
        ("ignore = [102]", "ignore"),
        ("extend-select = [true]", "extend-select"),
        ('exclude = "build"', "exclude"),
        ("extend-exclude = 3", "extend-exclude"),
        ('per-file-ignores = ["x"]', "per-file-ignores"),
        ('per-file-ignores = { "tests/*" = "TNL1" }', "per-file-ignores.tests/*"),
        ('severity = { TNL102 = "fatal" }', "severity.TNL102"),
        ('severity = { TNL999 = "error" }', "severity.TNL999"),
        ('severity = "error"', "severity"),
        ("learning-rate-thresholds = { adam = -0.1 }", "learning-rate-thresholds.adam"),
        ('learning-rate-thresholds = { adam = "high" }', "learning-rate-thresholds.adam"),
        ("learning-rate-thresholds = { adamz = 0.1 }", "learning-rate-thresholds.adamz"),
        ("learning-rate-thresholds = 0.1", "learning-rate-thresholds"),
        ("exploding-gradient-threshold = 0", "exploding-gradient-threshold"),
        ('select = ["TNL999"]', "select"),
        ('ignore = ["XYZ"]', "ignore"),
        ('per-file-ignores = { "a.py" = ["TNL9"] }', "per-file-ignores.a.py"),
        ("baseline = 3", "baseline"),
        ('baseline = ""', "baseline"),
        ('force-exclude = "yes"', "force-exclude"),
    ],
)
def test_bad_value_is_an_error_naming_the_key(project, body, named):
    pyproject(project, f"[tool.tfnumlint]\n{body}\n")
    line = one_line_error(run_cli("--no-verify", "two.py", cwd=project))
    assert named in line


def test_section_that_is_not_a_table(project):
    pyproject(project, '[tool]\ntfnumlint = "on"\n')
    assert "[tool.tfnumlint]" in one_line_error(run_cli("--no-verify", "two.py", cwd=project))


@pytest.mark.parametrize(
    "body",
    [
        "[tool.tfnumlint\nselect = 1\n",
        '[tool.tfnumlint]\nselect = ["TNL1"\n',
        "[tool.tfnumlint]\nselect = []\nselect = []\n",
        b'[tool.tfnumlint]\nselect = ["\xff"]\n',
    ],
)
def test_invalid_toml_is_an_error(project, body):
    path = project / "pyproject.toml"
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")
    line = one_line_error(run_cli("--no-verify", "two.py", cwd=project))
    assert "pyproject.toml" in line
    assert "TOML" in line


def test_config_errors_win_over_the_run(project, write):
    """A bad config stops the run before any file is analysed: no half report on stdout."""
    write("broken.py", "import tensorflow as tf\nx = (\n")
    pyproject(project, "[tool.tfnumlint]\nbogus = 1\n")
    for fmt in ("text", "json", "sarif", "github"):
        one_line_error(run_cli("--no-verify", "--format", fmt, ".", cwd=project))


def test_a_pyproject_without_our_section_is_skipped_for_the_next_one_up(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tfnumlint]\nignore = ['TNL101']\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (sub / "m.py").write_text("import tensorflow as tf\np = tf.nn.softmax(z)\nl = tf.math.log(p)\n")
    from conftest import run_json

    report = run_json("--no-verify", "--exit-zero", ".", cwd=sub)
    assert [f["rule"] for f in report["findings"]] == []
