"""Value provenance: what produced a value, its range, and whether it is a probability.

Evaluation is an abstract interpretation over the syntax tree (the values are in
:mod:`.values`, each op's transfer in :mod:`.transfer`, what a value is by its use in
:mod:`.roles`).
Names are followed through assignments that precede the use, ``self.attr`` through every
method of the class, and parameters through their defaults.
"""

from __future__ import annotations

import math

import libcst as cst

from ..floats import smallest_normal
from .dtypectx import FLOAT_WORDS, dtype_word
from .module import Binding, ModuleInfo, Scope, qualname
from .project_summary import BOUND_KINDS, PASSED_KINDS, makes_hazard
from .provenance_arith import EvaluatesArithmetic, fmt_number
from .provenance_calls import EvaluatesCalls, callee_text, layer_output
from .roles import NONE as NO_ROLES
from .roles import Roles, name_roles, scopes_with_roles
from .values import (
    INF,
    LAYER_KINDS,
    NOT_KNOWN,
    UNKNOWN,
    Val,
    constant,
    number,
    revalue,
)

# caller facts a callee keeps without a role asking: ranges that bound it, values training drives
_KEPT_KINDS = BOUND_KINDS | PASSED_KINDS


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


def _is_none(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _weights_unknown_zero(val: Val) -> bool:
    """A value whose zeros nothing in view explains (a cast or reshape of an input)."""
    return (
        val.zero is None
        and val.const is None
        and not val.guarded
        and not val.positive
        and val.lo <= 0.0 <= val.hi
    )


class Evaluator(EvaluatesCalls, EvaluatesArithmetic):
    """Evaluate expressions of one module to :class:`Val`, memoised per node."""

    MAX_DEPTH = 60

    def __init__(self, info: ModuleInfo, project=None) -> None:
        self.info = info
        self.imports = info.imports
        self.project = project  # a project_view.ProjectView, or None: this module alone
        self.origins: list[tuple] = []  # call sites behind the values evaluated, in order
        # id -> (node, value): the node is kept, so that its id is never reused by another
        # node while the memo holds it (code made on the fly, such as an inlined helper's
        # substituted return, is evaluated too, and then freed)
        self._memo: dict[int, tuple[cst.BaseExpression, Val]] = {}
        self._active: set[int] = set()
        self._depth = 0
        self._summaries: dict[int, object] = {}
        self._fed: dict[int, tuple[tuple[float, float], str] | None] | None = None
        self._fit: dict[str, tuple[tuple[float, float], str] | None] | None = None
        self._compiled: dict[str, Val | None] = {}
        self._compile_sites: dict[str, list] | None = None
        self._role_scopes: set[int] | None = None  # roles.scopes_with_roles, once
        self._layer_inputs: dict[int, object] = {}  # layer_inputs.class_inputs, per class

    # -- public -----------------------------------------------------------------------
    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val:
        key = id(node)
        held = self._memo.get(key)
        cached = held[1] if held is not None and held[0] is node else None
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
            result = revalue(result, origin=self.origins[seen])  # made from a passed value
        self._memo[key] = (node, result)
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
        for site in self._compiles().get(loss, ()):
            func = site.node.func
            assert isinstance(func, cst.Attribute)
            models.append(self.value(func.value, site.scope, site.order))
        found = models[0] if len(models) == 1 and models[0].kind in ("model", "layer") else None
        self._compiled[loss] = found
        return found

    def _compiles(self) -> dict[str, list]:
        """The module's ``x.compile(loss=<name>)`` call sites by loss name, found in one scan
        (asked once per function of the module, a scan per question was quadratic)."""
        if self._compile_sites is None:
            self._compile_sites = {}
            for site in self.info.calls:
                func = site.node.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
                    continue
                arg = next(
                    (a.value for a in site.node.args if a.keyword and a.keyword.value == "loss"),
                    None,
                )
                if isinstance(arg, cst.Name):
                    self._compile_sites.setdefault(arg.value, []).append(site)
        return self._compile_sites

    def fit_target(self, param: cst.Param, scope: Scope) -> Val | None:
        """``y_true`` of a module function compiled as a Keras loss: the range of the targets
        the module's ``fit`` calls train on (``feeds.fit_targets``)."""
        owner: Scope | None = scope
        while owner is not None and param not in owner.params.values():
            owner = owner.parent
        fn = owner.node if owner is not None else None
        if isinstance(fn, cst.Lambda):
            return self._compiled_lambda_output(fn, param)
        if not isinstance(fn, cst.FunctionDef) or not fn.params.params:
            return None
        params = fn.params.params
        if self.info.functions.get(fn.name.value) is not owner:
            return None
        if len(params) > 1 and params[1] is param:  # y_pred: the compiled model's output
            model = self.compiled_model(fn.name.value)
            if model is None or not model.activation:
                return None
            return revalue(
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

    def _layer_input(self, param: cst.Param, owner: Scope | None) -> Val | None:
        """The first input of a Keras layer's ``call``: the data the program feeds the model
        the layer leads (``layer_inputs.call_input``)."""
        from .layer_inputs import call_input

        return call_input(self, param, owner, self._layer_inputs)

    def _compiled_lambda_output(self, fn: cst.Lambda, param: cst.Param) -> Val | None:
        """``y_pred`` of ``model.compile(loss=lambda y, p: ...)``: the model's output."""
        params = fn.params.params
        if len(params) < 2 or params[1] is not param:
            return None
        for site in self.info.calls:
            func = site.node.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
                continue
            if not any(
                a.keyword and a.keyword.value == "loss" and a.value is fn for a in site.node.args
            ):
                continue
            model = self.value(func.value, site.scope, site.order)
            if model.kind not in ("model", "layer") or not model.activation:
                return None
            desc = f"`{param.name.value}` = the output of the compiled model ({model.activation})"
            return revalue(layer_output(model), desc=desc)
        return None

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
                return revalue(
                    inner,
                    kind="neg" if inner.kind != "constant" else "constant",
                    lo=-inner.hi,
                    hi=-inner.lo,
                    const=-inner.const if inner.const is not None else None,
                    prob=False,
                    prob_by_use=False,
                    zero=inner.zero,
                    desc=f"-{inner.desc}",
                    exp_sum=False,
                )
            return UNKNOWN
        if isinstance(node, cst.Subscript):
            base = self.value(node.value, scope, order)
            if base.tensor or base.prob or base.kind == "mask":  # `mask[0]` is still a mask
                return revalue(base, const=None, tuple_items=None, desc=f"{base.desc}[...]")
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
                    return revalue(
                        default,
                        kind="constant",
                        desc=f"`{name}` (default {fmt_number(default.const)})",
                    )
            owner = self._owner(name, found, scope)
            if name in self.roles(owner).guards:  # only ever `x + eps`: positive by intent
                return Val("eps", 5e-324, 1.0, guarded=True, desc=f"`{name}`")
            passed = (
                self._passed(name, found, scope)
                or self.fit_target(found, scope)
                or self._layer_input(found, owner)
            )
            if passed is not None:
                return passed
            if _is_none(found.default) and name in self.roles(owner).factors:
                # `def f(x, m=None)`, only ever `x * m`: an optional elementwise gate
                return Val("mask", 0.0, 1.0, zero=f"every entry of `{name}` is 0", desc=f"`{name}`")
            return self._by_use(name, owner, Val("param"))
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
                return self._by_use(name, found.scope, val)
            if _weights_unknown_zero(val) and name in self.roles(found.scope).weights:
                # `w = cast(mask)`, then sum(x * w) / sum(w): the weights' zero is the use's
                return revalue(val, kind="mask", lo=0.0, zero=f"every weight in `{name}` is 0",
                               desc=_named(name, val))  # fmt: skip
            return revalue(val, desc=_named(name, val))
        if self.imports.resolve(cst.Name(name)) is not None:
            return Val("module")
        imported = self.project.value(name) if self.project is not None else None
        if imported is not None:
            return revalue(imported, desc=_named(name, imported))
        return Val("name", desc=f"`{name}`")

    def _owner(self, name: str, param: cst.Param, scope: Scope) -> Scope | None:
        """The function scope that declares ``param``."""
        owner: Scope | None = scope
        while owner is not None and owner.params.get(name) is not param:
            owner = owner.parent
        return owner

    def roles(self, scope: Scope | None) -> Roles:
        """How ``scope``'s body uses its names (``roles.name_roles``), once per scope and walk:
        the roles read only the tree and its imports, which the rounds over a walk share."""
        node = scope.node if scope is not None else None
        if scope is None or not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.Module)):
            return Roles(frozenset(), frozenset())
        found = scope.roles
        if not isinstance(found, Roles):
            if self._role_scopes is None:
                self._role_scopes = scopes_with_roles(self.info, self.op)
            has_roles = id(scope) in self._role_scopes or not self._own(scope)
            found = scope.roles = name_roles(node, self.op) if has_roles else NO_ROLES
        return found

    def _own(self, scope: Scope) -> bool:
        """``scope`` is of this module's walk (a scope of another walk is read by walking)."""
        while scope.parent is not None:
            scope = scope.parent
        return scope is self.info.root

    def _by_use(self, name: str, scope: Scope | None, val: Val) -> Val:
        """A value the evaluator cannot see into, typed by what its scope does with it: the
        weights of a weighted mean, or a probability (``roles``).  Never by its name."""
        desc = f"`{name}`"
        roles = self.roles(scope)
        if name in roles.weights:
            return Val("mask", 0.0, 1.0, zero=f"every weight in {desc} is 0", desc=desc)
        if name in roles.probability:
            return revalue(
                val,
                prob=True,
                prob_by_use=True,
                lo=0.0,
                hi=1.0,
                zero="the probability saturates",
                desc=desc,
            )
        if name in roles.targets:
            return revalue(val, lo=max(val.lo, 0.0), desc=desc)
        return revalue(val, desc=desc)

    def _passed(self, name: str, param: cst.Param, scope: Scope) -> Val | None:
        """What callers pass for a parameter: an instance of its annotated class, or the
        join of the arguments at the project's call sites."""
        if param.annotation is not None:
            cls = self._class_ref(param.annotation.annotation, scope)
            if cls is not None:
                return Val("instance", instance_of=cls, desc=f"`{name}`")
        if self.project is None:
            return None
        owner = self._owner(name, param, scope)
        qual = qualname(owner) if owner is not None else None
        if qual is None:
            return None
        fact = self.project.param(qual, name)
        if fact is None or (fact.kind in NOT_KNOWN and not (fact.prob or fact.trained)):
            return None
        if not (makes_hazard(fact) or fact.trained) and fact.kind not in _KEPT_KINDS:
            roles = self.roles(owner)
            if name not in roles.probability and name not in roles.weights:
                return None  # a bare guard only silences a guess by use, and there is none
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
                            return revalue(val, desc=f"`{name}`")
                        return revalue(val, desc=_named(name, val))
                elif self.project is not None:
                    inherited = self._inherited_attr(scope.cls.node, node.attr.value)
                    if inherited is not None:
                        return revalue(inherited, desc=_named(f"self.{node.attr.value}", inherited))
        if node.attr.value in FINFO_POSITIVE and _is_finfo(obj):
            return self._finfo(node, obj, scope)
        resolved = self.imports.resolve(node)
        if resolved is not None:
            return Val("module", desc=resolved)
        if self.project is not None and isinstance(obj, (cst.Name, cst.Attribute)):
            from .names import dotted_name

            dotted = dotted_name(node)
            if dotted and self.lookup(dotted.split(".")[0], scope, order) is None:
                val = self.project.value(dotted)
                if val is not None:
                    return revalue(val, desc=_named(dotted, val))
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
                return revalue(val, activation=None)
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
        return revalue(val, activation=act, desc="a Sequential model")

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

    def _finfo(self, node: cst.Attribute, call: cst.BaseExpression, scope: Scope) -> Val:
        """``np.finfo(d).tiny`` (or ``.smallest_normal``) is the smallest positive normal number
        of ``d``: of the dtype a literal names, else of the project's float type (the dtype the
        code computes in, which its probes use too); the other attributes are > 0."""
        lo = math.ulp(0.0)
        if node.attr.value in ("tiny", "smallest_normal"):
            args = call.args if isinstance(call, cst.Call) else ()
            word = dtype_word(args[0].value, scope) if args else None
            lo = smallest_normal(FLOAT_WORDS.get(word or "") or self.info.default_float)
        return Val("finfo", lo, INF, desc=f"`{_dotted(node)}`", guarded=True)

    def _inherited_attr(self, cls_node: cst.ClassDef, attr: str) -> Val | None:
        """``self.attr`` set by a base class (here or in another module of the project)."""
        module = self.project.module
        return self.project.attr(module, cls_node.name.value, attr)


# attributes of `np.finfo(dtype)` / `tf.experimental.numpy.finfo(...)` that are positive numbers
# (`tiny` and `smallest_normal`: the smallest positive normal number of the dtype)
FINFO_POSITIVE = frozenset(
    {"tiny", "eps", "epsneg", "max", "smallest_normal", "smallest_subnormal", "resolution"}
)


def _is_finfo(node: cst.BaseExpression) -> bool:
    """``node`` is a call of a function named finfo (numpy's, or a numpy-like module's)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func.attr if isinstance(node.func, cst.Attribute) else node.func
    return isinstance(func, cst.Name) and func.value == "finfo"


def _dotted(node: cst.BaseExpression) -> str:
    text = callee_text(node)
    return text if text != "call" else "..."
