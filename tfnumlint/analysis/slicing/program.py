"""The program's own training, sliced into plain data for the training rung (no TF import).

A finding that feeds an objective the program optimizes (``opt.minimize(loss)``,
``opt.compute_gradients(loss)``, ``tape.gradient(loss, ...)`` beside ``apply_gradients``)
is sliced once more, whole: the objective's tree down to the program's sources instead of to
the flagged expression's free inputs.  The sources are what training starts from:

- a ``tf.Variable`` / ``get_variable`` is a *weight*, with the initializer the code gives it;
- a ``keras.Sequential`` of ``Dense`` layers called on a value is unrolled into its layers'
  ``matmul + bias`` and activation, each kernel and bias a weight with Keras's default (or the
  declared) initializer;
- a TF1 ``tf.layers.dense`` / contrib ``fully_connected`` is such a layer, its weights keyed by
  their scoped name (``tower/h``: two calls of a helper in a ``variable_scope`` share them;
  ``program_tf1.py``);
- a placeholder, or a parameter of the function that computes the loss, is *data*: what the
  program feeds it (``feed_dict`` values, the arguments of the training step's call sites) is
  read as a recipe of its NumPy code (``analysis/datagen.py``) or, failing that, its range.

The result is a :class:`ProgramSpec`, which ``verify/training_rung.py`` renders into a script
and runs.  Whatever the slice could not read from the code is listed in ``assumed``, and the
verdict says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import libcst as cst

from ... import ops
from ..context import Context, Hit
from ..module import Binding, Scope
from ..project_view import ProjectView
from . import program_fit, program_layers, program_models, program_modules, program_tf1
from .contract import walk
from .program_conv import image_call, image_op, image_shape, image_step
from .program_draws import normal_draw
from .program_einsum import einsum_call
from .program_fit import TrainsByFit
from .program_inits import _ints, initializer
from .program_inline import inlined
from .program_models import Instance
from .program_objectives import Objective, objectives, optimizer_of, trained_in_slice
from .program_producers import widened
from .program_recurrent import sequence_layer
from .program_sources import lone_layer, model_layers
from .slicer import Slicer
from .tools import contains_node, drawn_in_loop, subtree_at, tree_kind


@dataclass
class ProgramSpec:
    """Plain data the training rung replays: one objective of the program, from its sources."""

    style: str  # "tf1" (minimize/compute_gradients) or "tape"
    loss: dict  # the objective's tree
    term: dict  # the flagged expression's tree (a subtree of ``loss``)
    weights: dict[str, dict]  # input name -> {"init": ..., "shape": [...], ...}
    data: dict[str, dict]  # input name -> {"recipe" | "range", "shape", "rows", "batch"}
    optimizer: dict  # ``analysis.optimizer_calls.optimizer_spec``
    dtype: str
    path: str
    line: int
    objective_line: int
    assumed: list[str] = field(default_factory=list)
    whole: bool = False  # the finding is about the whole run (its optimizer), not one term
    span: list[int] = field(default_factory=list)  # the flagged code: line, col, end line, col
    control: float = 10.0  # the control run's learning rate is lr / control
    control_text: str = "lr / 10"
    # a claim about the step size: the smaller rates (lr / each) tried when the control breaks
    further: list[float] = field(default_factory=list)
    file: str = ""  # the flagged code's module, when the objective imports it from there
    trained: list[str] | None = None  # the weights the optimizer updates (None: all of them)

    def as_probe(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------ the slice


class ProgramSlicer(TrainsByFit):
    """A :class:`Slicer` whose sources are the program's weights, data and models."""

    def __init__(self, ctx: Context, positions) -> None:
        self.weights: dict[str, dict] = {}
        self.data: dict[str, dict] = {}
        self.assumed: list[str] = []
        self.bound: dict[int, dict] = {}  # a Keras loss's parameters: what ``fit`` passes them
        self._frames: dict[str, list[str]] = {}  # a helper's variable: the calls that made it
        self.slicer = Slicer(
            ctx, positions, substitute=self._source, cut_logits=False, stand_ins=True
        )
        self.slicer.unpacking = True
        self.slicer.across_modules = True  # a model or loss imported from the project
        # tf.layers.dense, in scoped helpers; tf.nn.conv2d, max_pool, dropout
        self.slicer.opens = lambda c, call: program_tf1.opens(c, call) or image_op(c, call)
        self.slicer.scoped_bodies = program_tf1.scoped_body
        self.instances: list[Instance] = []  # the objects whose methods are being followed
        self.modes = [False]  # Keras's training mode: a bare model call runs in inference

    @property
    def ctx(self) -> Context:
        """The module being read (the slicer's: another one inside an imported model or helper)."""
        return self.slicer.ctx

    @ctx.setter
    def ctx(self, ctx: Context) -> None:
        self.slicer.ctx = ctx

    def _source(
        self, node: cst.BaseExpression, scope: Scope, order: int, depth: int
    ) -> dict | None:
        ctx = self.ctx
        if self.step is not None and (item := self.step_value(node, scope, order)) is not None:
            return item  # ``x`` of ``x, y = data`` in a model's own ``train_step``
        if isinstance(node, cst.Call) and ctx.op(node) in ops.DRAWN:
            return self._normal_draw(node, scope, order, depth)
        if isinstance(node, cst.Call) and program_tf1.opens(ctx, node):
            return program_tf1.layer_call(self, node, scope, order, depth)
        if isinstance(node, cst.Call) and ctx.op(node) == "einsum":  # the rung's own einsum
            return einsum_call(ctx, node, scope, order, depth, self.slicer.tree)
        if isinstance(node, cst.Call) and (got := image_call(self, node, scope, order, depth)):
            return got  # tf.nn.conv2d, max_pool, dropout: the rung's image ops
        if isinstance(node, cst.Call):
            return self._model_call(node, scope, order, depth)
        if isinstance(node, cst.Attribute) and self.instances:
            return self._instance_weight(node)
        if isinstance(node, cst.Subscript):  # model(X[idx]): a batch of the program's data
            return self._data(node, scope, order)
        if not isinstance(node, cst.Name):
            return None
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            if id(found) in self.bound:
                return self.bound[id(found)]
            if id(found) in self.slicer._args:  # an inlined helper's parameter: its argument
                return None
            return self._parameter(node.value, found, scope)
        if not isinstance(found, Binding):
            return None
        value = found.value if found.index is None else found.element()
        if found.index is not None and value is None:
            return self._unpacked(found, depth)
        if value is None and found.nested is None:  # for xb, yb in dataset: ... xb ...
            return self._loop_element(node, found.scope)
        if not isinstance(value, cst.Call):  # xb = X[idx]: a batch of the program's data
            return self._data(node, scope, order) if value is not None else None
        if (xent := self.keras_xent(value, found.scope, found.at, depth + 1)) is not None:
            return xent  # ``ce = keras.losses.sparse_categorical_crossentropy(...)``
        op = ctx.op(value)
        key = f"{node.value}"
        if op is None:  # W = weight_variable([784, 10]): the helper's tf.Variable, inlined
            made = inlined(ctx, value, found.scope, found.at)
            if isinstance(made, cst.Call) and ctx.op(made) == "variable":
                value, op = made, "variable"
        if op == "variable":  # its scoped name (``tower/w``), else one per inlined call
            scoped = program_tf1.variable_key(self, value, found.scope, found.at)
            key = scoped or self._weight_key(key, found.scope)
            if key not in self.weights:
                init = initializer(ctx, value, found.scope, found.at, self.number)
                if init is None:
                    self.assumed.append(f"`{key}` starts as glorot-uniform")
                    init = {"init": "unknown"}
                self.weights[key] = init
            return {"k": "input", "name": key}
        if op == "placeholder":
            if key not in self.data:
                call = value
                shape = _ints(ctx, ctx.arg(call, 1, "shape"), found.scope, found.at)
                self.data[key] = {"shape": shape, "feeds": self._feeds(call)}
            return {"k": "input", "name": key}
        if op is None:  # ``p = model(x)``: the model, followed where the name is read
            got = self._model_call(value, found.scope, found.at, depth + 1)
            return got if got or drawn_in_loop(found) else self._data(node, scope, order)
        if op == "einsum":  # ``att = tf.einsum("bld,bd->bl", k, q)``, read where it is
            return einsum_call(ctx, value, found.scope, found.at, depth + 1, self.slicer.tree)
        if (got := image_call(self, value, found.scope, found.at, depth + 1)) is not None:
            return got  # ``h = tf.nn.max_pool(...)``, read where it is
        if op == "random":  # ``eps = tf.random.normal(tf.shape(z))``: one draw per step
            return self._normal_draw(value, found.scope, found.at, depth + 1)
        return None

    def _weight_key(self, name: str, scope: Scope) -> str:
        """A variable a helper makes is a new weight at each call the slice inlines
        (``fc(x, 32)``, then ``fc(h, 1)``): its name, numbered from the second call on."""
        frame = self.slicer._frame
        if scope.kind == "module" or not frame:
            return name
        frames = self._frames.setdefault(name, [])
        if frame not in frames:
            frames.append(frame)
        at = frames.index(frame)
        return name if at == 0 else f"{name}#{at + 1}"

    def _normal_draw(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """A reparameterisation's noise (``program_draws.py``)."""
        return normal_draw(self.ctx, call, scope, order, depth, self.slicer.tree)

    def _unpacked(self, found: Binding, depth: int) -> dict | None:
        """``mean, var = tf.nn.moments(x, axes)``: the mean and the variance, as the op
        computes them (a reduce_mean over ``axes``, and of the squared deviation).
        ``mean, log_var = encoder(x)`` of a model object, or ``var, std = helper(x)`` of a
        plain helper, returning a tuple: the item it unpacks, followed in the method or
        the helper."""
        call = found.value
        if not isinstance(call, cst.Call) or found.index is None:
            return None
        if self.ctx.op(call) is None:
            return self._returned_item(call, found, depth)
        if self.ctx.op(call) != "moments" or found.index not in (0, 1):
            return None
        x_node, axes = self.ctx.arg(call, 0, "x"), self.ctx.arg(call, 1, "axes")
        if x_node is None or axes is None:
            return None
        x = self.slicer.tree(x_node, found.scope, found.at, depth + 1)
        axis = self.slicer.tree(axes, found.scope, found.at, depth + 1)
        keep = self.ctx.arg(call, 3, "keepdims")
        keepdims = {"k": "bool", "v": isinstance(keep, cst.Name) and keep.value == "True"}
        return program_layers.moments(x, axis, keepdims)[found.index]

    def _returned_item(self, call: cst.Call, found: Binding, depth: int) -> dict | None:
        assert found.index is not None
        if isinstance(call.func, cst.Name):
            made = program_models.instance(self.ctx, call.func, found.scope, found.at, self.slicer)
            if made is not None:
                return self._method(made, call, found.scope, found.at, depth + 1, found.index)
        return self.slicer._inline(call, found.scope, found.at, depth + 1, found.index)

    # models -------------------------------------------------------------------------------
    def _model_call(self, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """``net(x)`` of a ``keras.Sequential`` of Dense layers: its layers, unrolled; of an
        object of a model class of the module: its ``call``/``__call__``, followed; inside
        it, ``self.dense(x)`` of a Dense layer made in ``__init__``; ``layer1(x)`` of a Dense
        layer made in place: that layer; ``self(x)`` in a ``train_step``: the class's ``call``."""
        if self.step is not None and (out := self.step_call(call, scope, order, depth)):
            return out
        if (out := self.keras_xent(call, scope, order, depth)) is not None:
            return out  # ``keras.losses.sparse_categorical_crossentropy(y, p, from_logits=True)``
        if isinstance(call.func, cst.Attribute) and self.instances and call.args:
            return self._instance_layer(call, scope, order, depth)
        if not isinstance(call.func, cst.Name) or not call.args:
            return None
        layers = model_layers(self.ctx, call.func, scope, order)
        single = layers is None  # ``layer1(xb)`` of a Dense layer called directly
        layers = layers or lone_layer(self.ctx, call.func, scope, order)
        if layers is None:
            made = program_models.instance(self.ctx, call.func, scope, order, self.slicer)
            return self._method(made, call, scope, order, depth) if made else None
        mode = self.training(call, scope, order)
        if mode is None:
            return None
        out = self.slicer.tree(call.args[0].value, scope, order, depth + 1)
        return self.unrolled(call.func.value, layers, out, single=single, training=mode)

    def unrolled(
        self, model: str, layers: list[dict], out: dict, single: bool = False, training=False
    ) -> dict | None:
        """The model's Dense layers applied to ``out``, each kernel and bias a weight; its
        Dropout layers as Keras runs them in that mode (in inference, they pass ``out``)."""
        fan_in: Any = layers[0].get("input_dim")
        source = out.get("name") if out.get("k") == "input" else None
        if "embedding" in layers[0]:  # ids, not features: the table's width is the next fan-in
            fan_in = None
        elif fan_in is None:
            known = program_models.width(out, self.weights, self.data)
            if isinstance(known, int):
                fan_in = known
            elif isinstance(known, str):
                source = known
            elif source is None:
                return None  # the first kernel's width is not known from the code
        made_one = False  # a kernel made yet (the first one reads the input's width)
        images = image_shape(layers, out, self.data)  # [h, w, channels], if any
        for i, layer in enumerate(layers):
            at = model if single else f"{model}.layers[{i}]"
            if "batchnorm" in layer:  # over the rows (and an image's positions) as it trains
                got = program_layers.normalized(self, at, layer, out, images, fan_in, training)
                if got is None:
                    return None
                out = got
                continue
            if images is not None and not {"dropout", "act"} & set(layer):
                step = image_step(self, at, layer, out, images)
                if step is None:
                    return None
                out, images, fan_in = step
                made_one = True
                continue
            if "flatten" in layer and layer["flatten"] is None:
                return None  # a Flatten after layers whose output shape is not tracked
            if "flatten" in layer:  # each row's entries in one vector, as Keras orders them
                width = [{"k": "const", "v": -1}, {"k": "const", "v": layer["flatten"]}]
                shape = {"k": "tuple", "items": width}
                out = {"k": "call", "op": "reshape", "args": [out, shape], "kw": {}}
                fan_in = layer["flatten"]
                continue
            if {"embedding", "recurrent", "conv1d"} & set(layer):  # a sequence model's layers
                got, fan_in = sequence_layer(self.weights, at, layer, out, fan_in)
                if got is None:
                    return None
                out, made_one = got, True
                continue
            if "pool" in layer:
                out = program_layers.pooled(out, layer["pool"])
                continue
            if "dropout" in layer and not training:
                continue
            if "dropout" in layer:  # as it trains: a seeded mask, the kept entries rescaled
                if layer["dropout"] is None:
                    return None  # a rate the code does not fix
                rate = {"k": "const", "v": layer["dropout"]}
                out = {"k": "call", "op": "dropout", "args": [out, rate], "kw": {}}
                continue
            if "act" in layer:  # ReLU(), Activation("tanh"), Rescaling(1 / 255): on what reaches it
                out = program_layers.activated(out, layer)
                continue
            if "layer" in layer:  # a layer class of the program's own: its ``call``, followed
                wide = fan_in if fan_in is not None else source
                own = self.own_layer(at, layer, out, wide, training)
                if own is None:
                    return None
                out = own
                known = program_models.width(out, self.weights, self.data)
                fan_in = known if isinstance(known, int) else None
                source = known if isinstance(known, str) and not made_one else None
                continue
            if fan_in is None and (made_one or source is None):
                return None  # after a layer whose output width the code does not say
            kernel, bias = f"{at}.kernel", f"{at}.bias"
            self.weights[kernel] = {
                "init": layer["kernel_initializer"],
                **layer.get("kernel_params", {}),
                "shape": [fan_in, layer["units"]],
                "fan_in_from": source if not made_one else None,
            }
            out = {"k": "call", "op": "matmul", "args": [out, {"k": "input", "name": kernel}],
                   "kw": {}}  # fmt: skip
            if layer["use_bias"]:
                self.weights[bias] = {
                    **layer.get("bias", {"init": "zeros"}),
                    "shape": [layer["units"]],
                }
                out = {"k": "bin", "op": "+", "l": out, "r": {"k": "input", "name": bias}}
            act = layer["activation"]
            if act not in (None, "linear"):
                out = {"k": "call", "op": act, "args": [out], "kw": {}}
            fan_in, made_one = layer["units"], True
        return out

    def own_layer(
        self, at: str, layer: dict, out: dict, width: int | str | None, training: bool
    ) -> dict | None:
        """``out`` through a layer of a class of the program (``{"layer": call, ...}``, made
        in a model's stack and named ``at``): its ``call`` followed with ``out`` as its input,
        its ``build`` given the input shape ``[None, width]``; None when it cannot be."""
        made = program_models.made_instance(
            self.ctx, layer["layer"], at, layer["scope"], layer["order"], self.slicer,
            input_shape=None if width is None else [None, width],
        )  # fmt: skip
        return self.called_on(made, out, training) if made is not None else None


# ------------------------------------------------------------------ the spec


def fit_objectives(ctx: Context, positions) -> list[tuple[Objective, ProgramSlicer, dict]]:
    """``model.compile(loss=fn, optimizer=...)`` with ``model.fit(x, y)``: the batch mean of
    ``fn(y, model(x))``, as Keras computes it, with the model's Dense layers unrolled; for a
    model class that overrides ``train_step``, the loss that hook trains (``program_fit.py``)."""
    out = []
    for site in ctx.info.calls:
        fit = program_fit.fitted(ctx, site)
        if fit is None:
            continue
        model = fit.model
        layers = model_layers(ctx, model, site.scope, site.order)
        ps = ProgramSlicer(ctx, positions)
        made = (
            program_models.instance(ctx, model, site.scope, site.order, ps.slicer)
            if layers is None and isinstance(model, cst.Name)
            else None
        )
        stepped = made is not None and program_fit.overrides_step(made)
        loss_fn = program_fit.compiled_loss(ctx, site)
        loss_obj = program_fit.compiled_object(ctx, site) if loss_fn is None else None
        if (layers is None and made is None) or (loss_fn is loss_obj is None and not stepped):
            continue
        x_in, y_in = ps.fit_inputs(fit)
        if stepped:  # the hook overrides compile's loss: it alone is the objective
            assert made is not None
            step = ps.stepped(fit, made, x_in, y_in)
            if step is None or ps.slicer.truncated or ps.slicer.unsupported or ps.slicer.inputs:
                continue
            obj = Objective(step.node, step.scope, step.order, fit.optimizer, "fit", step.line)
            out.append((obj, ps, step.tree))
            continue
        ps.modes = [True]  # fit trains the model in training mode
        if layers is not None:
            y_pred = ps.unrolled(ctx.code(model), layers, x_in, training=True)
        else:
            assert made is not None
            y_pred = ps.called_on(made, x_in)
        if y_pred is None:
            continue
        if loss_fn is not None:
            loss: dict | None = ps.compiled(loss_fn, y_in, y_pred)
            fn_scope = loss_fn[0]
            order, returned = fn_scope.returns[0]
        else:  # a Keras loss object: compile's argument is what the objective computes
            assert loss_obj is not None
            loss = ps.object_loss(loss_obj, y_in, y_pred)
            fn_scope, order, returned = site.scope, site.order, loss_obj
        if loss is None or ps.slicer.truncated or ps.slicer.unsupported or ps.slicer.inputs:
            continue
        pos = positions.get(site.node)
        obj = Objective(
            returned, fn_scope, order, fit.optimizer, "fit", pos.start.line if pos else 0
        )
        out.append((obj, ps, loss))
    return out


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


def _spec(
    ctx: Context, obj: Objective, ps: ProgramSlicer, loss: dict, term: dict, dtype: str, line: int,
    sliced: list | None = None,
) -> ProgramSpec | None:  # fmt: skip
    """The spec of one objective and the term a finding watches in it (None: an optimizer
    the verifier cannot rebuild).  Weights it holds that another objective of ``sliced``
    trains (a GAN's generator, in the discriminator's loss) are an assumption of its run."""
    optimizer = optimizer_of(ctx, obj)
    trained = trained_in_slice(ctx, obj, ps) if optimizer is not None else []
    if optimizer is None or trained == []:  # not rebuilt, or it updates no weight of the slice
        return None
    held = held_elsewhere(ctx, obj, ps, trained, sliced or [])
    names = ", ".join(f"`{w}`" for w in held[:2]) + (" and others" if len(held) > 2 else "")
    extra = [f"{names} held at their start, though another objective trains them"] if held else []
    return ProgramSpec(
        style=obj.style,
        loss=loss,
        term=term,
        weights=dict(ps.weights),
        data=widened(loss, ps.weights, ps.data),
        optimizer=optimizer,
        dtype=dtype,
        path=getattr(ctx, "path", ""),
        line=line,
        objective_line=obj.line,
        assumed=[*ps.assumed, *extra],
        trained=trained,
    )


def held_elsewhere(
    ctx: Context, obj: Objective, ps: ProgramSlicer, trained: list[str] | None, sliced: list
) -> list[str]:
    """The weights of ``obj``'s slice that its own optimizer leaves alone but another
    objective's trains: the program moves them between this objective's steps."""
    held = set(ps.weights) - set(trained) if trained is not None else set()
    out: set[str] = set()
    for other, other_ps, _ in sliced:
        if other is obj or not held or optimizer_of(ctx, other) is None:
            continue
        names = trained_in_slice(ctx, other, other_ps)
        out |= held & set(other_ps.weights if names is None else names)
    return sorted(out)


def training_spec(ctx: Context, hit: Hit, positions, dtype: str) -> ProgramSpec | None:
    """For a finding on an optimizer (its learning rate, its epsilon): the objective it
    trains, whole, as the term the run watches (a loss that goes non-finite or diverges)."""
    pos = positions.get(hit.node)
    at = (pos.start.line, pos.start.column + 1) if pos else (0, 0)
    sliced = ctx.fact("program_objectives", lambda: _sliced(ctx, positions))
    for obj, ps, loss in sliced:
        if obj.optimizer is not hit.node and not contains_node(loss, *at):
            continue  # neither this objective's optimizer nor a part of its loss
        spec = _spec(ctx, obj, ps, loss, loss, dtype, pos.start.line if pos else 0, sliced)
        if spec is not None:
            spec.whole = True
            return spec
    return None


def _depends(ctx: Context, ps: ProgramSlicer) -> None:
    """The finding's result now depends on the code of each module the slice read."""
    view = ctx.ev.project
    if isinstance(view, ProjectView):
        for module in sorted(ps.slicer.modules - {view.module}):
            view.ask(f"mod|{module}")


def imported_spec(ctx: Context, hit: Hit, positions, dtype: str) -> ProgramSpec | None:
    """The spec for a finding in code another module of the project trains: the objective
    of a module that imports this one, whose slice reaches the flagged code here."""
    pos = positions.get(hit.node)
    if pos is None or not ctx.path:
        return None
    line, col = pos.start.line, pos.start.column + 1
    with program_modules.seeded(ctx, positions):
        for other, other_positions in program_modules.importers(ctx):
            sliced = other.fact("program_objectives", partial(_sliced, other, other_positions))
            ranked = sorted(sliced, key=lambda t: not contains_node(t[2], line, col, ctx.path))
            for obj, ps, loss in ranked:
                term = subtree_at(loss, line, col, tree_kind(hit.node), ctx.path)
                spec = _spec(other, obj, ps, loss, term, dtype, line, sliced) if term else None
                if spec is not None:
                    _depends(ctx, ps)
                    spec.span = [line, col, pos.end.line, pos.end.column + 1]
                    spec.file = ctx.path
                    return spec
    return None


def program_spec(ctx: Context, hit: Hit, positions, dtype: str) -> ProgramSpec | None:
    """The training rung's spec for a finding inside an optimized objective, or None."""
    pos = positions.get(hit.node)
    if pos is None or not isinstance(hit.node, cst.BaseExpression):
        return None
    line, col = pos.start.line, pos.start.column + 1  # the slicer's 1-based columns
    sliced = ctx.fact("program_objectives", lambda: _sliced(ctx, positions))
    # the objective the term is a part of, else one whose weights and data it is computed from
    ranked = sorted(sliced, key=lambda t: not contains_node(t[2], line, col))
    for obj, ps, loss in ranked:
        site = hit.site
        before = (set(ps.weights), set(ps.data), set(ps.slicer.inputs))
        ps.slicer.budget()
        term = subtree_at(loss, line, col, tree_kind(hit.node))
        if term is None:  # not a part of the loss: one computed from its weights and data?
            term = ps.slicer.tree(hit.node, site.scope, site.order)
            if ps.slicer.unsupported or ps.slicer.truncated:
                continue
            read = {n.get("name") for n in walk(term) if n.get("k") == "input"}
            if not read & before[0] or set(ps.slicer.inputs) - before[2]:
                continue  # no weight of this objective in it, or a value it does not reach
            if not read <= before[0] | before[1]:
                continue
        spec = _spec(ctx, obj, ps, loss, term, dtype, line, sliced)
        if spec is not None:
            _depends(ctx, ps)
            spec.span = [line, col, pos.end.line, pos.end.column + 1]
            return spec
    return imported_spec(ctx, hit, positions, dtype)


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
        if spec is not None and probe.get("rate_claim"):  # the step size is what it blames
            spec.further = [spec.control * 10**k for k in range(1, 8)]  # to control x 1e7
    elif probe is None or probe.get("kind", "expr") == "expr":
        spec = program_spec(ctx, hit, positions, dtype)
    else:
        return probe
    if spec is None:
        return probe
    if probe is None:
        probe = {
            "kind": "program",
            "rule": code,
            "dtype": dtype,
            "path": spec.path,
            "line": spec.line,
        }
    probe["program"] = spec.as_probe()
    return probe
