"""The program's own training, sliced into plain data for the training rung (no TF import).

A finding that feeds an objective the program optimizes (``opt.minimize(loss)``,
``opt.compute_gradients(loss)``, ``tape.gradient(loss, ...)`` beside ``apply_gradients``)
is sliced once more, whole: the objective's tree down to the program's sources instead of to
the flagged expression's free inputs.  The sources are what training starts from:

- a ``tf.Variable`` / ``get_variable`` is a *weight*, with the initializer the code gives it;
- a ``keras.Sequential`` of ``Dense`` layers called on a value is unrolled into its layers'
  ``matmul + bias`` and activation, each kernel and bias a weight with Keras's default (or the
  declared) initializer;
- a placeholder, or a parameter of the function that computes the loss, is *data*: what the
  program feeds it (``feed_dict`` values, the arguments of the training step's call sites) is
  read as a recipe of its NumPy code (``analysis/datagen.py``) or, failing that, its range.

The result is a :class:`ProgramSpec`, which ``training_rung.py`` renders into a script and
runs.  Whatever the slice could not read from the code is listed in ``assumed``, and the
verdict says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.module import Binding, Scope, contains
from ..analysis.names import dotted_name
from .slicer import Slicer

MAX_DATA_ELEMENTS = 20_000_000
DEFAULT_BATCH = 32

# Keras's default initializers, and the TF initializer calls a weight may be made with
_INIT_CALLS = {
    "zeros": "zeros",
    "ones": "ones",
    "normal": "normal",
    "random_normal": "normal",
    "truncated_normal": "truncated_normal",
    "uniform": "uniform",
    "random_uniform": "uniform",
    "constant": "constant",
    "fill": "constant",
}
_INITIALIZERS = {
    "glorot_normal_initializer": "glorot_normal",
    "glorot_uniform_initializer": "glorot_uniform",
    "GlorotNormal": "glorot_normal",
    "GlorotUniform": "glorot_uniform",
    "zeros_initializer": "zeros",
    "Zeros": "zeros",
    "ones_initializer": "ones",
    "Ones": "ones",
    "he_normal": "he_normal",
    "HeNormal": "he_normal",
    "random_normal_initializer": "normal",
    "RandomNormal": "normal",
    "truncated_normal_initializer": "truncated_normal",
    "TruncatedNormal": "truncated_normal",
    "constant_initializer": "constant",
    "Constant": "constant",
}


@dataclass
class ProgramSpec:
    """Plain data the training rung replays: one objective of the program, from its sources."""

    style: str  # "tf1" (minimize/compute_gradients) or "tape"
    loss: dict  # the objective's tree
    term: dict  # the flagged expression's tree (a subtree of ``loss``)
    weights: dict[str, dict]  # input name -> {"init": ..., "shape": [...], ...}
    data: dict[str, dict]  # input name -> {"recipe" | "range", "shape", "rows", "batch"}
    optimizer: dict  # ``rules.training.optimizer_spec``
    dtype: str
    path: str
    line: int
    objective_line: int
    assumed: list[str] = field(default_factory=list)
    whole: bool = False  # the finding is about the whole run (its optimizer), not one term
    span: list[int] = field(default_factory=list)  # the flagged code: line, col, end line, col
    control: float = 10.0  # the control run's learning rate is lr / control
    control_text: str = "lr / 10"

    def as_probe(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Objective:
    loss: cst.BaseExpression
    scope: Scope
    order: int
    optimizer: cst.Call | str
    style: str
    line: int


# ------------------------------------------------------------------ objectives


def _bound_call(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> cst.Call | None:
    """The call ``node`` is, or the call its name was last assigned."""
    if isinstance(node, cst.Call):
        return node
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.index is None and isinstance(found.value, cst.Call):
            return found.value
    return None


def _optimizer(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> cst.Call | None:
    call = _bound_call(ctx, node, scope, order)
    if call is None:
        return None
    return call if (ctx.op(call) or "").startswith("optimizer:") else None


def _is_tape(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> bool:
    """Is ``node`` a ``tf.GradientTape``: made by a call, or bound by ``with ... as tape``?"""
    call = _bound_call(ctx, node, scope, order)
    if call is not None:
        return (ctx.info.imports.resolve(call.func) or "").endswith("GradientTape")
    if not isinstance(node, cst.Name):
        return False
    for w in _withs(scope.node):
        for item in w.items:
            bound = item.asname.name if item.asname is not None else None
            if isinstance(bound, cst.Name) and bound.value == node.value:
                made = item.item
                if isinstance(made, cst.Call):
                    return (ctx.info.imports.resolve(made.func) or "").endswith("GradientTape")
    return False


def _withs(root: cst.CSTNode) -> list[cst.With]:
    found: list[cst.With] = []

    class _Visitor(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            found.append(node)

    root.visit(_Visitor())
    return found


def objectives(ctx: Context, positions) -> list[Objective]:
    """Every loss the module hands to an optimizer, with that optimizer's constructor."""
    found: list[Objective] = []
    for site in ctx.info.calls:
        func = site.node.func
        if not isinstance(func, cst.Attribute) or not site.node.args:
            continue
        method = func.attr.value
        pos = positions.get(site.node)
        line = pos.start.line if pos else 0
        loss = ctx.arg(site.node, 0, "loss")
        if loss is None:
            continue
        if method in ("minimize", "compute_gradients"):
            opt = _optimizer(ctx, func.value, site.scope, site.order)
            if opt is not None:
                found.append(Objective(loss, site.scope, site.order, opt, "tf1", line))
        elif method == "gradient" and _is_tape(ctx, func.value, site.scope, site.order):
            opt = _applied_optimizer(ctx, site.scope, site.node)
            if opt is not None:
                found.append(Objective(loss, site.scope, site.order, opt, "tape", line))
    return found


def _applied_optimizer(ctx: Context, scope: Scope, gradient: cst.Call | None = None) -> cst.Call | None:
    """The optimizer that applies this tape's gradients: the ``apply_gradients`` of the same
    function that reads the name the gradients are assigned to (a GAN has two of each), or
    the function's only one."""
    target = _assigned_name(ctx, scope, gradient) if gradient is not None else None
    applied = []
    for site in ctx.info.calls:
        func = site.node.func
        if site.scope is scope and isinstance(func, cst.Attribute) and func.attr.value == "apply_gradients":
            reads = {n.value for n in _names_in(site.node)}
            applied.append((target in reads, _optimizer(ctx, func.value, site.scope, site.order)))
    mine = [opt for hit, opt in applied if hit]
    if mine:
        return mine[0]
    return applied[0][1] if len(applied) == 1 else None


def _assigned_name(ctx: Context, scope: Scope, call: cst.Call) -> str | None:
    """``grads = tape.gradient(...)``: ``grads``."""
    site = next((s for s in ctx.info.calls if s.node is call), None)
    stmt = site.statement if site is not None else None
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and stmt.value is call:
        target = stmt.targets[0].target
        return target.value if isinstance(target, cst.Name) else None
    return None


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(_Visitor())
    return found


# ------------------------------------------------------------------ sources


def _ints(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int) -> list | None:
    """A literal shape: a list/tuple of ints, module constants or None."""
    if node is None:
        return None
    if not isinstance(node, (cst.List, cst.Tuple)):
        c = ctx.ev.value(node, scope, order).const
        return [int(c)] if c is not None and float(c).is_integer() else None
    out: list = []
    for e in node.elements:
        if isinstance(e.value, cst.Name) and e.value.value == "None":
            out.append(None)
            continue
        c = ctx.ev.value(e.value, scope, order).const
        if c is None or not float(c).is_integer():
            return None
        out.append(int(c))
    return out


def _number(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int) -> float | None:
    """A number the code fixes: a constant, or host math on literals (``np.log(4.0)``)."""
    if node is None:
        return None
    const = ctx.ev.value(node, scope, order).const
    if const is None:
        const = Slicer(ctx, {})._host_constant(node)
    return None if const is None else float(const)


def _leaf(ctx: Context, call: cst.Call) -> str:
    return (ctx.info.imports.resolve(call.func) or ctx.code(call.func)).rsplit(".", 1)[-1]


def initializer(ctx: Context, call: cst.Call, scope: Scope, order: int) -> dict | None:
    """How a weight starts: ``tf.Variable(tf.random.truncated_normal([784, 256], stddev=0.1))``
    or ``get_variable("w", [4, 16], initializer=glorot_normal_initializer())``."""
    name = (ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
    if name == "get_variable":
        shape = _ints(ctx, ctx.arg(call, 1, "shape"), scope, order)
        init = ctx.arg(call, 3, "initializer")
        spec = {"init": "glorot_uniform"}  # get_variable's default
        if isinstance(init, cst.Call):
            kind = _INITIALIZERS.get(_leaf(ctx, init))
            if kind is None:
                return None
            spec = {"init": kind, **_init_params(ctx, init, scope, order)}
        elif init is not None:
            return None
        return {**spec, "shape": shape} if shape is not None else None
    value = ctx.arg(call, 0, "initial_value")
    if isinstance(value, cst.Call):
        kind = _INIT_CALLS.get(_leaf(ctx, value))
        if kind is None:
            return None
        if kind == "constant":
            c = _number(ctx, value.args[0].value, scope, order) if value.args else None
            literal = _ints_or_floats(ctx, value.args[0].value if value.args else None, scope, order)
            shape = _ints(ctx, ctx.arg(value, 2, "shape"), scope, order)
            if c is not None:
                return {"init": "constant", "value": c, "shape": shape or []}
            if literal is not None:
                return {"init": "literal", "value": literal, "shape": [len(literal)]}
            return None
        shape = _ints(ctx, ctx.arg(value, 0, "shape"), scope, order)
        if shape is None:
            return None
        return {"init": kind, "shape": shape, **_init_params(ctx, value, scope, order)}
    if value is not None:
        literal = _ints_or_floats(ctx, value, scope, order)
        if literal is not None:
            return {"init": "literal", "value": literal, "shape": [len(literal)]}
        c = _number(ctx, value, scope, order)
        if c is not None:
            return {"init": "constant", "value": c, "shape": []}
    return None


def _ints_or_floats(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int):
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    out = [_number(ctx, e.value, scope, order) for e in node.elements]
    return out if out and None not in out else None


def _init_params(ctx: Context, call: cst.Call, scope: Scope, order: int) -> dict:
    keys = {"mean": 1, "stddev": 2, "minval": 1, "maxval": 2, "value": 0}
    out = {}
    for key, index in keys.items():
        node = next((a.value for a in call.args if a.keyword and a.keyword.value == key), None)
        if node is None and key in ("mean", "stddev") and _leaf(ctx, call).endswith("normal"):
            positional = [a for a in call.args if a.keyword is None]
            node = positional[index].value if len(positional) > index else None
        v = _number(ctx, node, scope, order)
        if v is not None:
            out[key] = v
    return out


# ------------------------------------------------------------------ the slice


class ProgramSlicer:
    """A :class:`Slicer` whose sources are the program's weights, data and models."""

    def __init__(self, ctx: Context, positions) -> None:
        self.ctx = ctx
        self.positions = positions
        self.weights: dict[str, dict] = {}
        self.data: dict[str, dict] = {}
        self.assumed: list[str] = []
        self.bound: dict[int, dict] = {}  # a Keras loss's parameters: what ``fit`` passes them
        self.slicer = Slicer(ctx, positions, substitute=self._source, cut_logits=False, stand_ins=True)
        self.slicer.unpacking = True

    def _source(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int) -> dict | None:
        ctx = self.ctx
        if isinstance(node, cst.Call):
            return self._model_call(node, scope, order, depth)
        if not isinstance(node, cst.Name):
            return None
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            if id(found) in self.bound:
                return self.bound[id(found)]
            if id(found) in self.slicer._args:  # an inlined helper's parameter: its argument
                return None
            return self._parameter(node.value, found, scope)
        if isinstance(found, Binding) and found.index is not None:
            return self._unpacked(found, depth)
        if not isinstance(found, Binding) or not isinstance(found.value, cst.Call):
            return None
        op = ctx.op(found.value)
        key = f"{node.value}"
        if op == "variable":
            if key not in self.weights:
                init = initializer(ctx, found.value, found.scope, found.at)
                if init is None:
                    self.assumed.append(f"`{node.value}` starts as glorot-uniform")
                    init = {"init": "unknown"}
                self.weights[key] = init
            return {"k": "input", "name": key}
        if op == "placeholder":
            if key not in self.data:
                call = found.value
                shape = _ints(ctx, ctx.arg(call, 1, "shape"), found.scope, found.at)
                self.data[key] = {"shape": shape, "feeds": self._feeds(call)}
            return {"k": "input", "name": key}
        return None

    def _unpacked(self, found: Binding, depth: int) -> dict | None:
        """``mean, var = tf.nn.moments(x, axes)``: the mean and the variance, as the op
        computes them (a reduce_mean over ``axes``, and of the squared deviation)."""
        call = found.value
        if not isinstance(call, cst.Call) or self.ctx.op(call) != "moments" or found.index not in (0, 1):
            return None
        x_node, axes = self.ctx.arg(call, 0, "x"), self.ctx.arg(call, 1, "axes")
        if x_node is None or axes is None:
            return None
        x = self.slicer.tree(x_node, found.scope, found.at, depth + 1)
        axis = self.slicer.tree(axes, found.scope, found.at, depth + 1)
        keep = self.ctx.arg(call, 3, "keepdims")
        keepdims = {"k": "bool", "v": isinstance(keep, cst.Name) and keep.value == "True"}
        kept = {"k": "bool", "v": True}

        def mean(t: dict, keepdims: dict) -> dict:
            return {"k": "call", "op": "reduce_mean", "args": [t, axis, keepdims], "kw": {}}

        if found.index == 0:
            return mean(x, keepdims)
        deviation = {"k": "bin", "op": "-", "l": x, "r": mean(x, kept)}
        return mean({"k": "call", "op": "square", "args": [deviation], "kw": {}}, keepdims)

    # data ---------------------------------------------------------------------------------
    def _feeds(self, placeholder: cst.Call) -> list[dict]:
        """What the module feeds this placeholder: the values of its ``feed_dict`` entries."""
        from ..analysis import feeds

        out = []
        for fed, scope, order in feeds._feed_dicts(self.ctx.ev):
            for element in fed.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.Name):
                    continue
                found = self.ctx.ev.lookup(element.key.value, scope, order)
                if isinstance(found, Binding) and found.value is placeholder:
                    out.append(self._fed(element.value, scope, order))
        return out

    def _fed(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        from ..analysis import feeds

        try:
            from ..analysis import datagen
        except ImportError:  # the recipe reader is optional until it lands
            datagen = None  # type: ignore[assignment]
        if datagen is not None:
            got = datagen.fed_data(self.ctx.ev, node, scope, order)
            if got is not None:
                return {"code": self.ctx.code(node), **got}
        rng = feeds.FeedReader(self.ctx.ev).range(node, scope, order)
        return {"code": self.ctx.code(node), "range": list(rng) if rng is not None else None}

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
                feeds_.append(looped if looped is not None else self._fed(arg, site.scope, site.order))
        if not feeds_:
            return None
        key = f"{name}"
        self.data.setdefault(key, {"shape": None, "feeds": feeds_})
        return {"k": "input", "name": key}

    def _dataset_element(self, arg: cst.BaseExpression, call: cst.Call, scope: Scope) -> dict | None:
        """``for xb, yb in dataset: step(xb, yb)`` with ``dataset =
        tf.data.Dataset.from_tensor_slices((X, y)).shuffle(n).batch(B)``: ``xb`` is a batch
        of ``B`` rows of ``X`` (what ``_fed`` makes of ``X``, picked in batches)."""
        if not isinstance(arg, cst.Name):
            return None
        for loop in _loops(scope.node):
            if not contains(loop.body, call):
                continue
            path = _target_path(loop.target, arg.value)
            if path is None:
                continue
            iterable = loop.iter
            if isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "enumerate" and iterable.args:
                if not path or path[0] != 1:
                    return None
                iterable, path = iterable.args[0].value, path[1:]
            return self._sliced_element(iterable, path, scope)
        return None

    def _sliced_element(self, node: cst.BaseExpression, path: list[int], scope: Scope) -> dict | None:
        batch = None
        order = next((s.order for s in self.ctx.info.calls if s.node is node), 10**9)
        for _ in range(12):
            if isinstance(node, cst.Name):
                found = self.ctx.ev.lookup(node.value, scope, order)
                if not isinstance(found, Binding) or found.value is None or found.index is not None:
                    return None
                node, scope, order = found.value, found.scope, found.at
                continue
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                return None
            method = node.func.attr.value
            if method == "from_tensor_slices" and node.args:
                items = node.args[0].value
                for i in path:
                    if not isinstance(items, (cst.Tuple, cst.List)) or i >= len(items.elements):
                        return None
                    items = items.elements[i].value
                fed = self._fed(items, scope, order)
                return {**fed, "rows": "batch", "batch": batch} if batch else None
            if method == "batch" and node.args:
                b = _number(self.ctx, node.args[0].value, scope, order)
                batch = int(b) if b else None
            elif method not in ("shuffle", "repeat", "take", "prefetch", "cache", "skip"):
                return None
            node = node.func.value
        return None

    # models -------------------------------------------------------------------------------
    def _model_call(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """``net(x)`` of a ``keras.Sequential`` of Dense layers: its layers, unrolled."""
        if not isinstance(call.func, cst.Name) or not call.args:
            return None
        layers = model_layers(self.ctx, call.func, scope, order)
        if layers is None:
            return None
        out = self.slicer.tree(call.args[0].value, scope, order, depth + 1)
        return self.unrolled(call.func.value, layers, out)

    def unrolled(self, model: str, layers: list[dict], out: dict) -> dict | None:
        """The model's Dense layers applied to ``out``, each kernel and bias a weight."""
        if layers[0].get("input_dim") is None and out.get("k") != "input":
            return None  # the first kernel's width is not known from the code
        fan_in: Any = layers[0].get("input_dim")
        for i, layer in enumerate(layers):
            kernel, bias = f"{model}.layers[{i}].kernel", f"{model}.layers[{i}].bias"
            self.weights[kernel] = {
                "init": layer["kernel_initializer"],
                "shape": [fan_in, layer["units"]],
                "fan_in_from": out.get("name") if out.get("k") == "input" and i == 0 else None,
            }
            out = {"k": "call", "op": "matmul", "args": [out, {"k": "input", "name": kernel}], "kw": {}}
            if layer["use_bias"]:
                self.weights[bias] = {**layer.get("bias", {"init": "zeros"}), "shape": [layer["units"]]}
                out = {"k": "bin", "op": "+", "l": out, "r": {"k": "input", "name": bias}}
            act = layer["activation"]
            if act not in (None, "linear"):
                out = {"k": "call", "op": act, "args": [out], "kw": {}}
            fan_in = layer["units"]
        return out


def model_layers(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> list[dict] | None:
    """The Dense layers of the model ``node`` names: a ``keras.Sequential([...])``, or a
    functional ``keras.Model(inputs, outputs)`` whose outputs are a chain of Dense calls on a
    ``keras.Input``, made in place or returned by a module function; None for anything else."""
    built = _bound_call(ctx, node, scope, order)
    for _ in range(3):  # model = build(): the helper's returned model
        if built is None:
            return None
        name = ctx.info.imports.resolve(built.func) or ""
        if name.endswith("Sequential") or name.endswith("Model"):
            break
        built = _returned_call(ctx, built)
    if built is None:
        return None
    name = ctx.info.imports.resolve(built.func) or ""
    fn_scope = _scope_of(ctx, built) or scope
    if name.endswith("Sequential"):
        return sequential_layers(ctx, built, fn_scope, order)
    if name.endswith("Model"):
        return functional_layers(ctx, built, fn_scope)
    return None


def _returned_call(ctx: Context, call: cst.Call) -> cst.Call | None:
    """``build()`` of a module function that returns one call: that call."""
    if not isinstance(call.func, cst.Name):
        return None
    scope = ctx.info.functions.get(call.func.value)
    fn = scope.node if scope is not None else None
    if not isinstance(fn, cst.FunctionDef):
        return None
    returns = [n for n in _returns(fn) if n.value is not None]
    if len(returns) != 1 or not isinstance(returns[0].value, cst.Call):
        return None
    return returns[0].value


def _returns(fn: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

    fn.visit(_Visitor())
    return found


def _scope_of(ctx: Context, call: cst.Call) -> Scope | None:
    return next((s.scope for s in ctx.info.calls if s.node is call), None)


def _order_of(ctx: Context, call: cst.Call) -> int:
    return next((s.order for s in ctx.info.calls if s.node is call), 0)


def functional_layers(ctx: Context, model: cst.Call, scope: Scope) -> list[dict] | None:
    """``keras.Model(inputs, outputs)`` with ``outputs = Dense(...)(Dense(...)(inputs))``."""
    outputs = ctx.arg(model, 1, "outputs")
    order = _order_of(ctx, model)
    chain: list[cst.Call] = []
    node = outputs
    for _ in range(32):
        call = _bound_call(ctx, node, scope, order) if node is not None else None
        if call is None:
            return None
        kind = _leaf(ctx, call)
        if kind in ("Input", "InputLayer"):
            shape = _ints(ctx, ctx.arg(call, 0, "shape"), scope, _order_of(ctx, call))
            layers = [dense_layer(ctx, c, scope, order) for c in reversed(chain)]
            if not layers or None in layers:
                return None
            out = [layer for layer in layers if layer is not None]
            out[0]["input_dim"] = shape[-1] if shape else None
            return out
        if not isinstance(call.func, cst.Call) or not call.args:
            return None  # a layer applied to a value: Dense(...)(x)
        chain.append(call.func)
        node = call.args[0].value
        order = _order_of(ctx, call)
    return None


def dense_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int) -> dict | None:
    """A ``Dense(units, activation=...)`` layer as plain data, or None for another layer."""
    if _leaf(ctx, layer) != "Dense":
        return None
    units = _number(ctx, ctx.arg(layer, 0, "units"), scope, order)
    act = ctx.arg(layer, 1, "activation")
    activation = None
    if isinstance(act, cst.SimpleString):
        activation = str(act.evaluated_value)
    elif act is not None and not (isinstance(act, cst.Name) and act.value == "None"):
        activation = (ctx.info.imports.resolve(act) or "").rsplit(".", 1)[-1] or "?"
    if units is None or (activation is not None and not _traceable_activation(activation)):
        return None
    init = ctx.arg(layer, -1, "kernel_initializer")
    kernel = str(init.evaluated_value) if isinstance(init, cst.SimpleString) else "glorot_uniform"
    if init is not None and not isinstance(init, cst.SimpleString):
        return None  # an initializer object: not read yet
    bias = _bias_initializer(ctx, ctx.arg(layer, -1, "bias_initializer"), scope, order)
    if bias is None:
        return None
    use_bias = ctx.arg(layer, -1, "use_bias")
    return {
        "units": int(units),
        "activation": activation,
        "kernel_initializer": kernel,
        "use_bias": not (isinstance(use_bias, cst.Name) and use_bias.value == "False"),
        "bias": bias,
    }


def _traceable_activation(name: str) -> bool:
    """A Keras activation string the run can apply: ``"linear"``, or a registered op of that
    name that traces (``"relu"``, ``"sigmoid"``, ``"softmax"``...)."""
    op = ops.REGISTRY.get(name)
    return name == "linear" or (op is not None and bool(op.trace))


def _bias_initializer(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int) -> dict | None:
    """A Dense bias's start: zeros (Keras's default), ``Constant(c)``, or ``Constant(v)`` of a
    value of the data (``float(counts.mean())``: its recipe, replayed with the data)."""
    if node is None:
        return {"init": "zeros"}
    if isinstance(node, cst.SimpleString):
        return {"init": "zeros"} if node.evaluated_value == "zeros" else None
    if not isinstance(node, cst.Call) or _leaf(ctx, node) not in ("Constant", "constant_initializer"):
        return None
    value = ctx.arg(node, 0, "value")
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("float", "int") and value.args:
        value = value.args[0].value  # float(counts.mean()): the builtin only converts
    c = _number(ctx, value, scope, order)
    if c is not None:
        return {"init": "constant", "value": c}
    try:
        from ..analysis import datagen
    except ImportError:
        return None
    recipe = datagen.data_recipe(ctx.ev, value, scope, order) if value is not None else None
    return {"init": "constant", "recipe": recipe} if recipe is not None else None


def sequential_layers(ctx: Context, built: cst.Call, scope: Scope, order: int) -> list[dict] | None:
    """The Dense layers of ``keras.Sequential([...])``, or None for any other layer or model."""
    if not built.args:
        return None
    items = built.args[0].value
    if not isinstance(items, (cst.List, cst.Tuple)):
        return None
    layers: list[dict] = []
    input_dim = None
    for e in items.elements:
        layer = e.value
        if not isinstance(layer, cst.Call):
            return None
        kind = _leaf(ctx, layer)
        if kind in ("Input", "InputLayer"):
            shape = _ints(ctx, ctx.arg(layer, 0, "shape", "input_shape"), scope, order)
            input_dim = shape[-1] if shape else None
            continue
        dense = dense_layer(ctx, layer, scope, order)
        if dense is None:
            return None
        shape = _ints(ctx, ctx.arg(layer, -1, "input_shape", "input_dim"), scope, order)
        if shape and not layers:
            input_dim = shape[-1]
        layers.append(dense)
    if not layers:
        return None
    layers[0]["input_dim"] = input_dim
    return layers


def _loops(root: cst.CSTNode) -> list[cst.For]:
    found: list[cst.For] = []

    class _Visitor(cst.CSTVisitor):
        def visit_For(self, node: cst.For) -> None:
            found.append(node)

    root.visit(_Visitor())
    return found


def _target_path(target: cst.BaseExpression, name: str) -> list[int] | None:
    """Where ``name`` sits in a loop target: ``i, (xb, yb)`` gives [1, 0] for ``xb``."""
    if isinstance(target, cst.Name):
        return [] if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for i, e in enumerate(target.elements):
            sub = _target_path(e.value, name)
            if sub is not None:
                return [i, *sub]
    return None


def _function_of(scope: Scope) -> cst.FunctionDef | None:
    node = scope.node
    return node if isinstance(node, cst.FunctionDef) else None


def _param_index(fn: cst.FunctionDef, param: cst.Param) -> int:
    params = list(fn.params.params)
    return params.index(param) if param in params else -1


# ------------------------------------------------------------------ the spec


def walk_nodes(tree: Any):
    """Every dict node of a tree, depth first."""
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from walk_nodes(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from walk_nodes(item)


def _contains_node(tree: dict, line: int, col: int) -> bool:
    return _subtree(tree, line, col) is not None


def _subtree(tree: dict, line: int, col: int, kind: str | None = None) -> dict | None:
    """The node of a slice made from the code at (line, col): the term as the objective
    computes it, its helpers' parameters bound to what the objective passes them.  Nodes that
    start at one place (``log(a) - b`` and its ``log(a)``) are told apart by their kind."""
    at = [n for n in walk_nodes(tree) if n.get("line") == line and n.get("col") == col]
    same = [n for n in at if kind is None or n.get("k") == kind]
    return (same or at or [None])[0]


def _kind(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Call):
        return "call"
    if isinstance(node, cst.BinaryOperation):
        return "bin"
    return None


KERAS_BATCH = 32  # ``fit``'s default batch_size


def fit_objectives(ctx: Context, positions) -> list[tuple[Objective, ProgramSlicer, dict]]:
    """``model.compile(loss=fn, optimizer=...)`` with ``model.fit(x, y)``: the batch mean of
    ``fn(y, model(x))``, as Keras computes it, with the model's Dense layers unrolled."""
    out = []
    for site in ctx.info.calls:
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
            continue
        loss_fn = ctx.arg(site.node, 1, "loss")
        if not isinstance(loss_fn, cst.Name) or loss_fn.value not in ctx.info.functions:
            continue
        fn_scope = ctx.info.functions[loss_fn.value]
        fn = fn_scope.node
        returns = [r for r in _returns(fn) if r.value is not None] if isinstance(fn, cst.FunctionDef) else []
        if len(returns) != 1 or len(fn.params.params) < 2:  # type: ignore[union-attr]
            continue
        layers = model_layers(ctx, func.value, site.scope, site.order)
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
        opt = _compiled_optimizer(ctx, ctx.arg(site.node, 0, "optimizer"), site.scope, site.order)
        x = ctx.arg(fit.node, 0, "x") if fit else None
        y = ctx.arg(fit.node, 1, "y") if fit else None
        if layers is None or fit is None or opt is None or x is None or y is None:
            continue
        batch_node = ctx.arg(fit.node, 2, "batch_size")
        batch = _number(ctx, batch_node, fit.scope, fit.order) if batch_node is not None else KERAS_BATCH
        ps = ProgramSlicer(ctx, positions)
        names = []
        for node in (x, y):
            name = ctx.code(node)
            feed = {**ps._fed(node, fit.scope, fit.order), "rows": "batch", "batch": int(batch or KERAS_BATCH)}
            ps.data.setdefault(name, {"shape": None, "feeds": [feed]})
            names.append(name)
        y_pred = ps.unrolled(receiver, layers, {"k": "input", "name": names[0]})
        if y_pred is None:
            continue
        params = fn.params.params  # type: ignore[union-attr]
        ps.bound = {id(params[0]): {"k": "input", "name": names[1]}, id(params[1]): y_pred}
        ret = returns[0]
        order = next((s.order for s in ctx.info.calls if s.statement is ret), 10**9)
        per_example = ps.slicer.tree(ret.value, fn_scope, order)  # type: ignore[arg-type]
        loss = {"k": "call", "op": "reduce_mean", "args": [per_example], "kw": {}}
        if ps.slicer.truncated or ps.slicer.unsupported or ps.slicer.inputs:
            continue
        pos = positions.get(site.node)
        obj = Objective(ret.value, fn_scope, order, opt, "fit", pos.start.line if pos else 0)  # type: ignore[arg-type]
        out.append((obj, ps, loss))
    return out


def _compiled_optimizer(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int):
    """``compile(optimizer=...)``: an optimizer constructor, or a Keras name (``"adam"``)."""
    from ..optimizers import OPTIMIZERS

    if isinstance(node, cst.SimpleString):
        name = str(node.evaluated_value).lower()
        return name if name in OPTIMIZERS else None
    return _optimizer(ctx, node, scope, order) if node is not None else None


def _sliced(ctx: Context, positions) -> list[tuple[Objective, ProgramSlicer, dict]]:
    """Each objective of the module, sliced once to its sources (a cut slice is left out)."""
    out = fit_objectives(ctx, positions)
    for obj in objectives(ctx, positions):
        ps = ProgramSlicer(ctx, positions)
        loss = ps.slicer.tree(obj.loss, obj.scope, obj.order)
        # a value the slice reaches no source for (an untraced call) leaves it incomplete
        if not (ps.slicer.truncated or ps.slicer.unsupported or ps.slicer.inputs):
            out.append((obj, ps, loss))
    return out


def optimizer_of(ctx: Context, obj: Objective) -> dict | None:
    """The objective's optimizer as the verifier rebuilds it (``compile(optimizer="adam")``:
    Keras's defaults)."""
    from ..rules.training import optimizer_spec

    if isinstance(obj.optimizer, str):
        return {"optimizer": obj.optimizer, "tf1": False, "learning_rate": 0.001,
                "momentum": 0.0, "clipnorm": None}  # fmt: skip
    opt_site = next((s for s in ctx.info.calls if s.node is obj.optimizer), None)
    return optimizer_spec(ctx, obj.optimizer, opt_site) if opt_site is not None else None


def training_spec(ctx: Context, hit: Hit, positions, dtype: str) -> ProgramSpec | None:
    """For a finding on an optimizer (its learning rate, its epsilon): the objective it
    trains, whole, as the term the run watches (a loss that goes non-finite or diverges)."""
    pos = positions.get(hit.node)
    at = (pos.start.line, pos.start.column + 1) if pos else (0, 0)
    sliced = ctx.fact("program_objectives", lambda: _sliced(ctx, positions))
    for obj, ps, loss in sliced:
        if obj.optimizer is not hit.node and not _contains_node(loss, *at):
            continue  # neither this objective's optimizer nor a part of its loss
        optimizer = optimizer_of(ctx, obj)
        if optimizer is None:
            continue
        return ProgramSpec(
            style=obj.style,
            loss=loss,
            term=loss,
            weights=dict(ps.weights),
            data=dict(ps.data),
            optimizer=optimizer,
            dtype=dtype,
            path=getattr(ctx, "path", ""),
            line=pos.start.line if pos else 0,
            objective_line=obj.line,
            assumed=list(ps.assumed),
            whole=True,
        )
    return None


def program_spec(ctx: Context, hit: Hit, positions, dtype: str) -> ProgramSpec | None:
    """The training rung's spec for a finding inside an optimized objective, or None."""
    pos = positions.get(hit.node)
    if pos is None or not isinstance(hit.node, cst.BaseExpression):
        return None
    line, col = pos.start.line, pos.start.column + 1  # the slicer's 1-based columns
    sliced = ctx.fact("program_objectives", lambda: _sliced(ctx, positions))
    # the objective the term is a part of, else one whose weights and data it is computed from
    ranked = sorted(sliced, key=lambda t: not _contains_node(t[2], line, col))
    for obj, ps, loss in ranked:
        site = hit.site
        before = (set(ps.weights), set(ps.data), set(ps.slicer.inputs))
        ps.slicer.budget()
        term = _subtree(loss, line, col, _kind(hit.node))
        if term is None:  # not a part of the loss: one computed from its weights and data?
            term = ps.slicer.tree(hit.node, site.scope, site.order)
            if ps.slicer.unsupported or ps.slicer.truncated:
                continue
            read = {n.get("name") for n in walk_nodes(term) if n.get("k") == "input"}
            if not read & before[0] or set(ps.slicer.inputs) - before[2]:
                continue  # no weight of this objective in it, or a value it does not reach
            if not read <= before[0] | before[1]:
                continue
        optimizer = optimizer_of(ctx, obj)
        if optimizer is None:
            continue
        return ProgramSpec(
            style=obj.style,
            loss=loss,
            term=term,
            weights=dict(ps.weights),
            data=dict(ps.data),
            optimizer=optimizer,
            dtype=dtype,
            path=getattr(ctx, "path", ""),
            line=line,
            objective_line=obj.line,
            assumed=list(ps.assumed),
            span=[line, col, pos.end.line, pos.end.column + 1],
        )
    return None


def attach_program(
    probe: dict[str, Any] | None, ctx: Context, hit: Hit, positions, code: str
) -> dict[str, Any] | None:
    """The probe, given the objective its finding feeds (the training rung's spec).  A finding
    whose rule has no witness probe gets one that only the training rung judges."""
    dtype = str((probe or {}).get("dtype") or ctx.dtype(hit.site))
    if probe is not None and probe.get("kind") == "train":
        if probe.get("control") == "epsilon" or probe.get("recipe") == "clipping":
            return probe  # their control is not the learning rate: the recipe's own run decides
        spec = training_spec(ctx, hit, positions, dtype)
        batch = probe.get("batch")
        if spec is not None and str(probe.get("recipe", "")).startswith("summed") and batch:
            spec.control = float(batch)  # the batch mean's step: lr / batch
            spec.control_text = f"lr / {int(batch)} (the step of the batch mean)"
    elif probe is None or probe.get("kind", "expr") == "expr":
        spec = program_spec(ctx, hit, positions, dtype)
    else:
        return probe
    if spec is None:
        return probe
    if probe is None:
        probe = {"kind": "program", "rule": code, "dtype": dtype, "path": spec.path, "line": spec.line}
    probe["program"] = spec.as_probe()
    return probe
