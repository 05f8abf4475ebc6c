"""The training rung on a sequence model's stack: ``Embedding`` first, a global 1-D pooling, then
Dense layers.  The embedding is a table weight that whole-number ids pick rows of; ids the code
does not give are drawn as whole numbers below the table's row count, never in [-1, 1]."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

from tfnumlint.verify import kinds

# A text classifier whose class is its first token mod 3, trained with a hand-written
# log(softmax) cross-entropy at a learning rate that drives the logits apart within steps.
TEXT_CLASSIFIER = """\
    import numpy as np
    import tensorflow as tf

    VOCAB, LEN = 300, 12
    tokens = np.random.randint(0, VOCAB, (6000, LEN))
    labels = np.eye(3)[tokens[:, 0] % 3].astype(np.float32)


    def xent(y_true, y_pred):
        return -tf.reduce_sum(y_true * tf.math.log(y_pred), axis=-1)


    model = tf.keras.Sequential([
        tf.keras.layers.Embedding(VOCAB, 32),
        tf.keras.layers.GlobalMaxPooling1D(),
        tf.keras.layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.5), loss=xent)
    model.fit(tokens, labels, epochs=5, batch_size=32)
"""
LOG_LINE = "tf.math.log(y_pred)"


def program_of(results) -> dict:
    probes = [f.probe for f, _ in results if f.probe and f.probe.get("program")]
    assert probes, [f.message for f, _ in results]
    return probes[0]["program"]


def test_an_embedding_classifier_is_confirmed_by_its_own_training() -> None:
    results = on_line(verified(TEXT_CLASSIFIER), LOG_LINE, TEXT_CLASSIFIER)
    assert results and any(by_training(v) for _, v in results), [
        v.get("detail") for _, v in results
    ]


def test_the_embedding_is_a_table_weight_its_ids_pick_rows_of() -> None:
    spec = program_of(verified(TEXT_CLASSIFIER))
    tables = {k: w for k, w in spec["weights"].items() if k.endswith(".embeddings")}
    assert [w["shape"] for w in tables.values()] == [[300, 32]]
    assert all(w["init"] == "uniform" and w["maxval"] == 0.05 for w in tables.values())
    assert kinds.looked_up(spec["loss"]) == {"tokens"}
    assert kinds.one_hot_depths(spec["loss"]) == {"tokens": 300}


def test_ids_the_code_does_not_give_are_drawn_below_the_row_count() -> None:
    loaded = TEXT_CLASSIFIER.replace(
        "np.random.randint(0, VOCAB, (6000, LEN))", 'np.load("ids.npy")'
    ).replace("tf.keras.layers.Embedding(VOCAB, 32),", "tf.keras.Input((LEN,)),\n        "
              "tf.keras.layers.Embedding(VOCAB, 32),")  # fmt: skip
    results = on_line(verified(loaded), LOG_LINE, loaded)
    details = " ".join(str(v.get("detail")) for _, v in results)
    assert "`tokens` = whole numbers drawn uniformly in [0, 300)" in details, details
    assert "ids of an Embedding of 300 rows" in details


def test_a_masked_embedding_leaves_the_stack_unread() -> None:
    masked = TEXT_CLASSIFIER.replace("Embedding(VOCAB, 32)", "Embedding(VOCAB, 32, mask_zero=True)")
    results = on_line(verified(masked), LOG_LINE, masked)
    assert results and not any(f.probe and f.probe.get("program") for f, _ in results)


# An Embedding layer object called on its own in a GradientTape step (no Sequential stack):
# scores over a padded id sequence, masked with -inf where the id is padding.  The data code
# pads each row after its length with an item assignment, and some rows have length 0.
TAPE_ATTENTION = """\
    import numpy as np
    import tensorflow as tf

    r = np.random.default_rng(1)
    V, T, DIM = 60, 5, 8
    length = r.integers(0, T + 1, 800)
    ids = r.integers(1, V, (800, T))
    ids[np.arange(T)[None, :] >= length[:, None]] = 0
    label = r.integers(0, 2, 800)

    table = tf.keras.layers.Embedding(V, DIM)
    out = tf.keras.layers.Dense(2)
    opt = tf.keras.optimizers.SGD(0.1)


    def logits(seq):
        vecs = table(seq)
        score = tf.reduce_sum(vecs, axis=-1)
        score = tf.where(seq > 0, score, float("-inf"))
        share = tf.nn.softmax(score, axis=-1)
        return out(tf.einsum("bt,btd->bd", share, vecs))


    logits(ids[:2])
    params = table.trainable_variables + out.trainable_variables
    for step in range(100):
        pick = r.integers(0, 800, 16)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                label[pick], logits(ids[pick]), from_logits=True))
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
"""
SOFTMAX_LINE = "tf.nn.softmax(score, axis=-1)"


def test_an_embedding_called_directly_is_a_table_weight_of_the_tape_step() -> None:
    results = on_line(verified(TAPE_ATTENTION), SOFTMAX_LINE, TAPE_ATTENTION)
    spec = program_of(results)
    assert [w["shape"] for k, w in spec["weights"].items() if k.endswith(".embeddings")] == [
        [60, 8]
    ]
    assert kinds.looked_up(spec["loss"]) == {"ids[pick]"}
    assert any(by_training(v) and v["status"] == "confirmed" for _, v in results), [
        v.get("detail") for _, v in results
    ]
