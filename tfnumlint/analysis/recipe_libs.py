"""Library calls that only rearrange data, as recipe trees: scikit-learn's
``train_test_split`` and Keras's ``to_categorical``.

Both are everywhere in training scripts, and both are plain data: a split is the rows of one
random permutation (one def per call, so ``X_train`` and ``y_train`` keep the same rows), a
one-hot encoding is ``eye(n)[labels]``.  The callee is read from the imports, never from a name
the user chose.
"""

from __future__ import annotations

import math

import libcst as cst

from .draws import Builder, Frames, keywords, positional
from .module import Scope
from .names import dotted_name
from .recipe_tables import Tree, Unknown

SPLIT = "sklearn.model_selection.train_test_split"
ONE_HOT = ("keras.utils.to_categorical", "keras.utils.np_utils.to_categorical")


def library_path(builder: Builder, func: cst.BaseExpression) -> str | None:
    """The imported dotted path of a callee (``keras.utils.to_categorical`` for
    ``tf.keras.utils.to_categorical`` or an imported ``to_categorical``)."""
    resolved = builder.ev.imports.resolve(func)
    if resolved is not None:
        return resolved
    head, _, rest = dotted_name(func).partition(".")
    base = builder.ev.imports.aliases.get(head)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


def is_split(builder: Builder, call: cst.Call) -> bool:
    return library_path(builder, call.func) == SPLIT


def split_part(
    builder: Builder, call: cst.Call, index: int, scope: Scope, order: int, frames: Frames
) -> Tree:
    """Element ``index`` of ``train_test_split(a, b, ...)``'s ``a_train, a_test, b_train,
    b_test``: the array's rows at the train or test end of one shared permutation."""
    arrays = positional(call)
    if not arrays or index >= 2 * len(arrays):
        raise Unknown("a split of nothing")
    kw = keywords(call)
    first = builder.shape_of(arrays[0], scope, order, frames)
    if not first:
        raise Unknown("a split of an array of unknown length")
    n = first[0]
    n_train, n_test = _split_sizes(builder, n, kw, scope, order, frames)
    shuffle = kw.get("shuffle")
    shuffled = not (isinstance(shuffle, cst.Name) and shuffle.value == "False")
    rows: Tree
    if shuffled:
        rows = {"k": "draw", "dist": "permutation", "p": {"x": _const(n)}, "size": None}
    else:
        rows = {"k": "call", "fn": "arange", "args": [_const(n)], "kw": {}}
    key = f"split@{builder.call_ids.get(id(call), id(call))}"
    if frames:
        key += "/" + "/".join(f.ctx for f in frames)
    builder.defs[key] = rows
    start, stop = (0, n_train) if index % 2 == 0 else (n_train, n_train + n_test)
    picked = {"k": "slice", "start": start, "stop": stop, "step": None}
    pick = {"k": "index", "x": {"k": "ref", "id": key}, "idx": [picked]}
    data = builder.tree(arrays[index // 2], scope, order, frames)
    return {"k": "index", "x": data, "idx": [pick]}


def _split_sizes(builder: Builder, n: int, kw: dict, scope, order, frames) -> tuple[int, int]:
    """scikit-learn's sizes: a float test size rounds up, a float train size down."""
    sizes: dict[str, int | float | None] = {}
    for name in ("test_size", "train_size"):
        node = kw.get(name)
        if node is None or (isinstance(node, cst.Name) and node.value == "None"):
            sizes[name] = None
            continue
        got = builder.number(node, scope, order, frames)
        if got is None:
            raise Unknown(f"{name} not a number")
        sizes[name] = got
    test, train = sizes["test_size"], sizes["train_size"]
    if test is None and train is None:
        test = 0.25
    n_test = None if test is None else (math.ceil(test * n) if isinstance(test, float) else test)
    n_train = (
        None if train is None else (math.floor(train * n) if isinstance(train, float) else train)
    )
    if n_train is None:
        n_train = n - n_test  # type: ignore[operator]
    if n_test is None:
        n_test = n - n_train
    if n_train < 0 or n_test < 0 or n_train + n_test > n:
        raise Unknown("split sizes beyond the array")
    return int(n_train), int(n_test)


def one_hot(
    builder: Builder, call: cst.Call, scope: Scope, order: int, frames: Frames
) -> Tree | None:
    """``to_categorical(y, num_classes)`` as ``{"k": "one_hot", "x", "n"}``; None when the
    call is not Keras's."""
    if library_path(builder, call.func) not in ONE_HOT:
        return None
    args, kw = positional(call), keywords(call)
    if not args:
        raise Unknown("to_categorical of nothing")
    count = kw.get("num_classes", args[1] if len(args) > 1 else None)
    n = None
    if count is not None and not (isinstance(count, cst.Name) and count.value == "None"):
        n = builder.integer(count, scope, order, frames)
    return {"k": "one_hot", "x": builder.tree(args[0], scope, order, frames), "n": n}


def _const(v: int) -> Tree:
    return {"k": "const", "v": v}


def index_join(
    builder: Builder, node: cst.Subscript, scope: Scope, order: int, frames: Frames
) -> Tree | None:
    """``np.c_[a, b]`` (columns side by side) and ``np.r_[a, b]`` (rows after rows) of
    arrays; with slices or strings inside they are not replayed.  None for other subscripts."""
    path = library_path(builder, node.value)
    if path not in ("numpy.c_", "numpy.r_"):
        return None
    items = []
    for element in node.slice:
        if not isinstance(element.slice, cst.Index):
            raise Unknown("np.c_/np.r_ of a slice")
        items.append(builder.tree(element.slice.value, scope, order, frames))
    fn = "column_stack" if path == "numpy.c_" else "concatenate"
    return {"k": "call", "fn": fn, "args": [{"k": "list", "items": items}], "kw": {}}
