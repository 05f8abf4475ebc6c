"""Which probe inputs training or evaluation really drives over their range (issue 11).

A witness that needs a *parameter* of a library function at a special value (``df`` = 0.5 in
``reciprocal(df - half)``, ``t1`` = ``t0`` in ``(t - t0) / (t1 - t0)``, ``x`` = -100 in a Gumbel
``log_prob``) shows a precondition of the API, not a hazard: nothing shows that callers pass
that value.  The same shapes on *driven* inputs (a loss's ``y_pred``, a layer's ``inputs``, a
model output) are real hazards: training sweeps those values.  Each input of a probe gets a
``drive`` label (plain data, read by the verifier's genericity test, ``verify/generic.py``):

- ``driven``: data, draws and model outputs (the slicer's origins), a parameter whose callers
  in the project pass such a value (:data:`PASSED_KINDS`, from the index's cross-function
  provenance) or of a function that training runs (:func:`driving_function`), an attribute that
  is a trainable weight created in its class (:data:`WEIGHT_CALLS`), a value a weight-creating
  call returns, and a logit cut at a sigmoid/softmax *in a training context* only: the witness
  keeps its value;
- ``fixed``: a parameter with a literal default: a setting, kept at its witness value, never
  jittered;
- ``free``: any other parameter, attribute, loop or global value, and a value an object computes
  from its own parameters outside a training context (``self._probs_parameter_no_checks()``):
  the genericity test replaces it by ordinary values, a symptom that needs its special value is
  a precondition, and a witness made only of free and fixed values is conditional
  (``generic.all_free_reason``);
- ``computed``: a value computed by code the slice did not follow (an untraced call, a cut):
  the reachability gate (``verify/domains.py``) judges those; the genericity test leaves them.

**Training context** (:func:`training_context`): where training or evaluation feeds the
values: a Keras hook training runs (:data:`FORWARD_FUNCTIONS`) of a class that may be a layer
or model, a method of a Keras ``Loss``/``Metric`` subclass (:data:`LOSS_BASES`, through the
module's and the project's classes), a function on a path to a differentiation root
(``roots.py``), or one that returns a batch mean.  Names never count (issue 22).

No TensorFlow, no execution of the analysed code.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from .invariants import CONVERSIONS
from .module import ClassInfo, Scope
from .project_summary import PASSED_KINDS
from .roots import function_reached, statement_reached

# Origins whose values the code receives as training and evaluation drive them.
DRIVEN_ORIGINS = frozenset({"data", "random", "model", "logits"})
COMPUTED_ORIGINS = frozenset({"call", "cut"})
# Keras hooks that run in the training-time forward pass or step a model (API names).
FORWARD_FUNCTIONS = frozenset({"call", "__call__", "train_step", "test_step", "predict_step"})
# Keras bases (the last part of the dotted name, as written or resolved) that make a class a
# loss or metric (every method is evaluated on model outputs), and those training runs.
LOSS_BASES = frozenset({"Loss", "LossFunctionWrapper", "Metric", "MeanMetricWrapper", "Mean"})
TRAINING_BASES = LOSS_BASES | {"Layer", "Model", "Sequential", "Network", "Functional"}
# Calls that create a trainable weight.
WEIGHT_CALLS = frozenset({"add_weight", "add_variable", "Variable", "get_variable"})


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def loss_class(scope: Scope | None) -> bool:
    """A Keras ``Loss``/``Metric`` subclass (by its bases' names)."""
    cls = scope.cls if scope is not None else None
    if cls is None:
        return False
    bases = [_dotted(b.value) for b in getattr(cls.node, "bases", ())]
    return any(b.rsplit(".", 1)[-1] in LOSS_BASES for b in bases if b)


def function_name(scope: Scope) -> str:
    node = scope.node
    return node.name.value if isinstance(node, cst.FunctionDef) else ""


# Reductions that make a returned value a batch mean: the shape of a loss or metric.
BATCH_MEANS = frozenset({"reduce_mean", "mean"})
BATCH_SUMS = frozenset({"reduce_sum", "sum"})


def _local_value(node: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
    """Follow a local name bound once (a few steps)."""
    for _ in range(3):
        if not isinstance(node, cst.Name):
            break
        bindings = scope.bindings.get(node.value) or []
        if len(bindings) != 1 or bindings[0].value is None or bindings[0].index is not None:
            break
        node = bindings[0].value
    return node


def _reduces(node: cst.BaseExpression, scope: Scope, names: frozenset[str]) -> bool:
    node = _local_value(node, scope)
    return isinstance(node, cst.Call) and _dotted(node.func).rsplit(".", 1)[-1] in names


def returns_batch_mean(scope: Scope) -> bool:
    """The function returns ``tf.reduce_mean(...)`` or a weighted mean ``reduce_sum(a) /
    reduce_sum(w)`` (directly or through locals bound once): an objective or metric averaged
    over a batch (a REINFORCE ``mean(log(probs) * weights)``, a masked mean)."""
    for _, expr in scope.returns:
        node = _local_value(expr, scope)
        while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            node = _local_value(node.expression, scope)  # `-tf.reduce_mean(...)`: a loss sign
        if _reduces(node, scope, BATCH_MEANS):
            return True
        if (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Divide)
            and _reduces(node.left, scope, BATCH_SUMS)
            and _reduces(node.right, scope, BATCH_SUMS)
        ):
            return True
    return False


def driving_function(scope: Scope, ctx: Any = None) -> str | None:
    """Why the parameters of this function are driven by training, or None: a Keras hook
    training runs (of a class that may be a layer or model: not a plain Python class), a
    method of a loss or metric class, or a function on a path to a differentiation root
    (``roots.py``).  Its name never counts."""
    name = function_name(scope)
    if name in FORWARD_FUNCTIONS and scope.cls is not None and not plain_class(scope.cls, ctx):
        return f"`{name}` runs in the training forward pass"
    if loss_class(scope) and name != "__init__":  # the constructor takes settings
        return f"`{name}` is a method of a loss or metric class"
    return function_reached(scope)


MAX_ANCESTORS = 32  # classes walked up a base chain (cycles and deep hierarchies stop here)


def plain_class(cls: ClassInfo, ctx: Any = None) -> bool:
    """A class with no base but ``object``, or only module classes that are plain: no Keras
    layer, model or ``tf.Module`` hook is its ``call``/``__call__``.  A base the module
    imports may be one, so a class with such a base is not plain."""
    todo, seen = [cls], set[int]()
    while todo:
        if len(seen) >= MAX_ANCESTORS:
            return False
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        for base in c.node.bases:
            written = _dotted(base.value)
            if written == "object":
                continue
            local = ctx.info.classes.get(written) if ctx is not None and written else None
            if local is None:
                return False
            todo.append(local)
    return True


def class_ancestry(cls: ClassInfo, ctx: Any = None) -> list[str]:
    """The names of the class's ancestors: its bases as written and as resolved, through the
    module's own classes and (with a context that has a project index) the project's."""
    out: list[str] = []
    todo, seen = [cls], set[int]()
    while todo and len(seen) < MAX_ANCESTORS:
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        written = [_dotted(b.value) for b in c.node.bases]
        out += [w for w in written if w] + [b for b in c.bases if b]
        for w in filter(None, written):
            local = ctx.info.classes.get(w) if ctx is not None else None
            if local is not None:
                todo.append(local)
            elif ctx is not None and getattr(ctx.ev, "project", None) is not None:
                out += ctx.ev.project.ancestry(w)
    return out


def training_class(cls: ClassInfo | None, ctx: Any = None) -> str | None:
    """Why training runs the class's methods (a Keras layer, model, loss or metric), or None."""
    if cls is None:
        return None
    for base in class_ancestry(cls, ctx):
        if base.rsplit(".", 1)[-1] in TRAINING_BASES:
            return f"`{cls.node.name.value}` is a `{base.rsplit('.', 1)[-1]}`"
    return None


def training_context(scope: Scope | None, ctx: Any = None) -> str | None:
    """Why training or evaluation feeds the values of this function, or None: it (or a function
    around it) is a forward pass, loss or metric, or on a path to a differentiation root
    (:func:`driving_function`), it returns a batch mean (:func:`returns_batch_mean`), or it is
    a method of a class training runs (:func:`training_class`).
    Elsewhere (a distribution's ``_log_prob``, a bijector's ``_inverse``, a math helper) its
    inputs are API parameters, whatever their names."""
    s = _function(scope)
    cls = None
    while s is not None:
        if s.kind == "function":
            why = driving_function(s, ctx)
            if why:
                return why
            if returns_batch_mean(s):
                return f"`{function_name(s)}` returns a batch mean, the shape of a loss or metric"
            cls = cls or s.cls
        s = s.parent
    return training_class(cls, ctx)


def _self_computed(source: str, self_name: str | None) -> bool:
    """``self._probs_parameter_no_checks()``, ``convert_to_tensor(probs)``: a value an object
    computes from its own parameters (a method of its own, a conversion of one)."""
    callee = source.split("(", 1)[0].strip() if "(" in source else ""
    if self_name and callee.startswith(f"{self_name}."):
        return True
    return callee.rsplit(".", 1)[-1] in CONVERSIONS


def owner_of(name: str, scope: Scope | None) -> Scope | None:
    """The function whose parameter ``name`` is, seen from ``scope``; else a method of its
    class (the slicer labels ``self.loc`` by the ``__init__`` parameter it was assigned)."""
    s = scope
    while s is not None:
        if s.kind == "function" and name in s.params:
            return s
        s = s.parent
    fn = _function(scope)
    if fn is not None and fn.cls is not None:
        for method in fn.cls.method_scopes.values():
            if name in method.params:
                return method
    return None


def owner_name(scope: Scope) -> str:
    """`_log_prob`, or `Gumbel.__init__` for a constructor."""
    name = function_name(scope) or "a function"
    if name == "__init__" and scope.cls is not None:
        return f"{scope.cls.node.name.value}.__init__"
    return name


def _function(scope: Scope | None) -> Scope | None:
    while scope is not None and scope.kind != "function":
        scope = scope.parent
    return scope


def trainable_attribute(attr: str, scope: Scope | None) -> bool:
    """``self.w`` assigned ``self.add_weight(...)`` or ``tf.Variable(...)`` in its class."""
    cls = scope.cls if scope is not None else None
    if cls is None:
        return False
    for binding in cls.attrs.get(attr, []):
        value = binding.value
        if isinstance(value, cst.Call) and _dotted(value.func).rsplit(".", 1)[-1] in WEIGHT_CALLS:
            return True
    return False


def _creates_weight(source: str) -> bool:
    """``self.add_weight(...)``, ``tf.Variable(...)``: the source of a trainable weight."""
    callee = source.split("(", 1)[0].rsplit(".", 1)[-1] if "(" in source else ""
    return callee in WEIGHT_CALLS


_SELF_ATTR = re.compile(r"^(\w+)\.(\w+)")
_LEADING_NAME = re.compile(r"^([A-Za-z_]\w*)")


def classify(
    spec: dict[str, Any],
    scope: Scope | None,
    param_default: bool,
    ctx: Any = None,
    reached: str | None = None,
) -> dict[str, str]:
    """The ``drive`` label of one probe input (and ``owner``/``drive_why`` when known).
    ``scope`` is where the finding is; ``param_default``: the parameter has a default value;
    ``ctx`` (the module's analysis context, optional) resolves base classes and the module."""
    name = re.sub(r" \(\d+\)$", "", str(spec.get("name", "")))
    origin = spec.get("origin")
    of = spec.get("of")
    base = origin if origin != "subscript" else of
    fn = _function(scope)
    if base in DRIVEN_ORIGINS:
        if base != "logits":
            return {"drive": "driven", "drive_why": f"its origin is {base}"}
        if spec.get("trained"):  # a layer's or model's output: what training moves
            return {"drive": "driven", "drive_why": "a logit computed by a layer or model"}
        context = reached or training_context(scope, ctx)  # a sigmoid's input: what reaches it
        if context:
            return {"drive": "driven", "drive_why": f"a logit in a training context: {context}"}
        return {"drive": "free"}
    if base in COMPUTED_ORIGINS:
        source = str(spec.get("source", ""))
        if _creates_weight(source):
            return {"drive": "driven", "drive_why": "a trainable weight"}
        method = _method(scope)
        cls = method.cls if method is not None else None
        if (
            cls is not None
            and _self_computed(source, method.self_name if method else None)
            and not training_context(scope, ctx)
        ):  # the object's own parameters, as its caller set them
            return {"drive": "free", "owner": cls.node.name.value}
        return {"drive": "computed"}
    if base == "param":
        found = _LEADING_NAME.match(name)
        owner = owner_of(found.group(1), scope) if found else None
        if param_default:
            return {"drive": "fixed", "drive_why": "a parameter with a literal default"}
        if spec.get("producer") in PASSED_KINDS:  # the project's callers pass such a value
            return {"drive": "driven", "drive_why": f"its callers pass a {spec['producer']}"}
        if spec.get("trained"):
            return {"drive": "driven", "drive_why": "its callers pass a layer or model output"}
        why = (driving_function(owner, ctx) or training_context(owner, ctx)) if owner else None
        if why:
            return {"drive": "driven", "drive_why": why}
        if owner is not None:
            return {"drive": "free", "owner": owner_name(owner)}
        return {"drive": "free"}
    if base == "attr":
        found = _SELF_ATTR.match(name)
        self_name = fn.self_name if fn is not None else None
        if found and self_name and found.group(1) == self_name:
            attr = found.group(2)
            cls_name = fn.cls.node.name.value if fn is not None and fn.cls is not None else ""
            if trainable_attribute(attr, fn):
                return {"drive": "driven", "drive_why": "a trainable weight of its class"}
            return {"drive": "free", "owner": cls_name}
    return {"drive": "free"}


def _method(scope: Scope | None) -> Scope | None:
    """The method of a class that ``scope`` is in (through nested functions), or None."""
    s = _function(scope)
    while s is not None:
        if s.kind == "function" and s.cls is not None:
            return s
        s = s.parent
    return None


def mark_inputs(probe: dict[str, Any], ctx, site) -> None:
    """Label every input of the probe (in place) with :func:`classify`."""
    scope = site.scope
    hint = statement_reached(scope, site.statement)
    for spec in probe.get("inputs") or []:
        name = str(spec.get("name", ""))
        default = False
        found = ctx.ev.lookup(name, scope, site.order) if re.fullmatch(r"\w+", name) else None
        if isinstance(found, cst.Param):
            default = _numeric_literal(found.default)
        spec.update(classify(spec, scope, default, ctx, hint))


def _numeric_literal(node: cst.BaseExpression | None) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))
