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
