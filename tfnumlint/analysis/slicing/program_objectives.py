"""The objectives a program optimizes, read from its code (static side, no TF import).

``opt.minimize(loss)`` and ``opt.compute_gradients(loss)`` (TF1), ``tape.gradient(loss, ...)``
paired with the optimizer whose ``apply_gradients`` reads those gradients (a GAN has two of
each), and the optimizer of ``compile(optimizer=...)``: what the training rung trains
(``program.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from ..context import Context
from ..module import Binding, Scope
from ..names import descendants
from .program_repeated import repeated_item


@dataclass
class Objective:
    loss: cst.BaseExpression
    scope: Scope
    order: int
    optimizer: cst.Call | str
    style: str
    line: int
    # what the optimizer updates: ``minimize(loss, var_list=theta_D)``, a tape's sources (None:
    # not given, every trainable variable)
    trained: cst.BaseExpression | None = None


def _bound_call(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> cst.Call | None:
    """The call ``node`` is, or the call its name was last assigned (``wq`` of ``wq, wk =
    (Dense(8) for _ in range(2))``: its own item, ``program_repeated.py``)."""
    if isinstance(node, cst.Call):
        return node
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding):
            return None
        value = found.value if found.index is None else repeated_item(ctx, found)
        if isinstance(value, cst.Call):
            return value
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
    for w in (n for n in descendants(scope.node) if isinstance(n, cst.With)):
        for item in w.items:
            bound = item.asname.name if item.asname is not None else None
            if isinstance(bound, cst.Name) and bound.value == node.value:
                made = item.item
                if isinstance(made, cst.Call):
                    return (ctx.info.imports.resolve(made.func) or "").endswith("GradientTape")
    return False


def objectives(ctx: Context, positions) -> list[Objective]:
    """Every loss the module hands to an optimizer, with that optimizer's constructor."""
    found: list[Objective] = []
    for site in ctx.info.calls:
        func = site.node.func
        if not isinstance(func, cst.Attribute) or not site.node.args:
            continue
        method = func.attr.value
        if method not in ("minimize", "compute_gradients", "gradient"):
            continue
        loss = ctx.arg(site.node, 0, "loss")
        if loss is None:
            continue
        pos = positions.get(site.node)  # resolving a position costs a statement's codegen
        line = pos.start.line if pos else 0
        if method in ("minimize", "compute_gradients"):
            opt = _optimizer(ctx, func.value, site.scope, site.order)
            if opt is not None:
                trained = ctx.arg(site.node, _var_list_place(ctx, opt, method), "var_list")
                found.append(Objective(loss, site.scope, site.order, opt, "tf1", line, trained))
        elif method == "gradient" and _is_tape(ctx, func.value, site.scope, site.order):
            opt = _applied_optimizer(ctx, site.scope, site.node)
            trained = ctx.arg(site.node, 1, "sources")
            if opt is not None:
                found.append(Objective(loss, site.scope, site.order, opt, "tape", line, trained))
    return found


def _var_list_place(ctx: Context, opt: cst.Call, method: str) -> int:
    """Where ``var_list`` sits: TF1's ``minimize(loss, global_step, var_list)``, Keras's
    ``minimize(loss, var_list)`` and either's ``compute_gradients(loss, var_list)``."""
    path = ctx.info.imports.resolve(opt.func) or ""
    tf1 = ".train." in path or ".compat.v1." in path
    return 2 if method == "minimize" and tf1 else 1


# every trainable variable of a model or of the graph: the whole slice trains
_ALL_TRAINABLE = ("trainable_variables", "trainable_weights")


def trained_weights(
    ctx: Context, obj: Objective, tree: Callable[[cst.BaseExpression, Scope, int], object]
) -> list[str] | None:
    """The input names of the weights the objective's optimizer updates (``var_list=theta_D``
    of a GAN's discriminator step: ``[D_W1, D_b1, ...]``), each read by ``tree`` as the slice
    reads it; None for every trainable variable.  Raises :class:`Unread` when the list is
    given but is not one the slice can read: training every weight would not be the
    program's run."""
    node = obj.trained
    if node is None:
        return None
    try:
        elements = _listed(ctx, node, obj.scope, obj.order)
    except _EveryWeight:
        return None  # a model's own list, or a sum with one: as before, every weight trains
    if elements is None:
        raise Unread
    names = []
    for element in elements:
        if isinstance(element, Owned):
            names.append(element.prefix)
            continue
        read = tree(element, obj.scope, obj.order)
        if not isinstance(read, dict) or read.get("k") != "input":
            raise Unread
        names.append(str(read["name"]))
    return names


def trained_in_slice(ctx: Context, obj: Objective, ps) -> list[str] | None:
    """:func:`trained_weights` as the program slicer ``ps`` reads them, leaving its weights
    and notes as they were (a listed variable the loss does not read is not a weight of it).
    A list the slice cannot read trains every weight, and the run says so."""
    kept, notes, slicer = dict(ps.weights), list(ps.assumed), ps.slicer
    state = {k: copy.copy(getattr(slicer, k)) for k in _SLICER_STATE}
    try:
        slicer.budget()
        names = trained_weights(ctx, obj, slicer.tree)
    except Unread:
        names = None
        unread = "every weight of the slice trains (the optimizer's variable list is unread)"
        notes += [unread] if unread not in notes else []
    finally:
        ps.weights.clear()
        ps.weights.update(kept)
        for key, value in state.items():
            setattr(slicer, key, value)
    ps.assumed[:] = notes
    if names is None:
        return None
    owned = {n: [k for k in kept if k.startswith(n)] for n in names if n.endswith(".")}
    if any(not found for found in owned.values()):
        return None  # a model whose weights the slice keys otherwise: every weight, as before
    return [k for n in names for k in owned.get(n, [n]) if k in kept]


# what reading the list may change in the slicer, put back after it
_SLICER_STATE = ("inputs", "count", "expanded", "truncated", "unsupported")


class Unread(Exception):
    """The weights an optimizer updates are given, but not as the slice can read them."""


@dataclass(frozen=True)
class Owned:
    """``model.trainable_variables`` in a list of trained weights: the slice's weights of that
    model, which it keys ``model.layers[0].kernel`` and so on (``prefix``: ``"model."``)."""

    prefix: str


class _EveryWeight(Exception):
    """``model.trainable_variables``, ``tf.trainable_variables()``, or a list made with one
    (``enc.trainable_variables + dec.trainable_variables``): the slice does not tell which of
    its weights are that model's, so every weight trains, as the rung did before."""


def _listed(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0
) -> list[cst.BaseExpression | Owned] | None:
    """The elements of a list the code spells out: a literal, a name bound to one, a sum of
    such lists (``theta_D + theta_E``), or a name bound to one variable (a tape's source)."""
    if depth > 4:
        return None
    if isinstance(node, cst.Call) and not node.args:
        node = node.func
    if isinstance(node, cst.Attribute) and node.attr.value in _ALL_TRAINABLE:
        if isinstance(node.value, cst.Name):  # discriminator.trainable_variables
            return [Owned(f"{node.value.value}.")]
        raise _EveryWeight
    if isinstance(node, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return [e.value for e in node.elements]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        left = _listed(ctx, node.left, scope, order, depth)  # a + b + c + d: one list
        right = _listed(ctx, node.right, scope, order, depth)
        return left + right if left is not None and right is not None else None
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.index is None and found.value is not None:
            if isinstance(found.value, cst.Call) and ctx.op(found.value) == "variable":
                return [node]  # tape.gradient(loss, w): the one variable
            return _listed(ctx, found.value, found.scope, found.at, depth + 1)
    return None


def _applied_optimizer(
    ctx: Context, scope: Scope, gradient: cst.Call | None = None
) -> cst.Call | None:
    """The optimizer that applies this tape's gradients: the ``apply_gradients`` of the same
    function that reads the name the gradients are assigned to (a GAN has two of each), or
    the function's only one."""
    target = _assigned_name(ctx, scope, gradient) if gradient is not None else None
    applied = []
    for site in ctx.info.calls:
        func = site.node.func
        if (
            site.scope is scope
            and isinstance(func, cst.Attribute)
            and func.attr.value == "apply_gradients"
        ):
            reads = {n.value for n in descendants(site.node) if isinstance(n, cst.Name)}
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


def _compiled_optimizer(ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int):
    """``compile(optimizer=...)``: an optimizer constructor, or a Keras name (``"adam"``)."""
    from ...optimizers import OPTIMIZERS

    if isinstance(node, cst.SimpleString):
        name = str(node.evaluated_value).lower()
        return name if name in OPTIMIZERS else None
    return _optimizer(ctx, node, scope, order) if node is not None else None


def optimizer_of(ctx: Context, obj: Objective) -> dict | None:
    """The objective's optimizer as the verifier rebuilds it (``compile(optimizer="adam")``:
    Keras's defaults)."""
    from ..optimizer_calls import optimizer_spec

    if isinstance(obj.optimizer, str):
        return {"optimizer": obj.optimizer, "tf1": False, "learning_rate": 0.001,
                "momentum": 0.0, "clipnorm": None}  # fmt: skip
    opt_site = next((s for s in ctx.info.calls if s.node is obj.optimizer), None)
    if opt_site is None:
        return None
    spec = optimizer_spec(ctx, obj.optimizer, opt_site)
    if spec.get("learning_rate") is None:  # learning_rate=ExponentialDecay(0.1, 1000, 0.96)
        node = ctx.arg(obj.optimizer, 0, "learning_rate", "lr")
        schedule = (
            lr_schedule(ctx, node, opt_site.scope, opt_site.order) if node is not None else None
        )
        if schedule is not None:
            spec = {**spec, "learning_rate": schedule.pop("initial"), "schedule": schedule}
    return spec


# Keras's decaying schedules whose first argument is the initial rate, and the rest of their
# arguments (none of them a rate: scaling the initial rate scales the whole schedule)
_SCHEDULES = {
    "ExponentialDecay": ("decay_steps", "decay_rate", "staircase"),
    "InverseTimeDecay": ("decay_steps", "decay_rate", "staircase"),
    "CosineDecay": ("decay_steps", "alpha"),
}


def lr_schedule(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> dict | None:
    """``keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1000, decay_rate=0.96)``
    as plain data (``initial`` and the schedule's own arguments), or None."""
    call = _bound_call(ctx, node, scope, order)
    if call is None:
        return None
    kind = (ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
    if kind not in _SCHEDULES:
        return None
    values: dict = {}
    for i, key in enumerate(("initial_learning_rate", *_SCHEDULES[kind])):
        arg = ctx.arg(call, i, key)
        if arg is None:
            continue
        if isinstance(arg, cst.Name) and arg.value in ("True", "False"):
            values[key] = arg.value == "True"
            continue
        v = ctx.ev.value(arg, scope, order).const
        if v is None:
            return None
        values[key] = float(v)
    if "initial_learning_rate" not in values or "decay_steps" not in values:
        return None
    return {"kind": kind, "initial": values.pop("initial_learning_rate"), "args": values}
