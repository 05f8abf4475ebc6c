"""How the slicer reads a call: the op's signature binds its arguments, a plain helper of the
module (or a plain method of the class, called on ``self``) is inlined, a branch op keeps its
branches, anything else is a free input.  Mixed into :class:`~.slicer.Slicer`; static, no
TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import libcst as cst

from ..context import Context
from ..module import Binding, Scope, call_arg, literal_item
from ..names import dotted_name
from ..project_view import ProjectView
from ..stopped import stopped_by
from ..values import Val
from . import program_modules
from .contract import ALLOWED_OPS, STRUCTURAL
from .program_modules import Where
from .signatures import DTYPE_PARAMS, EXTRA_SPELLINGS, PARAMS, bind
from .tools import (
    DTYPE_WORDS,
    SATURATING,
    Argument,
    activation_layer_maker,
    bind_arguments,
    lambda_body,
    new_axes,
    short_label,
    stand_in_for,
    static_tree,
    straight_line,
)


class SlicesCalls:
    """The slicer's reading of calls, mixed into :class:`~.slicer.Slicer`: an allow-listed op
    becomes a node with its arguments bound by the op's signature; a plain helper of the module
    is inlined, its parameters read as the call's arguments (rolled back when that fails); a
    ``tf.cond``/``tf.where`` keeps its branches; anything else is a free input."""

    ctx: Context
    inputs: dict[str, dict[str, Any]]
    _input_keys: dict[str, str]
    count: int
    truncated: bool
    unsupported: list[str]
    memo: dict[int, tuple[dict, int]] | None
    unpacking: bool
    inlined: int
    inline: bool
    stand_ins: bool
    cut_logits: bool
    _args: dict[int, Argument]
    _frame: str
    _bodies: list[int]
    # the methods being inlined (id of the method's scope) -> where their ``self`` is read:
    # the caller's scope, the call's order, the caller's frame
    _callers: dict[int, tuple[Scope, int, str]]
    positions: Any
    home: Context
    modules: set[str]
    across_modules: bool
    # the program slice's: a call its substitute reads (a TF1 layer), and a helper body it
    # also inlines (straight-line code inside naming ``with`` blocks)
    opens: Callable[[Context, cst.Call], bool] | None
    scoped_bodies: Callable[[Context, cst.FunctionDef, bool], bool] | None

    # the slicer's own reading, which a call's arguments and a helper's body go back to
    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict:
        raise NotImplementedError

    def _where(self, node: cst.CSTNode, out: dict) -> dict:
        """``out`` with the place of the code it is made from (line, 1-based column)."""
        pos = self.positions.get(node)
        if pos is not None:
            out["line"], out["col"] = pos.start.line, pos.start.column + 1
            if self.ctx is not self.home:  # code of an imported module: its own lines
                out["file"] = self.ctx.path
        return out

    def _opaque(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        raise NotImplementedError

    def _is_opaque(
        self,
        node: cst.BaseExpression,
        scope: Scope | None = None,
        seen: frozenset[int] = frozenset(),
    ) -> bool:
        """An expression the slice cannot enter (in ``scope``, where a call may be a method of
        its class): a call that is not on the allow-list."""
        if isinstance(node, cst.Call):
            op = self.op_of(node)
            if self.opens is not None and self.opens(self.ctx, node):
                return False  # read by the substitute (the program slice's TF1 layers, convs)
            if op is None and self._inlinable(node, scope, seen):
                return False  # a plain helper of the module (or method): inlined (`_inline`)
            return op is None or op not in ALLOWED_OPS | {"cond", "case"}
        if isinstance(node, cst.Subscript):
            return new_axes(node) is None
        return isinstance(node, (cst.Await, cst.Yield))

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int, depth: int) -> dict:
        raise NotImplementedError

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None:
        raise NotImplementedError

    def _input(self, label: str, val: Val, key: str, origin: dict[str, str]) -> dict:
        raise NotImplementedError

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
            inlined = self._softmax_layer(node, scope, order, depth)
            inlined = inlined or self._inline(node, scope, order, depth)
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
                if name in STRUCTURAL and not static_tree(tree):
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

    def _softmax_layer(self, node: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
        """``Softmax(axis=a)(x)``, ``self.softmax(x)``: the softmax of ``x``, where the slice
        keeps what computes the logits (a cut slice takes the layer's output as one already)."""
        maker = (
            None if self.cut_logits else activation_layer_maker(self.ctx, node.func, scope, order)
        )
        x = call_arg(node, 0, "inputs")
        if maker is None or x is None or len(node.args) > 1:
            return None  # `Softmax()(x, mask)`: Keras fills the mask itself
        if self.ctx.ev.value(maker, scope, order).activation != "softmax":
            return None
        axis = call_arg(maker, 0, "axis") if self.ctx.op(maker) == "softmax_layer" else None
        kw = {"axis": self.tree(axis, scope, order, depth + 1)} if axis is not None else {}
        tree = {"k": "call", "op": "softmax", "args": [self.tree(x, scope, order, depth + 1)]}
        return self._where(node, {**tree, "kw": kw})

    # -- the module being read --------------------------------------------------------------
    @contextmanager
    def in_module(self, where: Where | None) -> Iterator[None]:
        """Read code of another module of the project (``where``: its context and positions;
        None: stay): names, imports and positions are that module's while inside."""
        if where is None or where[0] is self.ctx:
            yield
            return
        saved = self.ctx, self.positions
        self.ctx, self.positions = where
        if where[0] is not self.home and isinstance(where[0].ev.project, ProjectView):
            self.modules.add(where[0].ev.project.module)
        try:
            yield
        finally:
            self.ctx, self.positions = saved

    def here(self) -> Where:
        """The module being read, as :meth:`in_module` takes it."""
        return self.ctx, self.positions

    # -- plain helpers of the module, and methods of the class on ``self``, inlined --------
    def _helper(self, node: cst.Call, scope: Scope | None) -> tuple[Scope, Where | None] | None:
        """The module-level function ``node`` calls (or the method of the caller's own class
        it calls on ``self``: :meth:`_own_method`) when its body is straight-line code the
        slice can follow (:func:`straight_line`), or None: slicing its returned expression
        with the call's arguments keeps the values it reads related to the caller's.  A
        function imported from another module of the project is that module's (``Where``);
        one of this module, None.  ``scope``: where the call is (None: unknown, no method)."""
        func = node.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        where = None
        fn = self.ctx.info.functions.get(func.value) if isinstance(func, cst.Name) else None
        if fn is None and scope is not None:
            fn = self._own_method(func, scope)
        if fn is None and self.across_modules:  # the program slice's
            found = program_modules.imported_function(self.ctx, func)
            if found is not None:
                fn, where = found
        if fn is None or not isinstance(fn.node, cst.FunctionDef) or fn.parent is None:
            return None
        if fn.parent.kind not in ("module", "class") or id(fn) in self._bodies:
            return None  # a helper calling itself: its body is being sliced
        if straight_line(fn.node, self.unpacking):
            return fn, where
        wider, ctx = self.scoped_bodies, (where[0] if where is not None else self.ctx)
        return (fn, where) if wider is not None and wider(ctx, fn.node, self.unpacking) else None

    @staticmethod
    def _own_method(func: cst.BaseExpression, scope: Scope) -> Scope | None:
        """``self.m`` called in a method of a class that defines ``m`` itself: that method.
        A subclass may override ``m``, and a method ``m`` only inherits is not looked for:
        the finding is about this class's code as written, and this class's ``m`` is what
        its own objects run, so its body relates the values as the code in view does."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        if scope.kind != "function" or scope.cls is None or scope.self_name != func.value.value:
            return None
        if func.attr.value in scope.cls.attrs:  # `self.m = ...` somewhere: not surely the def
            return None
        method = scope.cls.method_scopes.get(func.attr.value)
        if method is None or method.parent is None or method.parent.cls is not scope.cls:
            return None
        return method

    def _inlinable(
        self, node: cst.Call, scope: Scope | None, seen: frozenset[int] = frozenset()
    ) -> bool:
        """A helper call ``_inline`` may follow: plain arguments, one returned expression
        that is not itself an untraced call (``seen``: the helpers asked about already)."""
        helper = self._helper(node, scope)
        if helper is None:
            return False
        fn, where = helper
        if id(fn) in seen or len(fn.returns) != 1:
            return False
        if not isinstance(fn.node, cst.FunctionDef):
            return False
        method = fn.cls is not None
        if bind_arguments(fn.node, node, fn, 0, id(fn), "", method) is None:
            return False
        with self.in_module(where):
            return not self._is_opaque(fn.returns[0][1], fn, seen | {id(fn)})

    def _inline(
        self, node: cst.Call, scope: Scope, order: int, depth: int, element: int | None = None
    ) -> dict | None:
        """The helper's returned expression, sliced in the helper with each parameter read as
        the argument the call gives it (sliced where the call is).  None when the call does
        not bind its parameters plainly (``*args``, a missing argument, a default that is not
        a literal): the call stays one untraced input.  ``element``: the item of a returned
        tuple that ``a, b = helper(x)`` unpacks.  In a method called on ``self``, ``self.x``
        reads what the caller's ``self.x`` does (:meth:`_read_in_caller`)."""
        if not self.inline:
            return None
        helper = self._helper(node, scope)
        if helper is None:
            return None
        fn, where = helper
        method = fn.cls is not None
        if len(fn.returns) != 1 or (not method and self._shadowed(node, scope, order)):
            return None
        assert isinstance(fn.node, cst.FunctionDef)
        at, returned = fn.returns[0]
        if element is not None:
            item = literal_item(returned, element)
            if item is None:
                return None
            returned = item
        args = bind_arguments(fn.node, node, scope, order, id(fn), self._frame, method)
        if args is None:
            return None
        args = {k: replace(a, module=self.here()) for k, a in args.items()}
        saved_memo, saved_frame = self.memo, self._frame
        # fc(fc(x)): the inner call binds the same parameters while the outer's are read
        outer = {k: self._args[k] for k in args if k in self._args}
        self._args.update(args)
        if method:  # a method inlined in an inlined method: its `self` is the first caller's
            self._callers[id(fn)] = self._callers.get(id(scope), (scope, order, self._frame))
        self.memo = None  # the helper's names stand for other values at another call
        self._frame = f"{saved_frame}@{id(node)}"
        self._bodies.append(id(fn))
        mark = self._checkpoint()
        before, _, truncated, unsupported = mark
        try:
            with self.in_module(where):
                tree = self.tree(returned, fn, at, depth + 1)
        finally:
            self._bodies.pop()
            self._callers.pop(id(fn), None)
            for key in args:
                self._args.pop(key, None)
            self._args.update(outer)
            self.memo, self._frame = saved_memo, saved_frame
        frame = f"{saved_frame}@{id(node)}"
        whole_cut = tree.get("k") == "input" and any(  # cut inside the body, not an argument
            n == tree.get("name") and n not in before and (k.endswith(frame) or frame + "@" in k)
            for k, n in self._input_keys.items()
        )
        if whole_cut or len(self.unsupported) > unsupported or (self.truncated and not truncated):
            # the helper's whole result is cut, or its body has what the probe cannot model:
            # the call itself stays the input, as when no helper is followed
            self._rollback(mark)
            return None
        self.inlined += 1
        return tree

    def _read_in_caller(self, node: cst.Attribute, scope: Scope, depth: int) -> dict | None:
        """``self.x`` (or ``self.x.y``) read in a method being inlined: the caller's
        ``self.x``, read where the call is, so that the method and its caller read one value
        (one probe input), not two.  None elsewhere."""
        caller = self._callers.get(id(scope))
        head: cst.BaseExpression = node
        while isinstance(head, cst.Attribute):
            head = head.value
        if caller is None or not isinstance(head, cst.Name) or head.value != scope.self_name:
            return None
        where, order, frame = caller
        if where.self_name != scope.self_name:  # another spelling of the object: not followed
            return None
        saved, self._frame = self._frame, frame
        try:
            return self._attribute(node, where, order, depth + 1)
        finally:
            self._frame = saved

    def _unpacked(self, found: Binding | cst.Param | None, depth: int) -> dict | None:
        """``a, b = 64, 1 - p``: the item of the literal the name unpacks; ``a, b = f(x)`` of
        a helper or ``a, b = self.m(x)`` of a method returning a literal tuple: that item,
        inlined (the other names it unpacks are inlined at the same call, so the values cut
        inside are the same inputs).  None for anything else."""
        if not isinstance(found, Binding) or found.index is None:
            return None
        element = found.element()
        if element is not None:
            return self.tree(element, found.scope, found.at, depth + 1)
        call = found.value
        if isinstance(call, cst.Call) and found.nested is None and self.op_of(call) is None:
            return self._inline(call, found.scope, found.at, depth + 1, found.index)
        return None

    def _if_exp(self, node: cst.IfExp, scope: Scope, order: int, depth: int) -> dict:
        """``a if x is None else b`` where ``x`` is a parameter of an inlined helper: the
        branch the call's argument takes (``logits=logits``, a value the caller computes, is
        not None); any other conditional expression is one input, as before."""
        test = node.test
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"
        ):
            none = self._is_none(test.left, scope, order)
            if none is not None:
                none ^= isinstance(test.comparisons[0].operator, cst.IsNot)
                return self.tree(node.body if none else node.orelse, scope, order, depth + 1)
        return self._opaque(node, scope, order)

    def _is_none(
        self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0
    ) -> bool | None:
        """Whether a parameter of an inlined helper is None at the call: True for a ``None``
        argument, False for one the caller computes (a call, arithmetic, a number), through
        names a few assignments back; None when unknown (an attribute or a parameter of the
        caller may hold None)."""
        if depth > 8:
            return None
        if isinstance(node, cst.Name):
            if node.value == "None":
                return True
            found = self.lookup(node.value, scope, order)
            if isinstance(found, cst.Param) and id(found) in self._args:
                arg = self._args[id(found)]
                return self._is_none(arg.value, arg.scope, arg.order, depth + 1)
            if depth == 0:  # only a parameter of an inlined helper is decided
                return None
            if isinstance(found, Binding) and found.value is not None and found.index is None:
                return self._is_none(found.value, found.scope, found.at, depth + 1)
            return None
        kinds = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)
        return False if depth > 0 and isinstance(node, kinds) else None

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
        head = node.func
        while isinstance(head, cst.Attribute):  # ``parts.f``: the module's name
            head = head.value
        assert isinstance(head, cst.Name)
        found = self.ctx.ev.lookup(head.value, scope, order)
        return isinstance(found, cst.Param) or (
            isinstance(found, Binding) and found.scope.kind != "module"
        )

    def _argument(self, arg: Argument, depth: int) -> dict:
        """A parameter of an inlined helper: the argument, sliced where the call is."""
        saved, bodies = self._frame, self._bodies
        self._frame = arg.frame
        if arg.callee in bodies:  # the argument is read where the call is, outside the helper
            self._bodies = bodies[: len(bodies) - 1 - bodies[::-1].index(arg.callee)]
        try:
            with self.in_module(arg.module):
                return self.tree(arg.value, arg.scope, arg.order, depth + 1)
        finally:
            self._frame, self._bodies = saved, bodies

    def _branches(self, node: cst.Call, op: str, scope: Scope, order: int, depth: int):
        """tf.cond / tf.case with lambda branches: the selected value, as tf.where computes it
        (both branches evaluated, the predicate selects), so the predicate stays in the slice."""
        if op == "cond":
            pred = call_arg(node, 0, "pred")
            bodies = [
                lambda_body(call_arg(node, 1, "true_fn", "fn1")),
                lambda_body(call_arg(node, 2, "false_fn", "fn2")),
            ]
            if pred is None or bodies[0] is None or bodies[1] is None:
                return None
            args = [self.tree(pred, scope, order, depth + 1)]
            args += [self.tree(b, scope, order, depth + 1) for b in bodies if b is not None]
            return self._where(node, {"k": "call", "op": "where", "args": args, "kw": {}})
        pairs = call_arg(node, 0, "pred_fn_pairs")
        default = lambda_body(call_arg(node, 1, "default"))
        if not isinstance(pairs, (cst.List, cst.Tuple)) or default is None:
            return None
        out = self.tree(default, scope, order, depth + 1)
        for element in reversed(pairs.elements):
            pair = element.value
            if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                return None
            body = lambda_body(pair.elements[1].value)
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
            and node.attr.value in DTYPE_WORDS
            and self.ctx.ev.imports.resolve(node) is not None
        ):
            name = node.attr.value
            return {"k": "dtype", "v": "float16" if name == "half" else name}
        if isinstance(node, cst.SimpleString) and node.evaluated_value in DTYPE_WORDS:
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
        the hazards downstream depend only on that value.  ``sigmoid(-x)``: the cut is at
        ``x``, negated, so that ``x`` read elsewhere in the statement stays one value."""
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return {"k": "neg", "x": self._logits(node.expression, scope, order)}
        ev = self.ctx.ev
        label = node.value if isinstance(node, cst.Name) else short_label(self.ctx.code(node))
        val = replace(
            ev.value(node, scope, order), kind="logits", lo=-math.inf, hi=math.inf, prob=False
        )
        origin = {"origin": "logits"}
        stop = stopped_by(self.ctx, node, scope, order)
        if stop:  # a teacher's or a target's logits: no gradient reaches them
            origin["stopped"] = stop
        return self._input(label, val, f"logits:{id(node)}", origin)
