"""Where a flagged value goes next: its consumers, sliced for the verdict (issue #11).

A NaN or inf at the flagged expression is only a hazard if it reaches something: code often
handles it right after, by design (``var = pow(1 - 2 * t, -1.5)`` then ``tf.where(t < 0.5,
var, inf)``; a ratio that only feeds a comparison; ``log(p)`` fed to a log-sum-exp, where a
-inf entry is exact, or to a sampler's logits, an argmax or a top-k, where a -inf entry is an
impossible outcome that sorts last).  This static half follows the value up its statement and,
through a local name, into the statements after it in the same block (straight-line only),
and records each place it ends (a *sink*): a branch of a select, a comparison, a log-sum-exp,
sampling logits, an order-only consumer, a maximum.  The verdict half
(``verify/downstream.py``) evaluates the sinks at the witness.  Any other use (the value
returned, added to a loss, passed to an unknown function, read in a nested block) means the
value escapes, and nothing is recorded: the finding is judged as before.

Plain data only: never imports TensorFlow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from ... import ops as registry
from ..dead_stores import reads_of, statements_after
from ..module import Scope, call_arg, parent_map
from ..names import dotted_name

if TYPE_CHECKING:
    from ..context import Context, Hit


class Slicer(Protocol):
    """What the consumer walk reads of the slicer (:class:`.slicer.Slicer` is one).  A
    protocol, so this module does not import the slicer that calls it."""

    inputs: dict[str, dict[str, Any]]
    unsupported: list[str]
    truncated: bool
    positions: Any
    _input_keys: dict[str, str]

    def op_of(self, node: cst.Call) -> str | None: ...

    def budget(self) -> None: ...

    def tree(self, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> dict: ...


MAX_HOPS = 3  # local names followed (`a = f(x)`, `b = a * 2`, `tf.where(c, b, 0)`)
MAX_SINKS = 8

# Selects whose discarded branch does not reach the result (forward): the canonical `where`,
# and spellings the op registry does not model, by the dotted name they resolve to.
NUMPY_WHERE = ("experimental.numpy.where",)
NO_NAN_CALLS = ("multiply_no_nan", "divide_no_nan")
COMPARE_OPS = registry.COMPARISONS
NAN_TESTS = frozenset({"is_nan", "is_inf", "is_finite", "isnan", "isinf", "isfinite"})
# Ops where a -inf entry is exact (exp(-inf) = 0): a log value of -inf is handled there.
LOGSUMEXP_OPS = registry.LOG_SUM_EXP  # exp, softmax, log_softmax, reduce_logsumexp
# Reads that keep only the value's shape or dtype, never its entries.
SHAPE_CALLS = frozenset({"shape", "shape_n", "rank", "size", "zeros_like", "ones_like"})
SHAPE_ATTRS = frozenset({"shape", "dtype", "ndim"})
# Calls that draw indices from logits (TF/Keras spellings, normalised): a -inf logit is an
# outcome never drawn while its row has a finite one (TensorFlow returns an out-of-range index
# for a row of -inf only).  No gradient flows through a draw.
SAMPLING_CALLS = frozenset(
    {
        "tf.random.categorical",
        "tf.random.stateless_categorical",
        "tf.random.multinomial",
        "tf.multinomial",
        "keras.random.categorical",
    }
)
# Order-only consumers, by their last name under tf./keras.: an index comes out, no gradient.
ORDER_INDEX_CALLS = frozenset({"argmax", "argmin", "argsort"})
# Calls whose values are the input's entries reordered (-inf entries sort last): the values are
# followed on; ``top_k``'s indices end the flow.
REORDER_CALLS = frozenset({"top_k", "sort"})
# After a reorder the values are no longer sliced (the probe does not trace top_k): only ops
# that keep every entry as it is may follow, so the check made on the reorder's input holds
# (not `gather`, which may pick the -inf entries alone).
ENTRY_KEEPING = registry.ENTRY_KEEPING


@dataclass
class Sink:
    """One place the flagged value ends.

    ``kind``: ``select`` (a branch of a where-like call: ``cond`` is the condition's slice,
    ``selected_when`` the condition's value that keeps the flagged branch and ``other`` the
    slice of the branch taken instead, when it traces), ``compare`` (only a
    boolean comes out), ``logsumexp`` (``arg`` is the slice of the op's argument, which holds
    the flagged value), ``sample`` (the logits of a categorical draw), ``order`` (an argmax,
    argsort, or the input of a top_k/sort), ``max`` (a ``reduce_max``: finite where the row has
    a finite entry).  ``arg`` is None for a sink reached through a top_k/sort's values: the
    ``order`` sink of that reorder holds the slice its entries were checked on."""

    kind: str
    line: int
    code: str
    cond: dict[str, Any] | None = None
    selected_when: bool | None = None
    arg: dict[str, Any] | None = None
    other: dict[str, Any] | None = None


class _Escapes(Exception):
    """The value reaches something no sink describes: nothing can be said downstream."""


class Consumers:
    """Follows a flagged node to its sinks; each condition or argument is sliced by the
    probe's own slicer, so it names the probe's inputs the same way."""

    def __init__(self, slicer: Slicer, ctx: Context, hit: Hit) -> None:
        self.slicer, self.ctx, self.hit = slicer, ctx, hit
        self.sinks: list[Sink] = []
        self.before = set(slicer.inputs)
        self._orders: dict[int, int] | None = None
        # a callee's parameter, as the slicer keys its input -> the caller's argument's slice
        self.bound: dict[str, dict[str, Any]] = {}
        self.reordered = 0  # > 0 while following a top_k/sort's values (not sliced any more)

    def run(self) -> dict[str, Any] | None:
        site = self.hit.site
        try:
            self._follow(self.hit.node, site.statement, site.scope, 0)
        except _Escapes:
            return None
        if not self.sinks:
            return None
        read = _input_names([(s.cond, s.arg, s.other) for s in self.sinks])
        extra = [
            spec
            for name, spec in self.slicer.inputs.items()
            if name not in self.before and name in read
        ]
        return {"sinks": [asdict(s) for s in self.sinks], "inputs": extra}

    # -- walking up a statement -------------------------------------------------------------
    def _follow(self, node: cst.CSTNode, statement: cst.CSTNode, scope: Scope, hops: int) -> None:
        parents = parent_map(statement)
        current = node
        while True:
            parent = parents.get(id(current))
            if isinstance(parent, cst.Arg):
                current, parent = parent, parents.get(id(parent))
                if not isinstance(parent, cst.Call):
                    raise _Escapes
            if isinstance(parent, cst.ComparisonTarget):  # `a < v`: v is the comparator
                current, parent = parent, parents.get(id(parent))
            if parent is None:
                raise _Escapes  # an expression statement, a bare value
            if isinstance(parent, cst.Call):
                if self._call_sink(parent, current, statement, scope, hops):
                    return
                current = parent
                continue
            if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
                if self.reordered:
                    raise _Escapes  # arithmetic on reordered values: not checked there
                current = parent
                continue
            if isinstance(parent, cst.Comparison):
                self._add(Sink("compare", self._line(parent), self._code(parent)))
                return
            if (
                isinstance(parent, cst.Attribute)
                and current is parent.value
                and parent.attr.value in SHAPE_ATTRS
            ):
                return  # `v.shape`, `v.dtype`: no value goes on
            if isinstance(parent, (cst.Assign, cst.AnnAssign)) and current is parent.value:
                self._follow_name(parent, scope, hops)
                return
            raise _Escapes  # returned, indexed, put in a container, an augmented assignment

    def _call_sink(
        self, call: cst.Call, arg: cst.CSTNode, statement: cst.CSTNode, scope: Scope, hops: int
    ) -> bool:
        """True when ``call`` ends the value's flow; False when its result carries it on."""
        value = arg.value if isinstance(arg, cst.Arg) else arg
        if not isinstance(value, cst.BaseExpression):
            raise _Escapes
        op = self.slicer.op_of(call)
        tf_name = self.ctx.ev.imports.resolve(call.func) or ""
        dotted = tf_name or self._imported(call.func)
        if _order_call(tf_name):
            return self._order_sink(call, value, statement, scope, hops, tf_name)
        if op == "reduce_max" and value is call_arg(call, 0, "input_tensor", "x"):
            return self._max_sink(call, value, statement, scope, hops)
        if op == "where" or dotted.endswith(NUMPY_WHERE):
            self._not_reordered()
            return self._where_sink(call, value, scope)
        if dotted.rsplit(".", 1)[-1] in NO_NAN_CALLS or op in NO_NAN_CALLS:
            self._not_reordered()
            return self._no_nan_sink(call, value, scope)
        if op in COMPARE_OPS or dotted.rsplit(".", 1)[-1] in NAN_TESTS:
            self._add(Sink("compare", self._line(call), self._code(call)))
            return True
        if _logsumexp_operand(call, value, op, dotted):
            tree = None if self.reordered else self._slice(value, scope, call)
            self._add(Sink("logsumexp", self._line(call), self._code(call), arg=tree))
            return True
        if _shape_only(op, dotted):
            return True  # `tf.shape(v)`, `zeros_like(v)`: only the shape goes on
        if op is None:
            self._follow_call(call, value, scope, hops)  # a function of this module, or escape
            return True
        if self.reordered and not _keeps_entries(op):
            raise _Escapes  # arithmetic on reordered values: not checked there
        return False

    def _not_reordered(self) -> None:
        """A select's condition may read the reordered values, which are not sliced."""
        if self.reordered:
            raise _Escapes

    def _where_sink(self, call: cst.Call, value: cst.CSTNode, scope: Scope) -> bool:
        cond = call_arg(call, 0, "condition", "cond")
        true, false = call_arg(call, 1, "x", "x1"), call_arg(call, 2, "y", "x2")
        if cond is None or true is None or false is None:
            raise _Escapes  # tf.where(c): indices, not a select
        if value is cond:
            self._add(Sink("compare", self._line(call), self._code(call)))
            return True
        if value is not true and value is not false:
            raise _Escapes
        tree = self._slice(cond, scope, call)
        other = self._other_branch(false if value is true else true, scope, call)
        sink = Sink("select", self._line(call), self._code(call), tree, selected_when=value is true)
        self._add(replace(sink, other=other))
        return True

    def _other_branch(
        self, node: cst.BaseExpression, scope: Scope, call: cst.Call
    ) -> dict[str, Any] | None:
        """The slice of the branch a select takes instead, or None: it is only looked at, so
        one that does not trace leaves the select as it is."""
        unsupported, truncated = list(self.slicer.unsupported), self.slicer.truncated
        try:
            return self._slice(node, scope, call)
        except _Escapes:
            self.slicer.unsupported[:], self.slicer.truncated = unsupported, truncated
            return None

    def _no_nan_sink(self, call: cst.Call, value: cst.CSTNode, scope: Scope) -> bool:
        """``multiply_no_nan(x, y)`` / ``divide_no_nan(x, y)`` are 0 where ``y == 0``, whatever
        ``x`` holds: for ``x`` a select on ``y == 0``; ``y`` itself carries on."""
        if value is not call_arg(call, 0, "x"):
            return False
        y = call_arg(call, 1, "y")
        if y is None:
            raise _Escapes
        zero = {
            "k": "cmp",
            "op": "==",
            "l": self._slice(y, scope, call),
            "r": {"k": "const", "v": 0},
        }
        self._add(Sink("select", self._line(call), self._code(call), zero, selected_when=False))
        return True

    # -- sampling and order-only consumers ----------------------------------------------------
    def _order_sink(
        self,
        call: cst.Call,
        value: cst.BaseExpression,
        statement: cst.CSTNode,
        scope: Scope,
        hops: int,
        tf_name: str,
    ) -> bool:
        """A draw from logits, an argmax/argsort, or a top_k/sort whose values go on.  The
        flagged value must be the logits/input, not ``num_samples`` or ``k``."""
        last = tf_name.rsplit(".", 1)[-1]
        sampling = tf_name in SAMPLING_CALLS
        names = ("logits",) if sampling else ("input", "x", "values")
        first = call_arg(call, 0, *names)
        if value is not first:
            raise _Escapes
        kind = "sample" if sampling else "order"
        arg = None if self.reordered else self._slice(value, scope, call)
        self._add(Sink(kind, self._line(call), self._code(call), arg=arg))
        if last == "sort":
            self._follow_reordered(call, statement, scope, hops)
        elif last == "top_k":
            self._follow_top_k_values(call, statement, scope, hops)
        return True

    def _follow_top_k_values(
        self, call: cst.Call, statement: cst.CSTNode, scope: Scope, hops: int
    ) -> None:
        """``top_k(x)`` gives (values, indices): the indices end the flow, the values go on
        (``.values``, ``[0]``, or the first name of ``values, indices = top_k(x)``)."""
        parent = parent_map(statement).get(id(call))
        if isinstance(parent, cst.Attribute) and parent.value is call:
            if parent.attr.value == "values":
                self._follow_reordered(parent, statement, scope, hops)
            elif parent.attr.value != "indices":
                raise _Escapes
            return
        if isinstance(parent, cst.Subscript) and parent.value is call:
            index = _literal_index(parent)
            if index == 0:
                self._follow_reordered(parent, statement, scope, hops)
            elif index != 1:
                raise _Escapes
            return
        if isinstance(parent, cst.Assign) and parent.value is call:
            values = _pair_target(parent)
            if values is None:
                raise _Escapes
            if values != "_":
                self.reordered += 1
                try:
                    self._follow_assigned(values, parent, scope, hops)
                finally:
                    self.reordered -= 1
            return
        raise _Escapes  # returned, passed on whole: the values may go anywhere

    def _follow_reordered(
        self, node: cst.CSTNode, statement: cst.CSTNode, scope: Scope, hops: int
    ) -> None:
        self.reordered += 1
        try:
            self._follow(node, statement, scope, hops)
        finally:
            self.reordered -= 1

    def _max_sink(
        self, call: cst.Call, value: cst.BaseExpression, statement: cst.CSTNode, scope: Scope,
        hops: int,
    ) -> bool:  # fmt: skip
        """``reduce_max(v)``: its result is followed as before; where that escapes, the maximum
        is a sink of its own: finite wherever the row has a finite entry (a -inf loses)."""
        saved, bound = list(self.sinks), dict(self.bound)
        try:
            self._follow(call, statement, scope, hops)
            return True
        except _Escapes:
            self.sinks, self.bound = saved, bound
        arg = None if self.reordered else self._slice(value, scope, call)
        self._add(Sink("max", self._line(call), self._code(call), arg=arg))
        return True

    # -- through a local name, into a function of the module ----------------------------------
    def _follow_name(self, assign: cst.CSTNode, scope: Scope, hops: int) -> None:
        """Every read of the assigned name in the statements after it (same block, until it is
        rebound) must end in a sink; a read inside a nested block, or none at all, escapes."""
        target = _single_name(assign)
        if target is None:
            raise _Escapes
        self._follow_assigned(target, assign, scope, hops)

    def _follow_assigned(self, target: str, assign: cst.CSTNode, scope: Scope, hops: int) -> None:
        fn = scope.node
        if hops >= MAX_HOPS or not isinstance(fn, cst.FunctionDef):
            raise _Escapes
        self._follow_reads(target, statements_after(fn.body, assign) or [], scope, hops)

    def _follow_call(self, call: cst.Call, value: cst.CSTNode, scope: Scope, hops: int) -> None:
        """``f(..., v, ...)`` with ``f`` a function of this module: the value goes on as its
        parameter, followed through the callee's body; the callee's parameters in a sink's
        slice stand for the caller's arguments."""
        name = call.func.value if isinstance(call.func, cst.Name) else None
        callee = self.ctx.info.functions.get(name or "")
        fn = callee.node if callee is not None else None
        if callee is None or not isinstance(fn, cst.FunctionDef) or hops >= MAX_HOPS:
            raise _Escapes  # an unknown function: whatever it does with the value is unseen
        if name in scope.bindings or name in scope.params:
            raise _Escapes  # a local name shadows the module's function
        pairs = _bind(call, fn)
        param = next((p for p, a in pairs if a is value), None)
        if param is None:
            raise _Escapes
        for p, a in pairs:
            self.bound[f"name:{p.name.value}:{id(p)}"] = self._slice(a, scope, call)
        body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
        self._follow_reads(param.name.value, list(body), callee, hops)

    def _follow_reads(
        self, target: str, following: list[cst.BaseStatement], scope: Scope, hops: int
    ) -> None:
        read = False
        for line in following:
            reads = reads_of(line, target)
            if reads and not isinstance(line, cst.SimpleStatementLine):
                raise _Escapes  # read under an if/for/with: not straight-line
            for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                for name in reads_of(small, target):
                    read = True
                    self._follow(name, small, scope, hops + 1)
            if isinstance(line, cst.SimpleStatementLine) and any(
                target in _bound_names(small) for small in line.body
            ):
                break  # rebound: later reads see another value
        if not read:
            raise _Escapes  # unread here: it may be read after the enclosing block

    # -- helpers ------------------------------------------------------------------------------
    def _slice(self, node: cst.BaseExpression, scope: Scope, call: cst.Call) -> dict[str, Any]:
        """The probe slicer's tree of ``node`` as seen at ``call``; one that does not trace
        cannot be evaluated, so the value escapes."""
        if self._orders is None:
            self._orders = self.ctx.fact(
                "slicing.uses.orders", lambda: {id(s.node): s.order for s in self.ctx.info.calls}
            )
        order = self._orders.get(id(call))
        if order is None:
            raise _Escapes
        self.slicer.budget()
        tree = self.slicer.tree(node, scope, order)
        if self.slicer.truncated or self.slicer.unsupported:
            raise _Escapes
        return self._substitute(tree)

    def _substitute(self, tree: Any) -> Any:
        """A callee's parameter input replaced by the caller's argument it receives."""
        if not self.bound:
            return tree
        names = {self.slicer._input_keys.get(key): t for key, t in self.bound.items()}
        return _replace_inputs(tree, {k: v for k, v in names.items() if k is not None})

    def _imported(self, func: cst.BaseExpression) -> str:
        """``generic.log_sub_exp`` with ``generic`` an import (any library, not only TF's):
        its dotted name; '' for a local function or anything else."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value not in self.ctx.ev.imports.aliases:
            return ""
        return dotted_name(func)

    def _add(self, sink: Sink) -> None:
        if len(self.sinks) >= MAX_SINKS:
            raise _Escapes
        self.sinks.append(sink)

    def _line(self, node: cst.CSTNode) -> int:
        positions = self.slicer.positions
        pos = positions.get(node)
        if pos is None and hasattr(positions, "resolve"):  # a sink in another top statement
            top = next((s.top for s in self.ctx.info.calls if s.node is node), None)
            positions.resolve([top] if top is not None else [])
            pos = positions.get(node)
        return pos.start.line if pos else 0

    def _code(self, node: cst.CSTNode) -> str:
        text = "\n".join(_without_comment(line) for line in self.ctx.code(node).splitlines())
        code = " ".join(text.split())
        return code if len(code) <= 80 else code[:77] + "..."


def _bind(call: cst.Call, fn: cst.FunctionDef) -> list[tuple[cst.Param, cst.BaseExpression]]:
    """(parameter, argument) of a call to a plain function; a star argument binds unseen."""
    params = list(fn.params.posonly_params) + list(fn.params.params)
    by_name = {p.name.value: p for p in params + list(fn.params.kwonly_params)}
    out = []
    for i, arg in enumerate(call.args):
        if arg.star:
            raise _Escapes
        if arg.keyword is not None:
            param = by_name.get(arg.keyword.value)
        else:
            param = params[i] if i < len(params) else None
        if param is None:
            raise _Escapes
        out.append((param, arg.value))
    return out


def _replace_inputs(tree: Any, by: dict[str, Any]) -> Any:
    if isinstance(tree, dict):
        if tree.get("k") == "input" and tree.get("name") in by:
            return by[tree["name"]]
        return {k: _replace_inputs(v, by) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_replace_inputs(v, by) for v in tree]
    return tree


def _input_names(tree: Any) -> set[str]:
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("k") == "input":
                names.add(str(node.get("name")))
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return names


def _logsumexp_operand(call: cst.Call, value: cst.CSTNode, op: str | None, dotted: str) -> bool:
    """``value`` is an operand a log-sum-exp handles exactly at -inf: the argument of a
    reduce_logsumexp/log_softmax/softmax/exp, either term of ``log_add_exp(x, y)``, or the
    subtracted term of ``log_sub_exp(x, y)`` (log(exp(x) - 0) = x)."""
    last = dotted.rsplit(".", 1)[-1]
    if op in LOGSUMEXP_OPS or last in (
        "reduce_logsumexp",
        "logsumexp",
        "reduce_weighted_logsumexp",
    ):
        return value is call_arg(call, 0, "x", "input_tensor", "logits", "logx")
    if last in ("log_add_exp", "logaddexp"):
        return value is call_arg(call, 0, "x", "x1") or value is call_arg(call, 1, "y", "x2")
    if last == "log_sub_exp":
        return value is call_arg(call, 1, "y")
    return False


def _shape_only(op: str | None, dotted: str) -> bool:
    """A call that reads only the shape of its argument (``tf.shape``, ``tf.zeros_like``)."""
    entry = registry.REGISTRY.get(op or "")
    if entry is not None and str(entry.trace).startswith("like("):
        return True
    return (op or dotted.rsplit(".", 1)[-1]) in SHAPE_CALLS and bool(op or dotted)


def _without_comment(line: str) -> str:
    """A source line without its trailing ``# comment`` (kept whole when a quote precedes it)."""
    at = line.find("#")
    return line if at < 0 or "'" in line[:at] or '"' in line[:at] else line[:at]


def _order_call(tf_name: str) -> bool:
    """A TF/Keras draw from logits, argmax/argmin/argsort, top_k or sort (by normalised name)."""
    if not tf_name.startswith(("tf.", "keras.")):
        return False
    last = tf_name.rsplit(".", 1)[-1]
    return tf_name in SAMPLING_CALLS or last in ORDER_INDEX_CALLS | REORDER_CALLS


def _keeps_entries(op: str | None) -> bool:
    """An op that passes every entry on unchanged (reshape, cast, squeeze, ...)."""
    return op in ENTRY_KEEPING


def _literal_index(subscript: cst.Subscript) -> int | None:
    """``r[0]`` -> 0; None for any other indexing."""
    if len(subscript.slice) != 1:
        return None
    part = subscript.slice[0].slice
    if isinstance(part, cst.Index) and isinstance(part.value, cst.Integer):
        return int(part.value.value)
    return None


def _pair_target(assign: cst.Assign) -> str | None:
    """The first name of ``a, b = ...`` (``_`` when discarded); None for any other target."""
    if len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
        return None
    first = target.elements[0].value
    return first.value if isinstance(first, cst.Name) else None


def _bound_names(statement: cst.CSTNode) -> set[str]:
    """Names an assignment statement binds (``a = ...``, ``a, b = ...``, ``a: T = ...``)."""
    single = _single_name(statement)
    if single is not None:
        return {single}
    if isinstance(statement, cst.Assign):
        out: set[str] = set()
        for target in statement.targets:
            node = target.target
            items = node.elements if isinstance(node, (cst.Tuple, cst.List)) else []
            out |= {e.value.value for e in items if isinstance(e.value, cst.Name)}
        return out
    return set()


def _single_name(statement: cst.CSTNode) -> str | None:
    """``name = value`` / ``name: T = value`` with one plain name target."""
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target: cst.BaseExpression = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign) and statement.value is not None:
        target = statement.target
    else:
        return None
    return target.value if isinstance(target, cst.Name) else None


def consumers(slicer: Slicer, ctx: Context, hit: Hit) -> dict[str, Any] | None:
    """The sinks of the flagged value, or None when it escapes (or the walk fails)."""
    try:
        return Consumers(slicer, ctx, hit).run()
    except (RecursionError, AttributeError, KeyError, TypeError, ValueError):
        return None
