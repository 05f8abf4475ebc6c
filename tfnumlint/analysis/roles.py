"""What a parameter is, read from how its own function uses it (issue 22: names never decide).

A parameter with no producer and no caller in view says nothing by its value; its name said
too much (``p``, ``d_fake``, ``mask``).  What the function does with it is code, and it keeps
its meaning under any renaming:

- a **probability by use** is logged as one side of a Bernoulli log-likelihood
  (``log(1 - p)``, ``log1p(-p)``), or its log is negated (``-log(p)``,
  ``-reduce_mean(y * log(p))``: a negative log-likelihood, a surprisal);
- **weights by use** weight a summand and their own sum divides it (``reduce_sum(x * w) /
  reduce_sum(w)``, ``w / reduce_sum(w)``): the weighted mean is 0 / 0 once every weight is 0;
- an **elementwise gate** is a parameter defaulting to ``None`` that is only ever a factor
  (``s * mask``, ``s *= mask[0]``): the product stays in its other factor's range;
- an **epsilon** is only ever added where 0 is the danger (``log(x + eps)``, ``x / (n + eps)``,
  ``maximum(x, eps)``): positive by intent;
- a **target by use** weighs a negated log (``-reduce_mean(y * log(p))``): the label or weight
  of a negative log-likelihood, never negative (a negative one would reward the error).

Each is weak evidence, like the names were: a finding that needs a probability by use is
conditional on it, never confirmed (``Val.prob_by_use``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from ..ops import ENTRY_KEEPING, LINEAR_REDUCTIONS, ops_with
from .module import LEAF_TYPES, ModuleInfo, Scope
from .names import children

OpOf = Callable[[cst.Call], "str | None"]
Up = tuple[cst.CSTNode, "Up"] | None  # a node's ancestors, innermost first, as a linked chain


@dataclass(frozen=True)
class Roles:
    probability: frozenset[str]  # parameters used as probabilities
    weights: frozenset[str]  # parameters used as the weights of a weighted mean
    factors: frozenset[str] = frozenset()  # used only as a factor of products (and `is None`)
    guards: frozenset[str] = frozenset()  # used only to keep a value from 0 (`x + eps`)
    targets: frozenset[str] = frozenset()  # weigh a negated log: `-mean(y * log(p))`, y >= 0


NONE = Roles(frozenset(), frozenset())


def name_roles(scope: cst.FunctionDef | cst.Lambda | cst.Module, op: OpOf) -> Roles:
    """The roles of the names ``scope`` uses (its parameters, and locals bound to what the
    evaluator cannot see into), from its body; nested functions included: a closure uses the
    name the same way."""
    walk = _Walk(op)
    walk.visit(scope if isinstance(scope, cst.Module) else scope.body)
    for node in walk.denominators:
        walk.summed(node)
    weights = walk.summed_in_denominator & walk.multiplied
    factors = {n for n, k in walk.factor_uses.items() if k + walk.none_tests[n] == walk.uses[n]}
    guards = {n for n, k in walk.guard_uses.items() if k == walk.uses[n]}
    return Roles(
        frozenset(walk.probability),
        frozenset(weights),
        frozenset(factors),
        frozenset(guards),
        frozenset(walk.targets),
    )


def scopes_with_roles(info: ModuleInfo, op: OpOf) -> set[int]:
    """The ids of the scopes whose bodies (nested scopes included) hold an operation some
    role reads: a product, a quotient, or a call of an op in :data:`_READ_OPS`.  Every other
    scope's roles are empty, known without walking its body (most functions of a library)."""
    marked: set[int] = set()

    def mark(scope: Scope | None) -> None:
        while scope is not None and id(scope) not in marked:
            marked.add(id(scope))
            scope = scope.parent

    for site in info.binops:
        if type(site.node.operator) in (cst.Multiply, cst.Divide):
            mark(site.scope)
    for site in info.calls:
        if id(site.scope) not in marked and op(site.node) in _READ_OPS:
            mark(site.scope)
    for scope in info.scaled:
        mark(scope)
    return marked


_OPERATOR_BASES = frozenset(
    {cst.BaseBinaryOp, cst.BaseUnaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseAugOp}
)

# Nodes that hold only whitespace, comments and punctuation: nothing a role reads is below them.
_TRIVIA = frozenset(
    {
        *(
            tp
            for tp in vars(cst).values()
            if isinstance(tp, type)
            # the MRO, not issubclass: the ABC subclass checks over all of libcst's names cost
            # 25 ms of start-up
            and not _OPERATOR_BASES.isdisjoint(tp.__mro__)
        ),
        cst.Comma,
        cst.Dot,
        cst.Colon,
        cst.Semicolon,
        cst.AssignEqual,
        cst.LeftParen,
        cst.RightParen,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.ParenthesizedWhitespace,
    }
)


# ops whose first argument must stay off 0 (log, sqrt, rsqrt): an addend there is a guard
_GUARDED_ARGUMENT = ops_with(
    lambda op: (
        op.danger is not None
        and op.danger.arg == 0
        and op.danger.test == "reaches"
        and op.danger.bound == 0.0
    )
)


# every op a role reads (``_Walk._call``)
_READ_OPS = frozenset(
    {*_GUARDED_ARGUMENT, "maximum", "clip_by_value", "log", "log1p", "multiply", "divide"}
)


class _Walk:
    def __init__(self, op: OpOf) -> None:
        self.op = op
        self.probability: set[str] = set()
        self.targets: set[str] = set()
        self.summed_in_denominator: set[str] = set()
        self.multiplied: set[str] = set()
        self.denominators: list[cst.BaseExpression] = []
        self.assigned: dict[str, list[cst.BaseExpression]] = {}  # `count = reduce_sum(w)`
        self.uses: Counter[str] = Counter()
        self.factor_uses: Counter[str] = Counter()  # `x * m`, `x *= m[0]`, `tf.multiply(x, m)`
        self.none_tests: Counter[str] = Counter()  # `m is None`, `m is not None`
        self.guard_uses: Counter[str] = Counter()  # `log(x + eps)`, `maximum(x, eps)`

    def visit(self, root: cst.CSTNode) -> None:
        """Every node under ``root`` in the order of a recursive pre-order walk (an
        assignment is seen before what follows it), each with the chain of its ancestors."""
        stack: list[tuple[cst.CSTNode, Up]] = [(root, None)]
        while stack:
            node, up = stack.pop()
            tp = type(node)
            if isinstance(node, cst.Name):
                self.uses[node.value] += 1
                continue
            if tp in LEAF_TYPES or tp in _TRIVIA:
                continue  # no name, call or operation below
            if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.MultiplyAssign):
                self._factor(node.value)
            elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
                test = node.comparisons[0]
                if (
                    isinstance(node.left, cst.Name)
                    and isinstance(test.operator, (cst.Is, cst.IsNot))
                    and isinstance(test.comparator, cst.Name)
                    and test.comparator.value == "None"
                ):
                    self.none_tests[node.left.value] += 1
            elif isinstance(node, cst.Call):
                self._call(node, up)
            elif isinstance(node, cst.BinaryOperation):
                self._binop(node)
            elif isinstance(node, cst.Assign) and isinstance(
                target := node.targets[0].target, cst.Name
            ):
                self.assigned.setdefault(target.value, []).append(node.value)
            below = (node, up)
            stack.extend((child, below) for child in reversed(children(node)))

    def _name(self, node: cst.BaseExpression | None) -> str | None:
        return node.value if isinstance(node, cst.Name) else None

    def _call(self, call: cst.Call, up: Up) -> None:
        op = self.op(call)
        first = call.args[0].value if call.args else None
        if op in _GUARDED_ARGUMENT and first is not None:
            self._guard_terms(first)
        elif op == "maximum" and len(call.args) == 2:
            first_arg, second = call.args[0].value, call.args[1].value
            for name, other in ((first_arg, second), (second, first_arg)):
                if isinstance(name, cst.Name) and self._computed(other):
                    self.guard_uses[name.value] += 1
        elif (
            op == "clip_by_value"
            and len(call.args) >= 2
            and isinstance(floor := call.args[1].value, cst.Name)
        ):
            self.guard_uses[floor.value] += 1
        if op == "log":
            logged = _without_epsilon(first)
            if _negated(up):
                if (p := self._name(logged)) is not None:
                    self.probability.add(p)
                if (y := self._name(_other_factor(call, up))) is not None:
                    self.targets.add(y)  # the label of a negative log-likelihood
            bound = self.assigned.get(first.value, []) if isinstance(first, cst.Name) else []
            for value in (first, *bound):  # log(1 - p), or q = 1 - p then log(q)
                if (p := _complemented(value)) is not None:
                    self.probability.add(p)
        elif op == "log1p" and isinstance(first, cst.UnaryOperation):
            if isinstance(first.operator, cst.Minus) and (p := self._name(first.expression)):
                self.probability.add(p)
        elif op == "multiply":
            self.multiplied |= {p for a in call.args[:2] if (p := self._name(a.value))}
            for a in call.args[:2]:
                self._factor(a.value)
        elif op == "divide" and len(call.args) >= 2:
            self.denominators.append(call.args[1].value)
            self._guard_terms(call.args[1].value)

    def _binop(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Multiply):
            self.multiplied |= {p for side in (node.left, node.right) if (p := self._name(side))}
            self._factor(node.left)
            self._factor(node.right)
        elif isinstance(node.operator, cst.Divide):
            self.denominators.append(node.right)
            self._guard_terms(node.right)

    def _guard_terms(self, node: cst.BaseExpression) -> None:
        """The names added to something else where 0 is the danger (a log's or a root's
        argument, a divisor): ``x + eps`` keeps ``x`` from 0."""
        terms = _additive(node, 1)
        if len(terms) < 2:
            return
        for i, (term, sign) in enumerate(terms):
            others = terms[:i] + terms[i + 1 :]
            if (
                sign > 0
                and isinstance(term, cst.Name)
                and any(self._computed(t) for t, _ in others)
            ):
                self.guard_uses[term.value] += 1

    def _computed(self, node: cst.BaseExpression) -> bool:
        """A tensor the scope computes (a call on arguments, an expression, a name it
        assigns): what an added name guards.  Beside a constant (``s + 1e-7``,
        ``y + K.epsilon()``, ``x + self.eps``) the name is the guarded value; beside another
        bare parameter (``p + eps``) which is which is not for use to say."""
        if isinstance(node, cst.UnaryOperation):
            return self._computed(node.expression)
        if isinstance(node, (cst.Integer, cst.Float, cst.Attribute)):
            return False
        if isinstance(node, cst.Call):
            return bool(node.args)  # `K.epsilon()`: a setting, not a tensor
        if isinstance(node, cst.Name):
            return node.value in self.assigned
        return True

    def _factor(self, node: cst.BaseExpression) -> None:
        """A name used as a factor, itself, an element of it or its cast (``m``, ``m[0]``,
        ``tf.cast(m, x.dtype)``)."""
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and node.args and self.op(node) in ENTRY_KEEPING:
            node = node.args[0].value
        if isinstance(node, cst.Name):
            self.factor_uses[node.value] += 1

    def summed(self, node: cst.BaseExpression, hops: int = 3) -> None:
        """Record ``w`` of a denominator ``reduce_sum(w)``, through ``+ eps`` and through the
        names it is assigned to (``count = reduce_sum(w)``, then ``total / count``)."""
        while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            node = node.left  # sum(w) + eps still divides by the weights' sum
        if isinstance(node, cst.Name) and hops > 0:
            for value in self.assigned.get(node.value, ()):
                self.summed(value, hops - 1)
            return
        if not (isinstance(node, cst.Call) and self.op(node) in LINEAR_REDUCTIONS and node.args):
            return
        if (p := self._name(node.args[0].value)) is not None:
            self.summed_in_denominator.add(p)


def _complemented(node: cst.BaseExpression | None) -> str | None:
    """``p`` of ``1 - p``, whatever else is added (``1. - p + eps``, ``eps + 1 - p``)."""
    terms = _additive(node, 1) if node is not None else []
    ones = [t for t, sign in terms if sign > 0 and _is_one(t)]
    taken = [t for t, sign in terms if sign < 0]
    if not ones or len(taken) != 1 or not isinstance(taken[0], cst.Name):
        return None
    return taken[0].value


def _additive(node: cst.BaseExpression, sign: int) -> list[tuple[cst.BaseExpression, int]]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        right = -sign if isinstance(node.operator, cst.Subtract) else sign
        return _additive(node.left, sign) + _additive(node.right, right)
    return [(node, sign)]


def _is_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.value) == 1.0


def _without_epsilon(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``p`` of ``p + eps`` (the guard does not change what ``p`` is)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return node.left
    return node


def _other_factor(node: cst.CSTNode, up: Up) -> cst.BaseExpression | None:
    """``y`` of ``y * node`` or ``node * y`` (``up``: the node's ancestors, innermost first)."""
    if up is None:
        return None
    parent = up[0]
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
        return parent.left if parent.right is node else parent.right
    return None


def _negated(up: Up) -> bool:
    """Between the log and its statement, a negation: ``-log(p)``, ``-mean(y * log(p))``
    (a negative log-likelihood, the surprisal of ``p``).  ``up``: the log's ancestors,
    innermost first."""
    while up is not None:
        node, up = up
        if isinstance(node, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            return False
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return True
    return False
