"""Models the program defines as classes, read for the training rung (static side, no TF import).

``model = Net(64)`` of a module class based on ``keras.Model``/``keras.layers.Layer`` or
``tf.Module``, then ``model(x)``: the call runs the class's ``call`` (Keras) or ``__call__``
(``tf.Module``) with ``self`` the instance.  When that method is straight-line code, the program
slice follows it like a helper, with the constructor's arguments bound to ``__init__``'s
parameters, so that ``self.w = tf.Variable(...)`` and ``self.dense = Dense(units)`` read as the
instance's own weights and layers.  Anything else is not followed, and the slice stays cut.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import libcst as cst

from ... import ops
from ..context import Context
from ..module import Binding, ClassInfo, Scope, literal_item
from ..names import descendants
from . import program_modules
from .program_einsum import concat_width, einsum_width
from .program_inits import _number, initializer
from .program_inline import inlined
from .program_modules import Where
from .program_repeated import repeated_item
from .program_sources import dense_layer, dropout_layer, sequential_layers
from .program_weights import added_weight, layer_weight
from .slicer import Slicer
from .tools import Argument, bind_arguments, straight_line

# The framework bases whose instances are called through a method the class defines
_CALLED_THROUGH = {"Model": "call", "Layer": "call", "Module": "__call__"}


@dataclass
class Instance:
    """One object the program made from a class of its module."""

    name: str  # the name the program binds it to: its weights are named after it
    cls: ClassInfo
    method: Scope  # the method a call of the object runs
    made: cst.Call  # the constructor call
    scope: Scope  # where the constructor call is
    order: int
    module: Where | None = None  # the module the class is in, when it is imported
    caller: Where | None = None  # ... and the module the constructor call is in
    # a layer's input shape, ``[None, width]``, when the slice knows what it is called on (what
    # Keras passes its ``build``; a str width: that of the data it is drawn as)
    input_shape: list | None = None


def instance(
    ctx: Context, node: cst.Name, scope: Scope, order: int, reader: Slicer | None = None
) -> Instance | None:
    """The object ``node`` names when it is made by a module class called through a
    straight-line method, else None.  With the ``reader`` of a program slice, also by a
    class imported from another module of the project."""
    found = ctx.ev.lookup(node.value, scope, order)
    if not isinstance(found, Binding) or found.index is not None:
        return None
    made = found.value
    if not isinstance(made, cst.Call):
        return None
    return made_instance(ctx, made, node.value, found.scope, found.at, reader)


def made_instance(
    ctx: Context,
    made: cst.Call,
    name: str,
    scope: Scope,
    order: int,
    reader: Slicer | None = None,
    input_shape: list | None = None,
) -> Instance | None:
    """The object the constructor call ``made`` makes (at ``scope``, ``order``), named
    ``name`` (its weights are named after it): as :func:`instance`, also for one that no name
    holds (a layer made inside a ``Sequential``'s list)."""
    if not isinstance(made.func, (cst.Name, cst.Attribute)):
        return None
    cls = ctx.info.classes.get(made.func.value) if isinstance(made.func, cst.Name) else None
    module = caller = None
    if cls is None and reader is not None and reader.across_modules:
        imported = program_modules.imported_class(ctx, made.func)
        if imported is not None:
            (cls, module), caller = imported, reader.here()
    if cls is None:
        return None
    method = _called_method(cls)
    if method is None:
        return None
    fn = method.node
    if not isinstance(fn, cst.FunctionDef) or not straight_line(fn, unpacking=True):
        return None
    if len(method.returns) != 1:
        return None
    return Instance(name, cls, method, made, scope, order, module, caller, input_shape)


def _called_method(cls: ClassInfo) -> Scope | None:
    """The method a call of the class's objects runs: one of TensorFlow's or Keras's bases
    (resolved through the imports) names it."""
    for base in cls.bases:
        if base.split(".", 1)[0] not in ("tf", "keras"):  # normalised import paths
            continue
        method = _CALLED_THROUGH.get(base.rsplit(".", 1)[-1])
        if method is not None:
            return cls.method_scopes.get(method)
    return None


def method_arguments(
    fn: cst.FunctionDef, call: cst.Call, scope: Scope, order: int, callee: int, frame: str
) -> dict[int, Argument] | None:
    """Each parameter of the method ``fn`` after ``self``, bound to what ``call`` passes it."""
    params = fn.params
    if params.posonly_params or not params.params:
        return None
    trimmed = fn.with_changes(params=params.with_changes(params=params.params[1:]))
    return bind_arguments(trimmed, call, scope, order, callee, frame)


def init_arguments(inst: Instance, frame: str) -> dict[int, Argument] | None:
    """``__init__``'s parameters bound to the constructor call's arguments (no ``__init__``:
    nothing to bind)."""
    init = inst.cls.method_scopes.get("__init__")
    if init is None:
        return {}
    assert isinstance(init.node, cst.FunctionDef)
    args = method_arguments(init.node, inst.made, inst.scope, inst.order, id(init), frame)
    if args is None or inst.caller is None:
        return args
    return {k: replace(a, module=inst.caller) for k, a in args.items()}


def attribute(inst: Instance, node: cst.BaseExpression) -> Binding | None:
    """The one assignment of ``self.<attr>`` in ``__init__`` that ``node`` reads (or, for a
    Keras layer or model, in a ``build`` of straight statements, which Keras runs before the
    first ``call``), or None (not an attribute of the instance, or assigned more than once or
    elsewhere)."""
    if not (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == inst.method.self_name
    ):
        return None
    attr = node.attr.value
    bindings = [*inst.cls.attrs.get(attr, ()), *inst.cls.unpacked_attrs.get(attr, ())]
    made_in = [inst.cls.method_scopes.get("__init__"), _build(inst)]
    if len(bindings) != 1 or not any(bindings[0].scope is m for m in made_in if m is not None):
        return None
    found = bindings[0]
    return found if found.value is not None else None


def _build(inst: Instance) -> Scope | None:
    """The Keras ``build(self, input_shape)`` of a class called through ``call``, when its
    body runs every statement once (no branch, loop, ``with`` or nested definition)."""
    scope = inst.cls.method_scopes.get("build")
    fn = scope.node if scope is not None else None
    if not isinstance(fn, cst.FunctionDef) or inst.method.node is fn:
        return None
    if not isinstance(inst.method.node, cst.FunctionDef) or inst.method.node.name.value != "call":
        return None
    if fn.decorators or len(fn.params.params) != 2:
        return None
    branching = (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.FunctionDef, cst.Lambda)
    return None if any(isinstance(n, branching) for n in descendants(fn.body)) else scope


def made_variable(ctx: Context, found: Binding) -> cst.Call | None:
    """The ``tf.Variable(...)`` call an attribute's assignment makes: ``self.w =
    tf.Variable(...)``, or an item of what a plain module helper returns (``self.w, self.b =
    dense(n_in, n_out)`` with ``return tf.Variable(...), tf.Variable(...)``), read with the
    helper's parameters replaced by the call's arguments."""
    value = found.value
    if not isinstance(value, cst.Call):
        return None
    if found.index is not None:
        if ctx.op(value) is not None:
            return None
        made = inlined(ctx, value, found.scope, found.at)
        value = literal_item(made, found.index) if made is not None else None
    elif ctx.op(value) is None:  # self.w = weight(shape): the helper's tf.Variable, inlined
        value = inlined(ctx, value, found.scope, found.at)
    if isinstance(value, cst.Call) and ctx.op(value) == "variable":
        return value
    return None


# ops whose output is as wide as their first input (a draw shaped like it, when not widened)
SAME_WIDTH = ops.SHAPE_KEEPING | {"normal_draw"}


def width(tree: Any, weights: dict[str, dict], data: dict[str, dict]) -> int | str | None:
    """The last dimension of a slice's value: a number, the name of the data it is the width
    of (known when the run draws the data), or None when the code does not say."""
    if not isinstance(tree, dict):
        return None
    kind = tree.get("k")
    if kind == "input":
        name = tree.get("name")
        return name if name in data else None
    if kind == "call" and tree.get("op") == "matmul" and len(tree.get("args", [])) == 2:
        kernel = tree["args"][1]
        shape = weights.get(kernel.get("name", ""), {}).get("shape") or []
        return shape[-1] if shape and isinstance(shape[-1], int) else None
    if kind == "call" and tree.get("op") == "normal_draw" and len(tree.get("args", [])) == 4:
        return int(tree["args"][3]["v"])  # a draw of its own width, on the value's rows
    if kind == "call" and tree.get("op") in SAME_WIDTH and tree.get("args"):
        return width(tree["args"][0], weights, data)
    if kind == "call" and tree.get("op") == "einsum_pair":
        return einsum_width(tree, lambda t: width(t, weights, data))
    if kind == "call" and tree.get("op") == "concat":
        return concat_width(tree, lambda t: width(t, weights, data), data)
    if kind == "call" and tree.get("op") == "embedding_lookup" and tree.get("args"):
        table = weights.get(tree["args"][0].get("name", ""), {}).get("shape") or []
        return table[-1] if table and isinstance(table[-1], int) else None
    if kind == "call" and _leading_axis_reduced(tree):
        return width(tree["args"][0], weights, data)
    if kind == "bin" and tree.get("op") in ("+", "-", "*", "/"):
        sides = [width(tree[s], weights, data) for s in ("l", "r") if tree[s].get("k") != "const"]
        known = [w for w in sides if w is not None]
        ints = [w for w in known if isinstance(w, int)]
        if ints and max(ints) > 1:  # a width of 1 broadcasts against the other side's
            return max(ints)
        named = [w for w in known if isinstance(w, str)]
        return named[0] if named else (ints[0] if ints else None)
    return None


def _leading_axis_reduced(tree: dict) -> bool:
    """A reduction over a literal axis counted from the front, its axis dropped: what the
    slice reads the width of (a layer's input, ``h.shape[1]``) has at least two axes, so the
    reduced one was not the last one (``reduce_sum(share * embed(x), axis=1)`` of a
    ``(batch, months, units)`` value is ``(batch, units)``).  A kept axis may be the last."""
    entry = ops.REGISTRY.get(str(tree.get("op")))
    params = (entry.params or ()) if entry is not None and entry.reduction else ()
    if params[:3] != ("x", "axis", "keepdims"):
        return False
    args, kw = tree.get("args", []), tree.get("kw", {})
    if not args:
        return False
    axis = args[1] if len(args) > 1 else kw.get("axis")
    keep = args[2] if len(args) > 2 else kw.get("keepdims")
    if keep is not None and not (keep.get("k") == "bool" and keep.get("v") is False):
        return False
    v = axis.get("v") if isinstance(axis, dict) and axis.get("k") == "const" else None
    return isinstance(v, (int, float)) and v >= 0


class FollowsModels:
    """The program slice's reading of model objects (mixed into ``ProgramSlicer``): a call of
    an object of a module class follows its method; inside it, ``self.w`` of a
    ``tf.Variable`` is one of the object's weights and ``self.dense(h)`` its Dense layer."""

    ctx: Context
    slicer: Slicer
    weights: dict[str, dict]
    data: dict[str, dict]
    assumed: list[str]
    instances: list[Instance]
    bound: dict[int, dict]
    modes: list[bool]  # Keras's training mode of each model call being followed

    def unrolled(
        self, model: str, layers: list[dict], out: dict, single: bool = False, training=False
    ) -> dict | None:
        """The Dense layers applied to ``out`` (``ProgramSlicer.unrolled``)."""
        raise NotImplementedError

    def training(self, call: cst.Call, scope: Scope, order: int, index: int = 1) -> bool | None:
        """Whether Keras runs the layer or model ``call`` calls in training mode: its
        ``training`` argument when given (a literal, or a parameter bound to one), else the
        mode of the call it runs inside (``fit``: training; a bare call: inference).  None:
        an argument the code does not fix."""
        node = self.ctx.arg(call, index, "training")
        if node is None or (isinstance(node, cst.Name) and node.value == "None"):
            return self.modes[-1]
        if isinstance(node, cst.Name) and node.value in ("True", "False"):
            return node.value == "True"
        tree = self.slicer.peek(node, scope, order)
        if tree.get("k") == "bool":
            return bool(tree.get("v"))
        if tree.get("k") == "const" and tree.get("v") is None:
            return self.modes[-1]
        return None

    def number(self, node: cst.BaseExpression | None, scope: Scope, order: int) -> float | None:
        """A number the code fixes, also through an inlined method's or helper's bound
        parameters (``Dense(hidden)`` in ``__init__(self, hidden)``, made as ``Net(64)``;
        ``[n_in, n_out]`` in ``fc(x, n_in, n_out)``)."""
        c = _number(self.ctx, node, scope, order)
        if c is not None or node is None or not (self.instances or self.slicer._args):
            return c
        of = _last_axis_of(node)  # ``a.shape[1]`` of a helper's input: its width
        weights = dict(self.weights)
        tree = self.slicer.peek(node if of is None else of, scope, order)
        got = width(tree, self.weights, self.data) if of is not None else None
        self.weights = weights  # a weight read on the way is not a weight of the slice
        if of is not None:
            if isinstance(got, str):  # a placeholder: its declared width
                shape = self.data.get(got, {}).get("shape") or []
                got = shape[-1] if len(shape) == 2 else None
            return float(got) if isinstance(got, int) else None
        v = tree.get("v") if tree.get("k") == "const" else None
        return float(v) if isinstance(v, (int, float)) else None

    def _method(
        self,
        made: Instance,
        call: cst.Call,
        scope: Scope,
        order: int,
        depth: int,
        element: int | None = None,
    ) -> dict | None:
        """The object's method, sliced as an inlined helper whose parameters are the call's
        arguments, with ``__init__``'s parameters bound to the constructor's (``element``:
        the item of the tuple it returns that ``mean, log_var = encoder(x)`` unpacks)."""
        fn = made.method.node
        assert isinstance(fn, cst.FunctionDef)
        frame = self.slicer._frame
        params = [p.name.value for p in fn.params.params[1:]]  # Keras passes the rest on
        passed = call  # Keras's ``__call__`` takes ``training`` whether or not ``call`` does
        if fn.name.value == "call" and "training" not in params:
            kept = [a for a in call.args if a.keyword is None or a.keyword.value != "training"]
            passed = call.with_changes(args=kept)
        args = method_arguments(fn, passed, scope, order, id(made.method), frame)
        if args is not None and made.module is not None:  # read where the call is
            args = {k: replace(a, module=self.slicer.here()) for k, a in args.items()}
        at = params.index("training") if "training" in params else -1
        mode = self.training(call, scope, order, at)
        if args is None or mode is None:
            return None
        self.modes.append(mode)
        try:
            return self._follow(made, args, f"{frame}@{id(call)}", depth, element)
        finally:
            self.modes.pop()

    def called_on(self, made: Instance, x: dict, training: bool = True) -> dict | None:
        """The object's method applied to the slice ``x`` (what ``fit`` passes the model, or a
        model passes a layer it stacks): its first parameter is ``x``, a ``training``
        parameter is Keras's mode (True in ``fit``), the others keep their literal defaults."""
        fn = made.method.node
        assert isinstance(fn, cst.FunctionDef)
        params = fn.params.params
        if len(params) < 2:
            return None
        rest = fn.params.with_changes(params=params[2:])
        passed = [
            cst.Arg(cst.Name(str(training)), keyword=cst.Name("training"))
            for p in params[2:]
            if p.name.value == "training"
        ]
        args = bind_arguments(
            fn.with_changes(params=rest),
            cst.Call(cst.Name("fit"), args=passed),
            made.scope,
            0,
            0,
            "",
        )
        if args is None:
            return None
        self.bound[id(params[1])] = x
        self.modes.append(training)
        try:
            return self._follow(made, args, f"@fit{id(made.made)}", 0)
        finally:
            self.modes.pop()
            del self.bound[id(params[1])]

    def _follow(
        self,
        made: Instance,
        args: dict[int, Argument],
        frame: str,
        depth: int,
        element: int | None = None,
        target: tuple[int, cst.BaseExpression] | None = None,
    ) -> dict | None:
        """The method's returned expression (or ``target``, a value of its body, and where it
        is), sliced with ``self`` the object: ``__init__`` bound to its constructor call."""
        s = self.slicer
        if any(i.name == made.name and i.method is made.method for i in self.instances):
            return None  # the object calls itself (its ``train_step`` may call its ``call``)
        init = init_arguments(made, frame)
        if init is None:
            return None
        at, returned = target or made.method.returns[0]
        if element is not None:
            item = literal_item(returned, element)
            if item is None:
                return None
            returned = item
        saved_memo, saved_frame = s.memo, s._frame
        # ``self(x)`` in its ``train_step`` binds ``__init__`` again, for the hook to read on
        outer = {k: s._args[k] for k in (*init, *args) if k in s._args}
        s._args.update(init)
        s._args.update(args)
        s.memo, s._frame = None, frame
        self.instances.append(made)
        try:
            with s.in_module(made.module):
                return s.tree(returned, made.method, at, depth + 1)
        finally:
            self.instances.pop()
            for key in (*init, *args):
                s._args.pop(key, None)
            s._args.update(outer)
            s.memo, s._frame = saved_memo, saved_frame

    def _instance_weight(self, node: cst.Attribute) -> dict | None:
        """``self.w`` of an object being followed, made by ``tf.Variable(...)`` in
        ``__init__``: one of its weights."""
        made = self.instances[-1]
        found = attribute(made, node)
        added = added_weight(self.ctx, found) if found is not None else None
        if found is not None and added is not None:
            return self._added_weight(made, node, found, added)
        value = made_variable(self.ctx, found) if found is not None else None
        if found is None or value is None:
            return None
        key = f"{made.name}.{node.attr.value}"
        if key not in self.weights:
            init = initializer(self.ctx, value, found.scope, found.at, self.number)
            if init is None:
                self.assumed.append(f"`{key}` starts as glorot-uniform")
                init = {"init": "unknown"}
            self.weights[key] = init
        return {"k": "input", "name": key}

    def _added_weight(
        self, made: Instance, node: cst.Attribute, found: Binding, call: cst.Call
    ) -> dict | None:
        """``self.g`` of ``self.g = self.add_weight(...)`` in the layer's ``build`` or
        ``__init__``: one of its weights (``program_weights.py``)."""
        key = f"{made.name}.{node.attr.value}"
        if key not in self.weights:
            read = layer_weight(self.ctx, call, found, self.number, made.input_shape)
            if read is None:
                return None
            spec, assumed = read
            if assumed:
                self.assumed.append(f"`{key}` starts as glorot-uniform")
            self.weights[key] = spec
        return {"k": "input", "name": key}

    def _instance_layer(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """``self.dense(h)`` of a ``Dense`` (or a ``Sequential`` of them) the object made in
        ``__init__``: its layers applied to ``h``."""
        made = self.instances[-1]
        found = attribute(made, call.func)
        if found is None:
            return None
        # ``self.q, self.k = (Dense(8) for _ in range(2))``: each attribute its own layer
        value = found.value if found.index is None else repeated_item(self.ctx, found)
        if not isinstance(value, cst.Call):
            return None
        assert isinstance(call.func, cst.Attribute)
        name = f"{made.name}.{call.func.attr.value}"
        layer = dense_layer(self.ctx, value, found.scope, found.at, self.number)
        layer = layer or dropout_layer(self.ctx, value, found.scope, found.at, self.number)
        if layer is not None:
            layers = [layer]
        elif (self.ctx.info.imports.resolve(value.func) or "").endswith("Sequential"):
            stack = sequential_layers(self.ctx, value, found.scope, found.at, self.number)
            if stack is None:
                return None
            layers = stack
        else:
            return None
        mode = self.training(call, scope, order)
        if mode is None:
            return None
        out = self.slicer.tree(call.args[0].value, scope, order, depth + 1)
        return self.unrolled(name, layers, out, single=layer is not None, training=mode)


def _last_axis_of(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` of ``x.shape[1]``, ``x.shape[-1]`` or ``x.get_shape()[1]``: the width of a matrix
    (a layer's input), None for anything else."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1):
        return None
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return None
    at = index.value
    text = at.value if isinstance(at, cst.Integer) else None
    if isinstance(at, cst.UnaryOperation) and isinstance(at.expression, cst.Integer):
        text = "-" + at.expression.value
    if text not in ("1", "-1"):
        return None
    shape = node.value
    if isinstance(shape, cst.Call) and not shape.args:
        shape = shape.func  # x.get_shape()
    if isinstance(shape, cst.Attribute) and shape.attr.value in ("shape", "get_shape"):
        return shape.value
    return None
