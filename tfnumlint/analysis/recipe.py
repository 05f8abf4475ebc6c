"""NumPy expressions of one module as recipe trees (see ``datagen.py`` for the format).

The builder follows names through their bindings, module helpers (their single ``return``
inlined with the parameters bound to the call's arguments) and module constants.  Anything
outside the allow-list (``recipe_tables``) raises :class:`Unknown`: the recipe is then None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from .draws import draw, keywords, positional
from .feeds import Evaluator, FeedReader
from .module import Binding, Scope
from .recipe_code import (
    BINARY,
    COMPARE,
    element,
    fold,
    mentions,
    product,
    reachable,
    sequence_op,
    tuple_valued,
)
from .recipe_datasets import dataset_call, marked, tutorial_field
from .recipe_libs import index_join, is_split, one_hot, split_part
from .recipe_scalers import scaled
from .recipe_shapes import Shapes
from .recipe_stores import applied, replayed
from .recipe_tables import (
    ARRAY_METHODS,
    BUILTIN_DTYPES,
    DTYPES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    NUMPY_CONSTANTS,
    NUMPY_FUNCTIONS,
    NUMPY_KEYWORDS,
    Tree,
    Unknown,
)

LATE = 10**9  # an order after every statement of a scope

_GENERATOR_MAKERS = frozenset(
    {"numpy.random.RandomState", "numpy.random.default_rng", "numpy.random.Generator"}
)


@dataclass(frozen=True)
class _Frame:
    """One inlined call of a module helper: its parameters bound to the call's arguments,
    which are read where the call is (``outer`` are the frames around the call)."""

    fscope: Scope
    args: dict[str, tuple[cst.BaseExpression, Scope, int]]
    outer: tuple[_Frame, ...]
    ctx: str


Frames = tuple[_Frame, ...]


class Builder:
    """Translates NumPy expressions of one module into recipe trees, collecting the defs."""

    def __init__(self, ev: Evaluator) -> None:
        self.ev = ev
        self.reader = FeedReader(ev)
        self.defs: dict[str, Tree | None] = {}
        self.stand_ins: dict[str, str] = {}  # def id -> the dataset it stands in for
        self.call_ids = {id(site.node): site.order for site in ev.info.calls}
        self.depth = 0
        self._numbers: dict[tuple[int, tuple[str, ...]], int | float | None] = {}
        self.shapes = Shapes(self.defs)
        self._sole: dict[Scope, object] = {}

    def recipe(self, root: Tree) -> dict:
        """The root with the defs it reaches (a def read only for its shape is left out)."""
        return marked({"defs": reachable(root, self.defs), "root": root}, self.stand_ins)

    # -- numbers ----------------------------------------------------------------------------
    def number(
        self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames
    ) -> int | float | None:
        """The value of a numeric constant expression (a literal, a module constant, a helper's
        parameter bound to one, arithmetic of those), or None."""
        key = (id(node), tuple(f.ctx for f in frames))
        if key in self._numbers:
            return self._numbers[key]
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                return None
            got = self._number(node, scope, order, frames)
        finally:
            self.depth -= 1
        self._numbers[key] = got
        return got

    def _number(self, node, scope: Scope, order: int, frames: Frames) -> int | float | None:
        if isinstance(node, (cst.Integer, cst.Float)):
            return node.evaluated_value
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.number(node.expression, scope, order, frames)
            return -inner if inner is not None else None
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in BINARY:
            a = self.number(node.left, scope, order, frames)
            b = self.number(node.right, scope, order, frames)
            if a is None or b is None:
                return None
            return fold(BINARY[type(node.operator)], a, b)
        shaped = self._shape_number(node, scope, order, frames)
        if shaped is not None:
            return shaped
        if isinstance(node, cst.Attribute):
            path = self.reader.numpy_path(node)
            if path is not None and path.startswith("numpy."):
                return NUMPY_CONSTANTS.get(path[len("numpy.") :])
            return None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            if node.func.value in ("int", "float") and len(node.args) == 1:
                inner = self.number(node.args[0].value, scope, order, frames)
                if inner is None:
                    return None
                return int(inner) if node.func.value == "int" else float(inner)
            return None
        if not isinstance(node, cst.Name) or node.value in ("True", "False", "None"):
            return None
        found = self.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            bound = self.param(node.value, found, frames)
            if bound is None:
                return None
            expr, s, o, outer = bound
            return self.number(expr, s, o, outer)
        if isinstance(found, Binding) and found.value is not None:
            value = found.value
            if found.index is not None:
                element = found.element()
                if element is None:
                    return None
                value = element
            got = self.number(value, found.scope, found.at, self._frames_of(found.scope, frames))
            if got is not None or found.scope.kind != "module":
                return got
        return self.ev.value(node, scope, order).const

    def shape_of(self, node, scope: Scope, order: int, frames: Frames) -> tuple[int, ...] | None:
        """The shape of the array ``node`` holds, when the code gives it."""
        try:
            return self.shapes.of(self.tree(node, scope, order, frames))
        except Unknown:
            return None

    def _shape_number(self, node, scope: Scope, order: int, frames: Frames) -> int | None:
        """``len(x)``, ``x.shape[i]``, ``x.size``, ``x.ndim`` from the shape of ``x``."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            builtin = self.ev.lookup(node.func.value, scope, order) is None
            if node.func.value != "len" or not builtin or len(node.args) != 1:
                return None
            got = self.shape_of(node.args[0].value, scope, order, frames)
            return got[0] if got else None
        if isinstance(node, cst.Attribute) and node.attr.value in ("size", "ndim"):
            got = self.shape_of(node.value, scope, order, frames)
            if got is None:
                return None
            return math.prod(got) if node.attr.value == "size" else len(got)
        if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
            return None
        shaped, item = node.value, node.slice[0].slice
        if not (isinstance(shaped, cst.Attribute) and shaped.attr.value == "shape"):
            return None
        if not isinstance(item, cst.Index):
            return None
        at = self.number(item.value, scope, order, frames)
        got = self.shape_of(shaped.value, scope, order, frames)
        if got is None or at is None or not -len(got) <= int(at) < len(got):
            return None
        return got[int(at)]

    def integer(self, node, scope: Scope, order: int, frames: Frames) -> int:
        got = self.number(node, scope, order, frames)
        if got is None or isinstance(got, bool) or float(got) != int(got) or got < 0:
            raise Unknown("not a size")
        return int(got)

    def shape(self, node, scope: Scope, order: int, frames: Frames) -> list[int] | None:
        """A draw's or constructor's size: None (a scalar), an int or a tuple of ints."""
        if node is None or (isinstance(node, cst.Name) and node.value == "None"):
            return None
        if isinstance(node, (cst.Tuple, cst.List)):
            got = [self.integer(e.value, scope, order, frames) for e in node.elements]
        elif isinstance(node, cst.Attribute) and node.attr.value == "shape":
            known = self.shape_of(node.value, scope, order, frames)
            if known is None:
                raise Unknown("an unknown shape")
            got = list(known)
        else:
            got = [self.integer(node, scope, order, frames)]
        if product(got) > MAX_ELEMENTS:
            raise Unknown("too large")
        return got

    def dtype(self, node, scope: Scope, order: int) -> str | None:
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            return text if isinstance(text, str) and text in DTYPES else None
        builtin = isinstance(node, cst.Name) and node.value in BUILTIN_DTYPES
        if builtin and self.ev.lookup(node.value, scope, order) is None:
            return BUILTIN_DTYPES[node.value]
        path = self.reader.numpy_path(node)
        if path is None:
            return None
        name = path.rsplit(".", 1)[-1]
        name = "bool" if name == "bool_" else name
        return name if name in DTYPES else None

    # -- names, parameters and helpers ------------------------------------------------------
    def param(self, name: str, param: cst.Param, frames: Frames):
        """What a parameter is bound to: the argument of the inlined call, or of the one call
        of its module function (``def train(x, y): ...`` called once as ``train(X, Y)``)."""
        for i in range(len(frames) - 1, -1, -1):
            frame = frames[i]
            if frame.fscope.params.get(name) is param and name in frame.args:
                expr, s, o = frame.args[name]
                return expr, s, o, frame.outer
        fscope = next(
            (f for f in self.ev.info.functions.values() if f.params.get(name) is param), None
        )
        site = self._sole_call(fscope) if fscope is not None else None
        if site is None:
            return None
        try:
            frame = self._frame(site.node, fscope, site.scope, site.order, ())  # type: ignore[arg-type]
        except Unknown:
            return None
        if name not in frame.args:
            return None
        expr, s, o = frame.args[name]
        return expr, s, o, ()

    def _sole_call(self, fscope: Scope):
        """The call site of a module function when the module calls it exactly once (by its
        name; passed around as a value, it may be called anywhere)."""
        if fscope in self._sole:
            return self._sole[fscope]
        fn = fscope.node
        sites = []
        seen = 0
        if isinstance(fn, cst.FunctionDef):
            name = fn.name.value
            for site in self.ev.info.calls:
                func = site.node.func
                if isinstance(func, cst.Name) and func.value == name:
                    found = self.ev.lookup(name, site.scope, site.order)
                    if isinstance(found, Binding) and found.scope.kind == "module":
                        sites.append(site)
            seen = mentions(self.ev.info)[name]
        # the def's own name, and the call's: any other mention may pass the function on
        got = sites[0] if len(sites) == 1 and seen == 2 else None
        self._sole[fscope] = got
        return got

    def _frames_of(self, scope: Scope, frames: Frames) -> Frames:
        """The frames a binding of ``scope`` is evaluated in: up to the inlined call of its
        function (none for module bindings and functions not inlined)."""
        for i in range(len(frames) - 1, -1, -1):
            if frames[i].fscope is scope:
                return frames[: i + 1]
        return ()

    def inline(self, call: cst.Call, scope: Scope, order: int, frames: Frames):
        """A module function's single return expression, in a new frame for this call."""
        func = call.func
        if not isinstance(func, cst.Name):
            raise Unknown("not a helper")
        fscope = self.ev.info.functions.get(func.value)
        found = self.ev.lookup(func.value, scope, order)
        if (
            fscope is None
            or not isinstance(found, Binding)
            or found.scope.kind != "module"
            or len(fscope.returns) != 1
            or not isinstance(fscope.node, cst.FunctionDef)
        ):
            raise Unknown("not a helper with one return")
        frame = self._frame(call, fscope, scope, order, frames)
        at, expr = fscope.returns[0]
        return expr, fscope, at, (*frames, frame)

    def _frame(
        self, call: cst.Call, fscope: Scope, scope: Scope, order: int, frames: Frames
    ) -> _Frame:
        """The parameters of ``fscope``'s function bound to the arguments of ``call``."""
        fn = fscope.node
        if not isinstance(fn, cst.FunctionDef):
            raise Unknown("not a def")
        params = fn.params
        if isinstance(params.star_arg, cst.Param):
            raise Unknown("*args helper")
        args = positional(call)
        kw = keywords(call)
        bound: dict[str, tuple[cst.BaseExpression, Scope, int]] = {}
        ordered = [*params.posonly_params, *params.params]
        for i, p in enumerate([*ordered, *params.kwonly_params]):
            name = p.name.value
            if name in kw:
                bound[name] = (kw[name], scope, order)
            elif i < len(ordered) and i < len(args):
                bound[name] = (args[i], scope, order)
            elif p.default is not None:
                bound[name] = (p.default, fscope.parent or scope, LATE)
        ctx = f"c{self.call_ids.get(id(call), id(call))}"
        return _Frame(fscope, bound, frames, ctx)

    def ref(self, name: str, binding: Binding, frames: Frames, read=None) -> Tree:
        """One def per binding (and inlined call): a value read twice is drawn once; then
        its item assignments before the read (``read``: its scope and order), one def each."""
        changes = applied(self, name, binding, read)
        below = self._frames_of(binding.scope, frames)
        key = f"{name}@{binding.at}"
        if binding.index is not None:
            key += f".{binding.index}"
        if below:
            key += "/" + "/".join(f.ctx for f in below)
        if key not in self.defs:
            self.defs[key] = None
            self.defs[key] = self._bound(binding, below)
        elif self.defs[key] is None:
            raise Unknown("a value defined by itself")
        return replayed(self, key, binding, below, changes)

    def _bound(self, binding: Binding, frames: Frames) -> Tree:
        value, scope, at = binding.value, binding.scope, binding.at
        if binding.nested is not None:  # (x_train, y_train), (x_test, y_test) = load_data()
            whole, path = binding.nested
            return element(self.tree(whole, scope, at, frames), path, self.defs)
        if value is None:
            raise Unknown("a loop or with target")
        if binding.index is None:
            return self.tree(value, scope, at, frames)
        if isinstance(value, (cst.Tuple, cst.List)) and binding.index < len(value.elements):
            return self.tree(value.elements[binding.index].value, scope, at, frames)
        if isinstance(value, cst.Call) and is_split(self, value):
            return split_part(self, value, binding.index, scope, at, frames)
        func = value.func if isinstance(value, cst.Call) else None
        if isinstance(func, cst.Name) and func.value in self.ev.info.functions:
            assert isinstance(value, cst.Call)  # func is its callee
            expr, fscope, ret_at, inner = self.inline(value, scope, at, frames)
            if isinstance(expr, cst.Tuple) and binding.index < len(expr.elements):
                return self.tree(expr.elements[binding.index].value, fscope, ret_at, inner)
            raise Unknown("an unpacked value")
        return element(self.tree(value, scope, at, frames), (binding.index,), self.defs)

    # -- trees ------------------------------------------------------------------------------
    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, frames: Frames) -> Tree:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise Unknown("too deep")
            return self._tree(node, scope, order, frames)
        finally:
            self.depth -= 1

    def _tree(self, node, scope: Scope, order: int, frames: Frames) -> Tree:
        num = self.number(node, scope, order, frames)
        if num is not None:
            return {"k": "const", "v": num}
        if isinstance(node, cst.Name):
            return self._name(node, scope, order, frames)
        if isinstance(node, cst.Attribute):
            return self._attribute(node, scope, order, frames)
        if isinstance(node, (cst.List, cst.Tuple)):
            return self._sequence(node, scope, order, frames)
        if isinstance(node, cst.UnaryOperation):
            inner = self.tree(node.expression, scope, order, frames)
            if isinstance(node.operator, cst.Minus):
                return {"k": "neg", "x": inner}
            if isinstance(node.operator, cst.Plus):
                return inner
            raise Unknown("unary operator")
        if isinstance(node, cst.BinaryOperation):
            op = BINARY.get(type(node.operator))
            if op is None:
                raise Unknown("binary operator")
            a, b = (
                self.tree(node.left, scope, order, frames),
                self.tree(node.right, scope, order, frames),
            )
            joined = sequence_op(op, a, b, self.defs, MAX_ELEMENTS)
            return joined or {"k": "bin", "op": op, "a": a, "b": b}
        if isinstance(node, cst.Comparison):
            if len(node.comparisons) != 1 or type(node.comparisons[0].operator) not in COMPARE:
                raise Unknown("chained comparison")
            target = node.comparisons[0]
            a = self.tree(node.left, scope, order, frames)
            b = self.tree(target.comparator, scope, order, frames)
            return {"k": "cmp", "op": COMPARE[type(target.operator)], "a": a, "b": b}
        if isinstance(node, cst.Subscript):
            joined = index_join(self, node, scope, order, frames)
            if joined is not None:
                return joined
            x = self.tree(node.value, scope, order, frames)
            items = [self.index(e.slice, scope, order, frames) for e in node.slice]
            if len(items) == 1 and items[0]["k"] == "const" and tuple_valued(x, self.defs):
                return element(x, (int(items[0]["v"]),), self.defs)  # load_data()[0]
            return {"k": "index", "x": x, "idx": items}
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, frames)
        raise Unknown(type(node).__name__)

    def _name(self, node: cst.Name, scope: Scope, order: int, frames: Frames) -> Tree:
        if node.value in ("True", "False"):
            return {"k": "const", "v": node.value == "True"}
        if node.value == "None":
            return {"k": "none"}
        found = self.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            bound = self.param(node.value, found, frames)
            if bound is None:
                raise Unknown("a parameter of a function not inlined")
            expr, s, o, outer = bound
            return self.tree(expr, s, o, outer)
        if not isinstance(found, Binding):
            raise Unknown("an unbound name")
        return self.ref(node.value, found, frames, (scope, order))

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int, frames: Frames) -> Tree:
        if self.reader.numpy_path(node) == "numpy.newaxis":
            return {"k": "none"}
        if node.attr.value == "shape":
            known = self.shape_of(node.value, scope, order, frames)
            if known is None:
                raise Unknown("an unknown shape")
            return {"k": "tuple", "items": [{"k": "const", "v": d} for d in known]}
        if node.attr.value == "T":
            return self._fn("transpose", [self.tree(node.value, scope, order, frames)])
        return tutorial_field(self, node, scope, order, frames)  # mnist.train.images

    def _sequence(self, node, scope: Scope, order: int, frames: Frames) -> Tree:
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            raise Unknown("starred element")
        items = [self.tree(e.value, scope, order, frames) for e in node.elements]
        if isinstance(node, cst.Tuple):
            return {"k": "tuple", "items": items}
        literal = _literal(items)
        if literal is not None:
            return {"k": "array", "v": literal}
        return {"k": "list", "items": items}

    def index(self, sl, scope: Scope, order: int, frames: Frames) -> Tree:
        """One item of a subscript: a literal slice, None/newaxis, an int or another recipe."""
        if isinstance(sl, cst.Slice):
            ends: dict[str, int | None] = {}
            for name in ("lower", "upper", "step"):
                end = getattr(sl, name)
                if end is None:
                    ends[name] = None
                    continue
                got = self.number(end, scope, order, frames)
                if got is None or float(got) != int(got):
                    raise Unknown("a slice that is not literal")
                ends[name] = int(got)
            return {
                "k": "slice",
                "start": ends["lower"],
                "stop": ends["upper"],
                "step": ends["step"],
            }
        value = sl.value
        if isinstance(value, cst.Ellipsis):
            return {"k": "ellipsis"}
        return self.tree(value, scope, order, frames)

    # -- calls ------------------------------------------------------------------------------
    def _fn(self, fn: str, args: list[Tree], kw: dict[str, Tree] | None = None) -> Tree:
        return {"k": "call", "fn": fn, "args": args, "kw": kw or {}}

    def _call(self, node: cst.Call, scope: Scope, order: int, frames: Frames) -> Tree:
        func = node.func
        if isinstance(func, cst.Attribute) and self.generator(func.value, scope, order, frames):
            return draw(self, func.attr.value, node, scope, order, frames)
        library = (
            one_hot(self, node, scope, order, frames)
            or scaled(self, node, scope, order, frames)
            or dataset_call(self, node, scope, order, frames)
        )
        if library is not None:
            return library
        path = self.reader.numpy_path(func)
        if path is not None:
            if path.startswith("numpy.random."):
                return draw(self, path[len("numpy.random.") :], node, scope, order, frames)
            return self._numpy(path[len("numpy.") :], node, scope, order, frames)
        if isinstance(func, cst.Name):
            cast = self.dtype(func, scope, order)
            if cast is not None and len(node.args) == 1:
                x = self.tree(node.args[0].value, scope, order, frames)
                return self._fn("astype", [x, {"k": "dtype", "v": cast}])
            expr, fscope, at, inner = self.inline(node, scope, order, frames)
            return self.tree(expr, fscope, at, inner)
        if isinstance(func, cst.Attribute):
            return self._method(func, node, scope, order, frames)
        raise Unknown("call")

    def generator(self, node, scope: Scope, order: int, frames: Frames) -> bool:
        """Is ``node`` NumPy's random module or a generator made by it (through names and
        inlined parameters)?"""
        self.depth += 1
        try:
            return self.depth <= MAX_DEPTH and self._generator(node, scope, order, frames)
        finally:
            self.depth -= 1

    def _generator(self, node, scope: Scope, order: int, frames: Frames) -> bool:
        if self.reader.numpy_path(node) == "numpy.random":
            return True
        if isinstance(node, cst.Call):
            return self.reader.numpy_path(node.func) in _GENERATOR_MAKERS
        if not isinstance(node, cst.Name):
            return False
        found = self.ev.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            bound = self.param(node.value, found, frames)
            return bound is not None and self.generator(bound[0], bound[1], bound[2], bound[3])
        if isinstance(found, Binding) and found.value is not None and found.index is None:
            return self.generator(
                found.value, found.scope, found.at, self._frames_of(found.scope, frames)
            )
        return False

    def _arg(self, node, scope: Scope, order: int, frames: Frames) -> Tree:
        cast = self.dtype(node, scope, order)
        if cast is not None:
            return {"k": "dtype", "v": cast}
        return self.tree(node, scope, order, frames)

    def _numpy(self, fn: str, node: cst.Call, scope: Scope, order: int, frames: Frames) -> Tree:
        if fn in DTYPES or fn == "bool_":
            args = positional(node)
            if len(args) != 1:
                raise Unknown("a cast of no value")
            x = self.tree(args[0], scope, order, frames)
            return self._fn("astype", [x, {"k": "dtype", "v": self.dtype(node.func, scope, order)}])
        if fn not in NUMPY_FUNCTIONS:
            raise Unknown(f"numpy.{fn}")
        trees = [self._arg(a, scope, order, frames) for a in positional(node)]
        kw = {}
        for name, value in keywords(node).items():
            if name not in NUMPY_KEYWORDS:
                raise Unknown(f"keyword {name}")
            kw[name] = self._arg(value, scope, order, frames)
        return self._fn(fn, trees, kw)

    def _method(self, func: cst.Attribute, node: cst.Call, scope, order, frames) -> Tree:
        name = func.attr.value
        args = positional(node)
        if name == "copy" and not node.args:
            return self.tree(func.value, scope, order, frames)
        x = self.tree(func.value, scope, order, frames)
        if name == "astype" and len(args) == 1:
            cast = self.dtype(args[0], scope, order)
            if cast is None:
                raise Unknown("astype of an unknown dtype")
            return self._fn("astype", [x, {"k": "dtype", "v": cast}])
        if name in ("reshape", "transpose", "ravel", "flatten") and keywords(node):
            raise Unknown(f"{name} with keywords (an order)")
        if name in ("reshape", "transpose") and args:
            items = [self._arg(a, scope, order, frames) for a in args]
            shape = items[0] if len(items) == 1 else {"k": "tuple", "items": items}
            return self._fn(name, [x, shape])
        if name in ("ravel", "flatten", "transpose") and not node.args:
            return self._fn("ravel" if name != "transpose" else "transpose", [x])
        if name not in ARRAY_METHODS:
            raise Unknown(f"method {name}")
        rest = [self._arg(a, scope, order, frames) for a in args]
        kw = {}
        for key, value in keywords(node).items():
            if key not in NUMPY_KEYWORDS:
                raise Unknown(f"keyword {key}")
            kw[key] = self._arg(value, scope, order, frames)
        return self._fn(name, [x, *rest], kw)


def _literal(items: list[Tree]):
    """Nested lists of numbers, or None when an item is not a number literal."""
    out = []
    for t in items:
        if (t["k"] == "const" and not isinstance(t["v"], bool)) or t["k"] == "array":
            out.append(t["v"])
        else:
            return None
    return out
