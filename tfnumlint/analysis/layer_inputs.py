"""The data a project Keras layer's ``call`` receives, read from the ``fit`` calls that feed it.

A layer that is the first layer of a model (the first of a ``keras.Sequential([...])`` list
after its ``keras.Input``, the first ``.add``-ed to a ``Sequential()``, or called on the
``keras.Input`` of a functional ``keras.Model``) receives the model's input: the arrays the
program passes to ``fit``/``evaluate``/``predict`` (or calls the model on).  When every instance
of the class is such a first layer and every array fed to its models is NumPy code whose range
:class:`.feeds.FeedReader` bounds (``np.clip(..., 0, 1023)``), the first input of ``call``
ranges over the hull of that data.  An instance used any other way, or data the reader cannot
bound, gives no range.  Structure and API calls decide this, never names.
"""

from __future__ import annotations

import libcst as cst

from .feeds import Evaluator, FeedReader, Range
from .layer_policy import instances, layer_class
from .module import Binding, ClassInfo, Scope, Site, call_arg
from .values import Val

# model methods whose first argument is the model's input data (Keras API)
_DATA_METHODS = frozenset(
    {"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"}
)
Fed = tuple[Range, str]


def _binding_of(call: cst.Call, scope: Scope) -> Binding | None:
    """The binding ``name = <call>`` that names the value ``call`` makes (None when it is not
    bound to a name)."""
    s: Scope | None = scope
    while s is not None:
        for bindings in s.bindings.values():
            for b in bindings:
                if b.value is call and b.index is None:
                    return b
        s = s.parent
    return None


def _refers(ev: Evaluator, node: cst.BaseExpression, site: Site, target: Binding) -> bool:
    return isinstance(node, cst.Name) and ev.lookup(node.value, site.scope, site.order) is target


def _is_input(ev: Evaluator, node: cst.BaseExpression) -> bool:
    """A ``keras.Input(...)`` or ``keras.layers.InputLayer(...)``: no computation, the data."""
    if not isinstance(node, cst.Call):
        return False
    return ev.op(node) == "keras_input" or ev.imports.resolve(node.func) == (
        "keras.layers.InputLayer"
    )


def _first_layer(ev: Evaluator, item: cst.BaseExpression, site: Site, built: Site) -> bool:
    """``item`` (a layer list's element, an ``.add`` argument) is the instance ``built``."""
    if item is built.node:
        return True
    if isinstance(item, cst.Name):
        found = ev.lookup(item.value, site.scope, site.order)
        return isinstance(found, Binding) and found.value is built.node
    return False


def _model_of(ev: Evaluator, built: Site) -> tuple[cst.Call, Site] | None:
    """The model call whose input is the input of the layer ``built`` makes: a Sequential it
    leads, or the functional Model whose Input it is called on."""
    for site in ev.info.calls:
        op = ev.op(site.node)
        if op == "sequential":
            layers = call_arg(site.node, 0, "layers")
            if not isinstance(layers, (cst.List, cst.Tuple)):
                continue
            rest = [e.value for e in layers.elements if not _is_input(ev, e.value)]
            if rest and _first_layer(ev, rest[0], site, built):
                return site.node, site
        elif site.node.func is built.node:  # C(...)(inp)
            inp = call_arg(site.node, 0, "inputs")
            if not isinstance(inp, cst.Name):
                return None
            found = ev.lookup(inp.value, site.scope, site.order)
            if not (isinstance(found, Binding) and found.value is not None):
                return None
            if not _is_input(ev, found.value):
                return None
            return _functional(ev, found)
    return _added_first(ev, built)


def _functional(ev: Evaluator, inp: Binding) -> tuple[cst.Call, Site] | None:
    """The ``keras.Model(inputs, outputs)`` whose input is the Input bound by ``inp``."""
    for site in ev.info.calls:
        if ev.op(site.node) != "keras_model":
            continue
        given = call_arg(site.node, 0, "inputs")
        if given is not None and _refers(ev, given, site, inp):
            return site.node, site
    return None


def _added_first(ev: Evaluator, built: Site) -> tuple[cst.Call, Site] | None:
    """``model = Sequential()`` and ``model.add(C(...))`` as its first layer (after Inputs)."""
    for site in ev.info.calls:
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add"):
            continue
        item = call_arg(site.node, 0, "layer")
        if item is None or not _first_layer(ev, item, site, built):
            continue
        if not isinstance(func.value, cst.Name):
            return None
        found = ev.lookup(func.value.value, site.scope, site.order)
        if not (isinstance(found, Binding) and isinstance(found.value, cst.Call)):
            return None
        model = found.value
        if ev.op(model) != "sequential" or call_arg(model, 0, "layers") is not None:
            return None
        earlier = [
            s
            for s in ev.info.calls
            if s.order < site.order
            and isinstance(s.node.func, cst.Attribute)
            and s.node.func.attr.value == "add"
            and _refers(ev, s.node.func.value, s, found)
        ]
        if all(_is_input(ev, call_arg(s.node, 0, "layer") or s.node) for s in earlier):
            return model, site
        return None
    return None


def _fed_to(ev: Evaluator, made: cst.Call, at: Site, reader: FeedReader) -> list[Fed] | None:
    """The data every ``fit``/``predict``/... call (and every direct call) of the model or
    layer ``made`` builds feeds it (empty when it is not bound to a name or nothing feeds
    it); None when some of it is data the reader cannot bound."""
    bound = _binding_of(made, at.scope)
    if bound is None:
        return []
    out: list[Fed] = []
    for site in ev.info.calls:
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DATA_METHODS:
            target: cst.BaseExpression = func.value
            data = call_arg(site.node, 0, "x")
        else:
            target, data = func, call_arg(site.node, 0, "inputs")
        if not _refers(ev, target, site, bound):
            continue
        got = reader.range(data, site.scope, site.order) if data is not None else None
        if got is None:
            return None
        out.append((got, " ".join(ev.info.module.code_for_node(data).split())))  # type: ignore[arg-type]
    return out


def class_inputs(ev: Evaluator, cls: ClassInfo) -> Fed | None:
    """The range of the data every instance of the layer class receives, and its code: what
    feeds the model an instance leads, and what feeds the instance itself (a model subclass's
    ``fit``, a layer called on an array)."""
    if not layer_class(cls, ev.info):
        return None
    reader = FeedReader(ev)
    built = instances(cls.node.name.value, ev.info)
    fed: list[Fed] = []
    for site in built:
        model = _model_of(ev, site)
        led = _fed_to(ev, model[0], model[1], reader) if model is not None else []
        own = _fed_to(ev, site.node, site, reader)
        if led is None or own is None or not (led or own):
            return None  # unbounded data, or an instance whose input is not in view
        fed += led + own
    if not fed:
        return None
    return (min(r[0][0] for r in fed), max(r[0][1] for r in fed)), fed[0][1]


def call_input(ev: Evaluator, param: cst.Param, owner: Scope | None, cache: dict) -> Val | None:
    """The first input of a Keras layer class's ``call`` (``owner`` is the method's scope):
    the data the program feeds the models it leads (:func:`class_inputs`)."""
    fn = owner.node if owner is not None else None
    cls_scope = owner.parent if owner is not None else None
    if not isinstance(fn, cst.FunctionDef) or fn.name.value != "call":
        return None
    if cls_scope is None or cls_scope.kind != "class" or cls_scope.cls is None:
        return None
    params = fn.params.params
    if len(params) < 2 or params[1] is not param:
        return None
    cls = cls_scope.cls
    if id(cls) not in cache:
        cache[id(cls)] = class_inputs(ev, cls)
    fed = cache[id(cls)]
    if fed is None:
        return None
    (lo, hi), code = fed
    desc = f"`{param.name.value}` (`{code}` fed to the model `{cls.node.name.value}` starts)"
    return Val("input", lo, hi, tensor=True, desc=desc)
