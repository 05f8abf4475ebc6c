"""Value provenance: what produced a value, its range, and whether it is a probability.

Evaluation is an abstract interpretation over the syntax tree (the values are in
:mod:`.values`, each op's transfer in :mod:`.transfer`, name guesses in :mod:`.heuristics`).
Names are followed through assignments that precede the use, ``self.attr`` through every
method of the class, and parameters through their defaults.
"""

from __future__ import annotations

import math
from dataclasses import replace

import libcst as cst

from .. import ops
from .heuristics import looks_like_epsilon, looks_like_mask, looks_like_probability
from .module import Binding, ModuleInfo, Scope, qualname
from .transfer import ACTIVATION_RANGES, handler_for
from .values import (
    INF,
    LAYER_KINDS,
    LINEAR_KINDS,
    NOT_KNOWN,
    STRICTLY_POSITIVE_KINDS,
    UNKNOWN,
    Val,
    constant,
    interval_mul,
    number,
    paren,
    rounded,
)


def _named(name: str, val: Val) -> str:
    """`p` = sigmoid(...): one level of definition, not the whole chain behind it."""
    desc = val.desc
    if not desc or desc.startswith("`"):
        return f"`{name}`"
    if desc.count("`") > 2 or len(desc) > 40:
        head = desc.split("(", 1)[0] if "(" in desc else ""
        desc = f"{head}(...)" if head and " " not in head else "..."
        if desc == "...":
            return f"`{name}`"
    return f"`{name}` = {desc}"


def _fmt(v: float) -> str:
    return f"{v:g}"


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
        )
    if act == "linear":
        return Val("linear", tensor=True, desc=f"a linear {layer.kind} output")
    return Val("call", tensor=True, desc=f"a {layer.kind} output")


class Evaluator:
    """Evaluate expressions of one module to :class:`Val`, memoised per node."""

    MAX_DEPTH = 60

    def __init__(self, info: ModuleInfo, project=None) -> None:
        self.info = info
        self.imports = info.imports
        self.project = project  # a project.ProjectView, or None: this module alone
        self.origins: list[tuple] = []  # call sites behind the values evaluated, in order
        self._memo: dict[int, Val] = {}
        self._active: set[int] = set()
        self._depth = 0
        self._summaries: dict[int, object] = {}
        self._fed: dict[int, tuple[tuple[float, float], str] | None] | None = None
        self._fit: dict[str, tuple[tuple[float, float], str] | None] | None = None
        self._compiled: dict[str, Val | None] = {}

    # -- public -----------------------------------------------------------------------
    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val:
        key = id(node)
        cached = self._memo.get(key)
        if cached is not None:
            if cached.origin is not None:
                self.origins.append(cached.origin)
            return cached
        if key in self._active or self._depth > self.MAX_DEPTH:
            return UNKNOWN
        self._active.add(key)
        self._depth += 1
        seen = len(self.origins)
        try:
            result = self._eval(node, scope, order)
        finally:
            self._depth -= 1
            self._active.discard(key)
        if result.origin is None and len(self.origins) > seen:
            result = replace(result, origin=self.origins[seen])  # made from a passed value
        self._memo[key] = result
        if result.origin is not None:
            self.origins.append(result.origin)
        return result

    def op(self, call: cst.Call) -> str | None:
        return self.imports.op(call.func)

    def fed(self, placeholder: cst.Call) -> tuple[tuple[float, float], str] | None:
        """The range of what this module feeds a placeholder, and the fed code, when every
        feed of it is bounded NumPy code (``feeds.fed_ranges``)."""
        if self._fed is None:
            from .feeds import fed_ranges

            self._fed = {}  # a feed read while computing the table sees no range
            self._fed = fed_ranges(self)
        return self._fed.get(id(placeholder))

    def compiled_model(self, loss: str) -> Val | None:
        """The model every ``model.compile(loss=<loss>)`` of the module compiles, when they
        agree (Keras calls the loss with that model's output as ``y_pred``)."""
        if loss in self._compiled:
            return self._compiled[loss]
        self._compiled[loss] = None  # while it is computed (a model built from the loss)
        models: list[Val] = []
        for site in self.info.calls:
            func = site.node.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
                continue
            arg = next(
                (
                    a.value
                    for a in site.node.args
                    if a.keyword is not None and a.keyword.value == "loss"
                ),
                None,
            )
            if isinstance(arg, cst.Name) and arg.value == loss:
                models.append(self.value(func.value, site.scope, site.order))
        found = models[0] if len(models) == 1 and models[0].kind in ("model", "layer") else None
        self._compiled[loss] = found
        return found

    def fit_target(self, param: cst.Param, scope: Scope) -> Val | None:
        """``y_true`` of a module function compiled as a Keras loss: the range of the targets
        the module's ``fit`` calls train on (``feeds.fit_targets``)."""
        owner: Scope | None = scope
        while owner is not None and param not in owner.params.values():
            owner = owner.parent
        fn = owner.node if owner is not None else None
        if not isinstance(fn, cst.FunctionDef) or not fn.params.params:
            return None
        params = fn.params.params
        if self.info.functions.get(fn.name.value) is not owner:
            return None
        if len(params) > 1 and params[1] is param:  # y_pred: the compiled model's output
            model = self.compiled_model(fn.name.value)
            if model is None or not model.activation:
                return None
            return replace(
                layer_output(model),
                desc=f"`{param.name.value}` = "
                + (f"the output of the model compiled with `{fn.name.value}` ({model.activation})"),
            )
        if params[0] is not param:
            return None
        if self._fit is None:
            from .feeds import fit_targets

            self._fit = {}
            self._fit = fit_targets(self)
        got = self._fit.get(fn.name.value)
        if got is None:
            return None
        (lo, hi), code = got
        return Val(
            "param", lo, hi, desc=f"`{param.name.value}` (the targets `{code}` given to fit)"
        )

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None:
        """The binding of ``name`` visible at ``order`` in ``scope`` (or an enclosing one)."""
        s: Scope | None = scope
        first = True
        while s is not None:
            if s.kind == "class" and not first:
                s = s.parent
                continue
            bindings = s.bindings.get(name)
            if bindings:
                if first:
                    before = [b for b in bindings if b.visible <= order]
                    if before:
                        return before[-1]
                else:
                    return bindings[-1]
            if name in s.params:
                return s.params[name]
            first = False
            s = s.parent
        return None

    # -- evaluation ---------------------------------------------------------------------
    def _eval(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val:
        literal = number(node)
        if literal is not None:
            return constant(literal)
        if isinstance(node, cst.Name):
            return self._name(node.value, scope, order)
        if isinstance(node, cst.Attribute):
            return self._attribute(node, scope, order)
        if isinstance(node, cst.Call):
            return self._call(node, scope, order)
        if isinstance(node, cst.BinaryOperation):
            return self._binop(node, scope, order)
        if isinstance(node, cst.UnaryOperation):
            inner = self.value(node.expression, scope, order)
            if isinstance(node.operator, cst.Minus):
                return replace(
                    inner,
                    kind="neg" if inner.kind != "constant" else "constant",
                    lo=-inner.hi,
                    hi=-inner.lo,
                    const=-inner.const if inner.const is not None else None,
                    prob=False,
                    prob_by_name=False,
                    zero=inner.zero,
                    desc=f"-{inner.desc}",
                    exp_sum=False,
                )
            return UNKNOWN
        if isinstance(node, cst.Subscript):
            base = self.value(node.value, scope, order)
            if base.tensor or base.prob or base.kind == "mask":  # `mask[0]` is still a mask
                return replace(base, const=None, tuple_items=None, desc=f"{base.desc}[...]")
            return Val(desc=f"{base.desc or '...'}[...]")
        if isinstance(node, cst.Comparison):
            return Val("bool", 0.0, 1.0, tensor=True, zero="the comparison is false")
        if isinstance(node, cst.IfExp):
            a = self.value(node.body, scope, order)
            b = self.value(node.orelse, scope, order)
            return Val("arith", min(a.lo, b.lo), max(a.hi, b.hi), tensor=a.tensor or b.tensor)
        if isinstance(node, (cst.Tuple, cst.List)):
            items = tuple(self.value(e.value, scope, order) for e in node.elements)
            return Val("tuple", tuple_items=items)
        if isinstance(node, cst.NamedExpr):
            return self.value(node.value, scope, order)
        return UNKNOWN

    def _name(self, name: str, scope: Scope, order: int) -> Val:
        found = self.lookup(name, scope, order)
        if isinstance(found, cst.Param):
            if found.default is not None:
                default = self.value(found.default, scope, order)
                if default.const is not None:
                    return replace(
                        default, kind="constant", desc=f"`{name}` (default {_fmt(default.const)})"
                    )
            if looks_like_epsilon(name):  # an epsilon parameter: positive by intent
                return Val("eps", 5e-324, 1.0, guarded=True, desc=f"`{name}`")
            if looks_like_mask(name):
                return Val("mask", 0.0, 1.0, zero="the mask is all zeros", desc=f"`{name}`")
            passed = self._passed(name, found, scope) or self.fit_target(found, scope)
            if passed is not None:
                return passed
            prob = looks_like_probability(name)
            return Val(
                "param",
                prob=prob,
                prob_by_name=prob,
                lo=0.0 if prob else -INF,
                hi=1.0 if prob else INF,
                zero="the probability saturates" if prob else None,
                desc=f"`{name}`",
            )
        if isinstance(found, Binding):
            if found.value is None:
                return Val("name", desc=f"`{name}`")
            val = self.value(found.value, found.scope, found.at)
            if val.kind in LAYER_KINDS:
                val = self._built_layer(None, found, val, None)
            if found.index is not None:
                items = val.tuple_items
                val = items[found.index] if items and found.index < len(items) else UNKNOWN
            if val.kind == "unknown" or (val.kind == "call" and not val.tensor):
                prob = looks_like_probability(name)
                return replace(
                    val,
                    prob=prob,
                    prob_by_name=prob,
                    desc=f"`{name}`",
                    lo=0.0 if prob else val.lo,
                    hi=1.0 if prob else val.hi,
                    zero="the probability saturates" if prob else val.zero,
                )
            return replace(val, desc=_named(name, val))
        if self.imports.resolve(cst.Name(name)) is not None:
            return Val("module")
        imported = self.project.value(name) if self.project is not None else None
        if imported is not None:
            return replace(imported, desc=_named(name, imported))
        return Val("name", desc=f"`{name}`")

    def _passed(self, name: str, param: cst.Param, scope: Scope) -> Val | None:
        """What callers pass for a parameter: an instance of its annotated class, or the
        join of the arguments at the project's call sites."""
        if param.annotation is not None:
            cls = self._class_ref(param.annotation.annotation, scope)
            if cls is not None:
                return Val("instance", instance_of=cls, desc=f"`{name}`")
        if self.project is None:
            return None
        owner: Scope | None = scope
        while owner is not None and owner.params.get(name) is not param:
            owner = owner.parent
        qual = qualname(owner) if owner is not None else None
        if qual is None:
            return None
        fact = self.project.param(qual, name)
        if fact is None or (fact.kind in NOT_KNOWN and not fact.prob):
            return None
        return fact

    def _class_ref(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        """``C`` for a class of this module, ``module:C`` for one elsewhere in the project."""
        if isinstance(node, cst.Name) and node.value in self.info.classes:
            found = self.lookup(node.value, scope, 1 << 60)
            if isinstance(found, Binding) and found.value is None:
                return node.value
        if self.project is None or not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        from .names import dotted_name

        dotted = dotted_name(node)
        if not dotted or self.lookup(dotted.split(".")[0], scope, 1 << 60) is not None:
            return None
        sym = self.project.symbol(dotted)
        return f"{sym.module}:{sym.name}" if sym is not None and sym.kind == "class" else None

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int) -> Val:
        obj = node.value
        if isinstance(obj, cst.Name) and scope.cls is not None:
            s: Scope | None = scope
            while s is not None and s.kind != "function":
                s = s.parent
            if s is not None and s.self_name == obj.value:
                bindings = scope.cls.attrs.get(node.attr.value)
                if bindings:
                    same = [b for b in bindings if b.scope is s and b.visible <= order]
                    chosen = same[-1] if same else bindings[-1]
                    if chosen.value is not None:
                        val = self.value(chosen.value, chosen.scope, chosen.at)
                        if val.kind in LAYER_KINDS:
                            # set in another method: any of its assignments may be live
                            val = self.layer_attribute(node.attr.value, bindings, chosen, val,
                                                       every=not same)  # fmt: skip
                        name = f"self.{node.attr.value}"
                        if val.kind in ("unknown", "call"):
                            prob = looks_like_probability(node.attr.value)
                            return replace(val, prob=prob, prob_by_name=prob, desc=f"`{name}`")
                        return replace(val, desc=_named(name, val))
                elif self.project is not None:
                    inherited = self._inherited_attr(scope.cls.node, node.attr.value)
                    if inherited is not None:
                        return replace(inherited, desc=_named(f"self.{node.attr.value}", inherited))
        if node.attr.value in FINFO_POSITIVE and _is_finfo(obj):
            return Val("finfo", math.ulp(0.0), INF, desc=f"`{_dotted(node)}`", guarded=True)
        resolved = self.imports.resolve(node)
        if resolved is not None:
            return Val("module", desc=resolved)
        if self.project is not None and isinstance(obj, (cst.Name, cst.Attribute)):
            from .names import dotted_name

            dotted = dotted_name(node)
            if dotted and self.lookup(dotted.split(".")[0], scope, order) is None:
                val = self.project.value(dotted)
                if val is not None:
                    return replace(val, desc=_named(dotted, val))
        return Val(desc=f"`{_dotted(node)}`")

    def layer_attribute(
        self, attr: str, bindings: list[Binding], chosen: Binding, val: Val, every: bool = True
    ) -> Val:
        """``self.<attr>`` bound to a layer or model by ``chosen``: a ``Sequential`` grown by
        ``self.<attr>.add(...)`` has its last layer's output; read from a method that did not
        set it (``every``), the output is known only when every assignment (``None``
        placeholders aside) makes a layer with the same activation."""
        val = self._built_layer(attr, chosen, val, chosen.scope)
        if not every:
            return val
        for b in bindings:
            if b is chosen or b.value is None or b.index is not None or _is_none(b.value):
                continue
            other = self.value(b.value, b.scope, b.at)
            if other.kind in LAYER_KINDS:
                other = self._built_layer(attr, b, other, b.scope)
            if other.kind not in LAYER_KINDS:
                return Val("call", desc=val.desc)  # a layer here, something else there
            if other.activation != val.activation:
                return replace(val, activation=None)
        return val

    def _built_layer(self, attr: str | None, binding: Binding, val: Val, fn: Scope | None) -> Val:
        """A ``Sequential`` grown by ``.add(layer)``: the last layer added decides its output.
        ``attr``: the attribute it is bound to (``self.mlp.add`` in any method of the class);
        else a local name bound by ``binding`` (``model.add`` after it, same scope)."""
        value = binding.value
        if not isinstance(value, cst.Call) or self.op(value) != "sequential":
            return val
        added = [site for site in self.info.calls if self._adds_to(site, attr, binding, fn)]
        if not added:
            return val
        last = added[-1]
        layer = self.value(last.node.args[0].value, last.scope, last.order)
        act = layer.activation if layer.kind in LAYER_KINDS else None
        return replace(val, activation=act, desc="a Sequential model")

    def _adds_to(self, site, attr: str | None, binding: Binding, fn: Scope | None) -> bool:
        """``site`` is ``self.<attr>.add(layer)`` in a method of ``fn``'s class (with ``attr``),
        or ``<name>.add(layer)`` where ``<name>`` is bound by ``binding`` (without)."""
        func = site.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add" and site.node.args):
            return False
        target = func.value
        if attr is None:
            return (
                isinstance(target, cst.Name)
                and self.lookup(target.value, site.scope, site.order) is binding
            )
        s: Scope | None = site.scope
        while s is not None and s.kind != "function":
            s = s.parent
        return (
            s is not None
            and fn is not None
            and s.cls is fn.cls
            and isinstance(target, cst.Attribute)
            and target.attr.value == attr
            and isinstance(target.value, cst.Name)
            and target.value.value == s.self_name
        )

    def _inherited_attr(self, cls_node: cst.ClassDef, attr: str) -> Val | None:
        """``self.attr`` set by a base class (here or in another module of the project)."""
        module = self.project.module
        return self.project.attr(module, cls_node.name.value, attr)

    def _binop(self, node: cst.BinaryOperation, scope: Scope, order: int) -> Val:
        a = self.value(node.left, scope, order)
        b = self.value(node.right, scope, order)
        op = node.operator
        tensor = a.tensor or b.tensor
        if a.const is not None and b.const is not None:
            try:
                c = _fold(op, a.const, b.const)
            except (ZeroDivisionError, OverflowError, ValueError):
                c = None
            if c is not None:
                return constant(c)
        if isinstance(op, cst.Add):
            dtype = self.info.dtype(scope)
            a, b = rounded(a, dtype), rounded(b, dtype)
            lo, hi = a.lo + b.lo, a.hi + b.hi
            # a sum of non-negatives is 0 only when both are: keep a reason only then
            both = a.lo >= 0 and b.lo >= 0 and a.can_be_zero and b.can_be_zero
            zero = (a.zero or b.zero) if both and (a.zero or b.zero) else None
            guarded = (a.guarded or b.guarded) or (
                (a.lo >= 0 and b.const is not None and b.const > 0)
                or (b.lo >= 0 and a.const is not None and a.const > 0)
            )
            linear = LINEAR_KINDS & {a.kind, b.kind} and not (
                a.prob or b.prob or a.has_exp or b.has_exp
            )
            return Val(
                "linear" if linear else "arith",
                lo,
                hi,
                tensor=tensor,
                guarded=guarded,
                zero=zero,
                zero_weak=a.zero_weak and b.zero_weak,
                desc=f"{paren(a.desc)} + {paren(b.desc)}",
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
            )
        if isinstance(op, cst.Subtract):
            if b.kind == "reduce_max":  # x - reduce_max(x): the max-shifted form, <= 0
                return Val("diff_max", -INF, 0.0, tensor=True, desc="a max-shifted value")
            lo, hi = a.lo - b.hi, a.hi - b.lo
            prob = a.const == 1.0 and b.prob
            kind = "diff" if a.const is None and b.const is None else "arith"
            return Val(
                kind,
                lo,
                hi,
                tensor=tensor,
                prob=prob,
                prob_by_name=prob and b.prob_by_name,
                zero="its operands are equal" if kind == "diff" else None,
                desc=f"{paren(a.desc)} - {paren(b.desc)}",
                logits=b.logits if prob else None,
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
                activation=b.kind if prob and b.kind in ("sigmoid",) else None,
            )
        if isinstance(op, cst.Multiply):
            lo, hi = interval_mul(a, b)
            prob = (a.prob or a.one_hot) and (b.prob or b.one_hot) and (a.prob or b.prob)
            zero = (
                a.zero or b.zero
                if (a.can_be_zero or b.can_be_zero) and (a.known or b.known)
                else None
            )
            return Val(
                "linear" if _scaled_linear(a, b) or _scaled_linear(b, a) else "arith",
                lo,
                hi,
                tensor=tensor,
                prob=prob,
                zero=zero,
                one_hot=a.one_hot and b.one_hot,
                desc=f"{paren(a.desc)} * {paren(b.desc)}",
                masked_by=_masked(a, b, node.right) or _masked(b, a, node.left),
                has_exp=a.has_exp or b.has_exp,
                log_space=a.log_space or b.log_space,
            )
        if isinstance(op, cst.Divide):
            if b.lo > 0 or b.hi < 0:
                inv = (1 / b.hi if b.hi else INF, 1 / b.lo if b.lo else INF)
                lo, hi = interval_mul(a, Val(lo=min(inv), hi=max(inv)))
            else:
                lo, hi = -INF, INF
            if a.lo >= 0 and b.lo >= 0:
                lo = max(lo, 0.0)
            softmax = a.has_exp and b.exp_sum
            if not softmax and _normalised_by_own_sum(self.imports, node.left, node.right):
                return Val(
                    "normalised",
                    0.0,
                    1.0,
                    tensor=tensor,
                    prob=True,
                    zero=f"an entry of {a.desc or 'the numerator'} is 0 (an empty bin or count)",
                    desc=f"{paren(a.desc)} / {paren(b.desc)}",
                )
            return Val(
                "softmax" if softmax else "arith",
                0.0 if softmax else lo,
                1.0 if softmax else hi,
                tensor=tensor,
                prob=softmax,
                desc=f"{paren(a.desc)} / {paren(b.desc)}",
            )
        if isinstance(op, cst.Power):
            if (
                b.const is not None
                and b.const == int(b.const)
                and int(b.const) % 2 == 0
                and b.const > 0
            ):
                strong = a.zero is not None and not a.zero_weak
                return Val(
                    "square",
                    0.0,
                    INF,
                    tensor=tensor,
                    zero=a.zero if strong else "its base is 0",
                    zero_weak=not strong,
                    desc=f"{a.desc}**{_fmt(b.const)}",
                )
            return Val("arith", tensor=tensor)
        return Val("arith", tensor=tensor)

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
        return Val(op, tensor=True, desc=f"the {op} output", log_space=_log_space(op))

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
        return Val("call", desc=f"the result of `{_callee_text(node.func)}`")

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
                return replace(
                    v, desc=f"the return of `{_callee_text(node.func)}` ({inner})" if v.desc else ""
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
        bound: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(x for x in node.args if x.keyword is None):
            if a.star:
                break
            if i < len(summary.positional):
                bound[summary.positional[i]] = a.value
        for a in node.args:
            if a.keyword is not None:
                bound[a.keyword.value] = a.value
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
            elif cand.apply is not None:
                out.append(self._applied(bound.get(cand.apply), cand.val or UNKNOWN))
            elif cand.val is not None:
                out.append(cand.val)
        return out

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
            else ("every relu input is <= 0" if act in ("relu", "relu6") else None),
            desc=f"{act}({inner.desc or '...'})",
            origin=inner.origin,
        )


# attributes of `np.finfo(dtype)` / `tf.experimental.numpy.finfo(...)` that are positive numbers
FINFO_POSITIVE = frozenset(
    {"tiny", "eps", "epsneg", "max", "smallest_normal", "smallest_subnormal", "resolution"}
)


def _is_finfo(node: cst.BaseExpression) -> bool:
    """``node`` is a call of a function named finfo (numpy's, or a numpy-like module's)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func.attr if isinstance(node.func, cst.Attribute) else node.func
    return isinstance(func, cst.Name) and func.value == "finfo"


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _log_space(op: str) -> bool:
    entry = ops.REGISTRY.get(op)
    return entry is not None and entry.log_space


def _masked(value: Val, factor: Val, factor_node: cst.BaseExpression) -> tuple[str, str] | None:
    """``softmax(z) * mask``: a strictly positive value (or one already masked) times a mask is
    0 exactly where the mask is, so a witness needing it all-zero needs an empty mask.  A ReLU
    output is no such value: it is 0 by itself."""
    if factor.kind != "mask":
        return None
    if value.masked_by:
        return value.masked_by
    if value.kind not in STRICTLY_POSITIVE_KINDS:
        return None
    return (cst.Module([]).code_for_node(factor_node), value.kind)


def _scaled_linear(x: Val, factor: Val) -> bool:
    """A linear output times a Python scalar (a temperature, a constant) is still one."""
    return (
        x.kind in LINEAR_KINDS
        and (factor.const is not None or not factor.tensor)
        and (factor.kind not in ("instance", "tuple"))
    )


def _normalised_by_own_sum(imports, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """``x / reduce_sum(x)`` or ``x / (eps + reduce_sum(x, ...))``: an empirical distribution
    (a normalised count or weight), a probability that is exactly 0 wherever ``x`` is 0.  The
    fact comes from the code's shape, so it survives a name that says nothing (issue 12
    replaced the name guess that used to find it)."""
    if isinstance(den, cst.BinaryOperation) and isinstance(den.operator, cst.Add):
        sides = [den.left, den.right]
    else:
        sides = [den]
    for side in sides:
        if (
            isinstance(side, cst.Call)
            and imports.op(side.func) == "reduce_sum"
            and side.args
            and side.args[0].keyword is None
            and side.args[0].value.deep_equals(num)
        ):
            return True
    return False


def _dotted(node: cst.BaseExpression) -> str:
    text = _callee_text(node)
    return text if text != "call" else "..."


def _callee_text(func: cst.BaseExpression) -> str:
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts)) or "call"


def _fold(op: cst.BaseBinaryOp, a: float, b: float) -> float | None:
    if isinstance(op, cst.Add):
        return a + b
    if isinstance(op, cst.Subtract):
        return a - b
    if isinstance(op, cst.Multiply):
        return a * b
    if isinstance(op, cst.Divide):
        return a / b
    if isinstance(op, cst.Power):
        r = a**b
        return r if isinstance(r, float | int) else None
    return None
