"""The project index: what each module of the linted tree makes, across functions, classes
and modules, without importing or running any of it.

Each module is summarised from its own parse into plain, picklable data: module-level
bindings, what each function returns (a value, a parameter, or a parameter applied to a
value), class attributes and bases, and the call sites of project functions with the
abstract values of their arguments.  :class:`ProjectIndex` merges the summaries and answers
*facts* by key (``sym|m|name``, ``ret|m|f``, ``param|m|f|x``, ``attr|m|C|a``).  The evaluator
asks through a :class:`ProjectView`, which records every key it asked about and the digest of
the answer: a file's result is a function of its text and of those facts only, so a file is
re-linted (or served from the cache) exactly when one of them changed.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import hashlib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import libcst as cst

from .. import stages
from .callplaces import call_starts, name_starts, scannable
from .heuristics import looks_like_probability
from .invariants import (
    Invariants,
    class_invariants,
    class_transforms,
    key_invariant,
    value_key,
)
from .module import Binding, ModuleInfo, Scope, qualname
from .names import dotted_name, imported_names
from .values import LAYER_KINDS, UNKNOWN, Val, join_vals

T = TypeVar("T")

# path, line, column, the call's text, the parameter, what the argument is
Origin = tuple[str, int, int, str, str, str]

MAX_CALL_SITES = 32  # a parameter's fact joins at most this many call sites (sorted by place)
MAX_DEPTH = 12  # re-export chains, base-class chains
MAX_HOPS = 3  # a parameter passed on as it is: its callers' callers, at most this far out
NO_FACT = "-"


@dataclass(frozen=True)
class ReturnCandidate:
    """One ``return`` of a function, as far as it can be told without its caller."""

    val: Val | None = None  # a value made inside the function
    param: str | None = None  # ...or one of its parameters, returned as is
    apply: str | None = None  # ...or a parameter called on ``val`` (a passed activation)
    when: tuple[str, bool] | None = None  # only when (that parameter is None) == flag


@dataclass(frozen=True)
class FunctionSummary:
    module: str
    qualname: str
    positional: tuple[str, ...]  # parameters filled by position (``self`` dropped for methods)
    keyword_only: tuple[str, ...]
    defaults: tuple[tuple[str, Val | None, bool], ...]  # name, its value, literally None
    returns: tuple[ReturnCandidate, ...]

    def default(self, name: str) -> tuple[Val | None, bool] | None:
        for n, val, is_none in self.defaults:
            if n == name:
                return val, is_none
        return None


@dataclass(frozen=True)
class ClassSummary:
    name: str
    bases: tuple[str, ...]  # dotted, as written; resolved in the defining module
    attrs: tuple[tuple[str, Val], ...]
    methods: tuple[str, ...]
    assigned: tuple[str, ...] = ()  # every attribute the class assigns
    transforms: tuple[tuple[str, float, bool, float, str], ...] = ()  # (attr, lo, lo_open, hi, why)


@dataclass(frozen=True)
class CallSite:
    """A call of a project function: ``("sym", module, dotted)`` names the callee as written
    in ``module``; ``("method", module, class, name)`` is a method of a known class."""

    callee: tuple[str, ...]
    positional: tuple[Val | None, ...]
    keywords: tuple[tuple[str, Val], ...]
    origin: Origin
    # arguments that are the calling function's own parameters, passed on as they are:
    # (slot: the position as a string or the keyword, module, the caller's qualname, its
    # parameter), so that the parameter's fact follows that caller's callers (several hops)
    forwards: tuple[tuple[str, str, str, str], ...] = ()
    # relations the caller's class asserts between two of the attributes it passes: (slot a,
    # op, slot b, why): ``_pdf(self.low, self.high)`` with ``assert_less(self.low, self.high)``
    relations: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True)
class ModuleSummary:
    module: str
    path: str
    imports: tuple[tuple[str, str, str | None], ...]  # local name, module, symbol (None: module)
    stars: tuple[str, ...]
    functions: tuple[tuple[str, FunctionSummary], ...]
    classes: tuple[tuple[str, ClassSummary], ...]
    bindings: tuple[tuple[str, Val], ...]
    calls: tuple[CallSite, ...]
    # callees of the project calls that pass nothing informative (whether every caller of a
    # function passes a known value is a fact too: `pall|...`)
    opaque_calls: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Symbol:
    """What a name means in a module: a function, a class, a module or a value."""

    kind: str
    module: str
    name: str = ""
    val: Val | None = None


# -- module names and imports ---------------------------------------------------------------


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted module name of a file, from the packages (``__init__.py``) around it, and
    whether it is a package's ``__init__``."""
    path = Path(path)
    is_package = path.stem == "__init__"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file() or (directory / "__init__.pyi").is_file():
        parts.append(directory.name)
        if directory.parent == directory:
            break
        directory = directory.parent
    name = ".".join(reversed(parts))
    return name or path.stem, is_package


def _absolute(module: str, is_package: bool, level: int, target: str) -> str | None:
    """``from ..x import y`` inside ``module``: the absolute name of ``..x``."""
    if level == 0:
        return target
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, target] if target else base) or None


def import_table(
    nodes: Iterable[cst.Import | cst.ImportFrom], module: str, is_package: bool
) -> tuple[dict[str, tuple[str, str | None]], list[str]]:
    """Local name -> (module, symbol or None for the module itself); and star-imported modules."""
    table: dict[str, tuple[str, str | None]] = {}
    stars: list[str] = []
    for node in nodes:
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = dotted_name(alias.name)
                if not dotted:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    table[alias.asname.name.value] = (dotted, None)
                else:
                    root = dotted.split(".")[0]
                    table[root] = (root, None)
            continue
        level = len(node.relative)
        target = _absolute(
            module, is_package, level, dotted_name(node.module) if node.module else ""
        )
        if target is None:
            continue
        if isinstance(node.names, cst.ImportStar):
            stars.append(target)
            continue
        for name, local in imported_names(node.names):
            table[local] = (target, name)
    return table, stars


_THIRD_PARTY_ROOTS = frozenset({"tensorflow", "keras", "tf_keras", "numpy", "jax", "torch"})


def imports_only(
    text: str, module: str, is_package: bool, path: str, tree: ast.Module | None = None
) -> ModuleSummary | None:
    """The summary of a module with no TensorFlow in it: only what it imports and re-exports
    (a package ``__init__`` that does ``from .layers import *``).  The stdlib parser is
    enough for that, and about ten times cheaper than libcst; ``tree`` is its parse of
    ``text`` when the caller has one."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    table: list[tuple[str, str, str | None]] = []
    stars: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table.append((alias.asname, alias.name, None))
                else:
                    root = alias.name.split(".")[0]
                    table.append((root, root, None))
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node.level, node.module or "")
            if target is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    stars.append(target)
                else:
                    table.append((alias.asname or alias.name, target, alias.name))
    if not table and not stars:
        return None
    return ModuleSummary(module, path, tuple(table), tuple(stars), (), (), (), ())


# -- summaries --------------------------------------------------------------------------------


# Producers the rules act on (or that keep them silent: a clip, a maximum, a log-space value).
_CARRIED = frozenset(
    {
        "linear",
        "matmul",
        "diff",
        "neg",
        "exp",
        "tanh",
        "placeholder",
        "input",
        "sigmoid",
        "softmax",
        "relu",
        "relu6",
        "softplus",
        "clip_by_value",
        "maximum",
        "log_softmax",
        "log_sigmoid",
        "one_hot",
        "mask",
        "layer",
        "model",
        "asserted",
    }
)


def informative(v: Val) -> bool:
    """A value worth carrying across a boundary: one the rules act on.  Everything else stays
    out of the summaries, so that a fact changes (and a file is re-linted) only when it can
    change a finding."""
    if v.prob:
        return not v.prob_by_name  # a name is the caller's guess, not a producer
    if v.instance_of is not None or v.tuple_items:
        return v.instance_of is not None or any(informative(i) for i in v.tuple_items or ())
    if v.const is not None:
        return 0 < abs(v.const) <= 1e-3  # an epsilon; other constants stay local
    if v.zero is not None and not v.zero_weak:
        return True
    return v.kind in _CARRIED or v.has_exp or v.exp_sum or v.log_space or v.guarded


_BOUNDS = frozenset({"clip_by_value", "maximum", "log_softmax", "log_sigmoid", "asserted"})


def _makes_hazard(v: Val) -> bool:
    """A value that can make a rule fire (as opposed to one that keeps it silent)."""
    if v.guarded or v.log_space:
        return False
    if v.prob or v.instance_of is not None or (v.zero is not None and not v.zero_weak):
        return True
    return v.kind not in ("clip_by_value", "maximum", "log_softmax", "log_sigmoid") and (
        v.kind in _CARRIED or v.has_exp or v.exp_sum or v.const is not None
    )


def _returns_part(fs: FunctionSummary | None, passed: bool) -> FunctionSummary | None:
    """The candidates that return a parameter (``passed``), or those that make a value:
    asked separately, so that a pass-through helper concerns only calls that pass something."""
    if fs is None:
        return None
    if passed:
        keep = tuple(c for c in fs.returns if c.param is not None or c.apply is not None)
    else:
        keep = tuple(
            c
            for c in fs.returns
            if c.param is None and c.apply is None and c.val is not None and informative(c.val)
        )
    return replace(fs, returns=keep) if keep else None


def informative_summary(fs: FunctionSummary | None) -> bool:
    return fs is not None and any(
        c.param is not None or c.apply is not None or (c.val is not None and informative(c.val))
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
    if isinstance(expr, cst.Name) and _is_param(ev, expr.value, scope, at):
        return [ReturnCandidate(param=expr.value, when=when)]
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and _is_param(ev, expr.func.value, scope, at)
        and expr.args
    ):
        inner = export(ev.value(expr.args[0].value, scope, at))
        return [ReturnCandidate(val=inner, apply=expr.func.value, when=when)]
    return [ReturnCandidate(val=export(ev.value(expr, scope, at)), when=when)]


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
    ) -> None:
        self.info, self.ev, self.module, self.path = info, ev, module, path
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


# -- the index --------------------------------------------------------------------------------


def digest(fact: object) -> str:
    if fact is None:
        return NO_FACT
    return hashlib.blake2b(repr(fact).encode(), digest_size=10).hexdigest()


@dataclass
class ProjectIndex:
    """Every module's summary, and the facts derived from them (memoised)."""

    summaries: dict[str, ModuleSummary]
    _facts: dict[str, object] = field(default_factory=dict)
    _digests: dict[str, str] = field(default_factory=dict)
    _by_target: dict[tuple[str, str], list[tuple[CallSite, FunctionSummary]]] | None = None
    _opaque_targets: set[tuple[str, str]] | None = None
    _packages: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._functions = {m: dict(s.functions) for m, s in self.summaries.items()}
        self._classes = {m: dict(s.classes) for m, s in self.summaries.items()}
        self._bindings = {m: dict(s.bindings) for m, s in self.summaries.items()}
        self._imports = {m: {k: (t, n) for k, t, n in s.imports} for m, s in self.summaries.items()}
        for m in self.summaries:
            parts = m.split(".")
            for i in range(1, len(parts) + 1):
                self._packages.add(".".join(parts[:i]))

    # -- public ------------------------------------------------------------------------------
    def fact(self, key: str) -> object:
        if key in self._facts:
            return self._facts[key]
        self._facts[key] = None  # a cycle answers "nothing known"
        kind, *rest = key.split("|")
        value: object = None
        if kind == "sym" and len(rest) == 2:
            value = self._dotted(rest[0], rest[1], 0)
            value = value if self._useful(value, 0) else None
        elif kind == "val" and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            value = sym.val if sym is not None and sym.kind == "value" else None
        elif kind in ("call", "callp") and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "function":
                fs = self._functions[sym.module].get(sym.name)
                value = _returns_part(fs, passed=kind == "callp")
        elif kind == "pmeth" and len(rest) == 2:
            value = self._pending_method(rest[0], rest[1])
        elif kind == "ret" and len(rest) == 2:
            value = self._functions.get(rest[0], {}).get(rest[1])
            value = value if informative_summary(value) else None
        elif kind == "meth" and len(rest) == 3:
            value = self._method(rest[0], rest[1], rest[2], 0)
            value = value if informative_summary(value) else None
        elif kind == "attr" and len(rest) == 3:
            value = self._attr(rest[0], rest[1], rest[2], 0)
        elif kind == "ptx" and len(rest) == 3:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "class":
                value = self._declared_bound(sym.module, sym.name, rest[2])
        elif kind == "param" and len(rest) == 3:
            value = self._param(rest[0], rest[1], rest[2])
        elif kind == "prel" and len(rest) == 2:
            value = self._caller_relations(rest[0], rest[1]) or None
        elif kind == "pall" and len(rest) == 3:
            value = True if self._every_site_passes(rest[0], rest[1], rest[2]) else None
        elif kind == "ext" and len(rest) == 2:
            value = True if self._imported_elsewhere(rest[0], rest[1]) else None
        elif kind == "ancestry" and len(rest) == 2:
            sym = self._dotted(rest[0], rest[1], 0)
            if sym is not None and sym.kind == "class":
                value = self._ancestry(sym.module, sym.name, 0) or None
        self._facts[key] = value
        return value

    def _imported_elsewhere(self, module: str, name: str) -> bool:
        """Another module imports ``name`` from ``module``, the module itself, or all of it."""
        for m, summary in self.summaries.items():
            if m == module:
                continue
            if module in summary.stars:
                return True
            for _, target, symbol in summary.imports:
                if target == module and symbol in (None, name):
                    return True
                if symbol is not None and f"{target}.{symbol}" == module:
                    return True  # `from pkg import mod`
        return False

    def digest(self, key: str) -> str:
        d = self._digests.get(key)
        if d is None:
            d = self._digests[key] = digest(self.fact(key))
        return d

    # -- symbols -----------------------------------------------------------------------------
    def _dotted(self, module: str, dotted: str, depth: int) -> Symbol | None:
        head, *tail = dotted.split(".")
        sym = self._symbol(module, head, depth)
        for part in tail:
            if sym is None or sym.kind != "module":
                return None
            sym = self._symbol(sym.module, part, depth)
        return sym

    def _symbol(self, module: str, name: str, depth: int) -> Symbol | None:
        if depth > MAX_DEPTH:
            return None
        if module not in self.summaries:
            sub = f"{module}.{name}"
            return Symbol("module", sub) if sub in self._packages else None
        if name in self._classes[module]:
            return Symbol("class", module, name)
        if name in self._functions[module]:
            return Symbol("function", module, name)
        if name in self._bindings[module]:
            return Symbol("value", module, name, self._bindings[module][name])
        imported = self._imports[module].get(name)
        if imported is not None:
            target, symbol = imported
            if symbol is None:
                return Symbol("module", target) if target in self._packages else None
            found = self._symbol(target, symbol, depth + 1)
            if found is None and f"{target}.{symbol}" in self._packages:
                return Symbol("module", f"{target}.{symbol}")
            return found
        for star in self.summaries[module].stars:
            found = self._symbol(star, name, depth + 1)
            if found is not None and found.kind != "module":
                return found
        sub = f"{module}.{name}"
        return Symbol("module", sub) if sub in self._packages else None

    def _useful(self, sym: Symbol | None, depth: int) -> bool:
        """Whether knowing the symbol can change a value: a function or a class that makes
        something the rules act on.  Anything else answers "unknown", as if unresolved, so
        that resolving it does not make a file stale."""
        if sym is None or depth > MAX_DEPTH:
            return False
        if sym.kind == "value":
            return sym.val is not None
        if sym.kind == "function":
            return informative_summary(self._functions[sym.module].get(sym.name))
        if sym.kind == "class":
            cls = self._classes[sym.module].get(sym.name)
            if cls is None:
                return False
            if cls.attrs or any(
                informative_summary(self._functions[sym.module].get(f"{sym.name}.{m}"))
                for m in cls.methods
            ):
                return True
            return any(
                self._useful(Symbol("class", bm, bc), depth + 1)
                for bm, bc in self._bases(sym.module, sym.name)
            )
        return False

    # -- classes -----------------------------------------------------------------------------
    def _bases(self, module: str, cname: str) -> list[tuple[str, str]]:
        cls = self._classes.get(module, {}).get(cname)
        out = []
        for base in cls.bases if cls else ():
            sym = self._dotted(module, base, 0)
            if sym is not None and sym.kind == "class":
                out.append((sym.module, sym.name))
        return out

    def _ancestry(self, module: str, cname: str, depth: int) -> tuple[str, ...]:
        """The names of a project class's ancestors, as written where each is a base: the
        project's own classes by name, and the bases outside the project (``layers.Layer``)
        at the chain's ends."""
        cls = self._classes.get(module, {}).get(cname)
        if cls is None or depth > MAX_DEPTH:
            return ()
        out: list[str] = []
        for base in cls.bases:
            out.append(base)
            sym = self._dotted(module, base, 0)
            if sym is not None and sym.kind == "class":
                out += self._ancestry(sym.module, sym.name, depth + 1)
        return tuple(out)

    def _pending_method(self, spec: str, name: str) -> FunctionSummary | None:
        module, _, dotted = spec.partition("?")
        sym = self._dotted(module, dotted, 0)
        if sym is None or sym.kind != "class":
            return None
        found = self._method(sym.module, sym.name, name, 0)
        return found if informative_summary(found) else None

    def _method(self, module: str, cname: str, name: str, depth: int) -> FunctionSummary | None:
        if depth > MAX_DEPTH or cname not in self._classes.get(module, {}):
            return None
        for candidate in (name, "call") if name == "__call__" else (name,):
            own = self._functions[module].get(f"{cname}.{candidate}")
            if own is not None:
                return own
            for bm, bc in self._bases(module, cname):
                found = self._method(bm, bc, candidate, depth + 1)
                if found is not None:
                    return found
        return None

    def _attr(self, module: str, cname: str, name: str, depth: int) -> Val | None:
        def own(cls: ClassSummary) -> Val | None:
            return next((val for attr, val in cls.attrs if attr == name), None)

        return self._nearest(module, cname, own, depth)

    def _assigning(self, module: str, cname: str, name: str, depth: int) -> ClassSummary | None:
        """The nearest class in ``cname``'s hierarchy that assigns attribute ``name``."""
        return self._nearest(
            module, cname, lambda cls: cls if name in cls.assigned else None, depth
        )

    def _nearest(
        self, module: str, cname: str, own: Callable[[ClassSummary], T | None], depth: int
    ) -> T | None:
        """What ``own`` finds on ``cname`` or, failing that, on the nearest base class that has
        it (bases in order, depth-first): one walk up the hierarchy for attributes and the
        classes that assign them."""
        cls = self._classes.get(module, {}).get(cname)
        if cls is None or depth > MAX_DEPTH:
            return None
        found = own(cls)
        if found is not None:
            return found
        for bm, bc in self._bases(module, cname):
            found = self._nearest(bm, bc, own, depth + 1)
            if found is not None:
                return found
        return None

    def _derives(self, module: str, cname: str, target: tuple[str, str], depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        return any(
            (bm, bc) == target or self._derives(bm, bc, target, depth + 1)
            for bm, bc in self._bases(module, cname)
        )

    def _declared_bound(
        self, module: str, cname: str, name: str
    ) -> tuple[float, bool, float, str] | None:
        """The bound that the declared transform of attribute ``name`` gives every instance of
        ``cname``: the nearest assigning class declares it, and no project subclass assigns
        the attribute otherwise (an instance of one could be passed too)."""
        owner = self._assigning(module, cname, name, 0)
        bound = _declared(owner, name) if owner is not None else None
        if bound is None or owner is None:
            return None
        for m, classes in self._classes.items():
            for c, cls in classes.items():
                if name not in cls.assigned or (m, c) == (module, cname):
                    continue
                if _declared(cls, name) != bound and self._derives(m, c, (module, cname), 0):
                    return None
        lo, lo_open, hi, why = bound
        return lo, lo_open, hi, f"{why} in `{owner.name}`"

    # -- parameters from call sites -----------------------------------------------------------
    def _target(self, site: CallSite) -> FunctionSummary | None:
        if site.callee[0] == "sym":
            sym = self._dotted(site.callee[1], site.callee[2], 0)
            if sym is None:
                return None
            if sym.kind == "function":
                return self._functions[sym.module].get(sym.name)
            if sym.kind == "class":
                return self._method(sym.module, sym.name, "__init__", 0)
            return None
        if site.callee[0] == "method":
            return self._method(site.callee[1], site.callee[2], site.callee[3], 0)
        if site.callee[0] == "pmethod":
            module, _, dotted = site.callee[1].partition("?")
            sym = self._dotted(module, dotted, 0)
            if sym is not None and sym.kind == "class":
                return self._method(sym.module, sym.name, site.callee[2], 0)
        return None

    def _sites(self, module: str, qual: str) -> list[tuple[CallSite, FunctionSummary]]:
        if self._by_target is None:
            by: dict[tuple[str, str], list[tuple[CallSite, FunctionSummary]]] = {}
            for m in sorted(self.summaries):
                for site in self.summaries[m].calls:
                    target = self._target(site)
                    if target is not None:
                        by.setdefault((target.module, target.qualname), []).append((site, target))
            for sites in by.values():
                sites.sort(key=lambda st: st[0].origin[:3])
            self._by_target = by
        return self._by_target.get((module, qual), [])[:MAX_CALL_SITES]

    def _opaque(self) -> set[tuple[str, str]]:
        """The functions some call site calls passing nothing informative."""
        if self._opaque_targets is None:
            targets = set()
            for m in sorted(self.summaries):
                for callee in self.summaries[m].opaque_calls:
                    target = self._target(CallSite(callee, (), (), ("", 0, 0, "", "", "")))
                    if target is not None:
                        targets.add((target.module, target.qualname))
            self._opaque_targets = targets
        return self._opaque_targets

    def _every_site_passes(
        self, module: str, qual: str, name: str, hops: int = 0, seen: frozenset = frozenset()
    ) -> bool:
        """Every call of the function in the project passes a known value for ``name`` (so
        the parameter's fact is the join over all its callers, not over some of them).  A
        caller that passes on its own parameter passes what its callers pass: followed up to
        :data:`MAX_HOPS` out; a cycle or a longer chain is not known."""
        if (module, qual) in self._opaque() or (module, qual, name) in seen:
            return False
        self._sites(module, qual)
        assert self._by_target is not None
        sites = self._by_target.get((module, qual), [])
        if not sites or len(sites) > MAX_CALL_SITES:
            return False
        seen = seen | {(module, qual, name)}
        for site, target in sites:
            val = _argument(site, target, name)
            if val is not None and val.instance_of is None:
                continue
            passed_on = _forward(site, target, name) if val is None else None
            if passed_on is None or hops >= MAX_HOPS:
                return False
            if not self._every_site_passes(*passed_on, hops + 1, seen):
                return False
        return True

    def _param(
        self, module: str, qual: str, name: str, hops: int = 0, seen: frozenset = frozenset()
    ) -> Val | None:
        vals = self._passed_values(module, qual, name, hops, seen)
        if not vals:
            return None
        joined = join_vals(vals)
        if not informative(joined):
            return None
        if (
            not _makes_hazard(joined)
            and joined.kind not in _BOUNDS
            and not looks_like_probability(name)
        ):
            return None  # a bare guard only silences a name-based guess, and there is none
        return replace(joined, desc=f"`{name}`")

    def _caller_relations(self, module: str, qual: str) -> tuple[tuple[str, str, str, str], ...]:
        """Relations between two parameters that every call site passes from attributes its
        class asserts so related (``a < b`` by ``assert_less(self.low, self.high)``)."""
        if (module, qual) in self._opaque():
            return ()
        self._sites(module, qual)
        assert self._by_target is not None
        sites = self._by_target.get((module, qual), [])
        if not sites or len(sites) > MAX_CALL_SITES:
            return ()
        common: dict[tuple[str, str, str], str] | None = None
        for site, target in sites:
            here: dict[tuple[str, str, str], str] = {}
            for sa, op, sb, why in site.relations:
                a, b = _slot_name(target, sa), _slot_name(target, sb)
                if a and b:
                    here.setdefault((a, op, b), why)
            common = here if common is None else {k: v for k, v in common.items() if k in here}
        return tuple((a, op, b, why) for (a, op, b), why in sorted((common or {}).items()))

    def _passed_values(
        self, module: str, qual: str, name: str, hops: int, seen: frozenset
    ) -> list[Val]:
        """The known values the call sites pass for ``name``, each marked with its call
        site; a site that passes on its caller's parameter contributes what that caller's
        callers pass (the outermost known call decides)."""
        if (module, qual, name) in seen:
            return []
        seen = seen | {(module, qual, name)}
        vals: list[Val] = []
        for site, target in self._sites(module, qual):
            val = _argument(site, target, name)
            if val is None:
                passed_on = _forward(site, target, name)
                if passed_on is not None and hops < MAX_HOPS:
                    vals += self._passed_values(*passed_on, hops + 1, seen)
                continue
            path, line, col, text, _, _ = site.origin
            if val.instance_of is not None:
                continue  # objects passed around: dispatch through them is not followed
            if val.kind == "diff" and val.zero is not None:
                val = replace(val, zero=None)  # a - b passed on: unbounded, but no zero source
            vals.append(replace(val, origin=(path, line, col, text, name, _producer(val))))
        return vals


def _producer(val: Val) -> str:
    """How a message names what a call site passes: its description, with its kind when the
    description is only a name (`out`, a softmax output)."""
    desc = val.desc or ""
    kind = val.kind if val.kind not in ("unknown", "arith", "call", "asserted") else ""
    if desc.startswith("`") and " = " in desc and len(desc) > 32:
        desc = desc.split(" = ", 1)[0]  # `hot` = (`y` = matmul(...)) * 0.125: the name will do
    if kind and (not desc or desc.startswith("`")) and kind not in desc:
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{desc}, {article} {kind} output" if desc else f"{article} {kind} output"
    return desc or "a value"


def _argument(site: CallSite, target: FunctionSummary, name: str) -> Val | None:
    for kw, val in site.keywords:
        if kw == name:
            return val
    if name in target.positional:
        i = target.positional.index(name)
        if i < len(site.positional):
            return site.positional[i]
    return None


def _declared(cls: ClassSummary, name: str) -> tuple[float, bool, float, str] | None:
    """The bound the class's own assignments of attribute ``name`` declare."""
    for attr, lo, lo_open, hi, why in cls.transforms:
        if attr == name:
            return lo, lo_open, hi, why
    return None


def _slot_name(target: FunctionSummary, slot: str) -> str | None:
    """The parameter a call's argument slot fills (a position or a keyword)."""
    if slot.isdigit():
        i = int(slot)
        return target.positional[i] if i < len(target.positional) else None
    return slot if slot in target.positional or slot in target.keyword_only else None


def _forward(site: CallSite, target: FunctionSummary, name: str) -> tuple[str, str, str] | None:
    """(module, the caller's qualname, its parameter) when the call passes the caller's own
    parameter on for ``name``."""
    slot = name
    if name in target.positional:
        slot = str(target.positional.index(name))
    for s, module, qual, param in site.forwards:
        if s in (slot, name):
            return module, qual, param
    return None


class ProjectView:
    """The evaluator's window on the index, for one module; records what it asked."""

    def __init__(
        self, index: ProjectIndex | None, module: str, info: ModuleInfo, is_package: bool
    ) -> None:
        self.index = index
        self.module = module
        self.imports, self.stars = import_table(info.import_nodes, module, is_package)
        self.touched: dict[str, str] = {}

    def ask(self, key: str) -> object:
        if self.index is None:
            self.touched[key] = NO_FACT
            return None
        fact = self.index.fact(key)
        self.touched[key] = self.index.digest(key)
        return fact

    def _may_resolve(self, dotted: str) -> bool:
        """Only names imported from elsewhere (or star-imported) are worth a question."""
        root = dotted.split(".")[0]
        if root in self.imports:
            return self.imports[root][0].split(".")[0] not in _THIRD_PARTY_ROOTS
        return bool(self.stars)

    def symbol(self, dotted: str) -> Symbol | None:
        """A name (or dotted chain) of this module that no local binding explains."""
        if not self._may_resolve(dotted):
            return None
        fact = self.ask(f"sym|{self.module}|{dotted}")
        return fact if isinstance(fact, Symbol) else None

    def declared_bound(self, dotted: str, attr: str) -> tuple[float, bool, float, str] | None:
        """What the declared transform of ``attr`` bounds for an instance of the project class
        named ``dotted`` in this module."""
        fact = self.ask(f"ptx|{self.module}|{dotted}|{attr}")
        return fact if isinstance(fact, tuple) else None

    def value(self, dotted: str) -> Val | None:
        """The value of an imported module-level name (a constant, a model)."""
        if not self._may_resolve(dotted):
            return None
        fact = self.ask(f"val|{self.module}|{dotted}")
        return fact if isinstance(fact, Val) else None

    def call(self, dotted: str, passes_values: bool) -> FunctionSummary | None:
        """What calling an imported function gives, when that can matter: the values it
        makes, and (only when this call passes something) the parameters it returns."""
        if not self._may_resolve(dotted):
            return None
        made = self.ask(f"call|{self.module}|{dotted}")
        passed = self.ask(f"callp|{self.module}|{dotted}") if passes_values else None
        parts = [f for f in (made, passed) if isinstance(f, FunctionSummary)]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return replace(parts[0], returns=parts[0].returns + parts[1].returns)

    def instance_method(self, spec: str, name: str) -> FunctionSummary | None:
        """A method of ``spec`` (``module?Dotted``: a class named where it was instantiated),
        asked only when a method is called: instantiating alone asks nothing."""
        fact = self.ask(f"pmeth|{spec}|{name}")
        return fact if isinstance(fact, FunctionSummary) else None

    def function(self, module: str, qual: str) -> FunctionSummary | None:
        fact = self.ask(f"ret|{module}|{qual}")
        return fact if isinstance(fact, FunctionSummary) else None

    def method(self, module: str, cname: str, name: str) -> FunctionSummary | None:
        fact = self.ask(f"meth|{module}|{cname}|{name}")
        return fact if isinstance(fact, FunctionSummary) else None

    def attr(self, module: str, cname: str, name: str) -> Val | None:
        fact = self.ask(f"attr|{module}|{cname}|{name}")
        return fact if isinstance(fact, Val) else None

    def param(self, qual: str, name: str) -> Val | None:
        fact = self.ask(f"param|{self.module}|{qual}|{name}")
        return fact if isinstance(fact, Val) else None

    def ancestry(self, dotted: str) -> tuple[str, ...]:
        """The ancestors of a class this module imports from the project (see
        ``ProjectIndex._ancestry``); empty when it is not a project class."""
        if not self._may_resolve(dotted):
            return ()
        fact = self.ask(f"ancestry|{self.module}|{dotted}")
        return fact if isinstance(fact, tuple) else ()

    def imported_elsewhere(self, name: str) -> bool:
        """Another module of the project imports ``name`` (a function or class) from this one."""
        return self.ask(f"ext|{self.module}|{name}") is True

    def caller_relations(self, qual: str) -> tuple[tuple[str, str, str, str], ...]:
        """(a, op, b, why): every call site passes parameters ``a op b`` (a class invariant)."""
        fact = self.ask(f"prel|{self.module}|{qual}")
        return fact if isinstance(fact, tuple) else ()

    def every_caller_passes(self, qual: str, name: str) -> bool:
        """Every call site of the function in the project passes a known value for ``name``."""
        return self.ask(f"pall|{self.module}|{qual}|{name}") is True


# -- JSON form, for the cache -------------------------------------------------------------------

_CODEC_TYPES: dict[str, type] = {}


def _codec_types() -> dict[str, type]:
    if not _CODEC_TYPES:
        for tp in (Val, ReturnCandidate, FunctionSummary, ClassSummary, CallSite, ModuleSummary):
            _CODEC_TYPES[tp.__name__] = tp
    return _CODEC_TYPES


def to_jsonable(obj: object) -> object:
    """Plain JSON for a summary: dataclasses by name (fields at their default left out),
    tuples marked, so that decoding gives back an equal object (and the same digests)."""
    if isinstance(obj, tuple):
        return {"t": [to_jsonable(x) for x in obj]}
    if isinstance(obj, (list, str, int, float, bool)) or obj is None:
        return obj
    tp = type(obj)
    if tp.__name__ in _codec_types() and dataclasses.is_dataclass(obj):
        fields = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            fields[f.name] = to_jsonable(value)
        return {"d": tp.__name__, "f": fields}
    raise TypeError(f"cannot encode {tp.__name__}")


def from_jsonable(data: object) -> object:
    if isinstance(data, dict):
        if "t" in data:
            return tuple(from_jsonable(x) for x in data["t"])
        tp = _codec_types()[data["d"]]
        return tp(**{k: from_jsonable(v) for k, v in data["f"].items()})
    if isinstance(data, list):
        return [from_jsonable(x) for x in data]
    return data


__all__ = [
    "UNKNOWN",
    "CallSite",
    "ClassSummary",
    "FunctionSummary",
    "ModuleSummary",
    "ProjectIndex",
    "ProjectView",
    "ReturnCandidate",
    "Summariser",
    "Symbol",
    "module_name",
]
