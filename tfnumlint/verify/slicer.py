"""Backward slice of a finding into a probe program: a tree of allow-listed ops only.

This is the static half of verification and never imports TensorFlow.  The slice follows
names through their assignments (function, module, ``self.attr``), keeps calls whose
canonical op is on the allow-list plus arithmetic, and turns everything else (a
non-allow-listed call, a placeholder, a variable, a parameter, ``model(x)``) into a free
input that keeps what provenance knows about it.  Nothing here executes user code: the
output is plain data.

Each free input also records its ``origin``: where its value comes from, so the verdict can
tell a value the code receives (a parameter, data) from one computed by code the slice did not
follow (an untraced call), which a witness must not set freely:

- ``param``: a function parameter; ``attr``: an attribute chain (``self.scale``);
- ``data``: a placeholder, ``keras.Input``, ``tf.Variable`` or dataset element; ``random``: a
  draw; ``model``: a layer or model output (its activation range is in ``lo``/``hi``);
- ``call``: the result of a call the slice does not enter (``source`` is its code; a plain
  helper of the module is entered instead, its parameters read as the call's arguments, see
  ``Slicer._inline``; a value cut inside it is a ``call`` that reads the caller's names);
- ``subscript``: an element of another value (``of`` is that value's origin, ``source`` its
  code when it is a call); ``cut``: the node budget ran out there; ``logits``: the free input
  of a sigmoid/softmax (any real value reaches it); ``global``: a name bound outside the
  module; ``other``: anything else (a loop variable, a conditional expression).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.module import Binding, Scope, call_arg, contains
from ..analysis.names import dotted_name
from ..analysis.values import Val, literal_number
from ..rules.recipes import recipe_for
from .contract import ALLOWED_OPS, RESHAPE_STAND_IN, STAND_INS, STRUCTURAL
from .signatures import DTYPE_PARAMS, EXTRA_SPELLINGS, PARAMS, bind
from .uses import consumers

_BINOPS = {
    cst.Add: "+",
    cst.Subtract: "-",
    cst.Multiply: "*",
    cst.Divide: "/",
    cst.Power: "**",
    cst.MatrixMultiply: "@",
}
_CMPOPS = {
    cst.GreaterThan: ">",
    cst.LessThan: "<",
    cst.GreaterThanEqual: ">=",
    cst.LessThanEqual: "<=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}
_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "int32", "int64", "bool"})
MAX_NODES = 200
NUMERIC_CONSTANTS = {
    (module, name): value
    for module in ("numpy", "math")
    for name, value in (("inf", math.inf), ("nan", math.nan), ("pi", math.pi), ("e", math.e))
}
# numpy/math functions a host constant may be computed with (np.log(2.), np.sqrt(2 / np.pi)):
# evaluated on literal numbers only, never on user values, so the slice keeps a number, not
# a free input that probing would set to 0 or 100.
HOST_FUNCTIONS: dict[str, Any] = {
    "log": math.log,
    "log1p": math.log1p,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "expm1": math.expm1,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "tanh": math.tanh,
    "arctan": math.atan,
    "atan": math.atan,
    "abs": abs,
    "fabs": abs,
    "float": float,
    "float16": float,
    "float32": float,
    "float64": float,
    "array": float,
    "asarray": float,
    "lgamma": math.lgamma,
    "gamma": math.gamma,
}
HOST_BINOPS: dict[type, Any] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.Power: lambda a, b: a**b,
}
DATA_KINDS = frozenset({"placeholder", "variable", "input"})  # provenance kinds fed by data
DATA_CALLS = frozenset({"get_next", "next"})  # iterator.get_next(), next(iterator)
MAX_SOURCE = 120  # characters of a producer's code kept for messages
MAX_EXPANDED = 2000  # nodes of a slice once names read several times are expanded
MAX_DEPTH = 40
MAX_READS = 40  # names an untraced expression is recorded to read
SATURATING = ops.LOGIT_SQUASHING


def _host_function(func: cst.BaseExpression, aliases: dict[str, str]):
    """`np.log`, `math.sqrt`, `numpy.float32`, `float`: the Python function that computes it."""
    if isinstance(func, cst.Name):
        return HOST_FUNCTIONS.get(func.value) if func.value in ("float", "abs") else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        module = aliases.get(func.value.value) or ""
        if module in ("numpy", "math"):
            return HOST_FUNCTIONS.get(func.attr.value)
    return None


def _host_eval(fn, *args: float) -> float | None:
    try:
        value = float(fn(*args))
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) or any(math.isinf(a) for a in args) else None


def _builtin_float_of_text(node: cst.Call, aliases: dict[str, str]) -> bool:
    """``float("inf")``, ``float("-inf")``, ``float("nan")``: Python's own spelling of the
    non-finite constants (``float`` not rebound by an import)."""
    if len(node.args) != 1 or not isinstance(node.func, cst.Name) or node.func.value != "float":
        return False
    text = node.args[0].value
    if "float" in aliases or not isinstance(text, cst.SimpleString):
        return False
    value = text.evaluated_value
    return isinstance(value, str) and value.strip().lower() in ("inf", "-inf", "+inf", "nan")


def jfloat(x: float) -> float | str:
    """JSON has no inf/nan: encode them as strings."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# A hook that slices a node some other way (a fix proof: the node's rewrite), or None to let
# the slicer slice it.  Called with (node, scope, order, depth) before the slicer's own rules.
Substitute = Callable[[cst.BaseExpression, Scope, int, int], dict | None]


class Slicer:
    def __init__(
        self,
        ctx: Context,
        positions,
        substitute: Substitute | None = None,
        cut_logits: bool = True,
        stand_ins: bool = False,
        inline: bool = True,
    ) -> None:
        self.substitute = substitute
        self.inline = inline  # follow plain module helpers into their bodies (``_inline``)
        # ... also those that unpack a tuple (``mean, var = tf.nn.moments(x)``): only for a
        # caller whose substitute reads such values (the training rung's program slice)
        self.unpacking = False
        self.inlined = 0  # helper calls followed so far
        # bind a non-literal axis/depth/shape to a stand-in the probe notes (verification
        # only: a fix proof under an assumed axis would prove nothing)
        self.stand_ins = stand_ins
        self.cut_logits = cut_logits  # stop at a sigmoid/softmax input (proofs need it all)
        self.ctx = ctx
        self.positions = positions
        self.inputs: dict[str, dict[str, Any]] = {}
        self._input_keys: dict[str, str] = {}
        self.count = 0
        self.truncated = False
        self.unsupported: list[str] = []  # constructs in the slice the verifier does not model
        # binding -> (subtree, its size); substitutions change what a name slices to, so a
        # slicer with a substitute never shares subtrees
        self.memo: dict[int, tuple[dict, int]] | None = {} if substitute is None else None
        self.expanded = 0
        self.path: tuple[Condition, ...] = ()  # the Python `if`s the hazard runs under
        self._branch_maps: dict[int, dict[int, tuple[Condition, ...]]] = {}
        # helpers being inlined: id of a parameter -> the argument it is called with
        self._args: dict[int, Argument] = {}
        self._frame = ""  # the inlined call the slice is in: its cut inputs are its own

    # -- reaching definitions under Python branches ----------------------------------------
    def run_under(self, scope: Scope, statement: cst.CSTNode) -> None:
        """Slice as seen from ``statement``: definitions made only in a branch its own ``if``
        conditions exclude (the ``else`` of its ``if``, an ``if letter_box:`` when it runs under
        ``if not letter_box:``) do not reach it."""
        self.path = self._if_map(scope.node).get(id(statement), ())

    def _if_map(self, root: cst.CSTNode) -> dict[int, tuple[Condition, ...]]:
        found = self._branch_maps.get(id(root))
        if found is None:
            found = self._branch_maps[id(root)] = branch_map(root)
        return found

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None:
        """``ev.lookup``, skipping bindings made under a condition the hazard's path excludes."""
        found = self.ctx.ev.lookup(name, scope, order)
        if not self.path or not isinstance(found, Binding) or found.value is None:
            return found
        where = self._if_map(found.scope.node)
        if not excluded(self.path, where.get(id(found.value), ())):
            return found
        earlier = [
            b
            for b in found.scope.bindings.get(name, [])
            if b.visible < found.visible
            and not (b.value is not None and excluded(self.path, where.get(id(b.value), ())))
        ]
        if earlier:
            return earlier[-1]
        return found.scope.params.get(name)

    def budget(self) -> None:
        """A fresh node budget: the target and its enclosing statement get one each."""
        self.count = 0
        self.expanded = 0
        self.truncated = False
        self.unsupported = []

    # -- inputs ---------------------------------------------------------------------------
    def _input(self, label: str, val: Val, key: str, origin: dict[str, str]) -> dict:
        key += self._frame  # a helper inlined twice cuts two values, one per call
        name = self._input_keys.get(key)
        if name is None:
            base = " ".join(label.split()) or "x"  # the user's own text, never cut or mangled
            name, n = base, 1
            while name in self.inputs:
                n += 1
                name = f"{base} ({n})"
            self._input_keys[key] = name
            self.inputs[name] = {
                "name": name,
                "producer": val.kind,
                "lo": jfloat(val.lo),
                "hi": jfloat(val.hi),
                "prob": bool(val.prob),
                "role": "value",
                **origin,
            }
            if val.batch_of is not None:  # a variance over the batch axis: what it reduces
                self.inputs[name]["batch_of"] = val.batch_of
        return {"k": "input", "name": name}

    def _source(self, node: cst.CSTNode) -> str:
        code = " ".join(self.ctx.code(node).split())
        return code if len(code) <= MAX_SOURCE else code[: MAX_SOURCE - 3] + "..."

    def origin(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        """Where the value of an expression the slice does not enter comes from (see the
        module docstring): ``{"origin": ..., "source": ..., "of": ...}``, plain data."""
        val = self.ctx.ev.value(node, scope, order)
        if val.kind in DATA_KINDS:
            return {"origin": "data"}
        if val.kind == "random":
            return {"origin": "random"}
        if isinstance(node, cst.Call):
            return self._call_origin(node, scope, order)
        if isinstance(node, cst.Attribute):
            if _attribute_chain(node):
                return {"origin": "attr"}
            return {"origin": "call", "source": self._source(node)}
        if isinstance(node, cst.Subscript):
            base = self._base_origin(node.value, scope, order, depth)
            out = {"origin": "subscript", "of": base["origin"]}
            if "source" in base:
                out["source"] = base["source"]
            return out
        if isinstance(node, (cst.Await, cst.Yield)):
            return {"origin": "call", "source": self._source(node)}
        if isinstance(node, cst.Name):
            return self._base_origin(node, scope, order, depth)
        return {"origin": "other"}

    def _call_origin(self, node: cst.Call, scope: Scope, order: int) -> dict:
        func = node.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if callee in DATA_CALLS:
            return {"origin": "data"}
        if self.ctx.ev.value(func, scope, order).kind in ("layer", "model"):
            return {"origin": "model"}
        return {"origin": "call", "source": self._source(node)}

    def _base_origin(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int) -> dict:
        """The origin of a name (or of what a subscript indexes): its parameter, its binding."""
        if not isinstance(node, cst.Name):
            if isinstance(node, (cst.Call, cst.Attribute, cst.Subscript)) and depth < 8:
                return self.origin(node, scope, order, depth + 1)
            return {"origin": "other"}
        found = self.lookup(node.value, scope, order)
        if isinstance(found, cst.Param):
            return {"origin": "param"}
        if isinstance(found, Binding):
            if found.value is None:
                return {"origin": "other"}  # a loop variable, an import, a `with ... as`
            if found.index is None and not self._is_opaque(found.value):
                return {"origin": "other"}  # computed by code the slice can follow
            if depth < 8:
                return self.origin(found.value, found.scope, found.at, depth + 1)
            return {"origin": "other"}
        return {"origin": "global"}

    def _where(self, node: cst.CSTNode, out: dict) -> dict:
        pos = self.positions.get(node)
        if pos is not None:
            out["line"], out["col"] = pos.start.line, pos.start.column + 1
        return out

    # -- tree -----------------------------------------------------------------------------
    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        if self.substitute is not None:
            swapped = self.substitute(node, scope, order, depth)
            if swapped is not None:
                return swapped
        self.count += 1
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            self.truncated = True
            return self._input(
                self.ctx.code(node),
                self.ctx.ev.value(node, scope, order),
                f"cut:{id(node)}",
                {"origin": "cut", "source": self._source(node)},
            )
        ev = self.ctx.ev
        folded = self._host_constant(node)
        if folded is not None and not isinstance(node, (cst.Integer, cst.Float)):
            return {"k": "const", "v": jfloat(folded)}
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                value = literal_number(node)
                return {"k": "const", "v": jfloat(value) if value is not None else "inf"}
            except (ValueError, OverflowError):
                return {"k": "const", "v": "inf"}
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return {"k": "bool", "v": node.value == "True"}
            return self._name(node, scope, order, depth)
        if isinstance(node, cst.Attribute):
            if node.attr.value in _DTYPES and ev.imports.resolve(node) is not None:
                return {
                    "k": "dtype",
                    "v": "float16" if node.attr.value == "half" else node.attr.value,
                }
            return self._attribute(node, scope, order, depth)
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            if isinstance(text, str) and text in _DTYPES:
                return {"k": "dtype", "v": text}
            return {"k": "str", "v": text if isinstance(text, str) else ""}
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, depth)
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in _BINOPS:
            return self._where(
                node,
                {
                    "k": "bin",
                    "op": _BINOPS[type(node.operator)],
                    "l": self.tree(node.left, scope, order, depth + 1),
                    "r": self.tree(node.right, scope, order, depth + 1),
                },
            )
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Minus):
                return {"k": "neg", "x": self.tree(node.expression, scope, order, depth + 1)}
            if isinstance(node.operator, cst.Plus):
                return self.tree(node.expression, scope, order, depth + 1)
            if isinstance(node.operator, cst.BitInvert) and self._boolean(node.expression):
                inner = self.tree(node.expression, scope, order, depth + 1)
                return {"k": "call", "op": "logical_not", "args": [inner], "kw": {}}
        if isinstance(node, cst.Subscript):
            axes = self._new_axes(node)
            if axes is not None:
                out = self.tree(node.value, scope, order, depth + 1)
                for axis in axes:
                    out = {"k": "call", "op": "expand_dims", "args": [out, _const(axis)], "kw": {}}
                return out
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            comp = node.comparisons[0]
            if type(comp.operator) in _CMPOPS:
                return {
                    "k": "cmp",
                    "op": _CMPOPS[type(comp.operator)],
                    "l": self.tree(node.left, scope, order, depth + 1),
                    "r": self.tree(comp.comparator, scope, order, depth + 1),
                }
        if isinstance(node, (cst.Tuple, cst.List)):
            return {
                "k": "tuple",
                "items": [self.tree(e.value, scope, order, depth + 1) for e in node.elements],
            }
        return self._opaque(node, scope, order)

    def _opaque(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        code = self.ctx.code(node)
        # the same attribute read twice in one scope (`d.d_k`) is one value, one input
        key = f"attr:{' '.join(code.split())}:{id(scope)}" if _attribute_chain(node) else None
        return self._input(
            code,
            self.ctx.ev.value(node, scope, order),
            key or f"node:{id(node)}",
            self._cut_origin(node, scope, order),
        )

    def _cut_origin(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        """The origin of a value the slice cuts, with the values an untraced call or element
        reads: a witness must not set it apart from them (``verdicts.related_inputs_reason``)."""
        origin = self.origin(node, scope, order)
        if self._args and origin["origin"] == "other":
            # cut inside an inlined helper: computed from what it reads, as an untraced call
            origin = {"origin": "call", "source": self._source(node)}
        if origin["origin"] in ("call", "subscript") and not _attribute_chain(node):
            reads = self._caller_reads(self._reads(node, scope, order), scope, order)
            if reads:
                origin = {**origin, "reads": reads}
        return origin

    def _reads(self, node: cst.BaseExpression, scope: Scope, order: int) -> list[str]:
        """The values an untraced expression reads (:func:`_names_read`), and those its local
        names are computed from, a few assignments back: ``f(z)`` with ``z = 2 * y`` reads
        ``y`` too."""
        found: set[str] = set()
        todo = [(node, scope, order, 0)]
        while todo and len(found) < MAX_READS:
            expr, where, at, depth = todo.pop()
            for name in _names_read(expr):
                if name in found:
                    continue
                found.add(name)
                binding = self.lookup(name, where, at) if "." not in name else None
                if isinstance(binding, Binding) and binding.value is not None and depth < 4:
                    todo.append((binding.value, binding.scope, binding.at, depth + 1))
        return sorted(found)

    def _boolean(self, node: cst.BaseExpression) -> bool:
        """``~x`` is a logical not when x is a comparison or a boolean op (``~tf.equal(c, 0)``);
        on an integer it is a bitwise not, which no probe models."""
        if isinstance(node, cst.Comparison):
            return True
        if isinstance(node, cst.Call):
            op = self.op_of(node)
            return op in BOOLEAN_OPS
        return False

    @staticmethod
    def _new_axes(node: cst.Subscript) -> list[int] | None:
        """``x[..., tf.newaxis]``, ``x[:, None]``: the axes ``expand_dims`` inserts, in the
        order to insert them; None for any other indexing (it selects values)."""
        kinds = []
        for element in node.slice:
            part = element.slice
            if isinstance(part, cst.Slice):
                if part.lower or part.upper or part.step:
                    return None
                kinds.append(":")
            elif isinstance(part, cst.Index) and isinstance(part.value, cst.Ellipsis):
                kinds.append("...")
            elif isinstance(part, cst.Index) and _is_newaxis(part.value):
                kinds.append("new")
            else:
                return None
        if "new" not in kinds or kinds.count("...") > 1:
            return None
        n = len(kinds)
        cut = kinds.index("...") if "..." in kinds else n
        front = [i for i in range(cut) if kinds[i] == "new"]
        back = [i - n for i in range(n - 1, cut, -1) if kinds[i] == "new"]
        return front + back

    def _name(self, node: cst.Name, scope: Scope, order: int, depth: int) -> dict:
        ev = self.ctx.ev
        found = self.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.value is not None and found.index is None:
            value = ev.value(found.value, found.scope, found.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            if self._is_opaque(found.value):  # P = tf.placeholder(...): the input is `P`
                return self._input(
                    node.value,
                    value,
                    f"name:{node.value}:{id(found)}",
                    self._cut_origin(found.value, found.scope, found.at),
                )
            return self._expand_once(found, node.value, depth)
        if isinstance(found, cst.Param) and id(found) in self._args:
            return self._argument(self._args[id(found)], depth)
        if isinstance(found, cst.Param) and found.default is not None:
            default = ev.value(found.default, scope, order)
            if default.const is not None:
                return {"k": "const", "v": jfloat(default.const)}
        return self._input(
            node.value,
            ev.value(node, scope, order),
            f"name:{node.value}:{id(found)}",
            self._base_origin(node, scope, order, 0),
        )

    def _expand_once(self, found: Binding, name: str, depth: int) -> dict:
        """A name read several times is sliced once: later reads share the subtree and do not
        spend the node budget again (the expanded size still has a bound)."""
        memo = self.memo.get(id(found)) if self.memo is not None else None
        if memo is not None:
            tree, size = memo
            self.expanded += size
            if self.expanded > MAX_EXPANDED:
                self.truncated = True
            return tree
        before = self.count
        assert found.value is not None  # the caller expands only bindings with a value
        tree = self.tree(found.value, found.scope, found.at, depth + 1)
        if tree.get("k") in ("call", "bin", "neg", "cmp"):
            tree = {**tree, "as": name}  # witnesses show the user's name for it
        if self.memo is not None:
            self.memo[id(found)] = (tree, self.count - before)
        self.expanded += self.count - before
        return tree

    def _host_constant(self, node: cst.BaseExpression, depth: int = 0) -> float | None:
        """The number a host expression of literals computes (`np.log(2.)`, `np.sqrt(2 / np.pi)`,
        `tf.constant(np.inf)`), or None: only literals, numpy/math constants and functions."""
        if depth > 12:
            return None
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                return literal_number(node)
            except (ValueError, OverflowError):
                return None
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._host_constant(node.expression, depth + 1)
            return -inner if inner is not None else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            module = self.ctx.info.imports.aliases.get(node.value.value) or ""
            return NUMERIC_CONSTANTS.get((module, node.attr.value))
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in HOST_BINOPS:
            a = self._host_constant(node.left, depth + 1)
            b = self._host_constant(node.right, depth + 1)
            if a is None or b is None:
                return None
            return _host_eval(HOST_BINOPS[type(node.operator)], a, b)
        if isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
            first = node.args[0].value
            if _builtin_float_of_text(node, self.ctx.info.imports.aliases):
                return float(cast(cst.SimpleString, first).evaluated_value)
            extra = [a for a in node.args[1:] if a.keyword is None or a.keyword.value != "dtype"]
            if extra:
                return None
            if self.op_of(node) in ("constant", "convert_to_tensor"):
                return self._host_constant(first, depth + 1)
            fn = _host_function(node.func, self.ctx.info.imports.aliases)
            if fn is None:
                return None
            value = self._host_constant(first, depth + 1)
            return _host_eval(fn, value) if value is not None else None
        return None

    def _is_opaque(self, node: cst.BaseExpression, seen: frozenset[int] = frozenset()) -> bool:
        """An expression the slice cannot enter: a call that is not on the allow-list."""
        if isinstance(node, cst.Call):
            op = self.op_of(node)
            if op is None and self._inlinable(node, seen):
                return False  # a plain helper of the module: inlined (`_inline`)
            return op is None or op not in ALLOWED_OPS | {"cond", "case"}
        if isinstance(node, cst.Subscript):
            return self._new_axes(node) is None
        return isinstance(node, (cst.Await, cst.Yield))

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int, depth: int) -> dict:
        ev = self.ctx.ev
        if isinstance(node.value, cst.Name):  # np.inf, math.pi: a number, not an input
            module = self.ctx.info.imports.aliases.get(node.value.value)
            number = NUMERIC_CONSTANTS.get((module or "", node.attr.value))
            if number is not None:
                return {"k": "const", "v": jfloat(number)}
        binding = _self_binding(node, scope, order)
        if binding is not None and binding.value is not None:
            value = ev.value(binding.value, binding.scope, binding.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            if value.kind not in ("layer", "model"):
                return self.tree(binding.value, binding.scope, binding.at, depth + 1)
        return self._opaque(node, scope, order)

    def op_of(self, node: cst.Call) -> str | None:
        """Canonical op of a call: the shared name table, then the verifier's own spellings."""
        op = self.ctx.op(node)
        if op is None:
            dotted = self.ctx.ev.imports.resolve(node.func) or self._imported(node.func)
            op = EXTRA_SPELLINGS.get(dotted or "")
        return op

    def _imported(self, func: cst.BaseExpression) -> str | None:
        """The full dotted path of a callee read through any import (a library's own module,
        ``bu.left_justified_expand_dims_like``), which only the verifier's spellings name."""
        path = dotted_name(func)
        head, _, rest = path.partition(".")
        base = self.ctx.info.imports.aliases.get(head) if head else None
        return f"{base}.{rest}" if base and rest else base

    def _call(self, node: cst.Call, scope: Scope, order: int, depth: int) -> dict:
        op = self.op_of(node)
        if op in ("cond", "case"):
            branches = self._branches(node, op, scope, order, depth)
            if branches is not None:
                return branches
        if op is None:
            inlined = self._inline(node, scope, order, depth)
            if inlined is not None:
                return inlined
        if op is None or op not in ALLOWED_OPS:
            return self._opaque(node, scope, order)
        bound = bind(op, node)
        spelling = self.ctx.code(node.func).strip()
        for what in bound.unknown:
            self.unsupported.append(f"{what} of {spelling}")
        if bound.unknown:
            return self._opaque(node, scope, order)
        args: list[dict] = []
        kwargs: dict[str, dict] = {}
        positional = True
        for name in PARAMS[op]:
            value = bound.params.get(name)
            if value is None or (isinstance(value, cst.Name) and value.value == "None"):
                positional = False  # not given, or given as None: the op's default
                continue
            if name in DTYPE_PARAMS:
                tree = self._dtype(value, scope, order)
            elif name == "x" and op in SATURATING and self.cut_logits:
                tree = self._logits(value, scope, order)
            else:
                tree = self.tree(value, scope, order, depth + 1)
                if name in STRUCTURAL and not _static(tree):
                    code = " ".join(self.ctx.code(value).split())
                    what = f"`{name}={code}` of {spelling}"
                    stand_in = stand_in_for(op, name, what) if self.stand_ins else None
                    if stand_in is None:
                        self.unsupported.append(f"{what}, not a literal")
                    else:
                        tree = stand_in
            if positional:
                args.append(tree)
            else:
                kwargs[name] = tree
        return self._where(node, {"k": "call", "op": op, "args": args, "kw": kwargs})

    # -- plain helpers of the module, inlined ----------------------------------------------
    def _helper(self, node: cst.Call) -> Scope | None:
        """The module-level function ``node`` calls when its body is straight-line code the
        slice can follow (:func:`straight_line`), or None: slicing its returned expression
        with the call's arguments keeps the values it reads related to the caller's."""
        if not isinstance(node.func, cst.Name):
            return None
        fn = self.ctx.info.functions.get(node.func.value)
        if fn is None or not isinstance(fn.node, cst.FunctionDef) or fn.parent is None:
            return None
        if fn.parent.kind != "module" or id(fn) in self._inlining:
            return None
        return fn if straight_line(fn.node, self.unpacking) else None

    def _inlinable(self, node: cst.Call, seen: frozenset[int] = frozenset()) -> bool:
        """A helper call ``_inline`` may follow: plain arguments, one returned expression
        that is not itself an untraced call (``seen``: the helpers asked about already)."""
        fn = self._helper(node)
        if fn is None or id(fn) in seen or len(fn.returns) != 1:
            return False
        if not isinstance(fn.node, cst.FunctionDef):
            return False
        if bind_arguments(fn.node, node, fn, 0, id(fn), "") is None:
            return False
        return not self._is_opaque(fn.returns[0][1], seen | {id(fn)})

    @property
    def _inlining(self) -> set[int]:
        return {a.callee for a in self._args.values()}

    def _inline(self, node: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """The helper's returned expression, sliced in the helper with each parameter read as
        the argument the call gives it (sliced where the call is).  None when the call does
        not bind its parameters plainly (``*args``, a missing argument, a default that is not
        a literal): the call stays one untraced input."""
        if not self.inline:
            return None
        fn = self._helper(node)
        if fn is None or len(fn.returns) != 1 or self._shadowed(node, scope, order):
            return None
        assert isinstance(fn.node, cst.FunctionDef)
        args = bind_arguments(fn.node, node, scope, order, id(fn), self._frame)
        if args is None:
            return None
        at, returned = fn.returns[0]
        saved_memo, saved_frame = self.memo, self._frame
        self._args.update(args)
        self.memo = None  # the helper's names stand for other values at another call
        self._frame = f"{saved_frame}@{id(node)}"
        mark = self._checkpoint()
        before, _, truncated, unsupported = mark
        try:
            tree = self.tree(returned, fn, at, depth + 1)
        finally:
            for key in args:
                self._args.pop(key, None)
            self.memo, self._frame = saved_memo, saved_frame
        whole_cut = tree.get("k") == "input" and tree.get("name") not in before
        if whole_cut or len(self.unsupported) > unsupported or (self.truncated and not truncated):
            # the helper's whole result is cut, or its body has what the probe cannot model:
            # the call itself stays the input, as when no helper is followed
            self._rollback(mark)
            return None
        self.inlined += 1
        return tree

    def peek(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        """The tree of ``node``, leaving no trace in the slice (no input, cut or count): a
        value read to decide something (a number, a flag), not a part of the probe."""
        mark = self._checkpoint()
        try:
            return self.tree(node, scope, order)
        finally:
            self._rollback(mark)

    def _checkpoint(self) -> tuple[set[str], int, bool, int]:
        return set(self.inputs), self.count, self.truncated, len(self.unsupported)

    def _rollback(self, mark: tuple[set[str], int, bool, int]) -> None:
        """Forget what the slice recorded since ``mark`` (a helper inlined in vain)."""
        keep, self.count, self.truncated, unsupported = mark
        self._drop_inputs(keep)
        del self.unsupported[unsupported:]

    def _drop_inputs(self, keep: set[str]) -> None:
        """Forget the inputs made since ``keep`` was taken (a helper inlined in vain)."""
        for name in [n for n in self.inputs if n not in keep]:
            del self.inputs[name]
        for key in [k for k, n in self._input_keys.items() if n not in keep]:
            del self._input_keys[key]

    def _shadowed(self, node: cst.Call, scope: Scope, order: int) -> bool:
        """A parameter or a local assignment of the called name hides the module's function."""
        assert isinstance(node.func, cst.Name)
        found = self.ctx.ev.lookup(node.func.value, scope, order)
        return isinstance(found, cst.Param) or (
            isinstance(found, Binding) and found.scope.kind != "module"
        )

    def _argument(self, arg: Argument, depth: int) -> dict:
        """A parameter of an inlined helper: the argument, sliced where the call is."""
        saved = self._frame
        self._frame = arg.frame
        try:
            return self.tree(arg.value, arg.scope, arg.order, depth + 1)
        finally:
            self._frame = saved

    def _caller_reads(self, reads: list[str], scope: Scope, order: int) -> list[str]:
        """Reads of a value cut inside an inlined helper, in the caller's names: a parameter
        stands for what its argument reads (its dtype or shape only for nothing)."""
        if not self._args:
            return reads
        out: set[str] = set()
        for name in reads:
            head, _, attr = name.partition(".")
            found = self.ctx.ev.lookup(head, scope, order)
            arg = self._args.get(id(found)) if isinstance(found, cst.Param) else None
            if arg is None:
                out.add(name)
            elif attr not in SHAPE_ATTRS:
                out.update(
                    self._caller_reads(
                        self._reads(arg.value, arg.scope, arg.order), arg.scope, arg.order
                    )
                )
        return sorted(out)

    def _branches(self, node: cst.Call, op: str, scope: Scope, order: int, depth: int):
        """tf.cond / tf.case with lambda branches: the selected value, as tf.where computes it
        (both branches evaluated, the predicate selects), so the predicate stays in the slice."""
        if op == "cond":
            pred = call_arg(node, 0, "pred")
            bodies = [
                _lambda_body(call_arg(node, 1, "true_fn", "fn1")),
                _lambda_body(call_arg(node, 2, "false_fn", "fn2")),
            ]
            if pred is None or bodies[0] is None or bodies[1] is None:
                return None
            args = [self.tree(pred, scope, order, depth + 1)]
            args += [self.tree(b, scope, order, depth + 1) for b in bodies if b is not None]
            return self._where(node, {"k": "call", "op": "where", "args": args, "kw": {}})
        pairs = call_arg(node, 0, "pred_fn_pairs")
        default = _lambda_body(call_arg(node, 1, "default"))
        if not isinstance(pairs, (cst.List, cst.Tuple)) or default is None:
            return None
        out = self.tree(default, scope, order, depth + 1)
        for element in reversed(pairs.elements):
            pair = element.value
            if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                return None
            body = _lambda_body(pair.elements[1].value)
            if body is None:
                return None
            test = self.tree(pair.elements[0].value, scope, order, depth + 1)
            then = self.tree(body, scope, order, depth + 1)
            out = {"k": "call", "op": "where", "args": [test, then, out], "kw": {}}
        return self._where(node, out)

    def _dtype(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        """A dtype argument: a literal one as written; any other (``x.dtype``, a name bound
        to a dtype) is the dtype of the value it describes, which is the probe's dtype."""
        if (
            isinstance(node, cst.Attribute)
            and node.attr.value in _DTYPES
            and self.ctx.ev.imports.resolve(node) is not None
        ):
            name = node.attr.value
            return {"k": "dtype", "v": "float16" if name == "half" else name}
        if isinstance(node, cst.SimpleString) and node.evaluated_value in _DTYPES:
            return {"k": "dtype", "v": node.evaluated_value}
        if isinstance(node, cst.Name) and depth < 8:  # dt = tf.float16 ... cast(x, dt)
            found = self.ctx.ev.lookup(node.value, scope, order)
            if isinstance(found, cst.Param) and id(found) in self._args:
                arg = self._args[id(found)]
                return self._dtype(arg.value, arg.scope, arg.order, depth + 1)
            if isinstance(found, Binding) and found.value is not None and found.index is None:
                return self._dtype(found.value, found.scope, found.at, depth + 1)
        return {"k": "dtype", "v": "same"}

    def _logits(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        """The stable cut at a sigmoid/softmax: its input is a free logit.  Whatever computed
        the logits (a matmul chain, a layer), any real value can reach the activation, and
        the hazards downstream depend only on that value."""
        ev = self.ctx.ev
        label = node.value if isinstance(node, cst.Name) else _short_label(self.ctx.code(node))
        val = replace(
            ev.value(node, scope, order), kind="logits", lo=-math.inf, hi=math.inf, prob=False
        )
        return self._input(label, val, f"logits:{id(node)}", {"origin": "logits"})


# attributes of a value that describe it without its values: a helper reading only these
# of a parameter does not compute from the parameter's values
SHAPE_ATTRS = frozenset({"dtype", "shape"})


@dataclass(frozen=True)
class Argument:
    """The expression a call gives one parameter of an inlined helper, and where it is."""

    value: cst.BaseExpression
    scope: Scope
    order: int
    callee: int  # id of the helper's scope (no helper is inlined inside itself)
    frame: str  # the caller's inlining frame


def straight_line(fn: cst.FunctionDef, unpacking: bool = False) -> bool:
    """A plain function whose body is a docstring, local imports, assignments to names and
    one final ``return``: no decorator, no ``*args``, no branch, loop, ``with`` or nested
    definition, so its result is its returned expression whatever the inputs."""
    if fn.decorators or fn.asynchronous is not None:
        return False
    params = fn.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return False
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    if not body:
        return False
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        last = i == len(body) - 1
        if isinstance(small, cst.Return):
            if not last or small.value is None:
                return False
        elif last:
            return False
        elif isinstance(small, cst.Expr):
            if i != 0 or not isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                return False
        elif isinstance(small, cst.Assign):
            if len(small.targets) != 1:
                return False
            target = small.targets[0].target
            names = isinstance(target, cst.Tuple) and all(
                isinstance(e.value, cst.Name) for e in target.elements
            )
            if not isinstance(target, cst.Name) and not (unpacking and names):
                return False
        elif not isinstance(small, (cst.Import, cst.ImportFrom)):
            return False
    return True


def _literal_default(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString))


def bind_arguments(
    fn: cst.FunctionDef, call: cst.Call, scope: Scope, order: int, callee: int, frame: str
) -> dict[int, Argument] | None:
    """Each parameter of ``fn`` (by id) and the argument ``call`` gives it, or its literal
    default; None when the binding is not plain (a star argument, an unknown keyword, a
    missing argument, a default that is not a literal)."""
    params = [*fn.params.posonly_params, *fn.params.params]
    by_name = {p.name.value: p for p in (*params, *fn.params.kwonly_params)}
    given: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional) > len(params):
        return None
    for p, a in zip(params, positional, strict=False):
        given[p.name.value] = a.value
    for a in call.args:
        if a.keyword is None:
            continue
        name = a.keyword.value
        if name not in by_name or name in given:
            return None
        given[name] = a.value
    out: dict[int, Argument] = {}
    for name, p in by_name.items():
        if name in given:
            out[id(p)] = Argument(given[name], scope, order, callee, frame)
        elif p.default is not None and _literal_default(p.default):
            out[id(p)] = Argument(p.default, scope, order, callee, frame)
        else:
            return None
    return out


def _short_label(code: str) -> str:
    """A logit input is named by its code (`pred / temperature`) when that reads as a name."""
    text = " ".join(code.split())
    return text if len(text) <= 32 and "\n" not in code and "(" not in text else "logits"


# One `if` a statement runs under: (id of the `if`, its test's code when the test is a plain
# flag, the polarity the statement needs).
Condition = tuple[int, str | None, bool]


def _flag(test: cst.BaseExpression) -> tuple[str | None, bool]:
    """``x`` / ``self.x`` / ``not x`` -> (code of the flag, polarity); other tests -> None."""
    polarity = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, polarity = test.expression, not polarity
    if isinstance(test, (cst.Name, cst.Attribute)) and _attribute_chain(test):
        return cst.Module([]).code_for_node(test.with_changes(lpar=[], rpar=[])), polarity
    return None, polarity


def branch_map(root: cst.CSTNode) -> dict[int, tuple[Condition, ...]]:
    """id(statement or assigned value) -> the ``if`` branches it runs under, in ``root`` (a
    function or module body; nested functions and classes have their own map)."""
    out: dict[int, tuple[Condition, ...]] = {}
    stack: list[tuple[cst.CSTNode, tuple[Condition, ...]]] = [(root, ())]
    while stack:
        node, conds = stack.pop()
        if node is not root and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.If):
            flag, polarity = _flag(node.test)
            stack.append((node.test, conds))
            stack.append((node.body, (*conds, (id(node), flag, polarity))))
            if node.orelse is not None:
                stack.append((node.orelse, (*conds, (id(node), flag, not polarity))))
            out[id(node)] = conds
            continue
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseStatement)):
            out[id(node)] = conds
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            out[id(node.value)] = conds
        stack.extend((child, conds) for child in node.children)
    return out


def excluded(path: tuple[Condition, ...], branch: tuple[Condition, ...]) -> bool:
    """A definition under ``branch`` cannot reach code under ``path``: they need opposite
    outcomes of the same ``if``, or of two ``if``s on the same flag."""
    return any(
        (p_id == b_id or (p_flag is not None and p_flag == b_flag)) and p_pol != b_pol
        for p_id, p_flag, p_pol in path
        for b_id, b_flag, b_pol in branch
    )


BOOLEAN_OPS = ops.BOOLEAN


def _const(v: float) -> dict:
    return {"k": "const", "v": v}


def stand_in_for(op: str, param: str, what: str) -> dict | None:
    """The probe node that stands in for a non-literal structural argument (``what`` is how
    the code wrote it), marked ``assumed`` so the verdict says so; None when none is faithful."""
    mark = {"param": param, "what": what}
    if param == "shape" and op == "reshape":
        items = [_const(d) for d in RESHAPE_STAND_IN]
        return {"k": "tuple", "items": items, "assumed": {**mark, "value": RESHAPE_STAND_IN}}
    if param not in STAND_INS:
        return None
    value, others = STAND_INS[param]
    kind = "bool" if isinstance(value, bool) else "const"  # a flag is traced as True/False
    return {"k": kind, "v": value, "assumed": {**mark, "value": value, "others": list(others)}}


# ops whose result depends on their operand's rank: a reshape under one cannot be flattened
_RANK_OPS = frozenset({"matmul", "transpose", "expand_dims", "squeeze", "tile", "concat"})
_RANK_FREE_PARAMS = frozenset({"keepdims", "ord"})


def _rank_dependent(node: dict) -> bool:
    """A call whose result depends on its operand's rank: a rank op, or an axis it names (a
    reshape's own shape keeps the element count, which is all a flattened value has)."""
    if node.get("k") != "call" or node.get("op") == "reshape":
        return False
    if node.get("op") in _RANK_OPS:
        return True
    names = PARAMS.get(str(node.get("op")), ())
    given = dict(zip(names, node.get("args") or [], strict=False))
    given.update(node.get("kw") or {})
    return any(p in STRUCTURAL and p not in _RANK_FREE_PARAMS for p in given)


def assumptions(*trees: Any) -> tuple[list[dict], list[str]]:
    """The stand-ins a probe's trees hold, and the reshapes that cannot take theirs (an op
    above them depends on the rank the flattened shape would change): those stay unsupported."""
    found: list[dict] = []
    refused: list[str] = []
    stack: list[tuple[Any, bool]] = [(t, False) for t in trees]
    while stack:
        t, under_rank_op = stack.pop()
        if isinstance(t, list):
            stack.extend((x, under_rank_op) for x in t)
            continue
        if not isinstance(t, dict):
            continue
        mark = t.get("assumed")
        if isinstance(mark, dict):
            if mark["param"] == "shape" and under_rank_op:
                refused.append(
                    f"{mark['what']}, not a literal (an op above it depends on its rank)"
                )
            elif mark not in found:
                found.append(mark)
        below = under_rank_op or _rank_dependent(t)
        stack.extend((v, below) for k, v in t.items() if k != "assumed")
    return found, refused


def _is_newaxis(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "None"
    return isinstance(node, cst.Attribute) and node.attr.value == "newaxis"


def _names_read(node: cst.BaseExpression) -> list[str]:
    """The values an untraced expression reads, as the slicer names inputs: each name and
    attribute chain (``y``, ``self.scale``) among its arguments or indexed value, not the
    function it calls."""
    found: set[str] = set()
    roots: list[cst.CSTNode] = []
    if isinstance(node, cst.Call):
        roots = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute) and not _attribute_chain(node.func):
            roots.append(node.func.value)  # f(x).mean(): reads what f(x) reads
    elif isinstance(node, cst.Subscript):
        roots = [node.value, *node.slice]
    else:
        roots = [node]
    code = cst.Module([])
    while roots:
        sub = roots.pop()
        if isinstance(sub, cst.Attribute) and _attribute_chain(sub):
            found.add(code.code_for_node(sub.with_changes(lpar=[], rpar=[])))
            continue
        if isinstance(sub, cst.Name):
            if sub.value not in ("None", "True", "False"):
                found.add(sub.value)
            continue
        if isinstance(sub, cst.Call):
            roots.extend(a.value for a in sub.args)
            if isinstance(sub.func, cst.Attribute) and not _attribute_chain(sub.func):
                roots.append(sub.func.value)
            continue
        roots.extend(sub.children)
    return sorted(found)


def _attribute_chain(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _input_names(*trees: Any) -> set[str]:
    """Inputs a tree reads (a dropped enclosing statement leaves some unread)."""
    names: set[str] = set()
    stack = list(trees)
    while stack:
        t = stack.pop()
        if isinstance(t, dict):
            if t.get("k") == "input":
                names.add(t["name"])
            stack.extend(t.values())
        elif isinstance(t, list):
            stack.extend(t)
    return names


# Ops whose operand divides (its 0 is a division by zero), besides `/` and the ops whose danger
# zone is their denominator's 0 (`divide`, `divide_no_nan`).
_RECIPROCALS = frozenset({"reciprocal", "rsqrt"})


def _divisor_args(tree: dict) -> list[Any]:
    """The operands of a node that divide the rest: the right of `/`, a denominator."""
    if tree.get("k") == "bin":
        return [tree.get("r")] if tree.get("op") == "/" else []
    if tree.get("k") != "call":
        return []
    op, args = tree.get("op"), tree.get("args") or []
    if op in _RECIPROCALS:
        return args[:1]
    entry = ops.REGISTRY.get(op) if isinstance(op, str) else None
    danger = entry.danger if entry is not None else None
    if danger is not None and danger.what == "denominator" and danger.arg < len(args):
        return [args[danger.arg]]
    return []


def scale_inputs(*trees: Any) -> set[str]:
    """Inputs read only inside a divisor (`sigma` in `softmax(-x / (2 * sigma**2))`): scales,
    not values; none when the trees hold no row-coupled op.  A probe with a row-coupled op gives its values a row `[v, 0]`, the reference
    entry 0 against which a logit stands out; a scale set to that 0 divides by zero in every
    probe point, at a value of the scale the code never chose.  Under a softmax-like op's own
    argument the walk reads values again (`x / reduce_sum(softmax(z))`: `z` is a logit)."""
    values: set[str] = set()
    divisors: set[str] = set()
    row_coupled = ops.ops_with(lambda op: op.row_coupled)
    coupled = False
    stack: list[tuple[Any, bool]] = [(t, False) for t in trees]
    while stack:
        t, under = stack.pop()
        if isinstance(t, list):
            stack.extend((x, under) for x in t)
            continue
        if not isinstance(t, dict):
            continue
        if t.get("k") == "input":
            (divisors if under else values).add(t["name"])
            continue
        if t.get("k") == "call" and t.get("op") in row_coupled:
            under, coupled = False, True
        below = [id(d) for d in _divisor_args(t)]
        for child in t.values():
            for item in child if isinstance(child, list) else [child]:
                if isinstance(item, (dict, list)):
                    stack.append((item, under or id(item) in below))
    return divisors - values if coupled else set()


def _static(tree: dict) -> bool:
    """A tree the tracer can read as a Python value: numbers, booleans, strings, tuples."""
    kind = tree.get("k")
    if kind in ("const", "bool", "str"):
        return True
    if kind == "src":  # an original operand inside a rewrite (fix proofs)
        return _static(tree["x"])
    if kind == "neg":
        return _static(tree["x"])
    if kind == "tuple":
        return all(_static(t) for t in tree["items"])
    return False


def _lambda_body(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    if (
        isinstance(node, cst.Lambda)
        and not any((node.params.params, node.params.kwonly_params, node.params.star_kwarg))
        and not isinstance(node.params.star_arg, cst.Param)
    ):
        return node.body
    return None


def _self_binding(node: cst.Attribute, scope: Scope, order: int) -> Binding | None:
    if not isinstance(node.value, cst.Name) or scope.cls is None:
        return None
    s: Scope | None = scope
    while s is not None and s.kind != "function":
        s = s.parent
    if s is None or s.self_name != node.value.value:
        return None
    bindings = scope.cls.attrs.get(node.attr.value)
    if not bindings:
        return None
    same = [b for b in bindings if b.scope is s and b.visible <= order]
    return same[-1] if same else bindings[-1]


def _statement_value(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)):
        return stmt.value
    if isinstance(stmt, cst.AugAssign):
        return stmt.value
    return None


def slice_finding(ctx: Context, hit: Hit, code: str, positions) -> dict[str, Any] | None:
    """The probe for one finding, or None when there is nothing to probe."""
    site = hit.site
    pos = positions.get(hit.node)
    line = pos.start.line if pos else 0
    dtype = ctx.dtype(site)
    path = getattr(ctx, "path", "")
    if hit.probe_hint.get("kind") == "train":  # a training spec declared next to its rule
        return {**hit.probe_hint, "rule": code, "dtype": dtype, "path": path, "line": line}
    how = recipe_for(code)
    if how.check == "training":
        return train_probe(ctx, hit, code, dtype, line)
    if not isinstance(hit.node, cst.BaseExpression) or how.check == "none":
        return None
    slicer = Slicer(ctx, positions, stand_ins=True)
    slicer.run_under(site.scope, site.statement)
    target = slicer.tree(hit.node, site.scope, site.order)
    if slicer.truncated and slicer.inlined:  # the helpers' bodies made it too large: without
        slicer = Slicer(ctx, positions, stand_ins=True, inline=False)  # them, as before
        slicer.run_under(site.scope, site.statement)
        target = slicer.tree(hit.node, site.scope, site.order)
    if target.get("k") == "input" and not slicer.unsupported:
        return None  # nothing numeric in the slice (a policy call, a compile argument)
    truncated, unsupported = slicer.truncated, slicer.unsupported
    loss = None
    value = _statement_value(site.statement)
    if value is not None and value is not hit.node and contains(value, hit.node):
        slicer.budget()
        loss = slicer.tree(value, site.scope, site.order)
        if slicer.truncated or slicer.unsupported or loss.get("k") == "input":
            loss = None  # the enclosing statement does not trace (or is opaque): target alone
        elif assumptions(loss)[1]:
            loss = None  # a reshape in it cannot be flattened: the target alone
    probe: dict[str, Any] = {
        "kind": "expr",
        "rule": code,
        "dtype": dtype,
        "path": path,
        "line": line,
        "target": target,
        "loss": loss,
        "inputs": [i for i in slicer.inputs.values() if i["name"] in _input_names(target, loss)],
        "eps": hit.probe_hint.get("eps"),
        "truncated": truncated,
        "recipe": how.as_probe(),
    }
    assumed, refused = assumptions(target, loss)
    unsupported = [*unsupported, *refused]
    if assumed:
        probe["assumed"] = assumed
    if unsupported:
        probe["unsupported"] = unsupported
    scales = scale_inputs(target, loss)
    if scales:
        probe["inputs"] = [
            {**i, "row": "scale"} if i["name"] in scales else i for i in probe["inputs"]
        ]
    uses = consumers(slicer, ctx, hit)  # where the flagged value goes: a select, a comparison
    if uses is not None:
        probe["uses"] = uses
    return probe


def train_probe(ctx: Context, hit: Hit, code: str, dtype: str, line: int) -> dict[str, Any] | None:
    from ..optimizers import ADAPTIVE
    from ..rules.common import split_eps
    from ..rules.precision import optimizer_epsilon
    from ..rules.training import learning_rate

    call = hit.node
    if not isinstance(call, cst.Call):
        return None
    op = ctx.op(call) or ""
    if not op.startswith("optimizer:"):
        return None
    family = op.split(":")[1]
    site = hit.site
    resolved = ctx.info.imports.resolve(call.func) or ""
    eps = None
    if family in ADAPTIVE:
        eps, _explicit = optimizer_epsilon(ctx, call, site, family)
    clip = ctx.arg(call, -1, "clipnorm", "global_clipnorm")
    clipnorm = ctx.val(clip, site).const if clip is not None else None
    output = None
    loss_eps = None
    for s in ctx.info.calls:
        o = ctx.op(s.node)
        if o in ops.PROBABILITY and output is None:
            output = o
        if o == "dense":
            act = ctx.arg(s.node, 1, "activation")
            if isinstance(act, cst.SimpleString) and act.evaluated_value in ops.PROBABILITY:
                output = output or act.evaluated_value
        if o == "log" and loss_eps is None and s.node.args:
            _, e = split_eps(ctx, s.node.args[0].value, s)
            loss_eps = e
    return {
        "kind": "train",
        "rule": code,
        "dtype": dtype,
        "path": getattr(ctx, "path", ""),
        "line": line,
        "optimizer": family,
        "tf1": resolved.startswith("tf.train."),
        "learning_rate": learning_rate(ctx, call, site),
        "epsilon": eps,
        "clipnorm": clipnorm,
        "output": output,
        "loss_eps": loss_eps,
        "control": recipe_for(code).control,
    }
