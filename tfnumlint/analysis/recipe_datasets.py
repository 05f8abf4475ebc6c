"""Well-known dataset loaders as recipes: a synthetic stand-in with the dataset's format.

Many training programs load MNIST or CIFAR instead of generating data.  We know those formats
(shapes, dtype, value range, class count), so the loader call becomes a recipe of draws with
that format: one label per row, drawn once and shared by the images and the labels, a
per-class template behind every image (the class structure a model learns), varied per example
(some of its strokes dropped, a few of another class's added: classes overlap, as digits do),
a brightness per example and a little noise.  Nothing is downloaded or read, and the callee is recognised by its
imported TensorFlow/Keras path, never by a name the user chose.

Row counts are scaled down to stay well below the size guard (``MAX_ELEMENTS``): a tenth of
MNIST (6000 / 1000 rows; 5500 / 500 / 1000 for the TF1 tutorial's splits) and 2000 / 500 rows
of CIFAR.  Every def id of a stand-in starts with ``stand_in:``; the builder marks a recipe
that reaches one with ``"stand_in": <what it stands for>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .draws import Builder, Frames, keywords, positional
from .module import Binding, Scope
from .recipe_libs import library_path
from .recipe_tables import Tree, Unknown


@dataclass(frozen=True)
class Format:
    """A dataset's documented format, with our scaled-down row counts."""

    label: str  # what the verdict says the stand-in stands for
    image: tuple[int, ...]  # one example's shape
    classes: int
    rows: tuple[int, int]  # train, test (scaled down)
    on: float  # the share of a template's pixels that are on (1.0: every pixel)
    column_labels: bool  # y of shape (n, 1), as CIFAR's


KERAS: dict[str, Format] = {
    "keras.datasets.mnist.load_data": Format(
        "Keras's MNIST", (28, 28), 10, (6000, 1000), 0.19, False
    ),
    "keras.datasets.fashion_mnist.load_data": Format(
        "Keras's Fashion-MNIST", (28, 28), 10, (6000, 1000), 0.5, False
    ),
    "keras.datasets.cifar10.load_data": Format(
        "Keras's CIFAR-10", (32, 32, 3), 10, (2000, 500), 1.0, True
    ),
    "keras.datasets.cifar100.load_data": Format(
        "Keras's CIFAR-100", (32, 32, 3), 100, (2000, 500), 1.0, True
    ),
}
KERAS.update({"tf." + path: fmt for path, fmt in list(KERAS.items())})  # tf.compat.v1.keras
READ_DATA_SETS = frozenset(
    {
        "tf.examples.tutorials.mnist.input_data.read_data_sets",
        "tf.contrib.learn.python.learn.datasets.mnist.read_data_sets",
        "tf.contrib.learn.datasets.mnist.read_data_sets",
    }
)
TUTORIAL = "the TF1 tutorial's MNIST (input_data.read_data_sets)"
SPLITS = ("train", "validation", "test")  # the attributes of read_data_sets's object
# read_data_sets's positional parameters, in its order
TUTORIAL_PARAMETERS = ("train_dir", "fake_data", "one_hot", "dtype", "reshape", "validation_size")
SCALE = 10  # the tutorial's 60000 rows, a tenth of them


def marked(recipe: dict, stand_ins: dict[str, str]) -> dict:
    """The recipe with ``"stand_in"``: what it stands for, when it reaches a stand-in."""
    datasets = sorted({stand_ins[k] for k in recipe["defs"] if k in stand_ins})
    return {**recipe, "stand_in": " and ".join(datasets)} if datasets else recipe


def dataset_call(
    builder: Builder, call: cst.Call, scope: Scope, order: int, frames: Frames
) -> Tree | None:
    """A Keras loader's or ``next_batch``'s result as a tuple tree; None for other calls."""
    return keras_loader(builder, call, frames) or next_batch_tuple(
        builder, call, scope, order, frames
    )


# -- Keras: ((x_train, y_train), (x_test, y_test)) ----------------------------------------
def keras_loader(builder: Builder, call: cst.Call, frames: Frames) -> Tree | None:
    """``mnist.load_data()`` as ``((x_train, y_train), (x_test, y_test))`` of stand-in
    arrays; None when the call is no Keras loader."""
    fmt = KERAS.get(library_path(builder, call.func) or "")
    if fmt is None:
        return None
    classes = fmt.classes
    if fmt.classes == 100 and "label_mode" in keywords(call):
        mode = keywords(call)["label_mode"]
        if not isinstance(mode, cst.SimpleString) or mode.evaluated_value not in ("fine", "coarse"):
            raise Unknown("a label mode that is not literal")
        classes = 20 if mode.evaluated_value == "coarse" else 100
    prefix = _prefix(builder, call, frames, "keras")
    templates = _def(builder, f"{prefix}/templates", _templates(fmt, classes), fmt.label)
    parts = []
    for split, n in zip(("train", "test"), fmt.rows, strict=True):
        labels = _def(builder, f"{prefix}/{split}/labels", _integers(classes, [n]), fmt.label)
        others = _def(builder, f"{prefix}/{split}/others", _integers(classes, [n]), fmt.label)
        x = _images(fmt, templates, labels, others, n, 255.0)
        y = _cast(labels, "uint8")
        if fmt.column_labels:
            y = _call("reshape", y, _tuple(n, 1))
        x_ref = _def(builder, f"{prefix}/{split}/x", _cast(x, "uint8"), fmt.label)
        y_ref = _def(builder, f"{prefix}/{split}/y", y, fmt.label)
        parts.append({"k": "tuple", "items": [x_ref, y_ref]})
    return {"k": "tuple", "items": parts}


# -- the TF1 tutorial: mnist.train.images, mnist.test.labels, mnist.train.next_batch(B) -----
def tutorial_field(
    builder: Builder, node: cst.Attribute, scope: Scope, order: int, frames: Frames
) -> Tree:
    """``mnist.train.images`` / ``.labels`` of a ``read_data_sets`` object (through names:
    ``train = mnist.train; train.images``); any other attribute is unknown."""
    split = _split(builder, node.value, scope, order, frames, 0)
    if split is None or node.attr.value not in ("images", "labels"):
        raise Unknown("attribute")
    return _tutorial_array(builder, *split, node.attr.value)


def next_batch(
    builder: Builder, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames
) -> tuple[Tree, int | None] | None:
    """What a value taken from ``split.next_batch(B)`` is: the split's whole images or labels
    (the batch is a pick of B of their rows, the same rows for both) and B.  ``node`` is a
    name unpacked from the call (``xs, ys = mnist.train.next_batch(100)``) or ``batch[0]``
    of ``batch = ...next_batch(100)`` or of the call itself; None for anything else."""
    got = _batch_element(builder, node, scope, order)
    if got is None:
        return None
    call, at_scope, at, index = got
    func = call.func
    if not isinstance(func, cst.Attribute) or index not in (0, 1):
        return None
    split = _split(builder, func.value, at_scope, at, frames, 0)
    if split is None:
        return None
    args = positional(call)
    size = keywords(call).get("batch_size", args[0] if args else None)
    batch = builder.number(size, at_scope, at, frames) if size is not None else None
    array = _tutorial_array(builder, *split, ("images", "labels")[index])
    return array, int(batch) if batch is not None and batch > 0 else None


def next_batch_tuple(
    builder: Builder, call: cst.Call, scope: Scope, order: int, frames: Frames
) -> Tree | None:
    """``split.next_batch(B)`` read as a value (not fed): B rows of the images and of the
    labels, picked by one shared draw of row numbers."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "next_batch":
        return None
    split = _split(builder, func.value, scope, order, frames, 0)
    if split is None:
        return None
    args = positional(call)
    size = keywords(call).get("batch_size", args[0] if args else None)
    if size is None:
        raise Unknown("next_batch of no size")
    batch = builder.integer(size, scope, order, frames)
    reader, name, r_frames = split[0], split[1], split[2]
    images = _tutorial_array(builder, reader, name, r_frames, "images")
    labels = _tutorial_array(builder, reader, name, r_frames, "labels")
    n = _tutorial_rows(builder, reader)[SPLITS.index(name)]
    pick = _def(
        builder, f"{_prefix(builder, call, frames, 'batch')}", _integers(n, [batch]), TUTORIAL
    )
    rows = [{"k": "index", "x": a, "idx": [pick]} for a in (images, labels)]
    return {"k": "tuple", "items": rows}


def _batch_element(builder: Builder, node, scope: Scope, order: int):
    """The ``next_batch`` call a value is element 0 or 1 of, with where it is read."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        item = node.slice[0].slice
        index = (
            builder.number(item.value, scope, order, ()) if isinstance(item, cst.Index) else None
        )
        inner = _batch_call(builder, node.value, scope, order)
        if inner is None or index is None:
            return None
        return (*inner, int(index))
    if not isinstance(node, cst.Name):
        return None
    found = builder.ev.lookup(node.value, scope, order)
    if not isinstance(found, Binding) or found.index is None:
        return None
    inner = _batch_call(builder, found.value, found.scope, found.at)
    return None if inner is None else (*inner, found.index)


def _batch_call(builder: Builder, node, scope: Scope, order: int):
    """``node`` as a ``.next_batch(...)`` call (directly or through one name), or None."""
    if isinstance(node, cst.Name):
        found = builder.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.index is not None:
            return None
        node, scope, order = found.value, found.scope, found.at
    func = node.func if isinstance(node, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value == "next_batch":
        return node, scope, order
    return None


def _split(
    builder: Builder, node, scope: Scope, order: int, frames: Frames, hops: int
) -> tuple[cst.Call, str, Frames] | None:
    """``mnist.train`` (or a name bound to it) of a ``read_data_sets`` call: (the call, the
    split's name, the frames it is read in), or None."""
    if hops > 8:
        return None
    if isinstance(node, cst.Name):
        found = builder.ev.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.index is None and found.value is not None:
            return _split(builder, found.value, found.scope, found.at, frames, hops + 1)
        return None
    if not isinstance(node, cst.Attribute) or node.attr.value not in SPLITS:
        return None
    reader = _reader(builder, node.value, scope, order, hops + 1)
    return None if reader is None else (reader, node.attr.value, frames)


def _reader(builder: Builder, node, scope: Scope, order: int, hops: int) -> cst.Call | None:
    """The ``read_data_sets`` call ``node`` holds (through names), or None."""
    for _ in range(8 - min(hops, 8)):
        if isinstance(node, cst.Call):
            return node if library_path(builder, node.func) in READ_DATA_SETS else None
        if not isinstance(node, cst.Name):
            return None
        found = builder.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.index is not None or found.value is None:
            return None
        node, scope, order = found.value, found.scope, found.at
    return None


@dataclass(frozen=True)
class _Options:
    """The ``read_data_sets`` keywords that change the arrays."""

    one_hot: bool
    reshape: bool
    uint8: bool
    validation: int


def _options(builder: Builder, call: cst.Call) -> _Options:
    """``read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=float32,
    reshape=True, validation_size=5000, ...)``: literal values only."""
    args, kw = positional(call), keywords(call)
    given = {name: args[i] for i, name in enumerate(TUTORIAL_PARAMETERS) if i < len(args)}
    given.update(kw)

    def flag(name: str, default: bool) -> bool:
        node = given.get(name)
        if node is None:
            return default
        if isinstance(node, cst.Name) and node.value in ("True", "False"):
            return node.value == "True"
        raise Unknown(f"{name} is not literal")

    if flag("fake_data", False):
        raise Unknown("the tutorial's fake data")
    dtype = given.get("dtype")
    path = builder.ev.imports.resolve(dtype) if dtype is not None else "tf.float32"
    if path not in ("tf.float32", "tf.uint8"):
        raise Unknown("a dtype that is not float32 or uint8")
    size = given.get("validation_size")
    validation = (
        5000 if size is None else size.evaluated_value if isinstance(size, cst.Integer) else -1
    )
    if not 0 <= validation <= 60000:
        raise Unknown("a validation size that is not a literal count")
    return _Options(flag("one_hot", False), flag("reshape", True), path == "tf.uint8", validation)


def _tutorial_rows(builder: Builder, call: cst.Call) -> tuple[int, int, int]:
    """The splits' rows: the tutorial's 60000 - validation_size / validation_size / 10000,
    each a tenth."""
    validation = _options(builder, call).validation
    return (60000 - validation) // SCALE, validation // SCALE, 10000 // SCALE


def _tutorial_array(
    builder: Builder, call: cst.Call, split: str, frames: Frames, field: str
) -> Tree:
    """One split's images (float32 in [0, 1], or uint8 with ``dtype=tf.uint8``) or labels
    (one-hot rows of 10 with ``one_hot=True``, else uint8 class numbers)."""
    opts = _options(builder, call)
    n = _tutorial_rows(builder, call)[SPLITS.index(split)]
    if n == 0:
        raise Unknown("an empty split")
    prefix = _prefix(builder, call, frames, "input_data")
    image = (784,) if opts.reshape else (28, 28, 1)
    fmt = Format(TUTORIAL, image, 10, (n, n), 0.19, False)
    templates = _def(builder, f"{prefix}/templates/{image}", _templates(fmt, 10), TUTORIAL)
    labels = _def(builder, f"{prefix}/{split}/labels", _integers(10, [n]), TUTORIAL)
    if field == "labels":
        if opts.one_hot:
            return _def(
                builder,
                f"{prefix}/{split}/one_hot",
                {"k": "one_hot", "x": labels, "n": 10},
                TUTORIAL,
            )
        return _def(builder, f"{prefix}/{split}/y", _cast(labels, "uint8"), TUTORIAL)
    top = 255.0 if opts.uint8 else 1.0
    others = _def(builder, f"{prefix}/{split}/others", _integers(10, [n]), TUTORIAL)
    x = _images(fmt, templates, labels, others, n, top)
    x = _cast(x, "uint8" if opts.uint8 else "float32")
    return _def(builder, f"{prefix}/{split}/x/{image}", x, TUTORIAL)


# -- the stand-in's trees ---------------------------------------------------------------------
def _templates(fmt: Format, classes: int) -> Tree:
    """One template per class: strokes (a share of the pixels at 1, the rest at 0) or, for
    photographs, a mid-range colour image."""
    shape = [classes, *fmt.image]
    if fmt.on >= 1.0:
        return _draw("uniform", {"low": _const(0.15), "high": _const(0.85)}, shape)
    return _share(shape, min(1.0, fmt.on / KEEP))


KEEP = 0.6  # the share of its class template's strokes an example keeps
STRAY = 0.15  # the share of another class's strokes it has too (classes overlap, as digits do)


def _images(fmt: Format, templates: Tree, labels: Tree, others: Tree, n: int, top: float) -> Tree:
    """An example is its class template, varied: for strokes, a random ``KEEP`` of the
    template's strokes and a ``STRAY`` of another class's, each at a brightness per example in
    [0.7, 1] of the range with 8% noise, the background exactly 0 (as MNIST's is; about
    ``fmt.on`` of the pixels are on); for photographs, the template at a brightness per example
    with a third of another class's template and noise everywhere."""
    shape = [n, *fmt.image]
    mine = {"k": "index", "x": templates, "idx": [labels]}
    other = {"k": "index", "x": templates, "idx": [others]}
    ones = [1] * len(fmt.image)
    gain = _draw("uniform", {"low": _const(0.7 * top), "high": _const(top)}, [n, *ones])
    noise = _draw("normal", {"loc": _const(0.0), "scale": _const(0.08 * top)}, shape)
    if fmt.on >= 1.0:
        mixed = _bin("+", _bin("*", mine, _const(0.7)), _bin("*", other, _const(0.3)))
        value = _bin("+", _bin("*", mixed, gain), noise)
    else:
        kept = _bin("*", mine, _share(shape, KEEP))
        strays = _bin("*", other, _share(shape, STRAY))
        value = _bin("*", _call("maximum", kept, strays), _bin("+", gain, noise))
    return _call("clip", value, _const(0.0), _const(top))


def _share(shape: list[int], p: float) -> Tree:
    """A float32 array of 1 at a random share ``p`` of its cells, 0 elsewhere."""
    unit = _draw("uniform", {"low": _const(0.0), "high": _const(1.0)}, shape)
    return _cast({"k": "cmp", "op": "<", "a": unit, "b": _const(p)}, "float32")


def _prefix(builder: Builder, call: cst.Call, frames: Frames, what: str) -> str:
    key = f"stand_in:{what}@{builder.call_ids.get(id(call), id(call))}"
    return key + ("/" + "/".join(f.ctx for f in frames) if frames else "")


def _def(builder: Builder, key: str, tree: Tree, label: str) -> Tree:
    """The tree as a def (drawn once however often it is read), marked as a stand-in."""
    builder.defs[key] = tree
    builder.stand_ins[key] = label
    return {"k": "ref", "id": key}


def _integers(high: int, size: list[int]) -> Tree:
    return _draw("integers", {"low": _const(0), "high": _const(high)}, size)


def _draw(dist: str, params: dict, size: list[int]) -> Tree:
    return {"k": "draw", "dist": dist, "p": params, "size": size}


def _cast(x: Tree, dtype: str) -> Tree:
    return _call("astype", x, {"k": "dtype", "v": dtype})


def _call(fn: str, *args: Tree) -> Tree:
    return {"k": "call", "fn": fn, "args": list(args), "kw": {}}


def _bin(op: str, a: Tree, b: Tree) -> Tree:
    return {"k": "bin", "op": op, "a": a, "b": b}


def _tuple(*dims: int) -> Tree:
    return {"k": "tuple", "items": [_const(d) for d in dims]}


def _const(v: float | int) -> Tree:
    return {"k": "const", "v": v}
