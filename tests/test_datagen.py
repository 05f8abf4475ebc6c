"""The program's own NumPy data generation, replayed from a recipe (``analysis/datagen.py``,
``verify/datagen_eval.py``).

The nanruns cases are copied from ``shared/nanruns/buggy`` (their data code and feed loops
verbatim; the model code is left out where the feed does not need it).  Each test asserts what
the evaluated arrays are: shapes, ranges, and which values are shared between the arrays.
"""

from __future__ import annotations

import json
import re
import textwrap

import libcst as cst
import numpy as np
import pytest

from tfnumlint.analysis.datagen import data_recipe, fed_data
from tfnumlint.analysis.feeds import _feed_dicts
from tfnumlint.analysis.module import build
from tfnumlint.analysis.provenance import Evaluator
from tfnumlint.verify.datagen_eval import evaluate

P01 = """
import numpy as np
import tensorflow as tf

N_TRAIN = 6000
BATCH = 100
STEPS = 400


def fake_mnist(n, seed=1234):
    rng = np.random.RandomState(seed)
    templates = (rng.rand(10, 784) < 0.18).astype(np.float32)
    labels = rng.randint(0, 10, size=n)
    gain = rng.uniform(0.5, 1.0, size=(n, 1)).astype(np.float32)
    imgs = templates[labels] * gain + 0.15 * rng.rand(n, 784).astype(np.float32)
    imgs = np.clip(imgs, 0.0, 1.0).astype(np.float32)
    return imgs, np.eye(10, dtype=np.float32)[labels]


train_x, train_y = fake_mnist(N_TRAIN)

x = tf.compat.v1.placeholder(tf.float32, [None, 784], name="x")
y_ = tf.compat.v1.placeholder(tf.float32, [None, 10], name="y_")

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    order = np.random.RandomState(0).permutation(N_TRAIN)
    for i in range(STEPS):
        start = (i * BATCH) % N_TRAIN
        idx = order[start:start + BATCH]
        feed = {x: train_x[idx], y_: train_y[idx]}
        _, ce, acc = sess.run([train_step, cross_entropy, accuracy], feed_dict=feed)
"""

P06 = """
import numpy as np
import tensorflow as tf

rs = np.random.RandomState(2024)
n = 1000
area = rs.uniform(3.0, 25.0, n)         # x10 m^2
rooms = rs.randint(1, 8, n).astype(float)
age = rs.uniform(0.0, 120.0, n)         # years
dist = rs.uniform(1.0, 300.0, n)        # x100 m
X_train = np.stack([area, rooms, age, dist], axis=1).astype(np.float32)
y_train = (40 + 30 * area + 8 * rooms - 0.5 * age - 0.3 * dist + rs.randn(n) * 10).astype(np.float32)
y_train = y_train.reshape(-1, 1)

X = tf.compat.v1.placeholder(tf.float32, shape=(None, 4))
Y = tf.compat.v1.placeholder(tf.float32, shape=(None, 1))

training_epochs = 200
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(training_epochs):
        _, c = sess.run([optimizer, cost], feed_dict={X: X_train, Y: y_train})
"""

P12 = """
import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

rand = np.random.RandomState(3)
n_days = 3000
temperature = rand.normal(15, 8, n_days)
price = rand.uniform(2.0, 6.0, n_days)
promo = rand.choice([0.0, 0.1, 0.2, 0.3], n_days)
holiday = (rand.rand(n_days) < 0.08).astype(float)
sales = 200 + 3 * temperature - 25 * price + 300 * promo + 80 * holiday + rand.normal(0, 10, n_days)
features = np.stack([temperature, price, promo, holiday], 1).astype(np.float32)
targets = ((sales - sales.mean()) / sales.std()).astype(np.float32)[:, None]

inputs = tf1.placeholder(tf.float32, [None, 4])
target = tf1.placeholder(tf.float32, [None, 1])

BATCH = 32
sess = tf1.Session()
sess.run(tf1.global_variables_initializer())
for step in range(300):
    rows = rand.randint(0, n_days, BATCH)
    _, loss_value, grads_ok = sess.run(
        [train, mse, gradients_finite], feed_dict={inputs: features[rows], target: targets[rows]}
    )
"""

P15 = """
import numpy as np
import tensorflow as tf

prng = np.random.RandomState(9)
N, D = 4000, 10
X_data = prng.randn(N, D).astype(np.float32)
severity = np.exp(1.5 + 0.9 * X_data[:, 0] - 0.6 * X_data[:, 1] + 0.4 * prng.randn(N))
y_data = severity.astype(np.float32).reshape(-1, 1)

X_ph = tf.compat.v1.placeholder(tf.float32, (None, D), name="features")
y_ph = tf.compat.v1.placeholder(tf.float32, (None, 1), name="claim")

with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for t in range(300):
        pick = prng.choice(N, 64, replace=False)
        _, value, gfinite = session.run([step_op, rmsle, grad_check], {X_ph: X_data[pick], y_ph: y_data[pick]})
"""

P17 = """
import numpy as np
import tensorflow as tf

gen = np.random.default_rng(2)

AXES = np.array([[0, 0, 1], [0, 0, -1], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]], np.float32)
N, D = 6000, 24
which = gen.integers(0, 6, N)
normals = AXES[which]
mixing = gen.standard_normal((3, D)).astype(np.float32)
descriptors = normals @ mixing + 0.05 * gen.standard_normal((N, D)).astype(np.float32)


@tf.function
def train_step(xb, nb):
    with tf.GradientTape() as tape:
        loss = angular_error(nb, net(xb, training=True))
    return loss


for step in range(400):
    rows = gen.integers(0, N, 128)
    loss, ok = train_step(descriptors[rows], normals[rows])
"""


def _evaluator(text: str) -> Evaluator:
    return Evaluator(build(cst.parse_module(textwrap.dedent(text))))


def fed(text: str) -> dict[str, dict | None]:
    """fed_data of every value of every feed_dict, by its code."""
    ev = _evaluator(text)
    out: dict[str, dict | None] = {}
    for feed, scope, order in _feed_dicts(ev):
        for element in feed.elements:
            code = ev.info.module.code_for_node(element.value)
            out[code] = fed_data(ev, element.value, scope, order)
    return out


def call_args(text: str, callee: str) -> list[dict | None]:
    """fed_data of the arguments of the (first) call whose callee's code is ``callee``."""
    ev = _evaluator(text)
    site = next(s for s in ev.info.calls if ev.info.module.code_for_node(s.node.func) == callee)
    return [fed_data(ev, a.value, site.scope, site.order) for a in site.node.args]


def recipe_of(text: str, name: str) -> dict | None:
    """data_recipe of the last module binding of ``name`` (read after the whole module)."""
    ev = _evaluator(text)
    node = cst.Name(name)
    return data_recipe(ev, node, ev.info.root, 10**9)


def values(feeds: dict[str, dict | None], seed: int = 0) -> dict[str, np.ndarray]:
    """The fed arrays, evaluated together from their JSON form (what a worker receives)."""
    assert all(f is not None for f in feeds.values()), feeds
    sent = json.loads(json.dumps({k: f["data"] for k, f in feeds.items()}))  # type: ignore[index]
    return evaluate(sent, seed)


# -- the nanruns programs -------------------------------------------------------------------
def test_p01_mnist_labels_are_shared_by_images_and_one_hot_targets() -> None:
    feeds = fed(P01)
    assert set(feeds) == {"train_x[idx]", "train_y[idx]"}
    for f in feeds.values():
        assert f is not None and f["rows"] == "batch" and f["batch"] == 100
    got = values(feeds)
    x, y = got["train_x[idx]"], got["train_y[idx]"]
    assert x.shape == (6000, 784) and y.shape == (6000, 10)
    assert x.dtype == np.float32 and y.dtype == np.float32
    assert x.min() >= 0.0 and x.max() <= 1.0
    assert set(np.unique(y)) == {0.0, 1.0} and np.all(y.sum(axis=1) == 1.0)
    classes = y.argmax(axis=1)
    assert set(classes) == set(range(10))
    # a template pixel is >= 0.5 (gain), any other <= 0.15 (noise): the pattern is the template
    patterns = x > 0.3
    per_class = {c: np.unique(patterns[classes == c], axis=0) for c in range(10)}
    assert all(len(p) == 1 for p in per_class.values())  # one template per class
    assert len(np.unique(np.concatenate(list(per_class.values())), axis=0)) == 10


def test_p06_house_prices_columns_follow_the_code_and_y_is_built_from_x() -> None:
    feeds = fed(P06)
    assert {k: (f["rows"], f["batch"]) for k, f in feeds.items()} == {
        "X_train": ("all", None),
        "y_train": ("all", None),
    }
    got = values(feeds)
    x, y = got["X_train"], got["y_train"]
    assert x.shape == (1000, 4) and y.shape == (1000, 1)
    area, rooms, age, dist = x.T
    assert area.min() >= 3.0 and area.max() <= 25.0
    assert set(np.unique(rooms)) == set(range(1, 8))
    assert age.min() >= 0.0 and age.max() <= 120.0 and age.max() > 100.0
    assert dist.min() >= 1.0 and dist.max() <= 300.0 and dist.max() > 250.0
    noise = y[:, 0] - (40 + 30 * area + 8 * rooms - 0.5 * age - 0.3 * dist)
    assert 8.0 < noise.std() < 12.0 and abs(noise.mean()) < 2.0  # the same draws as X


def test_p12_sales_holiday_flag_is_rare_and_targets_are_standardised() -> None:
    feeds = fed(P12)
    assert {k: (f["rows"], f["batch"]) for k, f in feeds.items()} == {
        "features[rows]": ("batch", 32),
        "targets[rows]": ("batch", 32),
    }
    got = values(feeds)
    features, targets = got["features[rows]"], got["targets[rows]"]
    assert features.shape == (3000, 4) and targets.shape == (3000, 1)
    holiday = features[:, 3]
    assert set(np.unique(holiday)) == {0.0, 1.0}
    assert abs(holiday.mean() - 0.08) < 0.02
    assert np.allclose(np.unique(features[:, 2]), [0.0, 0.1, 0.2, 0.3])
    assert abs(features[:, 0].mean() - 15) < 1.0 and abs(features[:, 0].std() - 8) < 1.0
    assert abs(targets.mean()) < 1e-3 and abs(targets.std() - 1.0) < 1e-3
    # the targets are made from the features' own draws: holidays sell more
    assert targets[holiday == 1].mean() > targets[holiday == 0].mean() + 0.5


def test_p15_claims_are_positive_log_normal_with_a_plausible_median() -> None:
    feeds = fed(P15)
    assert {k: (f["rows"], f["batch"]) for k, f in feeds.items()} == {
        "X_data[pick]": ("batch", 64),
        "y_data[pick]": ("batch", 64),
    }
    got = values(feeds)
    x, y = got["X_data[pick]"], got["y_data[pick]"]
    assert x.shape == (4000, 10) and y.shape == (4000, 1)
    assert y.min() > 0.0
    assert 2.0 < np.median(y) < 8.0  # exp(1.5) ~ 4.5, not the 6-sigma range's 4e5
    assert np.corrcoef(np.log(y[:, 0]), x[:, 0])[0, 1] > 0.6  # y is made from X_data


def test_p17_call_site_arguments_pick_rows_of_shared_normals() -> None:
    inside = call_args(P17, "angular_error")[0]  # `nb` of train_step, called once
    assert inside is not None and (inside["rows"], inside["batch"]) == ("batch", 128)
    args = call_args(P17, "train_step")
    assert [(a["rows"], a["batch"]) for a in args] == [("batch", 128), ("batch", 128)]
    got = evaluate({"x": args[0]["data"], "n": args[1]["data"]}, seed=5)
    x, n = got["x"], got["n"]
    assert x.shape == (6000, 24) and n.shape == (6000, 3)
    assert np.all(np.abs(n).sum(axis=1) == 1.0) and np.all(np.abs(n).max(axis=1) == 1.0)
    assert len(np.unique(n, axis=0)) == 6  # every axis of AXES is drawn
    mixing, *_ = np.linalg.lstsq(n, x, rcond=None)  # descriptors = normals @ mixing + noise
    assert 0.04 < (x - n @ mixing).std() < 0.06


# -- unknown data and names ----------------------------------------------------------------
def test_data_from_a_file_or_an_unknown_call_has_no_recipe() -> None:
    text = """
import numpy as np
import pandas as pd
a = np.load("x.npy")
b = pd.read_csv("t.csv").values
c = np.exp(np.random.randn(10, 1)) + a
d = helper_from_elsewhere(10)
e = np.random.rand(100000, 1000)
f = np.exp(np.random.randn(10, 1))
"""
    assert [recipe_of(text, v) for v in "abcde"] == [None] * 5
    assert recipe_of(text + "g = f.reshape(-1, order='F')\n", "g") is None
    assert recipe_of(text, "f") is not None


def _rename(text: str, names: list[str]) -> str:
    """Every user identifier renamed (attributes such as ``rng.rand`` are NumPy's: kept)."""
    for i, name in enumerate(names):
        text = re.sub(rf"(?<![.\w]){name}\b", f"v{i}q", text)
    return text


def _canonical(recipe: dict) -> object:
    """The recipe with each def inlined under a number given in order of first use, so two
    recipes compare equal when only the ids' names differ."""
    numbers: dict[str, int] = {}

    def walk(tree: object) -> object:
        if isinstance(tree, list):
            return [walk(t) for t in tree]
        if not isinstance(tree, dict):
            return tree
        if tree.get("k") == "ref":
            key = tree["id"]
            if key not in numbers:
                numbers[key] = len(numbers)
                return {"def": numbers[key], "tree": walk(recipe["defs"][key])}
            return {"ref": numbers[key]}
        return {k: walk(v) for k, v in tree.items()}

    return walk(recipe["root"])


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (P01, ["fake_mnist", "n", "seed", "rng", "templates", "labels", "gain", "imgs",
               "train_x", "train_y", "N_TRAIN", "BATCH", "order", "start", "idx", "feed",
               "x", "y_", "sess", "i"]),
        (P12, ["rand", "n_days", "temperature", "price", "promo", "holiday", "sales",
               "features", "targets", "inputs", "target", "BATCH", "rows", "sess", "step"]),
    ],
)  # fmt: skip
def test_renaming_every_user_identifier_gives_the_same_recipes(text: str, names: list) -> None:
    before = fed(text)
    after = fed(_rename(text, names))
    assert len(before) == len(after) == 2
    for (_, a), (_, b) in zip(before.items(), after.items(), strict=True):
        assert a is not None and b is not None
        assert (a["rows"], a["batch"]) == (b["rows"], b["batch"])
        assert _canonical(a["data"]) == _canonical(b["data"])
        assert np.array_equal(
            evaluate({"v": a["data"]}, 3)["v"], evaluate({"v": b["data"]}, 3)["v"]
        )


# -- more spellings -------------------------------------------------------------------------
SPELLINGS = """
import numpy as np
from numpy.random import default_rng

g = default_rng(0)
rs = np.random.RandomState(1)
K = 5000


def make(gen, n, scale=2.0, *, shift=1.0):
    base = gen.normal(0.0, scale, size=(n, 3))
    return base + shift


m = make(g, K, shift=10.0)
m0 = m[:, 0]
col = m[:, :1]
wide = m[:, None]
gam = g.gamma(2.0, 3.0, K)
poi = rs.poisson(4.0, K)
bino = np.random.binomial(10, 0.3, size=K)
bet = g.beta(2.0, 5.0, K)
logn = g.lognormal(0.0, 0.5, K)
lap = rs.laplace(1.0, 2.0, K)
expo = g.exponential(3.0, K)
ch = rs.choice(3, K, p=[0.7, 0.2, 0.1])
perm = g.permutation(K)
ends = g.integers(1, 3, K, endpoint=True)
mt = m.T
tiled = np.tile(np.arange(4), 3).reshape(3, 4)
hot = np.where(m0 > 10.0, 1.0, 0.0)
"""


def test_draws_methods_and_helpers_in_many_spellings() -> None:
    names = ["m", "m0", "col", "wide", "gam", "poi", "bino", "bet", "logn", "lap", "expo", "ch",
             "perm", "ends", "mt", "tiled", "hot"]  # fmt: skip
    recipes = {name: recipe_of(SPELLINGS, name) for name in names}
    assert all(r is not None for r in recipes.values()), recipes
    got = evaluate(recipes, seed=1)  # type: ignore[arg-type]
    assert got["m"].shape == (5000, 3) and abs(got["m"].mean() - 10.0) < 0.2
    assert abs(got["m"].std() - 2.0) < 0.1  # the default scale=2.0, the keyword shift=10.0
    assert np.array_equal(got["m0"], got["m"][:, 0])  # one def, drawn once
    assert got["col"].shape == (5000, 1) and got["wide"].shape == (5000, 1, 3)
    assert abs(got["gam"].mean() - 6.0) < 0.3
    assert abs(got["poi"].mean() - 4.0) < 0.2 and got["poi"].dtype.kind == "i"
    assert abs(got["bino"].mean() - 3.0) < 0.2 and got["bino"].max() <= 10
    assert abs(got["bet"].mean() - 2 / 7) < 0.02
    assert abs(np.median(got["logn"]) - 1.0) < 0.05
    assert abs(np.median(got["lap"]) - 1.0) < 0.2
    assert abs(got["expo"].mean() - 3.0) < 0.2
    assert abs((got["ch"] == 0).mean() - 0.7) < 0.03
    assert sorted(got["perm"]) == list(range(5000))
    assert set(np.unique(got["ends"])) == {1, 2, 3}
    assert got["mt"].shape == (3, 5000)
    assert got["tiled"].tolist() == [[0, 1, 2, 3]] * 3
    assert np.array_equal(got["hot"], (got["m0"] > 10.0).astype(np.float32))


def test_a_batch_pick_by_a_permutation_slice_and_a_literal_slice() -> None:
    text = """
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
data = rng.random((500, 2))
x_ph = tf.compat.v1.placeholder(tf.float32, (None, 2))
with tf.compat.v1.Session() as sess:
    perm = rng.permutation(500)[:50]
    sess.run(out, feed_dict={x_ph: data[perm]})
    sess.run(out, feed_dict={x_ph: data[:10]})
    for i in range(9):
        sess.run(out, feed_dict={x_ph: data[i * 20:(i + 1) * 20, :1]})
        sess.run(out, feed_dict={x_ph: data[i * i:(i + 1) * (i + 1)]})
"""
    feeds = fed(text)
    assert (feeds["data[perm]"]["rows"], feeds["data[perm]"]["batch"]) == ("batch", 50)
    assert (feeds["data[:10]"]["rows"], feeds["data[:10]"]["batch"]) == ("all", None)
    assert evaluate({"a": feeds["data[:10]"]["data"]}, 0)["a"].shape == (10, 2)
    pick = feeds["data[i * 20:(i + 1) * 20, :1]"]
    assert pick["rows"] == "batch" and pick["batch"] == 20  # whatever i is
    assert evaluate({"a": pick["data"]}, 0)["a"].shape == (500, 1)
    squares = feeds["data[i * i:(i + 1) * (i + 1)]"]
    assert squares["rows"] == "batch" and squares["batch"] is None  # 2i + 1 rows: not fixed


def test_a_table_lookup_is_the_data_and_a_row_pick_stays_a_batch() -> None:
    """``np.eye(10)[labels]`` with 512 labels is a one-hot encoding of every row, and
    ``table[tokens]`` with a 2-D index an embedding: both are the fed data, evaluated whole.
    Read as a batch pick, the one-hot table's 10 rows were sampled with the images' 512 row
    indices, and the training rung of the classic MNIST tutorial failed on an IndexError."""
    text = """
import numpy as np
import tensorflow as tf
rng = np.random.RandomState(0)
xs = rng.rand(512, 4).astype("float32")
labels = rng.randint(0, 10, 512)
ys = np.eye(10, dtype="float32")[labels]
table = rng.rand(10, 3)
tokens = rng.randint(0, 10, (512, 6))
x_ph = tf.compat.v1.placeholder(tf.float32, (None, 4))
with tf.compat.v1.Session() as sess:
    sess.run(out, feed_dict={x_ph: ys})
    sess.run(out, feed_dict={x_ph: table[tokens]})
    for i in range(9):
        idx = rng.randint(0, 512, 64)
        sess.run(out, feed_dict={x_ph: xs[idx]})
"""
    feeds = fed(text)
    hot = feeds["ys"]
    assert hot is not None and (hot["rows"], hot["batch"]) == ("all", None)
    got = values({"hot": hot})["hot"]
    assert got.shape == (512, 10) and np.array_equal(got.sum(axis=1), np.ones(512))
    embedded = feeds["table[tokens]"]
    assert embedded is not None and embedded["rows"] == "all"
    assert values({"e": embedded})["e"].shape == (512, 6, 3)
    pick = feeds["xs[idx]"]
    assert pick is not None and (pick["rows"], pick["batch"]) == ("batch", 64)


# -- the evaluator -----------------------------------------------------------------------------
def _draw(size: list[int]) -> dict:
    return {"k": "draw", "dist": "standard_normal", "p": {}, "size": size}


def test_shared_defs_are_drawn_once_and_seeds_repeat() -> None:
    defs = {"z@1": _draw([4, 2])}
    a = {"defs": defs, "root": {"k": "ref", "id": "z@1"}}
    b = {"defs": defs, "root": {"k": "neg", "x": {"k": "ref", "id": "z@1"}}}
    got = evaluate({"a": a, "b": b}, seed=7)
    assert np.array_equal(got["a"], -got["b"]) and got["a"].dtype == np.float32
    again = evaluate({"a": a, "b": b}, seed=7)
    assert np.array_equal(got["a"], again["a"])
    assert not np.array_equal(got["a"], evaluate({"a": a}, seed=8)["a"])


@pytest.mark.parametrize(
    "root",
    [
        {"k": "call", "fn": "load", "args": [], "kw": {}},  # not an allowed NumPy function
        {"k": "exec", "v": "print(1)"},
        {"k": "draw", "dist": "bytes", "p": {}, "size": [3]},
        {"k": "call", "fn": "mean", "args": [_draw([3])], "kw": {"out": {"k": "const", "v": 1}}},
        {"k": "ref", "id": "missing"},
        {"k": "call", "fn": "zeros", "args": [{"k": "tuple", "items": [
            {"k": "const", "v": 100000}, {"k": "const", "v": 100000}]}], "kw": {}},
        {"k": "bin", "op": "*", "a": _draw([20000, 1]), "b": _draw([1, 20000])},
        {"k": "index", "x": {"k": "array", "v": [1, 2]}, "idx": [{"k": "const", "v": 5}]},
        {"k": "call", "fn": "reshape", "args": [_draw([6]), {"k": "const", "v": 4}], "kw": {}},
        {"k": "tuple", "items": [{"k": "none"}, {"k": "const", "v": 3}]},  # a shape, not data
    ],
)  # fmt: skip
def test_unsupported_or_oversized_recipes_raise_value_error(root: dict) -> None:
    with pytest.raises(ValueError):
        evaluate({"r": {"defs": {}, "root": root}}, 0)


def test_feeds_picked_by_one_index_share_their_rows_and_another_index_picks_its_own() -> None:
    """``items[a]`` twice shares one draw of rows; ``items[n]`` of another ``randint`` is
    picked apart (a triplet's negatives are not its anchors), and so is a name rebound."""
    feeds = fed(
        """
        import numpy as np
        items = np.random.rand(500, 12)
        for i in range(200):
            a = np.random.randint(0, 500, 32)
            n = np.random.randint(0, 500, 32)
            sess.run(train, {anchor: items[a], positive: items[a], negative: items[n]})
        """
    )
    picks = {code: f["pick"] for code, f in feeds.items() if f is not None}
    assert set(picks) == {"items[a]", "items[n]"}
    assert picks["items[a]"] != picks["items[n]"]
    again = fed(
        """
        import numpy as np
        items = np.random.rand(500, 12)
        labels = np.random.rand(500, 1)
        for i in range(200):
            a = np.random.randint(0, 500, 32)
            sess.run(train, {x: items[a], y: labels[a]})
        """
    )
    assert again["items[a]"]["pick"] == again["labels[a]"]["pick"]  # type: ignore[index]


def test_a_one_hot_of_labels_reduced_over_several_axes_is_the_data_not_a_batch_pick() -> None:
    """``np.eye(2)[labels]`` with ``labels`` from a mean over ``axis=(1, 2)``: 2000 labels
    pick rows of a 2-row table, a one-hot encoding of every row (the reduction's shape was
    unknown, so the table's two rows were taken for the dataset)."""
    ev = _evaluator(
        """
        import numpy as np
        rng = np.random.default_rng(1)
        X = rng.normal(0.0, 1.0, size=(2000, 10, 1)).astype("float32")
        labels = (X.mean(axis=(1, 2)) > 0).astype("int64")
        Y = np.eye(2, dtype="float32")[labels]
        """
    )
    got = fed_data(ev, cst.Name("Y"), ev.info.root, 10**9)
    assert got is not None and got["rows"] == "all"
    y = values({"Y": got})["Y"]
    assert y.shape == (2000, 2) and np.all(y.sum(axis=1) == 1.0)
