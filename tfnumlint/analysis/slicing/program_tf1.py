"""TF1 functional layers and variable scopes in the program slice (static side, no TF import).

``tf.layers.dense(x, units, activation=..., name=...)`` (also ``tf.compat.v1.layers.dense``,
``tf.contrib.layers.fully_connected`` and ``linear``) is a Dense layer applied to ``x``: its
kernel ``[fan_in, units]`` starts as its initializer (glorot-uniform when the code gives none),
its bias as zeros, then the activation.  A weight's identity is the one TF1 gives it, its
scoped name: a layer (or ``tf.get_variable``) with a literal name under literal
``variable_scope`` names is keyed by ``scope/name``, so two calls of a helper that builds a
``tower`` share ``tower/h`` (TF1 raises on a second ``tower/h`` unless reuse is set, so a program
that runs shares it).  ``tf.name_scope`` does not prefix such names.  Without a literal name,
each call site (and each inlined call of its helper) makes its own layer; under a scope that
may reuse what it names, an unnamed layer's identity is not known, and it stays cut.

A helper whose body is straight-line code inside ``with tf.variable_scope(...)`` /
``tf.name_scope(...)`` blocks is inlined as a straight-line one (:func:`scoped_body`): the
``with`` only names.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol

import libcst as cst

from ..context import Context
from ..module import Scope
from .program_conv import ProgramSlicer as SliceWriter
from .program_inits import _INITIALIZERS, _init_params
from .program_sources import _traceable_activation
from .tools import straight_line


class ProgramSlicer(SliceWriter, Protocol):
    """What this module reads and writes of ``program.ProgramSlicer``: what a conv slice does,
    and the Dense stacks it unrolls and the weight keys it numbers."""

    def unrolled(
        self, model: str, layers: list[dict], out: dict, single: bool = False, training=False
    ) -> dict | None: ...

    def _weight_key(self, name: str, scope: Scope) -> str: ...


# The functional layers, by resolved path: each parameter's name, in the order of the
# signature (how a positional argument binds), and the layer's own defaults
_DENSE = (
    "inputs", "units", "activation", "use_bias", "kernel_initializer", "bias_initializer",
    "kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
    "bias_constraint", "trainable", "name", "reuse",
)  # fmt: skip
_CONTRIB = (
    "inputs", "num_outputs", "activation_fn", "normalizer_fn", "normalizer_params",
    "weights_initializer", "weights_regularizer", "biases_initializer", "biases_regularizer",
    "reuse", "variables_collections", "outputs_collections", "trainable", "scope",
)  # fmt: skip
_LINEAR = ("inputs", "num_outputs", "scope")
_FORMS: dict[str, tuple[str, ...]] = {
    "tf.layers.dense": _DENSE,
    "tf.contrib.layers.fully_connected": _CONTRIB,
    "tf.contrib.layers.linear": _LINEAR,
}
# the layer's default name in TF1 (unique per graph: not an identity the slice can share)
_DEFAULT_NAMES = {"tf.layers.dense": "dense", "tf.contrib.layers.fully_connected": "fc"}
# keywords of a layer that do not change what a training step computes: regularizers only
# reach the loss when the program adds them (which the slice then reads), collections are
# bookkeeping, and names and reuse are read for the weight's identity
_IGNORED = frozenset(
    {
        "kernel_regularizer", "bias_regularizer", "activity_regularizer", "weights_regularizer",
        "biases_regularizer", "variables_collections", "outputs_collections", "name", "reuse",
        "scope", "normalizer_params",
    }
)  # fmt: skip
# ``with`` blocks that only name what is made inside them (a device only places it)
_NAMING = frozenset({"tf.variable_scope", "tf.name_scope", "tf.device"})
_VARIABLE_SCOPE = "tf.variable_scope"
# a variable_scope's arguments that only name, or reuse, what it holds
_SCOPE_NAMING = frozenset(
    {"name_or_scope", "default_name", "values", "reuse", "auxiliary_name_scope"}
)
_SCOPE_PARAMS = ("name_or_scope", "default_name", "values")
_XAVIER = "tf.contrib.layers.xavier_initializer"


def _path(ctx: Context, node: cst.BaseExpression) -> str:
    return ctx.info.imports.resolve(node) or ""


def opens(ctx: Context, call: cst.Call) -> bool:
    """Is ``call`` a TF1 functional layer the program slice reads (not an opaque call)?"""
    return _path(ctx, call.func) in _FORMS


# ------------------------------------------------------------------ helpers with scopes


def _flattened(ctx: Context, body) -> list | None:
    """The statements of ``body`` with each naming ``with`` block's own statements in its
    place; None for any other compound statement."""
    out: list = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.append(stmt)
            continue
        if not isinstance(stmt, cst.With) or stmt.asynchronous is not None:
            return None
        for item in stmt.items:
            if not isinstance(item.item, cst.Call) or _path(ctx, item.item.func) not in _NAMING:
                return None
        if not isinstance(stmt.body, cst.IndentedBlock):
            return None
        inner = _flattened(ctx, stmt.body.body)
        if inner is None:
            return None
        out.extend(inner)
    return out


def scoped_body(ctx: Context, fn: cst.FunctionDef, unpacking: bool = False) -> bool:
    """A helper whose body is straight-line code (:func:`~.tools.straight_line`) once its
    ``with tf.variable_scope(...)`` / ``tf.name_scope(...)`` blocks are read as plain
    statements (their one ``return`` last)."""
    if not isinstance(fn.body, cst.IndentedBlock):
        return False
    if not any(isinstance(stmt, cst.With) for stmt in fn.body.body):
        return False  # no block to open: straight_line has decided
    flat = _flattened(ctx, fn.body.body)
    if flat is None:
        return False
    return straight_line(fn.with_changes(body=fn.body.with_changes(body=flat)), unpacking)


class _Withs(cst.CSTVisitor):
    """id of each call -> the ``with`` items (calls) around it, outermost first; a function
    body starts afresh (the blocks around a ``def`` do not hold when it runs)."""

    def __init__(self) -> None:
        self.stack: list[cst.Call] = []
        self.saved: list[list[cst.Call]] = []
        self.found: dict[int, tuple[cst.Call, ...]] = {}

    def visit_With(self, node: cst.With) -> None:
        self.stack.extend(i.item for i in node.items if isinstance(i.item, cst.Call))

    def leave_With(self, node: cst.With) -> None:
        n = sum(isinstance(i.item, cst.Call) for i in node.items)
        del self.stack[len(self.stack) - n :]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.saved.append(self.stack)
        self.stack = []

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack = self.saved.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if self.stack:
            self.found[id(node)] = tuple(self.stack)


def _withs(ctx: Context) -> dict[int, tuple[cst.Call, ...]]:
    def compute() -> dict[int, tuple[cst.Call, ...]]:
        seen = _Withs()
        ctx.info.module.visit(seen)
        return seen.found

    return ctx.fact("tf1 withs", compute)


# ------------------------------------------------------------------ identity


def _peek(ps: ProgramSlicer, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
    """The slice of ``node``, leaving no weight, data or assumption behind."""
    kept = dict(ps.weights), dict(ps.data), list(ps.assumed)
    try:
        return ps.slicer.peek(node, scope, order)
    finally:
        ps.weights, ps.data, ps.assumed = kept


def _string(ps: ProgramSlicer, node: cst.BaseExpression | None, scope, order) -> str | None:
    """A string the code fixes: a literal, or a helper's parameter bound to one."""
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        return text if isinstance(text, str) else None
    if node is None or scope is None:
        return None
    tree = _peek(ps, node, scope, order)
    return tree["v"] if tree.get("k") == "str" and isinstance(tree.get("v"), str) else None


def _no_reuse(ps: ProgramSlicer, node: cst.BaseExpression | None, scope, order) -> bool:
    """``reuse`` not given, or given as False / None."""
    if node is None:
        return True
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    tree = _peek(ps, node, scope, order) if scope is not None else {}
    return (tree.get("k") == "bool" and not tree.get("v")) or (
        tree.get("k") == "const" and tree.get("v") is None
    )


class _Prefix:
    """The variable-scope names around a call, through the inlined calls it is made in."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.literal = True  # every variable_scope's name is known
        self.reuse = False  # some variable_scope may reuse what it names


def _by_id(ctx: Context) -> dict[int, Any]:
    return {id(s.node): s for s in ctx.info.calls}


def _sites(ps: ProgramSlicer) -> dict[int, tuple[Any, Context]]:
    """Each call of the modules the slice is reading, by id: its site and its module."""
    out: dict[int, tuple[Any, Context]] = {}
    for ctx in (ps.slicer.home, ps.ctx):
        found = ctx.fact("tf1 sites", partial(_by_id, ctx))
        out.update({k: (site, ctx) for k, site in found.items()})
    return out


def _prefix(ps: ProgramSlicer, call: cst.Call) -> _Prefix | None:
    """The scopes around ``call`` and around each inlined call the slice is in; None when
    one of them sets what it holds (an initializer, an ``arg_scope``'s defaults)."""
    sites = _sites(ps)
    chain: list[int] = [int(i) for i in ps.slicer._frame.split("@") if i.isdigit()]
    out = _Prefix()
    for at in [*chain, id(call)]:
        if at not in sites:  # a call the slice cannot place: its scopes are not known
            out.literal = False
            continue
        ctx = sites[at][1]
        for item in _withs(ctx).get(at, ()):
            path = _path(ctx, item.func)
            if path.endswith("arg_scope"):
                return None  # it changes the defaults of the layers inside
            if path != _VARIABLE_SCOPE:
                continue
            item_site = sites[id(item)][0] if id(item) in sites else None
            # its names are read where it is (in the module being read)
            scope = item_site.scope if item_site is not None and ctx is ps.ctx else None
            order = item_site.order if item_site is not None else 0
            keywords = {a.keyword.value for a in item.args if a.keyword is not None}
            positional = sum(a.keyword is None for a in item.args)
            if (
                keywords - _SCOPE_NAMING
                or positional > len(_SCOPE_PARAMS)
                or any(a.star for a in item.args)
            ):
                return None  # an initializer, a dtype, a custom getter: not read
            if not _no_reuse(ps, ctx.arg(item, -1, "reuse"), scope, order):
                out.reuse = True
            name = _string(ps, ctx.arg(item, 0, "name_or_scope"), scope, order)
            if name is None:
                out.literal = False
            else:
                out.parts.append(name)
    return out


def _key(
    ps: ProgramSlicer,
    call: cst.Call,
    name: cst.BaseExpression | None,
    reuse: cst.BaseExpression | None,
    base: str,
    scope: Scope,
    order: int,
) -> str | None:
    """The weight's identity: its scoped name when the code fixes it; else one per call
    site and inlined call (``base``, numbered); None when a scope may reuse a variable the
    slice cannot name."""
    prefix = _prefix(ps, call)
    if prefix is None:
        return None
    text = _string(ps, name, scope, order)
    if text is not None and prefix.literal:
        return "/".join([*prefix.parts, text])
    if prefix.reuse or not _no_reuse(ps, reuse, scope, order):
        return None
    return ps._weight_key(base, scope)


def variable_key(ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int) -> str | None:
    """``tf.get_variable("w", ...)`` under literal variable scopes: ``scope/w``; None when
    its scoped name is not literal."""
    if _path(ps.ctx, call.func) != "tf.get_variable":
        return None
    prefix = _prefix(ps, call)
    text = _string(ps, ps.ctx.arg(call, 0, "name"), scope, order)
    if prefix is None or not prefix.literal or text is None:
        return None
    return "/".join([*prefix.parts, text])


# ------------------------------------------------------------------ the layer


def _bound(call: cst.Call, params: tuple[str, ...]) -> tuple[dict, set[str]] | None:
    """Each argument of ``call`` by its parameter's name, and the names given as ``None``
    (left out of the first); None for a star argument, an unknown keyword or too many
    positional ones."""
    out: dict[str, cst.BaseExpression] = {}
    nones: set[str] = set()
    positional = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is None:
            if positional >= len(params):
                return None
            key = params[positional]
            positional += 1
        elif a.keyword.value in params:
            key = a.keyword.value
        else:
            return None
        if isinstance(a.value, cst.Name) and a.value.value == "None":
            nones.add(key)
        else:
            out[key] = a.value
    return out, nones


def _initializer(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int, number):
    """An initializer object the code makes in place (``tf.truncated_normal_initializer(
    stddev=0.1)``, ``xavier_initializer()``): how the training rung draws it, or None."""
    if not isinstance(node, cst.Call):
        return None
    path = _path(ctx, node.func)
    if path == _XAVIER:  # the uniform one by default; the normal one is truncated: not read
        uniform = ctx.arg(node, 0, "uniform")
        if uniform is None or (isinstance(uniform, cst.Name) and uniform.value == "True"):
            return {"init": "glorot_uniform"}
        return None
    kind = _INITIALIZERS.get(path.rsplit(".", 1)[-1])
    params = _init_params(ctx, node, scope, order, number)
    if kind is None or params is None:
        return None
    return {"init": kind, **params}


def _given(
    ps: ProgramSlicer, node: cst.BaseExpression, scope: Scope, order: int
) -> tuple[cst.BaseExpression, Context]:
    """``node``, or the argument an inlined helper's parameter ``node`` is called with (and
    the module it is read in)."""
    ctx = ps.ctx
    for _ in range(8):
        if not isinstance(node, cst.Name):
            break
        found = ctx.ev.lookup(node.value, scope, order)
        arg = ps.slicer._args.get(id(found)) if isinstance(found, cst.Param) else None
        if arg is None:
            break
        node, scope, order = arg.value, arg.scope, arg.order
        ctx = arg.module[0] if arg.module is not None else ctx
    return node, ctx


def _layer(ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int) -> dict | None:
    """The layer as ``unrolled`` takes it, plus its kernel's initializer parameters."""
    ctx = ps.ctx
    path = _path(ctx, call.func)
    bound = _bound(call, _FORMS[path])
    if bound is None:
        return None
    given, nones = bound
    contrib = path != "tf.layers.dense"
    units = ps.number(given.get("num_outputs" if contrib else "units"), scope, order)
    act = given.get("activation_fn" if contrib else "activation")
    activation = None
    if path == "tf.contrib.layers.fully_connected" and "activation_fn" not in nones | set(given):
        activation = "relu"  # its default
    elif act is not None:
        act, where = _given(ps, act, scope, order)  # ``activation=act`` of a helper's parameter
        none = isinstance(act, cst.Name) and act.value == "None"
        activation = None if none else where.info.imports.op(act)
        if not none and (activation is None or not _traceable_activation(activation)):
            return None
    trainable = given.get("trainable")
    if trainable is not None and not (
        isinstance(trainable, cst.Name) and trainable.value == "True"
    ):
        return None  # weights the optimizer does not train
    kernel_param = "weights_initializer" if contrib else "kernel_initializer"
    bias_param = "biases_initializer" if contrib else "bias_initializer"
    read = {"inputs", "units", "num_outputs", "activation", "activation_fn", "trainable"}
    if set(given) - _IGNORED - read - {kernel_param, bias_param, "use_bias"}:
        return None  # a normalizer, a constraint: what the slice does not model
    if units is None or not float(units).is_integer() or kernel_param in nones:
        return None
    kernel: dict | None = {"init": "glorot_uniform"}  # get_variable's, and xavier's
    if kernel_param in given:
        kernel = _initializer(ctx, given[kernel_param], scope, order, ps.number)
    bias: dict | None = {"init": "zeros"}
    if bias_param in given:
        bias = _initializer(ctx, given[bias_param], scope, order, ps.number)
    use_bias = given.get("use_bias")
    if use_bias is not None and not isinstance(use_bias, cst.Name):
        return None
    with_bias = use_bias is None or use_bias.value == "True"
    if bias_param in nones:  # contrib's way to make no bias; Dense's default then: not read
        if not contrib:
            return None
        with_bias = False
    if kernel is None or bias is None:
        return None
    return {
        "units": int(units),
        "activation": activation,
        "kernel_initializer": kernel["init"],
        "kernel": kernel,
        "use_bias": with_bias,
        "bias": bias,
        "name": given.get("scope" if contrib else "name"),
        "reuse": given.get("reuse"),
    }


def layer_call(
    ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int, depth: int
) -> dict | None:
    """``tf.layers.dense(x, 32, activation=tf.nn.relu, name="h")``: the layer applied to the
    slice of ``x``, its kernel and bias weights keyed by their identity (:func:`_key`); None
    for another call, or a layer the slice does not read (it stays one cut value)."""
    ctx = ps.ctx
    path = _path(ctx, call.func)
    if path not in _FORMS:
        return None
    layer = _layer(ps, call, scope, order)
    x = ctx.arg(call, 0, "inputs")
    if layer is None or x is None:
        return None
    pos = ps.slicer.positions.get(call)
    where = f"{pos.start.line}:{pos.start.column + 1}" if pos is not None else str(id(call))
    base = f"{_DEFAULT_NAMES.get(path, 'linear')}@{where}"
    key = _key(ps, call, layer["name"], layer["reuse"], base, scope, order)
    if key is None:
        return None
    out = ps.slicer.tree(x, scope, order, depth + 1)
    names = (f"{key}.kernel", f"{key}.bias")
    kept = {k: ps.weights[k] for k in names if k in ps.weights}  # a layer called again
    tree = ps.unrolled(key, [layer], out, single=True)
    if tree is None:
        for k in names:
            ps.weights.pop(k, None)
        ps.weights.update(kept)
        return None
    params = {k: v for k, v in layer["kernel"].items() if k != "init"}
    ps.weights[names[0]].update(params)
    ps.weights.update(kept)
    return tree
