"""The training rung across modules: a training step whose model, loss helper and hazard are
imported from another module of the project trains that module's own code.

The program slicer loads the imported module's context on demand and reads the callee there
(its model class, its helpers), so the finding in the imported module is watched at its own
line in the importing module's objective, trained on the importing module's data.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from tfnumlint.analysis.project_imports import imported_module, project_files
from tfnumlint.analysis.project_model import ModuleSummary
from tfnumlint.verify import probing

# the model, its weights' helper, the variance helper (the hazard) and the losses' helpers
PARTS = """\
    import tensorflow as tf


    def _layer(n_in, n_out, seed):
        init = tf.keras.initializers.GlorotUniform(seed=seed)
        return tf.Variable(init((n_in, n_out))), tf.Variable(tf.zeros([n_out]))


    class Encoder(tf.Module):
        def __init__(self, n_in, n_hidden, n_latent):
            super().__init__()
            self.w_h, self.b_h = _layer(n_in, n_hidden, 1)
            self.w_mu, self.b_mu = _layer(n_hidden, n_latent, 2)
            self.w_lv, self.b_lv = _layer(n_hidden, n_latent, 3)

        def __call__(self, x):
            h = tf.nn.relu(tf.matmul(x, self.w_h) + self.b_h)
            mean = tf.matmul(h, self.w_mu) + self.b_mu
            return mean, tf.matmul(h, self.w_lv) + self.b_lv


    class Decoder(tf.Module):
        def __init__(self, n_latent, n_out):
            super().__init__()
            self.w, self.b = _layer(n_latent, n_out, 4)

        def __call__(self, z):
            return tf.matmul(z, self.w) + self.b


    def spread(log_var):
        var = tf.exp(log_var)
        return var, tf.sqrt(var)


    def draw(mean, log_var):
        _, std = spread(log_var)
        return mean + std * tf.random.normal(tf.shape(mean))


    def divergence(mean, log_var):
        var, _ = spread(log_var)
        return -0.5 * tf.reduce_sum(1.0 + log_var - tf.square(mean) - var, axis=1)
"""

# the training step and its data: raw 0..255 pixels (PIXELS), or scaled to [0, 1]
TRAIN = """\
    import numpy as np
    import tensorflow as tf

    IMPORT

    BATCH, LATENT = 32, 4

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (1000, 196)).astype(np.float32)
    data = PIXELS
    encoder = Encoder(196, 64, LATENT)
    decoder = Decoder(LATENT, 196)
    params = encoder.trainable_variables + decoder.trainable_variables
    optimizer = tf.keras.optimizers.Adam(1e-3)


    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            mean, log_var = encoder(x)
            x_hat = decoder(draw(mean, log_var))
            recon = tf.reduce_sum(tf.square(x - x_hat), axis=1)
            loss = tf.reduce_mean(recon + divergence(mean, log_var))
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss


    for step in range(100):
        batch = data[rng.integers(0, len(data), BATCH)]
        train_step(tf.constant(batch))
"""

NAMES = "Decoder, Encoder, divergence, draw"

# three layouts: two scripts side by side (``from parts import``), a package's modules
# (``from .parts import``), and the module itself imported (``parts.Encoder(...)``)
LAYOUTS = {
    "scripts": ("", f"from parts import {NAMES}"),
    "package": ("pkg", f"from .parts import {NAMES}"),
    "attributes": ("pkg", "from pkg import parts"),
}


def write(root: Path, layout: str, pixels: str) -> str:
    """The two modules under ``root``; the path of the model module, as linted."""
    folder, imports = LAYOUTS[layout]
    where = root / folder if folder else root
    where.mkdir(parents=True, exist_ok=True)
    if folder:
        (where / "__init__.py").write_text("", encoding="utf-8")
    (where / "parts.py").write_text(textwrap.dedent(PARTS), encoding="utf-8")
    train = textwrap.dedent(TRAIN).replace("IMPORT", imports).replace("PIXELS", pixels)
    if layout == "attributes":
        for name in NAMES.split(", "):
            train = train.replace(f"{name}(", f"parts.{name}(")
    (where / "train.py").write_text(train, encoding="utf-8")
    return f"{folder}/parts.py" if folder else "parts.py"


def exp_line() -> int:
    lines = textwrap.dedent(PARTS).splitlines()
    return next(i for i, text in enumerate(lines, 1) if "tf.exp(" in text)


def exp_probes(root: Path, parts: str) -> list[dict]:
    from test_caller_ranges import probes

    from tfnumlint.engine import load_all

    load_all()
    return [p for p in probes(root, parts, "TNL301") if p.get("line") == exp_line()]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_an_imported_variance_helper_overflows_in_the_importing_programs_first_step(
    tmp_path, layout
) -> None:
    """The hazard, the model and the helpers are in one module, the training step and its
    raw pixels in the other: the rung trains the imported model on the importer's data and
    confirms the exp at its own line in the imported module.  Its twin, on pixels scaled to
    [0, 1], confirms nothing."""
    parts = write(tmp_path / "buggy", layout, "pixels")
    [probe] = exp_probes(tmp_path / "buggy", parts)
    spec = probe["program"]
    assert spec["file"] == parts and spec["span"][0] == exp_line()
    assert spec["path"].endswith("train.py")  # the objective is the importer's
    term = spec["term"]
    assert term.get("op") == "exp" and term.get("file") == parts, term
    assert term.get("line") == exp_line()
    assert not spec["assumed"], spec["assumed"]  # every weight and feed read from the code
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert (verdict.get("repro") or {}).get("rung") == "training-program", verdict
    assert "reaches it at step 0" in verdict["detail"]
    assert "its data code replayed" in verdict["detail"]

    twin = write(tmp_path / "twin", layout, "pixels / 255.0")
    [probe] = exp_probes(tmp_path / "twin", twin)
    assert probe["program"]["file"] == twin  # the rung runs, and its run stays finite
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] != "confirmed", verdict
    assert "stays finite" in verdict["detail"], verdict["detail"]


def summary(module: str, path: str, imports=()) -> ModuleSummary:
    return ModuleSummary(module, path, tuple(imports), (), (), (), (), (), text_hash=module)


def test_a_script_imports_the_module_next_to_it() -> None:
    """Two folders each with a ``parts.py`` and a ``train.py`` that imports it: each script's
    import is the file next to it (Python puts the script's folder first on ``sys.path``),
    not the first ``parts`` of the tree, and each model module's importer is its own."""
    summaries = {
        "parts": summary("parts", "a/parts.py"),
        "train": summary("train", "a/train.py", [("Net", "parts", "Net")]),
        "parts#2": summary("parts#2", "b/parts.py"),
        "train#3": summary("train#3", "b/train.py", [("Net", "parts", "Net")]),
        "pkg.parts": summary("pkg.parts", "pkg/parts.py"),
        "pkg.train": summary("pkg.train", "pkg/train.py", [("Net", "pkg.parts", "Net")]),
    }
    assert imported_module(summaries, "train", "parts") == "parts"
    assert imported_module(summaries, "train#3", "parts") == "parts#2"
    assert imported_module(summaries, "pkg.train", "pkg.parts") == "pkg.parts"
    assert project_files(summaries, "imp", "parts") == (("train", "a/train.py", "train"),)
    assert project_files(summaries, "imp", "parts#2") == (("train#3", "b/train.py", "train#3"),)
    assert project_files(summaries, "imp", "pkg.parts") == (
        ("pkg.train", "pkg/train.py", "pkg.train"),
    )
    assert project_files(summaries, "mod", "parts#2") == ("b/parts.py", "parts#2")
    assert project_files(summaries, "imp", "train") is None


def cached_exp_probe(root: Path, parts: str, cache: Path) -> dict:
    """The exp finding's probe, linted as a project through the on-disk cache."""
    from tfnumlint.config import load_config, resolve_codes
    from tfnumlint.discovery import discover
    from tfnumlint.engine import LintOptions, load_all
    from tfnumlint.incremental import Job, analyse_project

    load_all()
    config = load_config(None, root)
    codes = resolve_codes(config, ["TNL301"], None)
    candidates = discover(["."], root, config.exclude, config.extend_exclude, config.root)
    job = Job(LintOptions(codes=codes, slice_probes=True), config.fingerprint(codes), cache)
    [probe] = [
        f.probe
        for result in analyse_project(candidates, job, 1)
        for f in result.findings
        if f.path == parts and f.line == exp_line() and f.probe is not None
    ]
    return probe


def test_editing_the_importing_program_re_slices_the_imported_modules_finding(tmp_path) -> None:
    """The imported module's finding depends on the program that imports it: with the cache
    warm, an edit to the importer's data code (and only there) reaches the finding's probe."""
    root, cache = tmp_path / "project", tmp_path / "cache"
    parts = write(root, "scripts", "pixels")
    raw = cached_exp_probe(root, parts, cache)["program"]
    assert cached_exp_probe(root, parts, cache)["program"] == raw  # served from the cache
    train = root / "train.py"
    train.write_text(
        train.read_text(encoding="utf-8").replace("data = pixels", "data = pixels / 255.0"),
        encoding="utf-8",
    )
    scaled = cached_exp_probe(root, parts, cache)["program"]
    assert scaled["data"] != raw["data"]
    assert scaled["file"] == parts and scaled["term"] == raw["term"]


def test_a_break_in_another_module_is_placed_by_its_path() -> None:
    """Where a run's break starts: a line of the finding's own module as a line, one of the
    other module (the objective's, or one it imports) with that module's path."""
    from tfnumlint.verify.training_rung import place

    where, files = [[20, 5], [36, 11]], ["", "parts.py"]
    in_parts = {"spec": {"path": "train.py", "file": "parts.py"}, "where": where, "files": files}
    assert [place(in_parts, i) for i in (0, 1)] == ["train.py:20", "line 36"]
    in_train = {"spec": {"path": "train.py"}, "where": where, "files": files}
    assert [place(in_train, i) for i in (0, 1)] == ["line 20", "parts.py:36"]


LOSSES = """\
    import tensorflow as tf


    def poisson_nll(y_true, y_pred):
        return tf.reduce_mean(y_pred - y_true * tf.math.log(y_pred + 1e-7), axis=-1)
"""

FIT = """\
    import numpy as np
    from tensorflow import keras

    from losses import poisson_nll

    rng = np.random.default_rng(6)
    n = 6000
    hour = rng.integers(0, 24, n)
    temp = rng.normal(15, 7, n)
    rain = (rng.random(n) < 0.2).astype(float)
    weekend = (rng.random(n) < 2 / 7).astype(float)
    log_rate = 0.3 + 1.2 * np.sin(np.pi * hour / 24) ** 2 + 0.04 * temp - 1.5 * rain
    counts = rng.poisson(np.exp(log_rate + 0.3 * weekend)).astype("float32")[:, None]
    angle = 2 * np.pi * hour / 24
    features = np.stack(
        [np.sin(angle), np.cos(angle), (temp - 15) / 7, rain, weekend], 1
    ).astype("float32")

    model = keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1, bias_initializer=keras.initializers.Constant(counts.mean())),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss=poisson_nll)
    model.fit(features, counts, batch_size=64, epochs=3)
"""


def test_a_keras_loss_imported_from_another_module_is_trained_with_the_model_it_is_compiled_with(
    tmp_path,
) -> None:
    """``model.compile(loss=poisson_nll)`` with the loss imported from ``losses.py``: the rung
    trains the compiled model on the program's data, and the log's NaN (a linear rate gone
    negative) starts at the loss module's own line."""
    from test_caller_ranges import probes

    from tfnumlint.engine import load_all

    load_all()
    (tmp_path / "losses.py").write_text(textwrap.dedent(LOSSES), encoding="utf-8")
    (tmp_path / "train.py").write_text(textwrap.dedent(FIT), encoding="utf-8")
    [probe] = probes(tmp_path, "losses.py", "TNL102")
    spec = probe["program"]
    assert spec["file"] == "losses.py" and spec["path"] == "train.py"
    assert spec["term"].get("file") == "losses.py" and spec["term"].get("line") == 5
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert (verdict.get("repro") or {}).get("rung") == "training-program", verdict
    assert "`features` = its data code replayed" in verdict["detail"]


def test_no_loaded_module_outlives_the_run(tmp_path) -> None:
    from tfnumlint.analysis.slicing import program_modules

    exp_probes(tmp_path, write(tmp_path, "scripts", "pixels"))
    assert program_modules._LOADED == {}


def test_a_hazard_two_imports_away_is_trained_by_the_program_at_the_end_of_them(
    tmp_path,
) -> None:
    """``stats.py`` holds the variance helper, ``model.py`` the model classes and re-exports
    the helpers, ``train.py`` imports everything from ``model``: the finding in ``stats.py``
    is watched in the objective of ``train.py``, which imports it only through ``model``."""
    parts = textwrap.dedent(PARTS)
    at = parts.index("def spread(")
    (tmp_path / "stats.py").write_text("import tensorflow as tf\n\n\n" + parts[at:])
    model = parts[:at].rstrip() + "\n"
    model = model.replace(
        "import tensorflow as tf\n",
        "import tensorflow as tf\n\nfrom stats import divergence, draw\n",
    )
    (tmp_path / "model.py").write_text(model, encoding="utf-8")
    train = textwrap.dedent(TRAIN).replace("IMPORT", f"from model import {NAMES}")
    (tmp_path / "train.py").write_text(train.replace("PIXELS", "pixels"), encoding="utf-8")
    from test_caller_ranges import probes

    line = 1 + next(
        i
        for i, text in enumerate((tmp_path / "stats.py").read_text().splitlines())
        if "exp(" in text
    )
    [probe] = [p for p in probes(tmp_path, "stats.py", "TNL301") if p.get("line") == line]
    spec = probe["program"]
    assert spec["file"] == "stats.py" and spec["path"] == "train.py"
    verdict = probing.verify(probe, 1e6)
    assert verdict["status"] == "confirmed", verdict
    assert "reaches it at step 0" in verdict["detail"]


def test_an_importer_that_trains_nothing_is_not_parsed(tmp_path, monkeypatch) -> None:
    """Only a module whose text calls an optimizer, a tape's gradient or compile can hold an
    objective: the other modules that import the finding's module are not parsed for it."""
    from tfnumlint.analysis.slicing import program_modules

    parts = write(tmp_path, "scripts", "pixels")
    for i in range(3):  # library modules that use the helpers and train nothing
        (tmp_path / f"lib{i}.py").write_text(
            "import tensorflow as tf\n\nfrom parts import draw\n\n\n"
            f"def use{i}(m, v):\n    return tf.reduce_sum(draw(m, v))\n"
        )
    parsed: list[str] = []

    parse = program_modules.parse_module

    def spy(text):
        parsed.append(text)
        return parse(text)

    monkeypatch.setattr(program_modules, "parse_module", spy)
    [probe] = exp_probes(tmp_path, parts)
    assert probe["program"]["path"].endswith("train.py")  # still found in the training script
    assert parsed and not any("def use" in text for text in parsed)
    assert program_modules._TRAINING_CALL.search("opt.minimize(loss)")
    assert program_modules._TRAINING_CALL.search("tape . gradient (loss, w)")
    assert not program_modules._TRAINING_CALL.search("tf.gradients(loss, w)")
