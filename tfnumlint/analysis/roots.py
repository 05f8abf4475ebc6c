"""Differentiation roots and the path from a hazard to one (issue 22, item 2).

A gradient-only symptom (a NaN, inf, exploding or dead gradient) matters only where something
is differentiated.  This module finds, in one module's code, what is: the operands of
``tape.gradient``/``tf.gradients``/``minimize``/``compute_gradients`` (followed back through the
assignments that produce them), the code run inside a ``GradientTape`` block, callables passed
to ``minimize``, ``compile(loss=...)`` and ``add_loss``, and the ``call`` of a Keras layer,
model or loss subclass (framework training calls it).  Functions called from such code are
reached too, to a fixed point.

The answer for a finding is a :class:`Reach`: reached (no gate), unreached (the gradient
symptom is refuted, and the fact says why), free (a function with no caller in the project)
or unknown (callers elsewhere in the project, or a reference this module cannot follow).
Free makes a gradient-only symptom conditional: nothing in view differentiates the function,
so its gradient is a claim about a caller the project does not show (a library's loss whose
users differentiate it, or a statistic nobody does).  Unknown does not gate.  Only code
structure decides; names of user functions, variables and files never do.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import libcst as cst

from .module import Scope
from .names import children as child_nodes

# TensorFlow/Keras API names (not user identifiers): the calls that differentiate their
# first operand, and the base classes whose ``call`` framework training differentiates.
DIFFERENTIATING_CALLS = frozenset(
    {"gradient", "gradients", "minimize", "compute_gradients", "value_and_gradient",
     "jacobian", "batch_jacobian", "hessians", "add_loss"}
)  # fmt: skip
# Keras calls that train their receiver (the model and everything it is built from).
TRAINING_CALLS = frozenset({"fit", "train_on_batch", "fit_generator"})
TRAINED_BASES = frozenset({"Layer", "Model", "Sequential", "Loss", "Network", "Module"})
TRAINED_METHODS = frozenset({"call", "__call__", "train_step"})
# The base of unittest, absltest, tf.test and parameterized test classes: a test runner calls
# their methods, never differentiates what they compute, and discards what they return.
TEST_CASE_BASE = "TestCase"


# nodes whose ``value`` a name can be stored or returned in (not called there)
_HOLDS_VALUE = (cst.DictElement, cst.Element, cst.Assign, cst.AnnAssign, cst.Return)
_NAMED = (cst.Name, cst.Attribute)  # a function named by value: `f`, `self.f`, `mod.f`


class Path(enum.Enum):
    REACHED = "reached"
    UNREACHED = "unreached"
    FREE = "free"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Reach:
    path: Path
    fact: str = ""


@dataclass
class _Graph:
    """One module's differentiation facts."""

    roots: set[int] = field(default_factory=set)  # id(FunctionDef) differentiated whole
    stepping: set[int] = field(default_factory=set)  # id(FunctionDef) that differentiates
    marked: set[int] = field(default_factory=set)  # id(statement) feeding a root operand
    reached: set[int] = field(default_factory=set)  # id(FunctionDef) reached (fixed point)
    maybe: set[int] = field(default_factory=set)  # reached, or called from a free function
    # called through what this module cannot follow: a method (instances, a base class's
    # hook call), a decorated function, a callback or a stored function, and what they call:
    # their callers are unknown, not absent
    unseen: set[int] = field(default_factory=set)
    tests: set[int] = field(default_factory=set)  # id(FunctionDef): a test class's methods
    defs: dict[str, list[cst.FunctionDef]] = field(default_factory=dict)
    calls: dict[str, list[int]] = field(default_factory=dict)  # name -> ids of calling fns
    callers: dict[str, list[str]] = field(default_factory=dict)  # name -> calling fn names
    passed: set[str] = field(default_factory=set)  # referenced as a value, not called
    any_root: bool = False


def _last(node: cst.BaseExpression) -> str:
    """The called name: ``f``, ``self.f``, ``tf.train.Adam(0.1).minimize`` -> ``minimize``."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def _called_names(node: cst.CSTNode, callbacks: bool = False) -> set[str]:
    """Last names of every call under ``node`` (``f(x)``, ``self.f(x)``, ``mod.f(x)``), and
    with ``callbacks`` of every callable passed by name (``tf.while_loop(c, body, v)``: the
    callee runs it there)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            out.add(_last(n.func))
        elif callbacks and isinstance(n, cst.Arg) and isinstance(n.value, _NAMED):
            out.add(_last(n.value))
        stack.extend(child_nodes(n))
    return out


def _read_names(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        stack.extend(child_nodes(n))
    return out


def _body_statements(body: cst.CSTNode) -> list[cst.CSTNode]:
    """Small statements of a block and its nested blocks (not nested functions or classes)."""
    out: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not body:
            continue
        if isinstance(node, cst.SimpleStatementLine):
            out.extend(node.body)
            continue
        if isinstance(node, (cst.For, cst.With)):
            out.append(node)  # its header binds and reads names too
        stack.extend(child_nodes(node))
    return out


def _targets(stmt: cst.CSTNode) -> set[str]:
    if isinstance(stmt, cst.Assign):
        return set().union(*(_read_names(t.target) for t in stmt.targets))
    if isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
        return _read_names(stmt.target)
    if isinstance(stmt, cst.For):
        return _read_names(stmt.target)
    if isinstance(stmt, cst.With):
        return set().union(
            *(_read_names(i.asname.name) for i in stmt.items if i.asname is not None)
        )
    return set()


def _header(stmt: cst.CSTNode) -> cst.CSTNode:
    if isinstance(stmt, cst.For):
        return stmt.iter
    if isinstance(stmt, cst.With):
        return cst.Tuple([cst.Element(i.item) for i in stmt.items])
    return getattr(stmt, "value", None) or stmt


def _differentiations(stmts: list[cst.CSTNode]) -> list[tuple[cst.CSTNode, cst.Call]]:
    out = []
    for stmt in stmts:
        stack = [_header(stmt)]
        while stack:
            n = stack.pop()
            if isinstance(n, cst.Call) and _last(n.func) in DIFFERENTIATING_CALLS | TRAINING_CALLS:
                out.append((stmt, n))
            if isinstance(n, (cst.Lambda, cst.FunctionDef)):
                continue
            stack.extend(child_nodes(n))
    return out


def _operand_flow(stmts: list[cst.CSTNode], calls: list[tuple[cst.CSTNode, cst.Call]]) -> set[int]:
    """Statements whose value flows into a differentiated operand, in one scope."""
    wanted: set[str] = set()
    marked: set[int] = set()
    for stmt, call in calls:
        marked.add(id(stmt))
        if _last(call.func) in TRAINING_CALLS and isinstance(call.func, cst.Attribute):
            wanted |= _read_names(call.func.value)  # `model.fit(...)`: the model trains
            continue
        first = call.args[0].value if call.args else None
        if first is not None:
            wanted |= _read_names(first)
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            if id(stmt) in marked or not (_targets(stmt) & wanted):
                continue
            marked.add(id(stmt))
            wanted |= _read_names(_header(stmt))
            changed = True
    return marked


def _tape_blocks(body: cst.CSTNode) -> list[cst.With]:
    out = []
    stack = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n is not body:
            continue
        if isinstance(n, cst.With) and any(
            isinstance(i.item, cst.Call) and _last(i.item.func) == "GradientTape" for i in n.items
        ):
            out.append(n)
        stack.extend(child_nodes(n))
    return out


def _callable_args(call: cst.Call, keywords: tuple[str, ...], position: int | None) -> set[str]:
    """Names of callables passed to ``call`` (by keyword, or at ``position``), lambdas' calls."""
    out: set[str] = set()
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    values = [a.value for a in call.args if a.keyword is not None and a.keyword.value in keywords]
    if position is not None and len(positional) > position:
        values.append(positional[position])
    for v in values:
        if isinstance(v, cst.Lambda):
            out |= _called_names(v.body)
        else:
            out |= {_last(n) for n in _value_names(v)}
    return out


def _value_names(v: cst.CSTNode) -> list[cst.BaseExpression]:
    """Names and attributes inside a value (``[bce, mse]``, ``{"a": bce}``)."""
    if isinstance(v, (cst.Name, cst.Attribute)):
        return [v]
    out: list[cst.BaseExpression] = []
    for child in child_nodes(v):
        if isinstance(child, cst.CSTNode):
            out.extend(_value_names(child))
    return out


class _Builder:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.g = _Graph()
        self.functions: list[tuple[cst.FunctionDef, cst.ClassDef | None]] = []
        self.classes: list[cst.ClassDef] = []  # every class of the module, nested ones too

    def build(self) -> _Graph:
        self._collect(self.module, None)
        trained = self._derived(TRAINED_BASES)
        tests = self._derived({TEST_CASE_BASE})
        self.g.tests = {id(fn) for fn, cls in self.functions if id(cls) in tests}
        for fn, cls in self.functions:
            if id(cls) in trained and fn.name.value in TRAINED_METHODS:
                self._root(fn)
        self._scope_roots(self.module.body, None)
        for fn, _ in self.functions:
            self._scope_roots(fn.body, fn)
        self._reach()
        return self.g

    def _collect(self, node: cst.CSTNode, cls: cst.ClassDef | None) -> None:
        for child in child_nodes(node):
            if isinstance(child, cst.FunctionDef):
                self.functions.append((child, cls))
                self.g.defs.setdefault(child.name.value, []).append(child)
                self._collect(child, None)
            elif isinstance(child, cst.ClassDef):
                self.classes.append(child)
                self._collect(child, child)
            else:
                self._collect(child, cls)

    def _derived(self, bases: Collection[str]) -> set[int]:
        """ids of the classes of this module deriving (through this module) from one of
        ``bases`` (a trained base, a test case)."""
        names = set(bases)
        found: set[int] = set()
        changed = True
        while changed:  # order does not matter: the set is a fixed point
            changed = False
            for c in self.classes:
                if id(c) not in found and any(_last(b.value) in names for b in c.bases):
                    found.add(id(c))
                    names.add(c.name.value)
                    changed = True
        return found

    def _root(self, fn: cst.FunctionDef) -> None:
        self.g.roots.add(id(fn))
        self.g.any_root = True

    def _scope_roots(self, body, fn: cst.FunctionDef | None) -> None:
        stmts = _body_statements(body) if fn is not None else _module_statements(body)
        calls = _differentiations(stmts)
        tapes = _tape_blocks(fn.body if fn is not None else self.module)
        if calls or tapes:
            self.g.any_root = True
            if fn is not None:
                self.g.stepping.add(id(fn))  # a training step: the root is inside it
        if calls:
            self.g.marked |= _operand_flow(stmts, calls)
        for tape in tapes:
            for stmt in _body_statements(tape.body):
                self.g.marked.add(id(stmt))
        if fn is not None:
            return  # the module's walk below saw this function's calls too
        for node in _walk(self.module):
            if not isinstance(node, cst.Call):
                continue
            last = _last(node.func)
            names: set[str] = set()
            if last == "compile":
                names = _callable_args(node, ("loss",), 1)
            elif last in ("minimize", "value_and_gradient", "gradients", "jacobian"):
                names = _callable_args(node, ("loss", "f"), 0)
            elif last == "add_loss":
                names = _callable_args(node, ("losses",), 0)
            for name in names:
                for target in self.g.defs.get(name, ()):
                    self._root(target)

    def _reach(self) -> None:
        """Fixed point: a function called from reached code (or a marked statement) is reached."""
        marked_calls: set[str] = set()
        stack: list[tuple[cst.CSTNode, cst.FunctionDef | None]] = [(self.module, None)]
        while stack:  # one walk: each call with the innermost function around it
            n, owner = stack.pop()
            if isinstance(n, cst.FunctionDef):
                owner = n
            if isinstance(n, cst.Call):
                self._called(_last(n.func), owner)
            elif isinstance(n, cst.Arg) and isinstance(n.value, _NAMED):
                # a callback (`tf.cond(p, f, g)`, `tf.while_loop(c, body, v)`): the callee runs
                # it where it is passed, so the passing function counts as a caller too
                self.g.passed.add(_last(n.value))
                self._called(_last(n.value), owner)
            elif isinstance(n, _HOLDS_VALUE) and isinstance(n.value, _NAMED):
                self.g.passed.add(_last(n.value))  # stored or returned (`{"exp": f}`, `g = f`)
            if id(n) in self.g.marked:
                marked = _header(n) if isinstance(n, (cst.For, cst.With)) else n
                marked_calls |= _called_names(marked, callbacks=True)
            stack.extend((c, owner) for c in child_nodes(n))
        reached = set(self.g.roots) | self.g.stepping
        for name in marked_calls:
            reached |= {id(f) for f in self.g.defs.get(name, ())}
        changed = True
        while changed:
            changed = False
            for name, fns in self.g.defs.items():
                if all(id(f) in reached for f in fns):
                    continue
                if any(c in reached for c in self.g.calls.get(name, ())):
                    reached |= {id(f) for f in fns}
                    changed = True
        self.g.reached = reached
        self.g.maybe = self._closure(reached | self._open_functions())
        # a decorator may register the function (a dispatch table, a KL registry, a Keras
        # serializable): callers by that name are not in view
        hidden = {
            id(fn)
            for fn, cls in self.functions
            if (cls is not None or fn.decorators) and id(fn) not in self.g.tests
        }
        passed = {id(f) for name in self.g.passed for f in self.g.defs.get(name, ())}
        self.g.unseen = self._closure((hidden | passed) - reached)

    def _called(self, name: str, owner: cst.FunctionDef | None) -> None:
        """``name`` is called (or run as a callback) by ``owner`` (None: module-level code)."""
        self.g.calls.setdefault(name, []).append(id(owner) if owner else 0)
        self.g.callers.setdefault(name, []).append(owner.name.value if owner else "")

    def _open_functions(self) -> set[int]:
        """Functions whose callers this module does not show: nothing here calls them, or they
        are passed as a value (a callback: whoever receives it may call it)."""
        return {
            id(f)
            for name, fns in self.g.defs.items()
            if not self.g.calls.get(name) or name in self.g.passed
            for f in fns
            if id(f) not in self.g.tests  # the test runner calls it, and differentiates nothing
        }

    def _closure(self, start: set[int]) -> set[int]:
        out = set(start)
        changed = True
        while changed:
            changed = False
            for name, fns in self.g.defs.items():
                if not all(id(f) in out for f in fns) and any(
                    c in out for c in self.g.calls.get(name, ())
                ):
                    out |= {id(f) for f in fns}
                    changed = True
        return out


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(child_nodes(n))


def _module_statements(body) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    for line in body:
        if isinstance(line, (cst.FunctionDef, cst.ClassDef)):
            continue
        out.extend(_body_statements(line))
    return out


_GRAPHS: weakref.WeakKeyDictionary[Scope, _Graph] = weakref.WeakKeyDictionary()


def _root_scope(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def _function_of(scope: Scope) -> Scope | None:
    s: Scope | None = scope
    while s is not None:
        if s.kind == "function" and isinstance(s.node, cst.FunctionDef):
            return s
        s = s.parent
    return None


def _graph(root: Scope) -> _Graph | None:
    if not isinstance(root.node, cst.Module):
        return None
    g = _GRAPHS.get(root)
    if g is None:
        g = _GRAPHS[root] = _Builder(root.node).build()
    return g


def function_reached(scope: Scope | None) -> str | None:
    """Why the function around ``scope`` is on a path to a differentiation root, or None."""
    if scope is None:
        return None
    g = _graph(_root_scope(scope))
    s: Scope | None = _function_of(scope)
    while g is not None and s is not None:
        if id(s.node) in g.roots:
            return f"`{s.name}` is differentiated (a loss, or the call of a trained layer)"
        if id(s.node) in g.stepping:
            return f"`{s.name}` takes a gradient"
        if id(s.node) in g.reached:
            return f"`{s.name}` is called from differentiated code"
        s = _function_of(s.parent) if s.parent is not None else None
    return None


def statement_reached(scope: Scope, statement: cst.CSTNode) -> str | None:
    """Why module-level ``statement`` feeds what the module differentiates, or None."""
    if _function_of(scope) is not None:
        return None  # not module-level: the module's graph is not built for this question
    g = _graph(_root_scope(scope))
    if g is None or id(statement) not in g.marked:
        return None
    return "it feeds what the module differentiates"


def _no_import(name: str) -> bool:
    return False


def _ancestors(g: _Graph, name: str) -> set[str]:
    """``name`` and every function that calls it, transitively, in this module."""
    out, todo = {name}, [name]
    while todo:
        for caller in g.callers.get(todo.pop(), ()):
            if caller and caller not in out:
                out.add(caller)
                todo.append(caller)
    return out


def reach(
    scope: Scope, statement: cst.CSTNode, imported: Callable[[str], bool] = _no_import
) -> Reach:
    """Whether the statement at ``scope`` is on a path to a differentiation root.

    ``imported(name)``: another module of the project imports that function or class of this
    module (``""``: the module itself) and may differentiate it.  Callers there are not
    followed, so a function that they may reach (it, a class around it, or a function calling
    it here) stays unknown.  Its ``shown(names)``, when it has one (``readers.Readers``),
    names the modules that read those names only where nothing is differentiated."""
    g = _graph(_root_scope(scope))
    if g is None:
        return Reach(Path.UNKNOWN)
    fs = _function_of(scope)
    if fs is None:  # module-level code
        if id(statement) in g.marked:
            return Reach(Path.REACHED)
        if imported(""):
            return Reach(Path.UNKNOWN)
        if not g.any_root:
            return Reach(Path.FREE, "nothing in this module differentiates it")
        return Reach(Path.UNREACHED, _unmarked_fact(statement))
    outermost = fs
    while True:
        node = outermost.node
        if isinstance(node, cst.FunctionDef) and id(node) in g.reached:
            return _within_reached(g, node, statement)
        parent = _function_of(outermost.parent) if outermost.parent is not None else None
        if parent is None:
            break
        outermost = parent
    fn = fs.node
    assert isinstance(fn, cst.FunctionDef)
    name = fn.name.value
    if name in g.passed or any(imported(n) for n in sorted(_ancestors(g, name) | _classes(fs))):
        return Reach(Path.UNKNOWN)
    callers = [c for c in g.callers.get(name, ()) if c != name]
    unseen = id(fn) in g.unseen  # a method or a callback, or called from one: callers unknown
    if id(fn) in g.tests and not callers:
        return Reach(
            Path.UNREACHED,
            f"no path to a differentiation root: `{name}` is a test method: the test runner "
            "calls it, discards what it returns, and differentiates nothing it computes",
        )
    quiet = getattr(imported, "shown", lambda names: "")(_ancestors(g, name) | _classes(fs))
    aside = f"called in {quiet} only where nothing is differentiated" if quiet else ""
    if unseen and ((not callers and not g.calls.get(name)) or id(fn) in g.maybe):
        return Reach(Path.UNKNOWN)
    if not callers and not g.calls.get(name):
        return Reach(
            Path.FREE,
            f"`{name}` has no caller in the project"
            + (f" that differentiates it ({aside})" if quiet else "")
            + ": the gradient symptom holds only if a caller differentiates it",
        )
    if id(fn) in g.maybe:
        tops = sorted(c for c in _ancestors(g, name) if c and c != name and not g.calls.get(c))
        return Reach(
            Path.FREE,
            f"`{name}` is only called from functions that nothing in the project differentiates "
            f"(the calls end at {', '.join(f'`{t}`' for t in tops) or 'them'}, with no caller"
            + (f" that differentiates them: {aside}" if quiet else "")
            + "): the gradient symptom holds only if a caller differentiates them",
        )
    shown = ", ".join(f"`{c}`" for c in sorted(set(callers)) if c) or "module-level code"
    return Reach(
        Path.UNREACHED,
        f"no path to a differentiation root: `{name}` is only called from {shown}, which "
        "nothing differentiates" + (f" (and {aside})" if quiet else ""),
    )


def _classes(scope: Scope) -> set[str]:
    out = set()
    s: Scope | None = scope
    while s is not None:
        if s.kind == "class" and s.name:
            out.add(s.name)
        s = s.parent
    return out


def _within_reached(g: _Graph, fn: cst.FunctionDef, statement: cst.CSTNode) -> Reach:
    """In a reached function: a statement of a function that itself differentiates (a
    training step) is reached only if it feeds what it differentiates."""
    stmts = _body_statements(fn.body)
    if id(fn) in g.roots or id(fn) not in g.stepping or id(statement) in g.marked:
        return Reach(Path.REACHED)
    if not any(s is statement for s in stmts):
        return Reach(Path.REACHED)  # in a nested function or lambda: not followed
    return Reach(Path.UNREACHED, _unmarked_fact(statement))


def _unmarked_fact(statement: cst.CSTNode) -> str:
    names = sorted(_targets(statement))
    what = f"`{names[0]}`" if names else "this value"
    return (
        f"no path to a differentiation root: {what} feeds no GradientTape, tf.gradients, "
        "minimize or loss of this code (it is only evaluated or fetched)"
    )
