"""How the evaluator (:mod:`.provenance`) reads a call: by the op's transfer, by the summary of a
function of the module or the project, or as a layer's output.  Static: libcst only.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .. import ops
from .module import Binding, ModuleInfo, Scope
from .names import ImportMap
from .returned_args import bound_arguments, drawn_between, with_items
from .transfer import ACTIVATION_RANGES, activation_name, handler_for
from .values import (
    INF,
    UNKNOWN,
    Val,
    revalue,
)


def layer_output(layer: Val) -> Val:
    """What calling a layer or model gives: its output activation's range and kind."""
    act = layer.activation
    if act and act != "linear":
        lo, hi = ACTIVATION_RANGES.get(act, (-INF, INF))
        return Val(
            act,
            lo,
            hi,
            tensor=True,
            prob=act in ops.PROBABILITY,
            zero="every relu input is <= 0"
            if act == "relu"
            else ("the probability saturates" if act in ops.PROBABILITY else None),
            desc=f"a {act} {layer.kind} output",
            trained=True,
        )
    if act == "linear":
        return Val("linear", tensor=True, desc=f"a linear {layer.kind} output", trained=True)
    return Val("call", tensor=True, desc=f"a {layer.kind} output", trained=True)


def log_space_op(op: str) -> bool:
    entry = ops.REGISTRY.get(op)
    return entry is not None and entry.log_space


def callee_text(func: cst.BaseExpression) -> str:
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts)) or "call"


class EvaluatesCalls:
    """The evaluator's reading of calls, mixed into :class:`~.provenance.Evaluator`: a
    registered op by its transfer, a call of a function of the module or the project by its
    summary (instantiated with the call's arguments), a class by its instance."""

    _summaries: dict[int, object]
    imports: ImportMap
    info: ModuleInfo
    project: Any  # a project_view.ProjectView, or None: this module alone

    # the host class's own, which these methods call back
    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None:
        raise NotImplementedError

    def op(self, call: cst.Call) -> str | None:
        raise NotImplementedError

    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val:
        raise NotImplementedError

    # -- calls ---------------------------------------------------------------------------
    def _call(self, node: cst.Call, scope: Scope, order: int) -> Val:
        op = self.op(node)
        if op is None:
            return self._plain_call(node, scope, order)
        transfer = handler_for(op)
        args = [a for a in node.args if a.keyword is None and not a.star]
        if transfer is not None:
            return transfer(self, node, args, scope, order)
        if op.startswith("optimizer:") or op.startswith("loss:"):
            return Val(op, desc=op)
        return Val(op, tensor=True, desc=f"the {op} output", log_space=log_space_op(op))

    def _plain_call(self, node: cst.Call, scope: Scope, order: int) -> Val:
        func = self.value(node.func, scope, order)
        if func.kind in ("layer", "model"):
            return layer_output(func)
        returned = self._returned(node, func, scope, order)
        if returned is not None:
            return returned
        # numpy scalar constructors and float(): pass constants through
        if isinstance(node.func, (cst.Name, cst.Attribute)) and node.args:
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
            if name in ("float", "float32", "float16", "float64", "array", "asarray") or (
                self._numpy_dtype(node.func, scope, order)
            ):
                inner = self.value(node.args[0].value, scope, order)
                if inner.const is not None:
                    return inner
        return Val("call", desc=f"the result of `{callee_text(node.func)}`")

    def _numpy_dtype(self, func: cst.BaseExpression, scope: Scope, order: int) -> bool:
        """``func`` is a name bound to ``dtype_util.as_numpy_dtype(...)`` (a numpy scalar type:
        calling it on a literal casts the constant, `numpy_dtype(1.)` is 1)."""
        if not isinstance(func, cst.Name):
            return False
        found = self.lookup(func.value, scope, order)
        value = getattr(found, "value", None)
        if not isinstance(value, cst.Call):
            return False
        callee = value.func.attr if isinstance(value.func, cst.Attribute) else value.func
        return isinstance(callee, cst.Name) and callee.value == "as_numpy_dtype"

    def _returned(self, node: cst.Call, func: Val, scope: Scope, order: int) -> Val | None:
        """What a call to a function or class of the project returns, for this call's
        arguments (`d_real = discriminator(x)` with a sigmoid return; `dense(x, act=relu)`)."""
        callee = self._callee(node, func, scope, order)
        if isinstance(callee, Val) or callee is None:
            return callee
        values = self._instantiate(callee, node, scope, order)
        for v in values:  # a probability return wins: that is the hazard downstream
            if v.prob or (v.tuple_items and any(i.prob for i in v.tuple_items)):
                inner = v.desc if v.desc and len(v.desc) <= 40 else f"a {v.kind}"
                if inner.startswith("the return of"):
                    inner = f"a {v.kind}"
                return revalue(
                    v, desc=f"the return of `{callee_text(node.func)}` ({inner})" if v.desc else ""
                )
        known = [v for v in values if v.known or v.tuple_items]
        return known[0] if known else None

    def _callee(self, node: cst.Call, func: Val, scope: Scope, order: int):
        """The called function's summary, an instance for a class, or None."""
        info, project = self.info, self.project
        module = project.module if project is not None else ""
        if func.instance_of is not None and "?" in func.instance_of:
            return project.instance_method(func.instance_of, "__call__") if project else None
        if func.instance_of is not None:
            where, _, cname = func.instance_of.rpartition(":")
            if where and where != module:
                return project.method(where, cname, "__call__") if project else None
            cls = info.classes.get(cname)
            if cls is not None:
                local = cls.method_scopes.get("call") or cls.method_scopes.get("__call__")
                if local is not None:
                    return self._summary(local)
                return project.method(module, cname, "__call__") if project else None
            return None
        if isinstance(node.func, cst.Name):
            name = node.func.value
            found = self.lookup(name, scope, order)
            if name in info.classes and isinstance(found, Binding) and found.value is None:
                return Val("instance", instance_of=name, desc=f"a `{name}`")
            if name in info.functions and isinstance(found, Binding) and found.value is None:
                return self._summary(info.functions[name])
            if found is None and project is not None:
                return self._project_callee(name, node, scope, order)
            return None
        if isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
            s: Scope | None = scope
            while s is not None and s.kind != "function":
                s = s.parent
            if s is not None and s.cls is not None and s.self_name == node.func.value.value:
                method = s.cls.method_scopes.get(node.func.attr.value)
                if method is not None:
                    return self._summary(method)
                if project is not None:
                    return project.method(module, s.cls.node.name.value, node.func.attr.value)
                return None
            if project is not None and self.lookup(node.func.value.value, scope, order) is None:
                from .names import dotted_name

                return self._project_callee(dotted_name(node.func), node, scope, order)
        return None

    def _project_callee(self, dotted: str, node: cst.Call, scope: Scope, order: int):
        if not dotted:
            return None
        summary = self.project.call(dotted, self._passes_something(node, scope, order))
        if summary is not None:
            return summary
        last = dotted.rpartition(".")[2]
        if last[:1].isupper() and self.project._may_resolve(dotted):
            # a class, by convention: which one is asked only if a method is called on it
            return Val(
                "instance", instance_of=f"{self.project.module}?{dotted}", desc=f"a `{last}`"
            )
        return None

    def _passes_something(self, node: cst.Call, scope: Scope, order: int) -> bool:
        """An argument a returned parameter could carry: a known value or an activation."""
        from .project_summary import informative

        for a in node.args:
            value = a.value
            if isinstance(value, cst.SimpleString) or self.imports.op(value) is not None:
                return True
            if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
                continue
            if informative(self.value(value, scope, order)):
                return True
        return False

    def _summary(self, scope: Scope):
        from .project_summary import function_summary

        key = id(scope)
        if key not in self._summaries:
            self._summaries[key] = None  # recursion: nothing known
            module = self.project.module if self.project is not None else ""
            self._summaries[key] = function_summary(self, scope, module, portable_vals=False)
        return self._summaries[key]

    def _instantiate(self, summary, node: cst.Call, scope: Scope, order: int) -> list[Val]:
        """The summary's return candidates with this call's arguments put in."""
        if summary is None:
            return []
        bound = bound_arguments(summary, node)
        out = []
        for cand in summary.returns:
            if cand.when is not None:
                state = self._is_none(bound.get(cand.when[0]), summary.default(cand.when[0]))
                if state is not None and state != cand.when[1]:
                    continue
            if cand.param is not None:
                arg = bound.get(cand.param)
                if arg is not None:
                    out.append(self.value(arg, scope, order))
                else:
                    default = summary.default(cand.param)
                    out.append(default[0] if default and default[0] is not None else UNKNOWN)
            elif cand.bounds is not None:  # a uniform draw between the bounds passed here
                out.append(drawn_between(self, cand, summary, bound, scope, order))
            elif cand.items is not None:  # a tuple whose items return arguments passed here
                out.append(with_items(self, cand, summary, bound, scope, order))
            elif cand.apply is not None:
                out.append(self._applied(bound.get(cand.apply), cand.val or UNKNOWN))
            elif cand.val is not None and cand.val.activation_param is not None:
                out.append(self._activated(cand.val, bound, summary, scope, order))
            elif cand.val is not None:
                out.append(cand.val)
        return out

    def _activated(self, model: Val, bound: dict, summary, scope: Scope, order: int) -> Val:
        """A layer or model whose activation is a parameter of the helper that built it, with
        this call's argument (or the parameter's default) put in."""
        name = model.activation_param
        arg = bound.get(name)
        if arg is not None:
            act = None if self._is_param(arg, scope, order) else activation_name(self, arg)  # type: ignore[arg-type]
        else:
            default = summary.default(name)  # a default other than None is not kept as text
            act = "linear" if default is not None and default[1] else None
        return revalue(model, activation=act, activation_param=None)

    def _is_param(self, arg: cst.BaseExpression, scope: Scope, order: int) -> bool:
        found = isinstance(arg, cst.Name) and self.lookup(arg.value, scope, order)
        return isinstance(found, cst.Param)

    def _is_none(self, arg: cst.BaseExpression | None, default) -> bool | None:
        """Whether an argument is None at this call: True, False, or None for unknown."""
        if arg is None:
            return default[1] if default is not None else None
        if isinstance(arg, cst.Name) and arg.value == "None":
            return True
        if isinstance(arg, cst.SimpleString) or self.imports.op(arg) is not None:
            return False
        return None

    def _applied(self, arg: cst.BaseExpression | None, inner: Val) -> Val:
        """A passed activation applied to ``inner``: `activation=tf.nn.softmax` makes a softmax."""
        act = None
        if isinstance(arg, cst.SimpleString):
            act = arg.value.strip("'\"")
        elif arg is not None:
            act = self.imports.op(arg)
        if act == "linear":
            return inner
        if act is None:
            return Val("call", tensor=True, desc="the output of a passed function")
        lo, hi = ACTIVATION_RANGES.get(act, (-INF, INF))
        prob = act in ops.PROBABILITY
        return Val(
            act,
            lo,
            hi,
            tensor=True,
            prob=prob,
            zero="the probability saturates"
            if prob
            else ("every relu input is <= 0" if act in ops.DEAD_ZONE else None),
            desc=f"{act}({inner.desc or '...'})",
            origin=inner.origin,
        )
