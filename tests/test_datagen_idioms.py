"""Data recipes of common training-script idioms (``analysis/datagen.py`` and its modules):
shapes read from the code, in-place changes, the size guard, functions called once,
scikit-learn splits and scalers, Keras one-hot labels, ``np.c_``/``np.r_`` and Python lists.

Each test asserts what the evaluated arrays are, against NumPy itself where the shape or the
values can be stated independently of the recipe.
"""

from __future__ import annotations

import numpy as np
from test_datagen import fed, recipe_of, values

from tfnumlint.analysis.datagen import recipe_shape
from tfnumlint.analysis.recipe_tables import ARRAY_METHODS, DRAW_PARAMS, NUMPY_FUNCTIONS
from tfnumlint.verify.datagen_eval import evaluate

# -- shapes, in-place changes and the size guard --------------------------------------------
SHAPED = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 4))
n = len(X)
noise = rng.normal(0.0, 1.0, size=X.shape)
half = X[: X.shape[0] // 2]
cols = rng.random((n, X.shape[1] + 1))
flat = np.zeros(X.size)
both = np.concatenate([X, cols[:, :4]], axis=0)
st = np.stack([X[:, 0], X[:, 1]], axis=1)
ex = np.expand_dims(X.mean(axis=0), 0)
hs = np.hstack([X, X])
cs = np.column_stack([X[:, 0], X[:, 1]])
vs = np.vstack([X, X[:1]])
rp = np.repeat(X, 2, axis=0)
tl = np.tile(X[:, :1], (1, 3))
ot = np.outer(X[:, 0], X[:, 1])
sel = X[rng.integers(0, n, 7)]
red = X.sum(axis=1, keepdims=True)
lin = np.linspace(0.0, 1.0, 11)
ar = np.arange(2, 20, 3)
rs = X.reshape(-1, 2)
mm = X @ rng.random((4, 2))
e1 = X[..., 0]
e2 = X[None]
e3 = X[2]
e4 = X[:, [0, 2]]
e5 = X[-5:]
e6 = X[::2]
e7 = X.T
e8 = np.squeeze(X[:, :1])
e9 = np.cumsum(X)
e10 = np.cumsum(X, axis=0)
e11 = X.max()
e12 = np.arange(10).reshape(2, 5)
e13 = np.full((3, 2), 7.0)
e14 = np.eye(3, 4)
e15 = np.dot(X, X.T)
e16 = np.stack([X, X], axis=-1)
e17 = np.concatenate([X, X], axis=1)
e18 = np.ones_like(X)
e19 = np.transpose(X[None], (1, 0, 2))
e20 = np.clip(X, 0.0, X[:1])
e21 = np.squeeze(X[:1, :1], axis=1)
"""
SHAPED_NAMES = ["X", "noise", "half", "cols", "flat", "both", "st", "ex", "hs", "cs", "vs", "rp",
                "tl", "ot", "sel", "red", "lin", "ar", "rs", "mm",
                *[f"e{i}" for i in range(1, 22)]]  # fmt: skip


def test_shapes_read_from_the_code_match_the_evaluated_arrays() -> None:
    recipes = {name: recipe_of(SHAPED, name) for name in SHAPED_NAMES}
    assert all(r is not None for r in recipes.values()), recipes
    got = evaluate(recipes, seed=0)  # type: ignore[arg-type]
    assert got["noise"].shape == (300, 4) and got["half"].shape == (150, 4)
    assert got["cols"].shape == (300, 5) and got["flat"].shape == (1200,)
    for name, recipe in recipes.items():
        assert recipe_shape(recipe) == got[name].shape, name  # type: ignore[arg-type]


def test_a_mask_index_has_no_static_shape_but_evaluates() -> None:
    text = SHAPED + "pos = X[X[:, 0] > 0]\n"
    recipe = recipe_of(text, "pos")
    assert recipe is not None and recipe_shape(recipe) is None
    out = evaluate({"p": recipe}, 0)["p"]
    assert out.shape[1] == 4 and np.all(out[:, 0] > 0)


def test_arrays_changed_in_place_have_no_recipe() -> None:
    text = """
import numpy as np
rng = np.random.RandomState(0)
a = rng.randn(100, 3)
for i in range(3):
    a[:, i] = 0.0
b = rng.randn(100)
rng.shuffle(b)
c = []
for i in range(10):
    c.append(rng.randn(3))
d = rng.randn(100, 3)
d = d * 2.0
e = rng.randn(50)
e.sort()
"""
    assert [recipe_of(text, v) is None for v in "abcde"] == [True, True, True, False, True]


def test_item_assignments_of_the_data_code_are_replayed() -> None:
    text = """
import numpy as np
rng = np.random.default_rng(3)
n, k = 400, 7
count = rng.integers(0, k + 1, n)
seq = rng.integers(1, 90, (n, k))
early = seq + 0
seq[np.arange(k)[None, :] >= count[:, None]] = 0
z = rng.normal(size=(n, 3))
z[z < 0] = 0.0
z[:, 2] += 5.0
z[1] = -1.0
"""
    names = ["count", "seq", "early", "z"]
    recipes = {v: recipe_of(text, v) for v in names}
    assert all(r is not None for r in recipes.values()), recipes
    got = evaluate(recipes, seed=0)  # type: ignore[arg-type]
    count, seq, early, z = (got[v] for v in names)
    assert seq.shape == (400, 7) and np.all(early > 0)  # the copy before the change keeps it
    assert np.array_equal((seq > 0).sum(axis=1), count)  # right-padded: count entries, then 0
    assert np.array_equal(seq[seq > 0], early[seq > 0])  # the drawn entries are the same
    assert np.any(count == 0) and np.all(seq[count == 0] == 0)  # all-padding rows
    assert np.all(z[1] == -1.0)
    rest = np.delete(z, 1, axis=0)
    assert np.all(rest[:, :2] >= 0) and np.all(rest[:, 2] >= 5.0)


def test_in_place_changes_not_replayed_leave_no_recipe() -> None:
    text = """
import numpy as np
rng = np.random.default_rng(3)
a = rng.normal(size=(50, 4))
col = a[:, 0]
col[col < 0] = 0.0
b = rng.normal(size=(50, 4))
view = b.reshape(200)
b[0] = 1.0
c = rng.normal(size=(50, 4))
c[0], c[1] = 1.0, 2.0
d = rng.integers(0, 5, 50)
np.add.at(d, [0, 1], 1)
e = rng.normal(size=(50, 4))
np.exp(e, out=e)
f = rng.normal(size=(50, 4))
if f[0, 0] > 0:
    f[0] = 0.0
g = rng.normal(size=(50, 4))
def shift():
    g[0] = 1.0
"""
    assert [v for v in "abcdefg" if recipe_of(text, v) is not None] == []
    assert recipe_of(text, "view") is None  # its base changes after it is taken


def test_the_size_guard_reads_broadcasts_and_constructors() -> None:
    text = """
import numpy as np
rng = np.random.default_rng(0)
a = rng.random(30000)
big = a[:, None] * a[None, :]
table = np.outer(a, a)
eye = np.eye(5000)
ok = a[:, None] * a[None, :100]
"""
    assert [recipe_of(text, v) is None for v in ["big", "table", "eye", "ok"]] == [
        True,
        True,
        True,
        False,
    ]


def test_a_function_called_once_reads_its_arguments_from_that_call() -> None:
    text = """
import numpy as np
import tensorflow as tf
rng = np.random.RandomState(0)
X = rng.rand(200, 3)
Y = X.sum(axis=1, keepdims=True)
x_ph = tf.compat.v1.placeholder(tf.float32, (None, 3))
y_ph = tf.compat.v1.placeholder(tf.float32, (None, 1))


def train(inputs, labels, batch=16):
    with tf.compat.v1.Session() as sess:
        for step in range(10):
            pick = rng.choice(len(inputs), batch)
            sess.run(out, feed_dict={x_ph: inputs[pick], y_ph: labels[pick]})


def other(data):
    with tf.compat.v1.Session() as sess:
        sess.run(out, feed_dict={x_ph: data})


train(X, Y)
other(X)
other(X * 2)
"""
    feeds = fed(text)
    assert (feeds["inputs[pick]"]["rows"], feeds["inputs[pick]"]["batch"]) == ("batch", 16)
    got = evaluate({"x": feeds["inputs[pick]"]["data"], "y": feeds["labels[pick]"]["data"]}, 0)
    assert got["x"].shape == (200, 3) and np.allclose(got["y"][:, 0], got["x"].sum(axis=1))
    assert feeds["data"] is None  # called twice with different data: no single recipe


def test_a_def_read_only_for_its_shape_is_not_in_the_recipe() -> None:
    text = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(64, 5))
noise = rng.normal(0.0, 0.1, size=X.shape)
"""
    recipe = recipe_of(text, "noise")
    assert recipe is not None and len(recipe["defs"]) == 1
    assert recipe_shape(recipe) == (64, 5)


LIBRARIES = """
import numpy as np
import tensorflow as tf
from sklearn.model_selection import train_test_split

rng = np.random.default_rng(0)
labels = rng.integers(0, 4, 1000)
X = np.eye(4)[labels] * 3.0 + rng.normal(0.0, 0.1, (1000, 4))
Y = tf.keras.utils.to_categorical(labels, num_classes=4)
X_train, X_test, y_train, y_test = train_test_split(X, Y, test_size=0.2, random_state=0)
Z = tf.keras.utils.to_categorical(labels[:, None])
a_tr, a_te = train_test_split(X, train_size=100, shuffle=False)
"""


def test_a_split_keeps_rows_paired_and_to_categorical_is_one_hot() -> None:
    names = ["X_train", "X_test", "y_train", "y_test", "Z", "a_tr", "a_te", "X"]
    recipes = {name: recipe_of(LIBRARIES, name) for name in names}
    assert all(r is not None for r in recipes.values()), recipes
    got = evaluate(recipes, seed=4)  # type: ignore[arg-type]
    assert got["X_train"].shape == (800, 4) and got["X_test"].shape == (200, 4)
    assert got["y_train"].shape == (800, 4) and got["y_test"].shape == (200, 4)
    for part in ("train", "test"):  # the same rows of X and Y: the one-hot class is X's peak
        assert np.array_equal(got[f"X_{part}"].argmax(1), got[f"y_{part}"].argmax(1))
    both = np.concatenate([got["X_train"], got["X_test"]])
    assert np.allclose(np.sort(both, axis=0), np.sort(got["X"], axis=0))  # a permutation
    assert got["Z"].shape == (1000, 4) and np.all(got["Z"].sum(1) == 1.0)
    assert np.array_equal(got["a_tr"], got["X"][:100])  # shuffle=False keeps the order
    assert np.array_equal(got["a_te"], got["X"][100:])
    for name in ("X_train", "y_test", "a_te"):
        assert recipe_shape(recipes[name]) == got[name].shape  # type: ignore[arg-type]


def test_batches_by_a_loop_slice_and_arrays_joined_by_c_and_r() -> None:
    text = """
import numpy as np
import tensorflow as tf
n_samples, n_features = 1000, 20
batch_size = 50
X = np.random.randn(n_samples, n_features).astype('float32')
y = X @ np.random.randn(n_features, 1) + 0.1 * np.random.randn(n_samples, 1)
idx = np.random.permutation(len(X))
X, y = X[idx], y[idx]
x_ph = tf.compat.v1.placeholder(tf.float32, (None, n_features))
y_ph = tf.compat.v1.placeholder(tf.float32, (None, 1))
with tf.compat.v1.Session() as sess:
    for i in range(0, len(X), batch_size):
        xb = X[i:i + batch_size]
        yb = y[i:i + batch_size]
        sess.run(train, feed_dict={x_ph: xb, y_ph: yb})
    sess.run(train, feed_dict={x_ph: np.c_[X[:, :2], y], y_ph: np.r_[y, y]})
"""
    feeds = fed(text)
    assert {k: (f["rows"], f["batch"]) for k, f in feeds.items()} == {
        "xb": ("batch", 50),
        "yb": ("batch", 50),
        "np.c_[X[:, :2], y]": ("all", None),
        "np.r_[y, y]": ("all", None),
    }
    got = values(feeds)
    xb, yb = got["xb"], got["yb"]
    w, *_ = np.linalg.lstsq(xb, yb, rcond=None)  # shuffled together: y is still linear in X
    assert (yb - xb @ w).std() < 0.15
    assert got["np.c_[X[:, :2], y]"].shape == (1000, 3) and got["np.r_[y, y]"].shape == (2000, 1)


def test_a_mask_or_a_literal_row_list_is_the_data_not_a_batch_of_it() -> None:
    text = """
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 2))
keep = X[:, 1] > 0.0
x_ph = tf.compat.v1.placeholder(tf.float32, (None, 2))
with tf.compat.v1.Session() as sess:
    for step in range(5):
        rows = rng.integers(0, 400, 32)
        sess.run(out, feed_dict={x_ph: X[keep]})
        sess.run(out, feed_dict={x_ph: X[rows]})
        sess.run(out, feed_dict={x_ph: X[[0, 5, 9]]})
"""
    feeds = fed(text)
    assert (feeds["X[keep]"]["rows"], feeds["X[rows]"]["rows"]) == ("all", "batch")
    assert feeds["X[[0, 5, 9]]"]["rows"] == "all"
    assert evaluate({"r": feeds["X[[0, 5, 9]]"]["data"]}, 0)["r"].shape == (3, 2)
    kept = evaluate({"k": feeds["X[keep]"]["data"]}, 0)["k"]
    assert 150 < len(kept) < 250 and np.all(kept[:, 1] > 0.0)


def test_the_allow_list_is_numpy_s_own_and_every_method_is_in_it() -> None:
    assert all(callable(getattr(np, fn, None)) for fn in NUMPY_FUNCTIONS)
    assert set(NUMPY_FUNCTIONS) >= ARRAY_METHODS
    generator = np.random.default_rng(0)
    assert all(callable(getattr(generator, dist, None)) for dist in DRAW_PARAMS)


SCALED = """
import numpy as np
from sklearn.preprocessing import MinMaxScaler, StandardScaler

rng = np.random.RandomState(0)
X_train = rng.normal(50.0, 10.0, (800, 3))
X_test = rng.normal(50.0, 10.0, (200, 3))
scaler = StandardScaler()
Z_train = scaler.fit_transform(X_train)
Z_test = scaler.transform(X_test)
U = MinMaxScaler(feature_range=(-1, 1)).fit_transform(rng.uniform(3.0, 9.0, (500, 2)))
mm = MinMaxScaler().fit(X_train)
M_test = mm.transform(X_test)
twice = StandardScaler()
T1 = twice.fit_transform(X_train)
T2 = twice.fit_transform(X_test)
T3 = twice.transform(X_test)
"""


def test_scalers_use_the_statistics_of_the_data_they_were_fitted_on() -> None:
    names = ["X_train", "X_test", "Z_train", "Z_test", "U", "M_test"]
    recipes = {name: recipe_of(SCALED, name) for name in names}
    assert all(r is not None for r in recipes.values()), recipes
    got = evaluate(recipes, seed=2)  # type: ignore[arg-type]
    assert np.allclose(got["Z_train"].mean(0), 0.0, atol=1e-4)
    assert np.allclose(got["Z_train"].std(0), 1.0, atol=1e-4)
    train, test = got["X_train"], got["X_test"]
    assert np.allclose(got["Z_test"], (test - train.mean(0)) / train.std(0), atol=1e-4)
    assert np.allclose(got["U"].min(0), -1.0) and np.allclose(got["U"].max(0), 1.0)
    low, span = train.min(0), train.max(0) - train.min(0)
    assert np.allclose(got["M_test"], (test - low) / span, atol=1e-4)
    assert recipe_of(SCALED, "T3") is None  # fitted twice: which fit applies is the order's
    assert recipe_of(SCALED, "T2") is not None  # its own fit


def test_python_lists_concatenate_and_repeat_as_python_does() -> None:
    text = """
import numpy as np
rng = np.random.default_rng(0)
n = 3
labels = np.array([0] * n + [1] * 2)
rows = [1.0, 2.0] + [3.0]
scaled = np.array([1.0, 2.0]) * 3
shifted = [1.0, 2.0] + rng.normal(size=2) * 0.0
bad = [1.0, 2.0] - 1.0
"""
    names = ["labels", "rows", "scaled", "shifted"]
    got = evaluate({v: recipe_of(text, v) for v in names}, 0)  # type: ignore[misc]
    assert got["labels"].tolist() == [0, 0, 0, 1, 1]
    assert got["rows"].tolist() == [1.0, 2.0, 3.0]
    assert got["scaled"].tolist() == [3.0, 6.0]  # an array: NumPy's product
    assert got["shifted"].tolist() == [1.0, 2.0]  # a list and an array: NumPy's sum
    assert recipe_of(text, "bad") is None  # a TypeError in Python
