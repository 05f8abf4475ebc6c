"""Known dataset loaders as recipes (``analysis/recipe_datasets.py``): a synthetic stand-in
with the dataset's documented format (shapes, dtype, value range, classes).

Each test evaluates the recipes as a worker does (from their JSON form) and asserts what the
arrays are: the documented shapes (row counts scaled down, as the module says), dtypes and
ranges, labels shared by the images and the labels of one loader, one-hot rows, batches.
"""

from __future__ import annotations

import json
import re
import textwrap

import libcst as cst
import numpy as np

from tfnumlint.analysis.datagen import data_recipe, fed_data
from tfnumlint.analysis.feeds import _feed_dicts
from tfnumlint.analysis.module import build
from tfnumlint.analysis.provenance import Evaluator
from tfnumlint.verify.datagen_eval import evaluate

TUTORIAL = """
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data
mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
x = tf.placeholder(tf.float32, [None, 784]); y_ = tf.placeholder(tf.float32, [None, 10])
W = tf.Variable(tf.zeros([784, 10])); b = tf.Variable(tf.zeros([10]))
y = tf.nn.softmax(tf.matmul(x, W) + b)
cross_entropy = -tf.reduce_sum(y_ * tf.log(y))
train_step = tf.train.GradientDescentOptimizer(0.01).minimize(cross_entropy)
sess = tf.InteractiveSession(); tf.global_variables_initializer().run()
for _ in range(1000):
    batch_xs, batch_ys = mnist.train.next_batch(100)
    sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
"""

KERAS = """
import tensorflow as tf
(x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
x_train = x_train.reshape(-1, 784) / 255.0
y_train = tf.keras.utils.to_categorical(y_train, 10)
model = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="sgd", loss="categorical_crossentropy")
model.fit(x_train, y_train, batch_size=128)
"""


def _evaluator(text: str) -> Evaluator:
    return Evaluator(build(cst.parse_module(textwrap.dedent(text))))


def fed(text: str) -> dict[str, dict | None]:
    """fed_data of every value of every feed_dict, by its code."""
    ev = _evaluator(text)
    out: dict[str, dict | None] = {}
    for feed, scope, order in _feed_dicts(ev):
        for element in feed.elements:
            out[ev.info.module.code_for_node(element.value)] = fed_data(
                ev, element.value, scope, order
            )
    return out


def fed_names(text: str, *names: str) -> dict[str, dict | None]:
    """fed_data of module names, read after the whole module (as ``fit``'s arguments are)."""
    ev = _evaluator(text)
    return {n: fed_data(ev, cst.Name(n), ev.info.root, 10**9) for n in names}


def recipes(text: str, *names: str) -> dict[str, dict | None]:
    ev = _evaluator(text)
    return {n: data_recipe(ev, cst.Name(n), ev.info.root, 10**9) for n in names}


def values(recipes_: dict[str, dict | None], seed: int = 0) -> dict[str, np.ndarray]:
    assert all(r is not None for r in recipes_.values()), recipes_
    return evaluate(json.loads(json.dumps(recipes_)), seed)


def _keras(loader: str, extra: str = "") -> str:
    return f"""
import tensorflow as tf
{extra}
(x_train, y_train), (x_test, y_test) = {loader}
"""


def _class_means_differ(x: np.ndarray, labels: np.ndarray, classes: int) -> float:
    """How much more alike images of one class are than images of two classes: the share
    of an image's variance explained by its class (0: labels and images unrelated)."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    means = np.stack([flat[labels == c].mean(axis=0) for c in range(classes)])
    within = ((flat - means[labels]) ** 2).mean()
    total = ((flat - flat.mean(axis=0)) ** 2).mean()
    return 1.0 - within / total


def follows(x: np.ndarray, labels: np.ndarray, classes: int) -> bool:
    """The images follow the labels: their class explains a share of the variance that the
    same labels, shuffled, do not (about 0)."""
    shuffled = np.random.default_rng(1).permutation(labels)
    unrelated = _class_means_differ(x, shuffled, classes)
    return _class_means_differ(x, labels, classes) > 0.25 and unrelated < 0.02


def test_keras_mnist_has_its_documented_format_and_shared_labels() -> None:
    got = values(
        recipes(
            _keras("tf.keras.datasets.mnist.load_data()"), "x_train", "y_train", "x_test", "y_test"
        )
    )
    x, y = got["x_train"], got["y_train"]
    assert x.shape == (6000, 28, 28) and x.dtype == np.uint8
    assert got["x_test"].shape == (10000 // 10, 28, 28) and got["y_test"].shape == (1000,)
    assert y.shape == (6000,) and y.dtype == np.uint8 and set(np.unique(y)) == set(range(10))
    assert x.min() == 0 and x.max() == 255
    on = (x > 0).mean()
    assert 0.12 < on < 0.26  # sparse strokes on an exact-zero background, as MNIST's
    assert follows(x, y, 10)  # the images follow the labels
    assert follows(got["x_test"], got["y_test"], 10)
    train_means = np.stack([x[y == c].reshape(-1, 784).mean(axis=0) for c in range(10)])
    test_x, test_y = got["x_test"].reshape(-1, 784), got["y_test"]
    test_means = np.stack([test_x[test_y == c].mean(axis=0) for c in range(10)])
    nearest = [int(np.argmin(((train_means - m) ** 2).sum(axis=1))) for m in test_means]
    assert nearest == list(range(10))  # the test split is drawn from the same class templates


def test_fashion_mnist_and_cifar_loaders() -> None:
    fashion = values(
        recipes(_keras("tf.keras.datasets.fashion_mnist.load_data()"), "x_train", "y_train")
    )
    assert fashion["x_train"].shape == (6000, 28, 28) and fashion["x_train"].dtype == np.uint8
    cifar = values(
        recipes(
            _keras("tf.keras.datasets.cifar10.load_data()"),
            "x_train",
            "y_train",
            "x_test",
            "y_test",
        )
    )
    x, y = cifar["x_train"], cifar["y_train"]
    assert x.shape == (2000, 32, 32, 3) and x.dtype == np.uint8
    assert y.shape == (2000, 1) and set(np.unique(y)) == set(range(10))
    assert cifar["x_test"].shape == (500, 32, 32, 3) and cifar["y_test"].shape == (500, 1)
    assert x.min() == 0 and x.max() == 255 and (x > 0).mean() > 0.9  # photographs: few zeros
    assert follows(x, y[:, 0], 10)
    hundred = values(recipes(_keras("tf.keras.datasets.cifar100.load_data()"), "y_train"))[
        "y_train"
    ]
    assert hundred.shape == (2000, 1) and hundred.max() == 99 and len(np.unique(hundred)) == 100
    coarse = _keras("tf.keras.datasets.cifar100.load_data(label_mode='coarse')")
    assert values(recipes(coarse, "y_train"))["y_train"].max() == 19


def test_every_import_spelling_of_a_loader_is_resolved() -> None:
    spellings = [
        ("from tensorflow.keras.datasets import mnist", "mnist.load_data()"),
        ("from keras.datasets import mnist", "mnist.load_data()"),
        ("import keras", "keras.datasets.mnist.load_data()"),
        ("from tensorflow.keras.datasets.mnist import load_data", "load_data()"),
        ("import tensorflow.compat.v1 as tf1", "tf1.keras.datasets.mnist.load_data()"),
    ]
    for extra, call in spellings:
        got = recipes(_keras(call, extra), "x_train")["x_train"]
        assert got is not None and got["stand_in"] == "Keras's MNIST", (extra, call)


def test_the_result_may_be_kept_whole_and_indexed() -> None:
    text = """
import tensorflow as tf
train, test = tf.keras.datasets.cifar10.load_data()
images, labels = train
first = tf.keras.datasets.cifar10.load_data()[1][0]
"""
    got = values(recipes(text, "images", "labels", "first"))
    assert got["images"].shape == (2000, 32, 32, 3) and got["labels"].shape == (2000, 1)
    assert got["first"].shape == (500, 32, 32, 3)


def test_a_user_function_named_load_data_is_not_keras_s() -> None:
    text = """
import numpy as np
import tensorflow as tf

def load_data():
    return (np.zeros((3, 2)), np.zeros(3)), (np.zeros((1, 2)), np.zeros(1))

class mnist:
    @staticmethod
    def load_data():
        return None

(x_train, y_train), (x_test, y_test) = load_data()
(a, b), (c, d) = mnist.load_data()
"""
    got = recipes(text, "x_train", "a")
    assert got["a"] is None
    mine = got["x_train"]
    assert mine is not None and "stand_in" not in mine  # the user's own helper, inlined
    assert values({"x": mine})["x"].shape == (3, 2)


def test_the_keras_program_feeds_scaled_pixels_and_one_hot_labels() -> None:
    got = fed_names(KERAS, "x_train", "y_train")
    assert all(f is not None and f["rows"] == "all" for f in got.values())
    assert got["x_train"]["data"]["stand_in"] == "Keras's MNIST"
    arrays = values({k: f["data"] for k, f in got.items()})  # type: ignore[index]
    x, y = arrays["x_train"], arrays["y_train"]
    assert x.shape == (6000, 784) and x.min() >= 0.0 and x.max() == 1.0
    assert y.shape == (6000, 10) and np.all(y.sum(axis=1) == 1.0)
    assert follows(x, y.argmax(axis=1), 10)  # x and y share the labels


def test_the_tf1_tutorial_feeds_batches_of_the_same_rows() -> None:
    got = fed(TUTORIAL)
    xs, ys = got["batch_xs"], got["batch_ys"]
    assert xs is not None and ys is not None
    assert (xs["rows"], xs["batch"]) == ("batch", 100) and (ys["rows"], ys["batch"]) == (
        "batch",
        100,
    )
    assert (
        xs["data"]["stand_in"]
        == ys["data"]["stand_in"]
        == "the TF1 tutorial's MNIST (input_data.read_data_sets)"
    )
    arrays = values({"x": xs["data"], "y": ys["data"]})
    x, y = arrays["x"], arrays["y"]
    assert x.shape == (5500, 784) and x.dtype == np.float32 and x.min() == 0.0 and x.max() == 1.0
    assert y.shape == (5500, 10) and np.all(y.sum(axis=1) == 1.0)  # one-hot rows
    # the trainer picks the same rows of every fed array: row i of x is of class argmax y[i]
    assert follows(x, y.argmax(axis=1), 10)


def test_tutorial_splits_fields_and_options() -> None:
    text = """
from tensorflow.examples.tutorials.mnist import input_data
data = input_data.read_data_sets("/tmp/data", reshape=False, validation_size=10000)
train = data.train
images, labels = train.images, train.labels
test_images = data.test.images
valid = data.validation.labels
batch = data.train.next_batch(50)
picked = batch[0]
"""
    got = values(recipes(text, "test_images", "valid", "picked"))
    assert got["test_images"].shape == (1000, 28, 28, 1)
    assert got["valid"].shape == (1000,) and got["valid"].dtype == np.uint8  # not one-hot
    assert got["picked"].shape == (50, 28, 28, 1)
    ev = _evaluator(text)
    batch = fed_data(ev, cst.parse_expression("batch[1]"), ev.info.root, 10**9)
    assert batch is not None and (batch["rows"], batch["batch"]) == ("batch", 50)
    assert values({"y": batch["data"]})["y"].shape == (5000,)  # the train split, 50000 / 10


def test_renaming_user_identifiers_changes_nothing() -> None:
    names = [
        "mnist",
        "x",
        "y_",
        "W",
        "b",
        "y",
        "cross_entropy",
        "train_step",
        "sess",
        "batch_xs",
        "batch_ys",
    ]
    renamed = TUTORIAL
    for i, name in enumerate(names):
        renamed = re.sub(rf"(?<![.\w]){name}\b", f"v{i}q", renamed)
    assert "read_data_sets" in renamed and "v0q.train.next_batch" in renamed
    before, after = fed(TUTORIAL), fed(renamed)
    assert list(before.values()) == list(after.values())
    keras_renamed = KERAS
    for i, name in enumerate(["x_train", "y_train", "x_test", "y_test", "model"]):
        keras_renamed = re.sub(rf"(?<![.\w]){name}\b", f"k{i}q", keras_renamed)
    a = fed_names(KERAS, "x_train")["x_train"]
    b = fed_names(keras_renamed, "k0q")["k0q"]
    assert a is not None and b is not None
    assert np.array_equal(values({"x": a["data"]})["x"], values({"x": b["data"]})["x"])


def test_nested_unpacking_binds_each_name_to_its_element_path() -> None:
    info = build(cst.parse_module("(a, b), (c, [d, e]) = v\n"))
    (d,) = info.root.bindings["d"]
    assert d.value is None and d.index is None  # unknown to readers that do not follow paths
    assert d.nested is not None and d.nested[1] == (1, 1, 0)
    assert info.root.bindings["c"][0].nested[1] == (1, 0)  # type: ignore[index]
    assert isinstance(d.nested[0], cst.Name) and d.nested[0].value == "v"


def test_the_keras_program_s_probe_trains_on_the_stand_in() -> None:
    from tfnumlint.engine import LintOptions, lint_source, load_all
    from tfnumlint.rules.registry import CHECKS
    from tfnumlint.source import Source

    load_all()
    own_loss = "def own(t, p):\n    return -tf.reduce_sum(t * tf.math.log(p))\n"
    text = textwrap.dedent(KERAS).replace('loss="categorical_crossentropy"', "loss=own")
    text = text.replace("model = ", own_loss + "model = ", 1)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    findings = lint_source(Source("t.py", text, text.encode()), options).findings
    programs = [f.probe["program"] for f in findings if f.rule == "TNL101" and f.probe]
    assert programs, [f.rule for f in findings]
    feeds = {k: d["feeds"][0] for k, d in programs[0]["data"].items()}
    assert {f["data"]["stand_in"] for f in feeds.values()} == {"Keras's MNIST"}
    assert {(f["rows"], f["batch"]) for f in feeds.values()} == {("batch", 128)}
