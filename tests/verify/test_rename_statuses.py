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

# The helper of nanruns p04: hidden layers from a comprehension, the output layer appended with
# the helper's parameter as its activation; the losses see the model's outputs only as
# arguments, so their meaning must come from the producer, across the call.
GAN_APPENDED = """\
import tensorflow as tf


def mlp(sizes, out_activation=None):
    layers = [tf.keras.layers.Dense(s, activation="relu") for s in sizes[:-1]]
    layers.append(tf.keras.layers.Dense(sizes[-1], activation=out_activation))
    return tf.keras.Sequential(layers)


generator = mlp([16, 2])
discriminator = mlp([16, 1], out_activation="sigmoid")
opt = tf.keras.optimizers.Adam()


def discriminator_loss(d_real, d_fake):
    return -tf.reduce_mean(tf.math.log(d_real) + tf.math.log(1.0 - d_fake))


def step(x, z):
    with tf.GradientTape() as tape:
        d_real = discriminator(x)
        d_fake = discriminator(generator(z))
        loss = discriminator_loss(d_real, d_fake)
    grads = tape.gradient(loss, discriminator.trainable_variables)
    opt.apply_gradients(zip(grads, discriminator.trainable_variables))
"""

FILES = {
    "bce_loss.py": BCE.format(name="bce_loss") + STEP.format(call="bce_loss(y, model(x))"),
    "bce.py": BCE.format(name="bce") + STEP.format(call="bce(y, model(x))"),
    "free_bce.py": BCE.format(name="bce_loss"),
    "gan_a.py": GAN.format(name="feature_loss"),
    "gan_b.py": GAN.format(name="feature_matching_loss"),
    "gan_appended.py": GAN_APPENDED,
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
    assert result.total >= 9
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


def test_a_helper_built_discriminator_is_a_probability_by_its_producer(outcome, tmp_path):
    """`discriminator = mlp(..., out_activation="sigmoid")` with the output layer appended: the
    loss's parameters are sigmoid outputs because the call site passes them, so both logs are
    found, and `log(1 - d_fake)` (what the generator drives) is confirmed at a logit inside the
    band (17: the sigmoid rounds to 1), whatever the names."""
    rn, result = outcome
    keys = {k: v for k, v in rn.statuses(rn.lint(_one(tmp_path, GAN_APPENDED), True)).items()}
    by_line = {(line, rule): v for (_, line, rule), v in keys.items()}
    line = (
        GAN_APPENDED.splitlines().index(
            "    return -tf.reduce_mean(tf.math.log(d_real) + tf.math.log(1.0 - d_fake))"
        )
        + 1
    )
    assert "confirmed" in by_line[(line, "TNL101")], by_line
    assert not [k for k in result.disappeared if k[0].endswith("gan_appended.py")]


def _one(root, text):
    (root / "one").mkdir()
    (root / "one" / "m.py").write_text(text)
    return root / "one"
