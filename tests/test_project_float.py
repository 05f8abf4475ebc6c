"""The project's float type: a library that computes in float64 keeps epsilons float32 would
round away, and its probes run in float64.  Declared with ``float`` in [tool.tfnumlint], or
read from the project's own code where the float64 is written (``set_floatx``, a default-float
helper); a local float32 cast still wins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import run_cli, run_json

from tfnumlint.analysis.dtypectx import dtype_helpers, project_float
from tfnumlint.config import Config, ConfigError, Settings, parse_section
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.source import Source

ACOS = """\
import tensorflow as tf


def angle(cos_theta):
    cos_theta = tf.convert_to_tensor(cos_theta)
    jitter = 1e-15
    return tf.acos(jitter + (1 - 2 * jitter) * cos_theta)
"""


def tnl401(code: str, float_type: str | None) -> list:
    text = textwrap.dedent(code)
    options = LintOptions(codes=frozenset({"TNL401"}), settings=Settings(float_type=float_type))
    return lint_source(Source("m.py", text, text.encode()), options).findings


# ---------------------------------------------------------------- the config option


def test_config_declares_the_float_type():
    cfg = parse_section({"float": "float64"}, Path("pyproject.toml"))
    assert cfg.settings.float_type == "float64"


def test_config_rejects_an_unknown_float_type():
    with pytest.raises(ConfigError, match="'float' must be one of float16, bfloat16, float32"):
        parse_section({"float": "float128"}, Path("pyproject.toml"))


def test_the_float_type_is_part_of_the_cache_key():
    """A cached result computed in float32 must not be served to a float64 run."""
    a, b = Config(), Config()
    b.settings.float_type = "float64"
    assert a.fingerprint(frozenset()) != b.fingerprint(frozenset())


# ---------------------------------------------------------------- what the rules see


def test_epsilon_kept_in_a_float64_project():
    """1 - 2e-15 is exact enough in float64 (spacing 2.2e-16 at 1)."""
    assert len(tnl401(ACOS, None)) == 1
    assert tnl401(ACOS, "float64") == []


def test_a_local_float32_cast_wins_over_the_project_float():
    code = ACOS.replace(
        "tf.convert_to_tensor(cos_theta)", "tf.cast(cos_theta, tf.float32)"
    )  # fmt: skip
    [f] = tnl401(code, "float64")
    assert "float32" in f.message


def test_float16_context_still_wins():
    code = ACOS.replace("tf.convert_to_tensor(cos_theta)", "tf.cast(cos_theta, tf.float16)")
    code = code.replace("1e-15", "1e-4")
    [f] = tnl401(code, "float64")
    assert "float16" in f.message


# ---------------------------------------------------------------- read from the project's code


def test_set_floatx_float64_sets_the_project_float():
    found = project_float([("pkg/setup.py", "import keras\nkeras.config.set_floatx('float64')\n")])
    assert found is not None and found[0] == "float64"
    tf_style = "import tensorflow as tf\ntf.keras.backend.set_floatx(tf.float64)\n"
    assert project_float([("pkg/setup.py", tf_style)]) is not None


def test_set_floatx_in_a_test_file_says_nothing_about_the_library():
    assert project_float([("pkg/tests/test_x.py", "keras.config.set_floatx('float64')\n")]) is None


def test_conflicting_settings_leave_the_default():
    sources = [
        ("pkg/a.py", "keras.backend.set_floatx('float64')\n"),
        ("pkg/b.py", "keras.backend.set_floatx('float32')\n"),
    ]
    assert project_float(sources) is None


def test_a_bare_mention_of_float64_is_no_setting():
    assert project_float([("pkg/a.py", "import numpy as np\nX = np.float64\n")]) is None


HELPER_CONFIG = """\
import numpy as np


class _Defaults:
    FLOAT = ("PKG_FLOAT", np.float64)
    INT = ("PKG_INT", np.int32)


class Settings:
    def __init__(self):
        self.float = _Defaults.FLOAT[1]


_settings = Settings()


def default_float():
    return _settings.float
"""


USE = "import tensorflow as tf\nfrom .config import {h}\n\ny = tf.cast(x, {h}())\n"


@pytest.mark.parametrize("helper", ["default_float", "g"])
def test_a_dtype_helper_with_a_float64_config_default_under_any_name(helper):
    config = HELPER_CONFIG.replace("default_float", helper)
    found = project_float([("pkg/config.py", config), ("pkg/use.py", USE.format(h=helper))])
    assert found == ("float64", f"pkg/config.py: {helper}() is float64")


@pytest.mark.parametrize(
    "use",
    ["z = tf.zeros([3], dtype={h}())", "z = np.ones(3).astype({h}())", "y = tf.cast(x, {h}())"],
)
def test_a_helper_returning_float64_directly(use):
    src = "import tensorflow as tf\n\n\ndef default_float():\n    return tf.float64\n"
    sources = [("pkg/config.py", src), ("pkg/use.py", use.format(h="default_float"))]
    assert project_float(sources) is not None


def test_a_helper_never_used_as_a_dtype_sets_nothing():
    """`default_float()` returning float64 but used for nothing: not the project's float."""
    src = "import tensorflow as tf\n\n\ndef default_float():\n    return tf.float64\n"
    other = "from .config import default_float\n\nprint(default_float())\n"
    assert project_float([("pkg/config.py", src), ("pkg/use.py", other)]) is None


def test_a_helper_with_two_possible_results_says_nothing():
    src = "_FLOATX = 'float64' if FAST else 'float32'\n\n\ndef floatx():\n    return _FLOATX\n"
    one = src.replace(" if FAST else 'float32'", "")
    assert project_float([("pkg/backend.py", one), ("pkg/use.py", USE.format(h="floatx"))])
    assert project_float([("pkg/backend.py", src), ("pkg/use.py", USE.format(h="floatx"))]) is None


KERNEL = """\
import tensorflow as tf

from .config import default_float


def angle(x, a, b):
    cos_theta = tf.cast(x, default_float()) / (a - b)
    jitter = 1e-15
    return tf.acos(jitter + (1 - 2 * jitter) * cos_theta)
"""


@pytest.fixture(scope="module")
def helper_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "config.py").write_text(HELPER_CONFIG)
    (root / "pkg" / "kernel.py").write_text(KERNEL)
    return root


def test_a_multi_file_project_with_a_default_float_helper(helper_project):
    """No TNL401 on the float64 helper's project; the division is probed in float64."""
    env = {"TFNUMLINT_CACHE_DIR": str(helper_project / "cache")}
    found = run_json("--exit-zero", "pkg", cwd=helper_project, env=env)["findings"]
    assert [f["rule"] for f in found if f["rule"] == "TNL401"] == []
    probed = [f["verification"].get("dtype") for f in found if f["rule"] == "TNL201"]
    assert probed == ["float64"]


def test_the_text_report_says_where_the_float_type_came_from(helper_project):
    env = {"TFNUMLINT_CACHE_DIR": str(helper_project / "cache")}
    proc = run_cli("--no-verify", "--exit-zero", "pkg", cwd=helper_project, env=env)
    assert "`pkg` computes in float64 (pkg/config.py: default_float() is float64)" in proc.stdout


def test_the_config_option_overrides_the_code(helper_project, tmp_path):
    """Declared float32 in pyproject.toml: the project's helper is not consulted."""
    for name in ("__init__.py", "config.py", "kernel.py"):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text((helper_project / "pkg" / name).read_text())
    (tmp_path / "pyproject.toml").write_text('[tool.tfnumlint]\nfloat = "float32"\n')
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    found = run_json("--no-verify", "--exit-zero", "pkg", cwd=tmp_path, env=env)["findings"]
    assert [f["rule"] for f in found if f["rule"] == "TNL401"] == ["TNL401"]


def test_two_libraries_linted_in_one_run_keep_their_own_float_types(helper_project, tmp_path):
    """A float64 library beside a float32 one in the same run: only the first computes in
    float64; the other keeps float32 (its epsilon is rounded away there)."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "__init__.py").write_text("")
    (tmp_path / "other" / "kernel.py").write_text(
        KERNEL.replace("from .config ", "from pkg.config ")
    )
    for name in ("__init__.py", "config.py", "kernel.py"):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text((helper_project / "pkg" / name).read_text())
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    found = run_json("--no-verify", "--exit-zero", "pkg", "other", cwd=tmp_path, env=env)
    flagged = {Path(f["path"]).parent.name for f in found["findings"] if f["rule"] == "TNL401"}
    assert flagged == {"other"}
    proc = run_cli("--no-verify", "--exit-zero", "pkg", "other", cwd=tmp_path, env=env)
    assert "`pkg` computes in float64" in proc.stdout


def test_a_module_follows_its_top_level_package():
    from tfnumlint.analysis.dtypectx import float_package

    assert float_package("gp.kernels.misc", False) == "gp"
    assert float_package("gp", True) == "gp"
    assert float_package("train", False) == ""


@pytest.mark.parametrize(
    ("text", "helpers"),
    [
        ("x = tf.zeros(3, dtype=default_float())", {"default_float"}),
        ("x = tf.zeros(3, dtype = config.floatx( ))", {"floatx"}),
        ("y = tf.cast(x, gpf.default_float())", {"default_float"}),
        ("y = tf.cast(tf.reduce_sum(x), f())", set()),  # the cast's argument holds a call
        ("y = x.astype(float_type())", {"float_type"}),
        ("y = mydtype=f()", set()),  # not the keyword `dtype`
        ("y = recast(x, f())", set()),  # not `cast`
        ("y = tf.zeros(3, dtype=f(1))", set()),  # a call with arguments is no helper
    ],
)
def test_a_dtype_helper_is_a_zero_argument_call_in_a_dtype_position(text, helpers):
    assert dtype_helpers(text) == helpers
