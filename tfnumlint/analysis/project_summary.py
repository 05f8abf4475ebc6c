"""One module's summary for the project index, built from its own parse: module bindings, what
each function returns, class attributes and invariants, and the call sites of project
functions with the abstract values of their arguments (only values that carry a fact are
kept, so unrelated edits do not re-lint importers).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import replace

import libcst as cst

from .. import ops, stages
from .callplaces import call_starts, name_starts, scannable
from .discrete import discrete_returns
from .invariants import (
    Invariants,
    class_invariants,
    class_transforms,
    key_invariant,
    value_key,
)
from .module import Binding, ModuleInfo, Scope, qualname
from .names import dotted_name
from .project_imports import _THIRD_PARTY_ROOTS, import_table, project_reads, text_digest
from .project_model import (
    CallSite,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    ReturnCandidate,
)
from .returned_args import draw_params, passed_param, tuple_params
from .values import LAYER_KINDS, LINEAR_KINDS, Val
from .wholes import local_callee, whole_returns

# -- summaries --------------------------------------------------------------------------------


# Producers the rules act on (or that keep them silent: a clip, a maximum, a log-space value),
# as the registry's facts the rules read (analysis/ may not import rules/; tests/test_op_tables.py
# checks that the rules' own kind tables stay within this union):
_CARRIED = (
    LINEAR_KINDS  # a raw linear output (matmul): log and exp of it (TNL104, TNL301)
    | ops.SATURATING  # sigmoid, softmax, tanh, and log_softmax/log_sigmoid (silent)
    | ops.UNDERFLOWING_POSITIVE  # exp, softplus: 0 only once they underflow
    | ops.DEAD_ZONE  # relu: exactly 0 on a region (TNL104)
    | ops.FED  # fed data: a placeholder, a Keras Input (TNL104)
    | ops.FLOORING  # clip_by_value, maximum: keep the rules silent
    | ops.ops_with(lambda op: op.fixed_values)  # one_hot: labels times a probability stay one
    # provenance kinds no op is named after: a difference, a negation, a mask, Keras layers and
    # models (their output activation), a value an assertion bounds
    | {"diff", "neg", "mask", "asserted"}
    | LAYER_KINDS
)


def informative(v: Val) -> bool:
    """A value worth carrying across a boundary: one the rules act on.  Everything else stays
    out of the summaries, so that a fact changes (and a file is re-linted) only when it can
    change a finding."""
    if v.prob:
        return not v.prob_by_use  # a use is the callee's guess, not a producer
    if v.instance_of is not None or v.tuple_items:
        return v.instance_of is not None or any(informative(i) for i in v.tuple_items or ())
    if v.const is not None:
        return 0 < abs(v.const) <= 1e-3  # an epsilon; other constants stay local
    if (v.zero is not None and not v.zero_weak) or v.trained:
        return True  # a trained output makes a parameter it is passed for a driven input
    return v.kind in _CARRIED or v.has_exp or v.exp_sum or v.log_space or v.guarded


# values that keep the rules silent: a value floored by a guard, a log of a squashed logit;
# BOUND_KINDS adds a value an assertion bounds
_SILENT_KINDS = ops.FLOORING | ops.LOG_SQUASHING  # clip_by_value, maximum; log_softmax, ...
BOUND_KINDS = _SILENT_KINDS | {"asserted"}
# Provenance kinds of what callers pass for a parameter that training drives: data, draws,
# layer and model outputs, squashed logits (placeholder, input, variable, random; sigmoid,
# softmax and their logs).  A parameter passed one is a driven input (``driven.py``).
PASSED_KINDS = ops.DATA_SOURCES | ops.DRAWN | ops.LOGIT_SQUASHING | {"layer", "model"}


def makes_hazard(v: Val) -> bool:
    """A value that can make a rule fire (as opposed to one that keeps it silent)."""
    if v.guarded or v.log_space:
        return False
    if v.prob or v.instance_of is not None or (v.zero is not None and not v.zero_weak):
        return True
    return v.kind not in _SILENT_KINDS and (
        v.kind in _CARRIED or v.has_exp or v.exp_sum or v.const is not None
    )


def returned_fact(v: Val) -> bool:
    """A return value a caller in another module gains from: one the rules act on, or one whose
    interval its code bounds (``0.5 * (1 + erf(x)) * (1 - 2e-3) + 1e-3`` is in [1e-3, 0.999]), so
    that a call there is not a free value (its witness cannot leave the helper's range)."""
    return informative(v) or (v.known and (v.lo > -math.inf or v.hi < math.inf))


def returns_part(fs: FunctionSummary | None, passed: bool) -> FunctionSummary | None:
    """The candidates that return a parameter (``passed``), or those that make a value:
    asked separately, so that a pass-through helper concerns only calls that pass something."""
    if fs is None:
        return None
    if passed:
        keep = tuple(c for c in fs.returns if c.param is not None or c.apply is not None)
    else:  # a draw's bounds or a tuple's passed items: the call's own arguments put them in
        keep = tuple(
            c
            for c in fs.returns
            if c.bounds is not None
            or c.items is not None
            or (c.param is None and c.apply is None and c.val is not None and returned_fact(c.val))
        )
    return replace(fs, returns=keep) if keep else None


def informative_summary(fs: FunctionSummary | None) -> bool:
    return fs is not None and any(
        c.param is not None
        or c.apply is not None
        or c.items
        or c.bounds
        or (c.val is not None and returned_fact(c.val))
        for c in fs.returns
    )


def portable(v: Val, module: str) -> Val:
    """``v`` without syntax-tree references, with its class named across modules."""
    items = tuple(portable(i, module) for i in v.tuple_items) if v.tuple_items else v.tuple_items
    inst = v.instance_of
    if inst is not None and ":" not in inst and "?" not in inst:
        inst = f"{module}:{inst}"
    if v.logits is None and items is v.tuple_items and inst == v.instance_of and v.origin is None:
        return v
    # an origin names a call site for findings in this module only: it does not travel
    return replace(v, logits=None, tuple_items=items, instance_of=inst, origin=None)


def _is_param(ev, name: str, scope: Scope, order: int) -> bool:
    return isinstance(ev.lookup(name, scope, order), cst.Param)


def _none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """``p is not None`` -> (p, False): the body runs when p is not None; ``p is None`` ->
    (p, True); a bare ``p`` -> (p, False)."""
    if isinstance(test, cst.Name):
        return test.value, False
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        op = test.comparisons[0].operator
        if isinstance(op, cst.IsNot):
            return test.left.value, False
        if isinstance(op, cst.Is):
            return test.left.value, True
    return None


def return_candidates(
    ev, expr: cst.BaseExpression, scope: Scope, at: int, export, when=None
) -> list[ReturnCandidate]:
    """``export`` turns a value into what the summary keeps (portable, or as is)."""
    if isinstance(expr, cst.IfExp):
        test = _none_test(expr.test)
        if test is not None and _is_param(ev, test[0], scope, at):
            name, body_when_none = test
            return [
                *return_candidates(ev, expr.body, scope, at, export, (name, body_when_none)),
                *return_candidates(ev, expr.orelse, scope, at, export, (name, not body_when_none)),
            ]
    param = passed_param(ev, expr, scope, at)
    if param is not None:  # `x`, `tf.cast(x, dtype)`: the argument passed for it
        return [ReturnCandidate(param=param, when=when)]
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and _is_param(ev, expr.func.value, scope, at)
        and expr.args
    ):
        inner = export(ev.value(expr.args[0].value, scope, at))
        return [ReturnCandidate(val=inner, apply=expr.func.value, when=when)]
    made = export(ev.value(expr, scope, at))
    items, bounds = tuple_params(ev, expr, scope, at), draw_params(ev, expr, scope, at)
    return [ReturnCandidate(val=made, when=when, items=items, bounds=bounds)]


def _static(node: cst.CSTNode) -> bool:
    """A ``@staticmethod``: its first parameter is no instance."""
    return isinstance(node, cst.FunctionDef) and any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in node.decorators
    )


def function_summary(ev, scope: Scope, module: str, portable_vals: bool = True) -> FunctionSummary:
    """A function's parameters and returns; ``portable_vals`` strips syntax-tree references
    (for the index; the module's own evaluator keeps them, for the fixes)."""

    def export(v: Val) -> Val:
        return portable(v, module) if portable_vals else v

    node = scope.node
    assert isinstance(node, cst.FunctionDef)
    params = node.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if (
        scope.parent is not None
        and scope.parent.kind == "class"
        and not _static(node)
        and positional
    ):
        positional = positional[1:]
    defaults = []
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.default is None:
            continue
        is_none = isinstance(p.default, cst.Name) and p.default.value == "None"
        val = None if is_none else export(ev.value(p.default, scope.parent or scope, 0))
        defaults.append((p.name.value, val, is_none))
    returns: list[ReturnCandidate] = []
    for at, expr in scope.returns:
        returns.extend(return_candidates(ev, expr, scope, at, export))
    return FunctionSummary(
        module,
        qualname(scope) or scope.name,
        tuple(positional),
        tuple(p.name.value for p in params.kwonly_params),
        tuple(defaults),
        tuple(returns),
        discrete_returns(scope, ev.lookup),
        whole_returns(
            scope, ev.lookup, lambda c, s: local_callee(c, s, ev.info.functions, ev.lookup)
        ),
    )


def _last_value(bindings: list[Binding]) -> Binding | None:
    b = bindings[-1] if bindings else None
    return b if b is not None and b.value is not None and b.index is None else None


_NEVER_INFORMATIVE = frozenset(
    {cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Lambda, cst.Dict}
)


class Summariser:
    """Builds one module's summary with the evaluator the rules used (shared memo)."""

    def __init__(
        self,
        info: ModuleInfo,
        ev,
        module: str,
        is_package: bool,
        path: str,
        text: str,
        file: str = "",
    ) -> None:
        self.info, self.ev, self.module, self.path = info, ev, module, path
        self.file = file
        self.is_package = is_package
        self.text = text
        self.imports, self.stars = import_table(info.import_nodes, module, is_package)
        self._invariants: dict[int, Invariants] = {}

    def build(self) -> ModuleSummary:
        info, ev, module = self.info, self.ev, self.module
        functions: list[tuple[str, FunctionSummary]] = []
        for name, scope in info.functions.items():
            functions.append((name, function_summary(ev, scope, module)))
        classes: list[tuple[str, ClassSummary]] = []
        top_classes = {id(s) for s in info.module.body if isinstance(s, cst.ClassDef)}
        for cname, cls in info.classes.items():
            if id(cls.node) not in top_classes:
                continue
            for mname, mscope in cls.method_scopes.items():
                functions.append((f"{cname}.{mname}", function_summary(ev, mscope, module)))
            attrs = []
            for attr, bindings in cls.attrs.items():
                b = _last_value(bindings)
                if b is not None:
                    v = ev.value(b.value, b.scope, b.at)
                    if v.kind in LAYER_KINDS:  # a layer built in `build`, called in subclasses
                        v = ev.layer_attribute(attr, bindings, b, v)
                    if informative(v):
                        attrs.append((attr, portable(v, module)))
            bases = tuple(dotted_name(b.value) for b in cls.node.bases if dotted_name(b.value))
            declared = class_transforms(cls)
            transforms = tuple((a, *b) for a, b in declared.items() if b is not None)
            summary = ClassSummary(
                cname, bases, tuple(attrs), tuple(cls.method_scopes), tuple(declared), transforms
            )
            classes.append((cname, summary))
        calls, opaque = self._calls()
        values: list[tuple[str, Val]] = []
        for name, bs in info.root.bindings.items():
            b = _last_value(bs)
            if b is not None:
                v = ev.value(b.value, b.scope, b.at)
                if informative(v):
                    values.append((name, portable(v, module)))
        return ModuleSummary(
            module,
            self.path,
            tuple((k, m, s) for k, (m, s) in self.imports.items()),
            tuple(self.stars),
            tuple(functions),
            tuple(classes),
            tuple(values),
            tuple(calls),
            tuple(opaque),
            text_digest(self.text),
            self.file,
            project_reads(
                self.text, self.imports, map(info.module.code_for_node, info.import_nodes)
            ),
        )

    def _calls(self) -> tuple[list[CallSite], list[tuple[str, ...]]]:
        pending = []
        opaque: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for site in self.info.calls:
            callee = self._callee(site.node, site.scope, site.order)
            if callee is None:
                continue
            positional: list[Val | None] = []
            keywords: list[tuple[str, Val]] = []
            forwards: list[tuple[str, str, str, str]] = []
            slots: list[tuple[str, cst.BaseExpression]] = []
            useful = False
            for a in site.node.args:
                if a.star:
                    break
                slot = a.keyword.value if a.keyword is not None else str(len(positional))
                slots.append((slot, a.value))
                if type(a.value) in _NEVER_INFORMATIVE or (
                    type(a.value) is cst.Name and a.value.value in ("None", "True", "False")
                ):
                    if a.keyword is None:
                        positional.append(None)
                    continue
                v = self.ev.value(a.value, site.scope, site.order)
                if not informative(v):  # what the caller's class asserts about the argument
                    v = self._asserted(a.value, site.scope) or v
                keep = informative(v)
                useful = useful or keep
                pv = portable(v, self.module) if keep else None
                if pv is None:
                    passed_on = self._forwarded(a.value, site.scope, site.order)
                    if passed_on is not None:
                        forwards.append((slot, self.module, *passed_on))
                        useful = True
                if a.keyword is None:
                    positional.append(pv)
                elif pv is not None:
                    keywords.append((a.keyword.value, pv))
            related = self._related(slots, site.scope)
            if useful or related:
                pending.append(
                    (site, callee, tuple(positional), tuple(keywords), tuple(forwards), related)
                )
            elif callee not in seen:
                seen.add(callee)
                opaque.append(callee)
        if not pending:
            return [], opaque
        with stages.stage("call places"):
            where = _call_places(self.text, self.info, [s for s, *_ in pending])
        out = []
        for site, callee, args, kwargs, fwd, related in pending:
            line, col = where.get(id(site.node), (0, 0))
            text = _short(dotted_name(site.node.func) or "...")
            origin = (self.path, line, col, text, "", "")
            out.append(CallSite(callee, args, kwargs, origin, fwd, related))
        return out, opaque

    def _forwarded(
        self, node: cst.BaseExpression, scope: Scope, order: int
    ) -> tuple[str, str] | None:
        """``g(x)`` inside ``f(x)``: the argument is ``f``'s own parameter, passed on as it is
        (a function the index tracks: module level, or a method of a module-level class)."""
        if not isinstance(node, cst.Name):
            return None
        found = self.ev.lookup(node.value, scope, order)
        if not isinstance(found, cst.Param):
            return None
        owner: Scope | None = scope
        while owner is not None and owner.params.get(node.value) is not found:
            owner = owner.parent
        qual = qualname(owner) if owner is not None else None
        if qual is None or owner is None:
            return None
        if owner.cls is not None and node.value == owner.self_name and not _static(owner.node):
            return None  # the instance: dispatch through it is not followed
        return qual, node.value

    def _method_of(self, scope: Scope) -> Scope | None:
        """The method around ``scope`` (None outside a class)."""
        fn: Scope | None = scope
        while fn is not None and fn.kind != "function":
            fn = fn.parent
        if fn is None or fn.cls is None:
            return None
        return fn

    def _invariants_of(self, fn: Scope) -> Invariants:
        """The invariants of the method's class, memoised per class; computed only when a
        call passes something they could be about (most calls pass nothing of the kind)."""
        assert fn.cls is not None
        inv = self._invariants.get(id(fn.cls))
        if inv is None:
            with stages.stage("class invariants"):
                inv = self._invariants[id(fn.cls)] = class_invariants(fn.cls)
        return inv

    def _related(
        self, slots: list[tuple[str, cst.BaseExpression]], scope: Scope
    ) -> tuple[tuple[str, str, str, str], ...]:
        """The class's asserted relations between two attributes this call passes."""
        fn = self._method_of(scope)
        if fn is None or len(slots) < 2:
            return ()
        init_params = frozenset(fn.params) if fn.name == "__init__" else frozenset()
        keys = {slot: value_key(node, fn, init_params) for slot, node in slots}
        if sum(k is not None for k in keys.values()) < 2:
            return ()  # a relation names two attributes
        inv = self._invariants_of(fn)
        if not inv.relations:
            return ()
        cname = fn.cls.node.name.value if fn.cls is not None else ""
        out = []
        for a_key, op, b_key, why in inv.relations:
            for sa in (sl for sl, k in keys.items() if k == a_key):
                for sb in (sl for sl, k in keys.items() if k == b_key and sl != sa):
                    out.append((sa, op, sb, f"{why} in `{cname}`"))
        return tuple(out)

    def _asserted(self, node: cst.BaseExpression, scope: Scope) -> Val | None:
        """An argument that reads an attribute its class asserts (``_log_combinations(n, k)``
        with ``n`` from ``self.total_count``, asserted non-negative and integer-form): the
        class invariant is the range of what this call passes."""
        fn = self._method_of(scope)
        if fn is None:
            return None
        cls = fn.cls
        assert cls is not None
        init_params = frozenset(fn.params) if fn.name == "__init__" else frozenset()
        key = value_key(node, fn, init_params)
        if key is None:
            return None  # reads no attribute: nothing the class asserts is about it
        inv = self._invariants_of(fn)
        if not inv.bounds and not inv.integer:
            return None
        found = key_invariant(inv, key)
        if found is None:
            return None
        lo = found.lo
        if found.integer and found.lo_open and math.isfinite(lo):
            lo = math.floor(lo) + 1.0  # a positive whole number is >= 1
        return Val(
            "asserted",
            lo,
            found.hi,
            tensor=True,
            integer=found.integer,
            desc=f"`{_short(cst.Module([]).code_for_node(node), 40)}` of "
            f"`{cls.node.name.value}`: {found.why}",
        )

    def _callee(self, node: cst.Call, scope: Scope, order: int) -> tuple[str, ...] | None:
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
            found = self.ev.lookup(name, scope, order)
            if found is None:
                if (
                    name in self.imports
                    and self.imports[name][0].split(".")[0] not in _THIRD_PARTY_ROOTS
                ):
                    return ("sym", self.module, name)
                return ("sym", self.module, name) if self.stars else None
            if isinstance(found, Binding) and found.value is None and found.scope.kind == "module":
                if name in self.info.defined:
                    return ("sym", self.module, name)
                return None
            if not self._maybe_instance(found):
                return None
            v = self.ev.value(func, scope, order)
            return self._instance_method(v, "__call__")
        if isinstance(func, cst.Attribute):
            base = func.value
            if isinstance(base, cst.Name):
                s: Scope | None = scope
                while s is not None and s.kind != "function":
                    s = s.parent
                if s is not None and s.cls is not None and s.self_name == base.value:
                    cname = s.cls.node.name.value
                    return ("method", self.module, cname, func.attr.value)
            dotted = dotted_name(func)
            root = dotted.split(".")[0] if dotted else ""
            if (
                root in self.imports
                and self.imports[root][0].split(".")[0] not in _THIRD_PARTY_ROOTS
            ) and self.ev.lookup(root, scope, order) is None:
                return ("sym", self.module, dotted)
            if isinstance(base, cst.Name) and self._maybe_instance(
                self.ev.lookup(base.value, scope, order)
            ):
                v = self.ev.value(base, scope, order)
                return self._instance_method(v, func.attr.value)
        return None

    def _project_name(self, node: cst.BaseExpression) -> bool:
        """A callee spelled with a class of this module or a name imported from the project."""
        root = dotted_name(node).split(".")[0]
        if root in self.info.classes:
            return True
        if root in self.imports:
            return self.imports[root][0].split(".")[0] not in _THIRD_PARTY_ROOTS
        return bool(self.stars) and bool(root)

    def _maybe_instance(self, found) -> bool:
        """Cheap syntactic test before evaluating: bound to ``C(...)`` or annotated."""
        if isinstance(found, cst.Param):
            return found.annotation is not None
        if isinstance(found, Binding) and isinstance(found.value, cst.Call):
            return self._project_name(found.value.func)
        return False

    def _instance_method(self, v: Val, method: str) -> tuple[str, ...] | None:
        inst = v.instance_of
        if inst is None:
            return None
        if "?" in inst:
            return ("pmethod", inst, method)
        module, _, cname = inst.rpartition(":")
        return ("method", module or self.module, cname, method)


def _call_places(text: str, info: ModuleInfo, sites) -> dict[int, tuple[int, int]]:
    """Line and column of each call in ``sites``, found in the text by its callee's name: the
    k-th call of ``f`` in walk (source) order is the k-th ``f(`` in the text, when the two
    counts agree (a mention in a string or comment makes them differ: then no line).  The
    position provider would cost about the parse again on large files."""
    wanted: dict[str, list] = {}
    for site in sites:
        name = dotted_name(site.node.func)
        if name:
            wanted.setdefault(name, [])
    last_parts = {name.rpartition(".")[2] for name in wanted}
    for site in info.calls:
        func = site.node.func
        tail = (
            func.value
            if type(func) is cst.Name
            else getattr(getattr(func, "attr", None), "value", None)
        )
        if tail in last_parts:
            name = dotted_name(func)
            if name in wanted:
                wanted[name].append(site.node)
    out: dict[int, tuple[int, int]] = {}
    starts: list[int] | None = None
    calls: dict[str, list[int]] | None = None
    for name, nodes in wanted.items():
        if not nodes:
            continue
        if not scannable(name):
            matches = name_starts(text, name)
        else:
            if calls is None:
                calls = call_starts(text)
            matches = calls.get(name, [])
        if len(matches) != len(nodes):
            continue
        if starts is None:
            starts = [0] + [m.end() for m in re.finditer("\n", text)]
        for node, at in zip(nodes, matches, strict=True):
            line = bisect.bisect_right(starts, at)
            out[id(node)] = (line, at - starts[line - 1] + 1)
    return out


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
