"""The program's data, read for the training rung (static side, no TF import).

Mixed into ``program.ProgramSlicer``: a placeholder's ``feed_dict`` values, the arguments
the training step's call sites pass, a batch a ``tf.data`` pipeline picks from an array, each
read as a recipe of the program's NumPy code (``analysis/datagen.py``) or, failing that, as the
range it is fed from, or as the output of the probability op that produces it
(``program_producers.py``).
"""

from __future__ import annotations

import libcst as cst

from .. import datagen, feeds
from ..context import Context
from ..module import Binding, Scope, contains
from ..names import descendants, dotted_name, target_path, zip_row_source
from .program_inits import _number
from .program_producers import probability_producer


class ReadsData:
    """What the program feeds the values its objective reads (see the module docstring)."""

    ctx: Context
    data: dict[str, dict]

    def _data(self, node: cst.Name | cst.Subscript, scope: Scope, order: int) -> dict | None:
        """A value the data code gives (``xb = X[idx]``, or ``X[idx]`` itself, of a NumPy
        ``X``): an input the run draws by replaying that code, or None when the code does not
        say what it holds (or when it is a number the slice keeps: ``POS_WEIGHT = 10.0``)."""
        if _number(self.ctx, node, scope, order) is not None:
            return None
        got = datagen.fed_data(self.ctx.ev, node, scope, order)
        if got is None:
            return None
        key = self.ctx.code(node)
        self.data.setdefault(key, {"shape": None, "feeds": [{"code": key, **got}]})
        return {"k": "input", "name": key}

    def _feeds(self, placeholder: cst.Call) -> list[dict]:
        """What the module feeds this placeholder: the values of its ``feed_dict`` entries."""
        out = []
        for fed, scope, order in feeds._feed_dicts(self.ctx.ev):
            for element in fed.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(
                    element.key, cst.Name
                ):
                    continue
                found = self.ctx.ev.lookup(element.key.value, scope, order)
                if isinstance(found, Binding) and found.value is placeholder:
                    row = self._loop_row(element.value, fed, scope, order)
                    out.append(row or self._fed(element.value, scope, order))
        return out

    def _loop_row(
        self, node: cst.BaseExpression, within: cst.CSTNode, scope: Scope, order: int
    ) -> dict | None:
        """``for x, y in zip(xs, ys): sess.run(step, {X: x, Y: y})``: ``x`` is one row of
        the array ``xs`` a step (SGD on one example at a time)."""
        looped = enclosing_loop(node, within, scope)
        if looped is None:
            return None
        array = zip_row_source(looped[0].iter, looped[1])
        fed = self._fed(array, scope, order) if array is not None else {}
        return {**fed, "rows": "batch", "batch": 1} if fed.get("data") is not None else None

    def _fed(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        node = self._converted(node)
        got = datagen.fed_data(self.ctx.ev, node, scope, order)
        if got is not None:
            return {"code": self.ctx.code(node), **got}
        rng = feeds.FeedReader(self.ctx.ev).range(node, scope, order)
        out = {"code": self.ctx.code(node), "range": list(rng) if rng is not None else None}
        producer = probability_producer(self.ctx, node, scope, order) if rng is None else None
        return {**out, "producer": producer} if producer is not None else out

    def _converted(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``tf.constant(batch)`` / ``tf.convert_to_tensor(batch)`` with no dtype or a float
        one: the same values as ``batch``, which the data code gives."""
        if not isinstance(node, cst.Call) or self.ctx.op(node) != "constant":
            return node
        x, dtype = self.ctx.arg(node, 0, "value"), self.ctx.arg(node, 1, "dtype")
        dtype_text = self.ctx.code(dtype) if dtype is not None else "float32"
        if x is None or "float" not in dtype_text:
            return node
        return x

    def _parameter(self, name: str, param: cst.Param, scope: Scope) -> dict | None:
        """A parameter of the function that computes the loss: what its call sites pass."""
        fn = _function_of(scope)
        if fn is None:
            return None
        index = _param_index(fn, param)
        feeds_: list[dict] = []
        for site in self.ctx.info.calls:
            call = site.node
            if isinstance(call.func, cst.Name) and call.func.value == fn.name.value:
                arg = self.ctx.arg(call, index, param.name.value)
                if arg is None:
                    continue
                looped = self._dataset_element(arg, call, site.scope)
                feeds_.append(
                    looped if looped is not None else self._fed(arg, site.scope, site.order)
                )
        if not feeds_:
            return None
        key = f"{name}"
        self.data.setdefault(key, {"shape": None, "feeds": feeds_})
        return {"k": "input", "name": key}

    def _loop_element(self, node: cst.Name, scope: Scope) -> dict | None:
        """``for xb, yb in dataset:`` with ``xb`` read in the loop's own body (a training step
        written inline): a batch of the dataset's data, as :meth:`_dataset_element` reads it."""
        feed = self._dataset_element(node, node, scope)
        if feed is None:
            return None
        key = self.ctx.code(node)
        self.data.setdefault(key, {"shape": None, "feeds": [feed]})
        return {"k": "input", "name": key}

    def _dataset_element(
        self, arg: cst.BaseExpression, call: cst.CSTNode, scope: Scope
    ) -> dict | None:
        """``for xb, yb in dataset: step(xb, yb)`` with ``dataset =
        tf.data.Dataset.from_tensor_slices((X, y)).shuffle(n).batch(B)``: ``xb`` is a batch
        of ``B`` rows of ``X`` (what ``_fed`` makes of ``X``, picked in batches)."""
        looped = enclosing_loop(arg, call, scope)
        if looped is None:
            return None
        iterable, path = looped[0].iter, looped[1]
        if (
            isinstance(iterable, cst.Call)
            and dotted_name(iterable.func) == "enumerate"
            and iterable.args
        ):
            if not path or path[0] != 1:
                return None
            iterable, path = iterable.args[0].value, path[1:]
        return self._sliced_element(iterable, path, scope)

    def _sliced_element(
        self, node: cst.BaseExpression, path: list[int], scope: Scope
    ) -> dict | None:
        order = next((s.order for s in self.ctx.info.calls if s.node is node), 10**9)
        keeps = ("shuffle", "repeat", "take", "prefetch", "cache", "skip")
        found = dataset_source(self.ctx, node, scope, order, keeps)
        if found is None:
            return None
        call, batch, scope, order = found
        items = call.args[0].value
        for i in path:
            if not isinstance(items, (cst.Tuple, cst.List)) or i >= len(items.elements):
                return None
            items = items.elements[i].value
        fed = self._fed(items, scope, order)
        return {**fed, "rows": "batch", "batch": batch} if batch else None


def enclosing_loop(
    node: cst.BaseExpression, within: cst.CSTNode, scope: Scope
) -> tuple[cst.For, list[int]] | None:
    """The first ``for`` loop of ``scope`` whose body holds ``within`` and whose target binds
    the name ``node``, with where the name sits in the target (:func:`target_path`)."""
    if not isinstance(node, cst.Name):
        return None
    for loop in (n for n in descendants(scope.node) if isinstance(n, cst.For)):
        path = target_path(loop.target, node.value) if contains(loop.body, within) else None
        if path is not None:
            return loop, path
    return None


def dataset_source(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int, keeps
) -> tuple[cst.Call, int | None, Scope, int] | None:
    """The ``from_tensor_slices(...)`` call a tf.data pipeline starts from, its batch size
    (None: not batched) and where that call is read: ``ds = tf.data.Dataset.from_tensor_slices(
    (X, y)).shuffle(n).batch(B)``, followed through the names it is bound to.  None for a
    pipeline with a method outside ``keeps`` (a ``map``) or a batch size the code does not fix."""
    batch = None
    for _ in range(12):
        if isinstance(node, cst.Name):
            found = ctx.ev.lookup(node.value, scope, order)
            if not isinstance(found, Binding) or found.value is None or found.index is not None:
                return None
            node, scope, order = found.value, found.scope, found.at
            continue
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return None
        method = node.func.attr.value
        if method == "from_tensor_slices" and node.args:
            return node, batch, scope, order
        if method == "batch" and node.args:
            size = _number(ctx, ctx.arg(node, 0, "batch_size"), scope, order)
            if size is None or not float(size).is_integer():
                return None
            batch = int(size) if batch is None else batch  # the outermost: what a step gets
        elif method not in keeps:
            return None
        node = node.func.value
    return None


def _function_of(scope: Scope) -> cst.FunctionDef | None:
    node = scope.node
    return node if isinstance(node, cst.FunctionDef) else None


def _param_index(fn: cst.FunctionDef, param: cst.Param) -> int:
    params = list(fn.params.params)
    return params.index(param) if param in params else -1
