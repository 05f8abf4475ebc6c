"""The NumPy code that makes a program's data, as a plain-data *recipe* we can replay.

The training rung trains the user's model slice on data like the program's own.  Bounds
(``feeds.py``) are not enough: a log-normal target is mostly ~5 but its 6-sigma range reaches
4e5, a rare flag must be all-zero in some batches, and one-hot labels must be drawn from the
same labels as the class templates.  So the NumPy expression is translated into a JSON-able
tree of an allow-list of NumPy calls on random draws (``verify/datagen_eval.py`` evaluates it
with our own seeded generator).  The user's code is never executed.

A recipe is ``{"defs": {id: tree}, "root": tree}``.  Every user binding the recipe reads is one
def, referenced by ``{"k": "ref", "id": ...}``, so a value read twice is drawn once.  Ids are
internal: the name, the walk order of its assignment and the call sites of the helpers it was
inlined through (names never decide anything).  A known dataset loader (Keras's
``mnist.load_data()``, the TF1 tutorial's ``input_data.read_data_sets``) is a synthetic stand-in
with the dataset's format (``recipe_datasets.py``); a recipe that reaches one carries
``"stand_in": <what it stands for>``.

Node kinds (``"k"``): ``const`` (``v``: a number or bool), ``array`` (``v``: nested lists of
numbers), ``none``, ``ellipsis``, ``tuple``/``list`` (``items``), ``dtype`` (``v``), ``ref``
(``id``), ``draw`` (``dist``, ``p``: {name: tree}, ``size``: list of ints or None; the
Generator's names: uniform, standard_normal, normal, integers [low, high), choice, permutation,
gamma, ...), ``bin``/``cmp`` (``op``, ``a``, ``b``), ``neg`` (``x``), ``call`` (``fn``: a
NumPy function of ``recipe_tables.NUMPY_FUNCTIONS`` or ``astype``; ``args``, ``kw``; a method
``x.m(...)`` is ``m(x, ...)``), ``index`` (``x``, ``idx``: items that are ``slice``
{start, stop, step} of ints, ``none``, an int ``const`` or a tree), ``setitem`` (``x``, ``idx``
as for ``index``, ``v``: NumPy's ``x[idx] = v`` on a copy of ``x``; an item assignment of the
data code, see ``recipe_stores.py``), ``one_hot`` (``x``, ``n``).
"""

from __future__ import annotations

import libcst as cst

from .draws import argument
from .feeds import Evaluator
from .module import Binding, Scope
from .recipe import Builder, Unknown
from .recipe_code import BINARY, fold
from .recipe_datasets import next_batch
from .recipe_shapes import is_mask, largest, recipe_shape
from .recipe_tables import MAX_ELEMENTS

__all__ = ["batch_pick", "data_recipe", "fed_data", "recipe_shape"]


# -- public -------------------------------------------------------------------------------
def data_recipe(ev: Evaluator, node: cst.BaseExpression, scope: Scope, order: int) -> dict | None:
    """The recipe of the array ``node`` holds, or None when a part of it is unknown (a file,
    pandas, tf.data, a call outside the allow-list, a too large array)."""
    builder = Builder(ev)
    try:
        recipe = builder.recipe(builder.tree(node, scope, order, ()))
    except (Unknown, RecursionError):
        return None
    return recipe if largest(recipe) <= MAX_ELEMENTS else None


def fed_data(ev: Evaluator, node: cst.BaseExpression, scope: Scope, order: int) -> dict | None:
    """What a value fed to the model is: ``{"data": recipe, "rows": "all" | "batch",
    "batch": int | None}``.  A subscript of the row axis by a non-literal index is a batch
    pick: the data is then the whole indexed array and ``batch`` the pick's size; so is a value
    of the tutorial's ``split.next_batch(B)`` (the split's images or labels, ``batch`` B)."""
    builder = Builder(ev)
    try:
        got = _fed(builder, node, scope, order, 0)
    except (Unknown, RecursionError):
        return None
    return got if largest(got["data"]) <= MAX_ELEMENTS else None


def batch_pick(ev: Evaluator, node: cst.BaseExpression, scope: Scope, order: int) -> int | None:
    """How many rows ``node`` picks from its array when it is a batch pick whose size the code
    says (``X[j:j + 4096]``, ``xb`` of ``xb = X[idx]`` with ``idx = choice(N, 64)``), without
    reading the array itself; None otherwise."""
    builder = Builder(ev)
    if isinstance(node, cst.Name):
        found = ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding):
            return None
        value = found.value if found.index is None else found.element()  # xb, yb = X[i], Y[i]
        node, scope, order = value, found.scope, found.at  # type: ignore[assignment]
    if not isinstance(node, cst.Subscript):
        return None
    try:
        if not _pick(builder, node, scope, order):
            return None
        return pick_size(builder, node.slice[0].slice, scope, order, 0)
    except (Unknown, RecursionError):
        return None


def _fed(builder: Builder, node, scope: Scope, order: int, hops: int) -> dict:
    batch = next_batch(builder, node, scope, order, ())
    if batch is not None:  # xs, ys = mnist.train.next_batch(100): B of the split's rows
        return {"data": builder.recipe(batch[0]), "rows": "batch", "batch": batch[1]}
    if isinstance(node, cst.Name) and hops < 8:  # xb = train_x[idx]; feed {x: xb}
        found = builder.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):  # step(x[rows]) of a function called once
            bound = builder.param(node.value, found, ())
            picked = bound is not None and isinstance(bound[0], cst.Subscript) and not bound[3]
            if picked and _pick(builder, bound[0], bound[1], bound[2]):  # type: ignore[index]
                return _fed(builder, bound[0], bound[1], bound[2], hops + 1)  # type: ignore[index]
        value = found.value if isinstance(found, Binding) and found.index is None else None
        if isinstance(found, Binding) and found.index is not None:
            value = found.element()  # xb, yb = X[idx], Y[idx]
        if (
            isinstance(found, Binding)
            and isinstance(value, cst.Subscript)
            and _pick(builder, value, found.scope, found.at)
        ):
            return _fed(builder, value, found.scope, found.at, hops + 1)
    if isinstance(node, cst.Subscript) and _pick(builder, node, scope, order):
        x = builder.tree(node.value, scope, order, ())
        rest = [builder.index(e.slice, scope, order, ()) for e in node.slice[1:]]
        if rest:
            everything = {"k": "slice", "start": None, "stop": None, "step": None}
            x = {"k": "index", "x": x, "idx": [everything, *rest]}
        size = pick_size(builder, node.slice[0].slice, scope, order, 0)
        rows = {"data": builder.recipe(x), "rows": "batch", "batch": size}
        return {**rows, "pick": _pick_key(builder, node.slice[0].slice, scope, order)}
    return {
        "data": builder.recipe(builder.tree(node, scope, order, ())),
        "rows": "all",
        "batch": None,
    }


def _pick(builder: Builder, node: cst.Subscript, scope: Scope, order: int) -> bool:
    """Is the row index of ``node`` a non-literal (a batch pick)?  ``np.c_[a, b]`` is no
    pick: it joins arrays."""
    if builder.reader.numpy_path(node.value) in ("numpy.c_", "numpy.r_"):
        return False
    first = node.slice[0].slice
    if isinstance(first, cst.Slice):
        ends = [e for e in (first.lower, first.upper, first.step) if e is not None]
        return any(builder.number(e, scope, order, ()) is None for e in ends)
    if not isinstance(first, cst.Index):
        return False
    value = first.value
    if isinstance(value, cst.Ellipsis) or builder.reader.numpy_path(value) == "numpy.newaxis":
        return False
    if isinstance(value, cst.Name) and value.value == "None":
        return False
    if builder.number(value, scope, order, ()) is not None:
        return False
    return not _fixed_rows(builder, node.value, value, scope, order)


def _pick_key(builder: Builder, first: cst.BaseSlice, scope: Scope, order: int) -> str:
    """Which draw of rows a batch pick is: ``data[i]`` and ``labels[i]`` share one, while
    ``data[j]`` of another ``j = randint(...)`` picks rows of its own (a triplet's negatives
    beside its anchors).  A name is its binding's place; any other index is its code."""
    index = first.value if isinstance(first, cst.Index) else first
    if isinstance(first, cst.Slice):
        index = first.lower if first.lower is not None else first
    if isinstance(index, cst.Name):
        found = builder.ev.lookup(index.value, scope, order)
        if isinstance(found, Binding):
            return f"{index.value}@{found.at}"
    return cst.Module([]).code_for_node(index)


def _fixed_rows(
    builder: Builder,
    table: cst.BaseExpression,
    value: cst.BaseExpression,
    scope: Scope,
    order: int,
) -> bool:
    """A boolean index (``X[y > 0]``) or a literal list of rows (``X[[0, 2]]``) selects fixed
    rows: the data, not a batch of it.  So does a lookup (:func:`_looks_up`)."""
    try:
        index = builder.tree(value, scope, order, ())
    except Unknown:
        return False
    if index["k"] == "array" or is_mask(index, builder.shapes):
        return True
    return _looks_up(builder, table, index, scope, order)


def _looks_up(
    builder: Builder, table: cst.BaseExpression, index: dict, scope: Scope, order: int
) -> bool:
    """A fixed index array that is not a list of rows of its table: more entries than the
    table has rows (``np.eye(10)[labels]`` with 512 labels, a one-hot encoding), or more than
    one axis (``embedding[tokens]``).  A batch takes a 1-D pick of at most the data's rows, so
    this gather is the data itself, evaluated whole."""
    picked = builder.shapes.of(index)
    if picked is None or not picked:
        return False
    if len(picked) > 1:
        return True
    try:
        rows = builder.shapes.of(builder.tree(table, scope, order, ()))
    except Unknown:
        return False
    return bool(rows) and picked[0] > rows[0]  # type: ignore[index]


def pick_size(builder: Builder, index, scope: Scope, order: int, hops: int) -> int | None:
    """How many rows a batch pick takes, when the code says: ``order[s:s + B]`` -> B,
    ``choice(N, 64)`` -> 64, ``randint(0, n, B)`` / ``integers(0, N, 128)`` -> the size."""
    if hops > 8:
        return None
    if isinstance(index, cst.Slice):
        return _slice_size(builder, index, scope, order)
    value = index.value if isinstance(index, cst.Index) else index
    if isinstance(value, cst.Name):
        found = builder.ev.lookup(value.value, scope, order)
        if isinstance(found, Binding) and found.value is not None and found.index is None:
            return pick_size(builder, found.value, found.scope, found.at, hops + 1)
        return None
    if isinstance(value, cst.Subscript) and len(value.slice) == 1:
        return pick_size(builder, value.slice[0].slice, scope, order, hops + 1)
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    func = value.func
    module_draw = (builder.reader.numpy_path(func) or "").startswith("numpy.random.")
    if not (module_draw or builder.generator(func.value, scope, order, ())):
        return None
    method = func.attr.value
    where = {"choice": (1, "size"), "randint": (2, "size"), "integers": (2, "size")}
    if method == "permutation":
        arg = value.args[0].value if len(value.args) == 1 else None
        got = builder.number(arg, scope, order, ()) if arg is not None else None
        return int(got) if got is not None else None
    if method not in where:
        return None
    try:
        shape = builder.shape(argument(value, *where[method]), scope, order, ())
    except Unknown:
        return None
    return shape[0] if shape else None


def _slice_size(builder: Builder, sl: cst.Slice, scope: Scope, order: int) -> int | None:
    """``stop - start`` when it is the same whatever the loop variables are: ``s:s + B`` and
    ``i * B:(i + 1) * B`` give B.  The ends are folded twice with the unknown names set to two
    different sets of probe numbers (our arithmetic on the code's, nothing of it is run)."""
    if sl.step is not None or sl.upper is None:
        return None
    sizes = set()
    for base in PROBES:
        env: dict[str, float] = {}
        lo = _probe(builder, sl.lower, scope, order, env, base) if sl.lower is not None else 0
        hi = _probe(builder, sl.upper, scope, order, env, base)
        if lo is None or hi is None:
            return None
        sizes.add(hi - lo)
    size = sizes.pop() if len(sizes) == 1 else None
    return int(size) if size is not None and size > 0 and size == int(size) else None


PROBES = (1009.0, 7919.0)  # the first probe number of each fold; each further name adds 1


def _probe(builder: Builder, node, scope: Scope, order: int, env: dict, base: float):
    known = builder.number(node, scope, order, ())
    if known is not None:
        return known
    if isinstance(node, cst.Name):
        return env.setdefault(node.value, base + len(env))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _probe(builder, node.expression, scope, order, env, base)
        return -inner if inner is not None else None
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in BINARY:
        a = _probe(builder, node.left, scope, order, env, base)
        b = _probe(builder, node.right, scope, order, env, base)
        return None if a is None or b is None else fold(BINARY[type(node.operator)], a, b)
    return None
