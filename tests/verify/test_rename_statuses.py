"""Issue 22's rename test: alpha-renaming every user identifier, function, class, file and
folder keeps every finding's status (benchmarks/rename.py lints both copies, verification on).
The snippets are the issue's cases: the same loss body under two names, a loss renamed to a
longer name, training code under `tests/` and `optimization/`, and a probability whose meaning
comes from its producer (`out_activation="sigmoid"`)."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("tensorflow")

from test_rename_tool import rename_module

STEP = """
model = tf.keras.Sequential([tf.keras.layers.Dense(4)])
opt = tf.keras.optimizers.Adam()


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean({call})
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""

BCE = """\
import tensorflow as tf


def {name}(labels, logits):
    p = tf.sigmoid(logits)
    return -(labels * tf.math.log(p) + (1 - labels) * tf.math.log(1 - p))
"""

GAN = """\
import tensorflow as tf


def mlp(units, out_activation=None):
    return tf.keras.Sequential(
        [tf.keras.layers.Dense(units, activation="relu"),
         tf.keras.layers.Dense(1, activation=out_activation)]
    )


discriminator = mlp(16, out_activation="sigmoid")
generator = mlp(16)
opt = tf.keras.optimizers.Adam()


def {name}(real, fake):
    return tf.norm(real - fake, axis=-1)


def step(x, z):
    with tf.GradientTape() as tape:
        d_fake = discriminator(generator(z))
        loss = -tf.reduce_mean(tf.math.log(1 - d_fake)) + tf.reduce_mean({name}(x, generator(z)))
    grads = tape.gradient(loss, generator.trainable_variables)
    opt.apply_gradients(zip(grads, generator.trainable_variables))
"""

FILES = {
    "bce_loss.py": BCE.format(name="bce_loss") + STEP.format(call="bce_loss(y, model(x))"),
    "bce.py": BCE.format(name="bce") + STEP.format(call="bce(y, model(x))"),
    "free_bce.py": BCE.format(name="bce_loss"),
    "gan_a.py": GAN.format(name="feature_loss"),
    "gan_b.py": GAN.format(name="feature_matching_loss"),
    "tests/test_train.py": BCE.format(name="f") + STEP.format(call="f(y, model(x))"),
    "optimization/step.py": BCE.format(name="f") + STEP.format(call="f(y, model(x))"),
}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    rn = rename_module()
    return rn, rn.run([root])  # examples/ too is run by benchmarks/rename.py (slow: TNL501)


def test_every_finding_keeps_its_status_through_the_rename(outcome):
    _, result = outcome
    assert result.total >= 7
    assert not result.changed, result.changed
    assert not result.appeared and not result.disappeared, (result.appeared, result.disappeared)


def test_names_and_paths_do_not_decide_between_the_same_bodies(outcome, tmp_path):
    rn, _ = outcome
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    found = rn.statuses(rn.lint(tmp_path, verify=True))

    def at(path: str) -> dict[tuple[int, str], list[str]]:
        return {(line, rule): v for (p, line, rule), v in found.items() if p == path}

    assert at("bce_loss.py") and at("bce_loss.py") == at("bce.py")
    assert at("gan_a.py") and at("gan_a.py") == at("gan_b.py")
    assert at("tests/test_train.py") == at("optimization/step.py") == at("bce.py")
