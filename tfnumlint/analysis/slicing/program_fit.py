"""Keras's ``fit``, read for the training rung (static side, no TF import).

``model.compile(optimizer=...)`` with ``model.fit(x, y, batch_size=...)`` trains the model on
batches of ``x`` and ``y`` with compile's optimizer.  What each step minimizes is compile's
``loss=fn`` (the batch mean of ``fn(y, model(x))``), unless the model's class overrides Keras's
``train_step`` hook: then ``fit`` calls that method with each batch ``data = (x, y)``, and the
objective is the loss its tape's gradient is taken of, applied by ``self.optimizer`` (the one
compile sets).  Inside the hook ``self(x)`` runs the class's ``call`` and
``self.compiled_loss(y, p)`` compile's loss.  A hook the slice cannot follow in full (a branch,
a loop, several gradients, a second model, the gradient of only some weights) gives no
objective: the loss it trains is not the one the slice would read.  Keras's cross-entropy
functions, which such a hook (or any objective) calls on a model's logits, are read here too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from ..context import Context
from ..module import Binding, ClassInfo, Scope, Site
from ..names import descendants
from . import program_modules
from .program_data import ReadsData, dataset_source
from .program_inits import _number
from .program_losses import called_keras_loss, keras_loss, keras_loss_form
from .program_models import FollowsModels, Instance, width
from .program_modules import Where
from .program_objectives import _bound_call, _compiled_optimizer, _is_tape

KERAS_BATCH = 32  # ``fit``'s default batch_size
_KERAS_XENT = "loss:categorical_crossentropy"  # Keras's (sparse) categorical cross-entropy

# statements after which the hook's loss depends on the run (or is not its one loss)
_UNFOLLOWED = (cst.For, cst.While, cst.If, cst.Try, cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass
class Fitted:
    """``model.compile(optimizer=...)`` and the ``model.fit(x, y)`` that trains that model."""

    site: Site  # the compile call
    model: cst.BaseExpression
    fit: Site
    optimizer: cst.Call | str
    x: cst.BaseExpression
    y: cst.BaseExpression
    batch: int


def fitted(ctx: Context, site: Site) -> Fitted | None:
    """The compile call at ``site`` with the fit of the same model, its optimizer and its
    data, or None (not a compile, no fit with ``x`` and ``y``, an optimizer not read)."""
    func = site.node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
        return None
    receiver = ctx.code(func.value)
    fit = next(
        (
            s
            for s in ctx.info.calls
            if isinstance(s.node.func, cst.Attribute)
            and s.node.func.attr.value == "fit"
            and ctx.code(s.node.func.value) == receiver
        ),
        None,
    )
    if fit is None:
        return None
    opt = _compiled_optimizer(ctx, ctx.arg(site.node, 0, "optimizer"), site.scope, site.order)
    x, y = ctx.arg(fit.node, 0, "x"), ctx.arg(fit.node, 1, "y")
    if opt is not None and x is not None and y is None:  # fit(dataset): its arrays, batched
        sliced = dataset_arrays(ctx, x, fit.scope, fit.order)
        return Fitted(site, func.value, fit, opt, *sliced) if sliced is not None else None
    if opt is None or x is None or y is None:
        return None
    node = ctx.arg(fit.node, 2, "batch_size")
    batch = _number(ctx, node, fit.scope, fit.order) if node is not None else KERAS_BATCH
    return Fitted(site, func.value, fit, opt, x, y, int(batch or KERAS_BATCH))


# tf.data methods that keep a dataset's elements as they are (their order aside)
_DATASET_KEEPS = frozenset({"shuffle", "repeat", "prefetch", "cache"})


def dataset_arrays(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> tuple[cst.BaseExpression, cst.BaseExpression, int] | None:
    """``fit(ds)`` with ``ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n).batch(B)``:
    ``(x, y, B)``, the arrays fit draws batches of B rows from; None for any other dataset (no
    ``batch``, a ``map``, elements that are not an ``(x, y)`` pair)."""
    found = dataset_source(ctx, node, scope, order, _DATASET_KEEPS)
    if found is None:
        return None
    call, batch, _, _ = found
    pair = ctx.arg(call, 0, "tensors")
    resolved = ctx.info.imports.resolve(call.func) or ""
    if batch is None or not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
        return None
    if not resolved.endswith("data.Dataset.from_tensor_slices"):
        return None
    return pair.elements[0].value, pair.elements[1].value, batch


def compiled_loss(ctx: Context, site: Site) -> tuple[Scope, Where | None] | None:
    """``compile(loss=fn)`` of a function of the module (or one imported from the project)
    returning one expression of ``(y_true, y_pred)``: its scope and module, else None."""
    loss_fn = ctx.arg(site.node, 1, "loss")
    where = None
    if isinstance(loss_fn, cst.Name) and loss_fn.value in ctx.info.functions:
        fn_scope = ctx.info.functions[loss_fn.value]
    elif loss_fn is not None and (found := program_modules.imported_function(ctx, loss_fn)):
        fn_scope, where = found
    else:
        return None
    fn = fn_scope.node
    if not isinstance(fn, cst.FunctionDef) or len(fn_scope.returns) != 1:
        return None
    return (fn_scope, where) if len(fn.params.params) >= 2 else None


def compiled_object(ctx: Context, site: Site) -> cst.BaseExpression | None:
    """``compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))`` (or the
    categorical one; made in place or bound to a name): the loss object's call, when it takes
    logits and nothing else that changes the loss (a name only); Keras's binary cross-entropy
    or squared error, an object, function or string (``program_losses.py``): the node that
    makes it; else None."""
    node = ctx.arg(site.node, 1, "loss")
    call = _bound_call(ctx, node, site.scope, site.order) if node is not None else None
    if node is not None and keras_loss_form(ctx, call or node) is not None:
        return call or node
    if call is None or ctx.op(call) != _KERAS_XENT:
        return None
    name = (ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
    if name.islower() or any(a.star or a.keyword is None for a in call.args):
        return None  # the function (compile calls it itself), or positional arguments
    if {a.keyword.value for a in call.args if a.keyword} - {"from_logits", "name"}:
        return None
    flag = ctx.arg(call, -1, "from_logits")
    return call if isinstance(flag, cst.Name) and flag.value == "True" else None


@dataclass
class Step:
    """A ``train_step(self, data)`` being sliced: its scope, ``data``, what ``fit`` passes as
    ``(x, y)``, the object whose ``call`` ``self(x)`` runs, and compile's loss."""

    scope: Scope
    data: cst.Param
    items: list[dict]
    made: Instance
    loss: tuple[Scope, Where | None] | None


@dataclass
class StepObjective:
    """The loss a ``train_step`` differentiates, where it is, and its sliced tree."""

    node: cst.BaseExpression
    scope: Scope
    order: int
    line: int
    tree: dict


def _keras_model(cls: ClassInfo) -> bool:
    """A class based on Keras's ``Model`` (resolved through the imports): ``fit`` calls its
    ``train_step``."""
    return any(
        b.split(".", 1)[0] in ("tf", "keras") and b.rsplit(".", 1)[-1] == "Model" for b in cls.bases
    )


def _of_self(node: cst.BaseExpression, scope: Scope, attrs: tuple[str, ...]) -> bool:
    """``self.<attr>`` for one of Keras's own attributes that the class does not assign."""
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == scope.self_name
        and node.attr.value in attrs
        and scope.cls is not None
        and node.attr.value not in scope.cls.attrs
    )


def overrides_step(made: Instance) -> bool:
    """Does the object's class define Keras's ``train_step`` hook, which ``fit`` calls instead
    of its own step (so compile's loss is not what it trains, unless the hook reads it)?"""
    return _keras_model(made.cls) and "train_step" in made.cls.method_scopes


def train_step(ctx: Context, made: Instance) -> tuple[Scope, cst.Param, Site] | None:
    """The class's ``train_step`` hook, its ``data`` parameter and its one tape ``gradient``
    of all the model's weights, applied by compile's optimizer; None when the class keeps
    Keras's own step, or when the hook is more than that straight line."""
    ctx = made.module[0] if made.module is not None else ctx
    scope = made.cls.method_scopes.get("train_step")
    fn = scope.node if scope is not None else None
    if scope is None or not isinstance(fn, cst.FunctionDef) or not overrides_step(made):
        return None
    params = fn.params
    if fn.decorators or isinstance(params.star_arg, cst.Param) or params.star_kwarg:
        return None
    if params.kwonly_params or params.posonly_params or len(params.params) != 2:
        return None
    if params.params[1].default is not None:
        return None
    if any(isinstance(n, _UNFOLLOWED) for n in descendants(fn.body)):
        return None
    calls = [s for s in ctx.info.calls if s.scope is scope]
    gradients = [s for s in calls if _method(s, "gradient")]
    applied = [s for s in calls if _method(s, "apply_gradients") or _method(s, "apply")]
    if len(gradients) != 1 or len(applied) != 1:
        return None
    site, apply = gradients[0], applied[0]
    assert isinstance(site.node.func, cst.Attribute) and isinstance(apply.node.func, cst.Attribute)
    if not _is_tape(ctx, site.node.func.value, scope, site.order):
        return None
    sources = ctx.arg(site.node, 1, "sources")
    trainable = ("trainable_variables", "trainable_weights")
    if sources is None or not _of_self(sources, scope, trainable):
        return None
    if not _of_self(apply.node.func.value, scope, ("optimizer",)):
        return None
    return scope, params.params[1], site


def _method(site: Site, name: str) -> bool:
    func = site.node.func
    return isinstance(func, cst.Attribute) and func.attr.value == name


def _index(node: cst.Subscript) -> int | None:
    """``i`` of ``v[i]`` for a literal non-negative ``i``."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    at = node.slice[0].slice.value
    return int(at.value) if isinstance(at, cst.Integer) else None


class TrainsByFit(FollowsModels, ReadsData):
    """The program slice's reading of ``fit`` (mixed into ``ProgramSlicer``): its data as
    inputs, compile's loss, and a model's own ``train_step`` (see the module docstring)."""

    step: Step | None = None

    def fit_inputs(self, fit: Fitted) -> tuple[dict, dict]:
        """``fit``'s ``x`` and ``y`` as inputs, each drawn in batches of fit's batch size."""
        out = []
        for node in (fit.x, fit.y):
            name = self.ctx.code(node)
            feed = {**self._fed(node, fit.fit.scope, fit.fit.order), "rows": "batch",
                    "batch": fit.batch}  # fmt: skip
            self.data.setdefault(name, {"shape": None, "feeds": [feed]})
            out.append({"k": "input", "name": name})
        return out[0], out[1]

    def compiled(
        self, loss: tuple[Scope, Where | None], y_true: dict, y_pred: dict, depth: int = 0
    ) -> dict:
        """Compile's ``loss=fn`` as Keras computes it: the batch mean of ``fn(y_true,
        y_pred)``."""
        fn_scope, where = loss
        fn = fn_scope.node
        assert isinstance(fn, cst.FunctionDef)
        params = fn.params.params
        bound = {id(params[0]): y_true, id(params[1]): y_pred}
        self.bound.update(bound)
        order, returned = fn_scope.returns[0]
        try:
            with self.slicer.in_module(where):
                per_example = self.slicer.tree(returned, fn_scope, order, depth)
        finally:
            for key in bound:
                self.bound.pop(key, None)
        return {"k": "call", "op": "reduce_mean", "args": [per_example], "kw": {}}

    def stepped(self, fit: Fitted, made: Instance, x: dict, y: dict) -> StepObjective | None:
        """The loss of the class's own ``train_step``, sliced with ``data`` as ``(x, y)``;
        None when the class has no such hook or the slice does not follow it."""
        found = train_step(self.ctx, made)
        if found is None:
            return None
        scope, data, site = found
        node = self.ctx.arg(site.node, 0, "target")
        if node is None:
            return None
        self.step = Step(scope, data, [x, y], made, compiled_loss(self.ctx, fit.site))
        hook = replace(made, method=scope)  # ``self`` is the object, as in its ``call``
        try:
            tree = self._follow(hook, {}, f"@step{id(made.made)}", 0, target=(site.order, node))
        finally:
            self.step = None
        if tree is None or any(not w.startswith(f"{made.name}.") for w in self.weights):
            return None  # a weight of another model, or of none: not the model fit trains
        pos = self.slicer.positions.get(site.node) if made.module is None else None
        return StepObjective(node, scope, site.order, pos.start.line if pos else 0, tree)

    def step_value(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict | None:
        """In the hook: ``x``/``y`` of ``x, y = data`` (or ``data[0]``), what fit passes."""
        step = self.step
        if step is None or scope is not step.scope:
            return None
        return self._item(node, scope, order, 0)

    def step_call(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """In the hook: ``self(x)`` runs the class's ``call``; ``self.compiled_loss(y, p)``
        is compile's loss (only those two arguments: a sample weight or regularization
        losses are not read)."""
        step = self.step
        if step is None or scope is not step.scope:
            return None
        func = call.func
        if isinstance(func, cst.Name) and func.value == scope.self_name:
            return self._method(step.made, call, scope, order, depth)
        if (
            _of_self(func, scope, ("compiled_loss",))
            and step.loss is not None
            and len(call.args) == 2
            and all(a.keyword is None and not a.star for a in call.args)
        ):
            y_true = self.slicer.tree(call.args[0].value, scope, order, depth + 1)
            y_pred = self.slicer.tree(call.args[1].value, scope, order, depth + 1)
            return self.compiled(step.loss, y_true, y_pred, depth + 1)
        return None

    def keras_xent(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """``keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)`` (or
        the categorical one), as Keras computes it: the fused softmax cross-entropy of each
        row, class ids one-hot over the logits' width (which the model's last layer fixes).
        Probabilities (no ``from_logits=True``) and other arguments are not read.  Keras's
        binary cross-entropy and squared error, a function or a loss object called on
        ``(y, p)``, are read as ``program_losses.py`` writes them."""
        if (read := called_keras_loss(self.ctx, call, scope, order)) is not None:
            return self._keras_loss(call, read, scope, order, depth)
        if self.ctx.op(call) != _KERAS_XENT:
            return None
        name = (self.ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
        sparse = name.startswith("sparse_")  # class ids, not one-hot rows
        given = [a.keyword.value if a.keyword else i for i, a in enumerate(call.args)]
        if not name.islower() or any(a.star for a in call.args):
            return None  # the loss class (a loss object), not the function
        if not set(given) <= {0, 1, 2, "y_true", "y_pred", "from_logits"}:
            return None
        flag = self.ctx.arg(call, 2, "from_logits")
        y_true, y_pred = self.ctx.arg(call, 0, "y_true"), self.ctx.arg(call, 1, "y_pred")
        if not (isinstance(flag, cst.Name) and flag.value == "True") or y_true is None:
            return None
        if y_pred is None:
            return None
        logits = self.slicer.tree(y_pred, scope, order, depth + 1)
        labels = self.slicer.tree(y_true, scope, order, depth + 1)
        return self._xent(call, sparse, labels, logits)

    def object_loss(self, call: cst.BaseExpression, y_true: dict, y_pred: dict) -> dict | None:
        """Compile's loss object (:func:`compiled_object`) as Keras computes it in ``fit``:
        the batch mean of each row's loss (``fit``'s step is compiled: a sigmoid's output is
        read as Keras reads it in a graph)."""
        form = keras_loss_form(self.ctx, call)
        if form is not None:
            tree = keras_loss(*form, y_true, y_pred, True, self.weights, self.data)
            return self.slicer._where(call, tree) if tree is not None else None
        if not isinstance(call, cst.Call):
            return None
        name = (self.ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
        xent = self._xent(call, name.startswith("Sparse"), y_true, y_pred)
        if xent is None:
            return None
        return {"k": "call", "op": "reduce_mean", "args": [xent], "kw": {}}

    def _keras_loss(
        self, call: cst.Call, read: tuple[str, bool, bool], scope: Scope, order: int, depth: int
    ) -> dict | None:
        """``bce(y, p)`` or ``keras.losses.mean_squared_error(y, p)`` in a step (which the
        slice does not know to be compiled)."""
        y_true, y_pred = self.ctx.arg(call, 0, "y_true"), self.ctx.arg(call, 1, "y_pred")
        if y_true is None or y_pred is None:
            return None
        pred = self.slicer.tree(y_pred, scope, order, depth + 1)
        labels = self.slicer.tree(y_true, scope, order, depth + 1)
        tree = keras_loss(*read, labels, pred, False, self.weights, self.data)
        return self.slicer._where(call, tree) if tree is not None else None

    def _xent(self, call: cst.Call, sparse: bool, labels: dict, logits: dict) -> dict | None:
        """The fused softmax cross-entropy of each row (class ids one-hot over the logits'
        width), placed at ``call``."""
        if sparse:
            classes = width(logits, self.weights, self.data)
            if not isinstance(classes, int):
                return None
            depth_ = {"k": "const", "v": float(classes)}
            labels = {"k": "call", "op": "one_hot", "args": [labels, depth_], "kw": {}}
        xent = {"k": "call", "op": "softmax_xent", "args": [labels, logits], "kw": {}}
        return self.slicer._where(call, xent)

    def _item(self, node: cst.BaseExpression, scope: Scope, order: int, hops: int) -> dict | None:
        """The item of ``data`` that ``node`` is: ``data[i]``, or a name bound to one
        (``x, y = data``, ``x, y = data[0], data[1]``, ``x = data[0]``)."""
        step = self.step
        assert step is not None
        if hops > 8:
            return None
        if isinstance(node, cst.Subscript):
            i = _index(node)
            if i is None or not self._is_data(node.value, scope, order, hops + 1):
                return None
            return step.items[i] if i < len(step.items) else None
        if not isinstance(node, cst.Name):
            return None
        found = self.ctx.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.value is None or found.nested is not None:
            return None
        if found.index is None:
            return self._item(found.value, found.scope, found.at, hops + 1)
        element = found.element()
        if element is not None:
            return self._item(element, found.scope, found.at, hops + 1)
        if not self._is_data(found.value, found.scope, found.at, hops + 1):
            return None
        return step.items[found.index] if found.index < len(step.items) else None

    def _is_data(self, node: cst.BaseExpression, scope: Scope, order: int, hops: int) -> bool:
        """Is ``node`` the hook's ``data`` (or a name bound to it)?"""
        step = self.step
        if step is None or hops > 8 or not isinstance(node, cst.Name):
            return False
        found = self.ctx.ev.lookup(node.value, scope, order)
        if found is step.data:
            return True
        if isinstance(found, Binding) and found.index is None and found.value is not None:
            return self._is_data(found.value, found.scope, found.at, hops + 1)
        return False
