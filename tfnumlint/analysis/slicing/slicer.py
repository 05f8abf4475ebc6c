"""The slicer: a finding's expression, read back through the program's source into a probe
(plain data the worker traces).  It follows names, attributes, subscripts and calls (helpers
inlined, the project index across modules) and cuts where it stops, at a parameter, an untraced
call, a layer or model output, a placeholder, or a sigmoid/softmax's logit, recording each cut
input's origin.  The entry points build expression, training and program probes; how a call is
read lives in ``calls.py``, the tables and small readers in ``tools.py``."""

from __future__ import annotations

from typing import Any

import libcst as cst

from ... import ops
from ..context import Context, Hit
from ..module import Binding, Scope, contains
from ..values import Val, literal_number
from .calls import SlicesCalls
from .constants import NUMERIC_CONSTANTS, HostConstants
from .reads import ReadsOfCuts
from .tools import (
    BINOPS,
    BOOLEAN_OPS,
    CMPOPS,
    DATA_CALLS,
    DATA_KINDS,
    DTYPE_WORDS,
    MAX_DEPTH,
    MAX_EXPANDED,
    MAX_NODES,
    MAX_SOURCE,
    Argument,
    Condition,
    Substitute,
    assumptions,
    attribute_chain,
    branch_map,
    const_node,
    excluded,
    input_names,
    jfloat,
    makes_weight,
    new_axes,
    scale_inputs,
    self_binding,
    statement_value,
    weight_attribute,
    with_element,
)
from .uses import consumers


class Slicer(ReadsOfCuts, SlicesCalls, HostConstants):
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
        # ... also those imported from another module of the project (the program slice)
        self.across_modules = False
        self.opens = None  # ... and its own calls and helper bodies (``calls.py``)
        self.scoped_bodies = None
        self.inlined = 0  # helper calls followed so far
        # bind a non-literal axis/depth/shape to a stand-in the probe notes (verification
        # only: a fix proof under an assumed axis would prove nothing)
        self.stand_ins = stand_ins
        self.cut_logits = cut_logits  # stop at a sigmoid/softmax input (proofs need it all)
        self.ctx = ctx
        self.positions = positions
        self.home = ctx  # the module the slice starts in; ``ctx`` is the one it is reading
        self.modules: set[str] = set()  # the other modules of the project it read
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
        # helpers being inlined: id of a parameter -> the argument it is called with
        self._args: dict[int, Argument] = {}
        self._frame = ""  # the inlined call the slice is in: its cut inputs are its own
        self._bodies: list[int] = []  # the helpers whose bodies are being sliced, innermost last
        self._callers: dict[int, tuple[Scope, int, str]] = {}  # methods inlined: their `self`

    # -- reaching definitions under Python branches ----------------------------------------
    def run_under(self, scope: Scope, statement: cst.CSTNode) -> None:
        """Slice as seen from ``statement``: definitions made only in a branch its own ``if``
        conditions exclude (the ``else`` of its ``if``, an ``if letter_box:`` when it runs under
        ``if not letter_box:``) do not reach it."""
        self.path = self._if_map(scope.node).get(id(statement), ())

    def _if_map(self, root: cst.CSTNode) -> dict[int, tuple[Condition, ...]]:
        # once per function (or module) body and file, whichever finding asks; the entry
        # keeps its node, so an id reused by another tree is not taken for it
        kept, found = self.ctx.fact(f"branch_map {id(root)}", lambda: (root, branch_map(root)))
        return found if kept is root else branch_map(root)

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
            if val.trained:  # a layer's or model's output, maybe passed by the callers
                self.inputs[name]["trained"] = True
            if val.batch_of is not None:  # a variance over the batch axis: what it reduces
                self.inputs[name]["batch_of"] = val.batch_of
            if val.prob and val.prob_by_use:  # a probability only by its use: never confirms
                self.inputs[name]["prob_by_use"] = True
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
            if weight_attribute(self.ctx, node, scope, order):
                return {"origin": "data"}  # `self.p = self.add_weight(...)`: a source
            if attribute_chain(node):
                return {"origin": "attr"}
            return {"origin": "call", "source": self._source(node)}
        if isinstance(node, cst.Subscript):
            base = self._base_origin(node.value, scope, order, depth)
            out = with_element({"origin": "subscript", "of": base["origin"]}, node.value, node)
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
        if callee in DATA_CALLS or makes_weight(self.ctx, node):
            return {"origin": "data"}
        if self.ctx.ev.value(func, scope, order).kind in ("layer", "model"):
            return {"origin": "model"}
        drawn = self._numpy_draw(node, scope, order)
        if drawn is not None:  # rng.integers(0, n_actions, 32): what the draw can give
            return {"origin": "random", "lo": jfloat(drawn[0]), "hi": jfloat(drawn[1])}
        return {"origin": "call", "source": self._source(node)}

    def _numpy_draw(self, node: cst.Call, scope: Scope, order: int) -> tuple[float, float] | None:
        """The range of a NumPy random draw (``np.random.rand(n)``, ``rng.integers(0, k, n)``
        of a ``default_rng`` or ``RandomState``, converted by ``astype``/``reshape``), read by
        the feeds' reader; None for any other call."""
        from ..feeds import FeedReader

        reader = FeedReader(self.ctx.ev)
        draw = node
        while (
            isinstance(draw.func, cst.Attribute)
            and draw.func.attr.value in ("astype", "reshape")
            and isinstance(draw.func.value, cst.Call)
        ):
            draw = draw.func.value
        if not isinstance(draw.func, cst.Attribute):
            return None
        if not reader.is_generator(draw.func.value, scope, order):
            return None
        return reader.range(node, scope, order)

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
            if found.index is None and not self._is_opaque(found.value, found.scope):
                return {"origin": "other"}  # computed by code the slice can follow
            if depth < 8:
                out = self.origin(found.value, found.scope, found.at, depth + 1)
                return with_element(out, found.value, found.index)  # `_, i = top_k(x)`
            return {"origin": "other"}
        return {"origin": "global"}

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
        folded = self._host_constant(node, 0, (scope, order))
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
            if node.attr.value in DTYPE_WORDS and ev.imports.resolve(node) is not None:
                return {
                    "k": "dtype",
                    "v": "float16" if node.attr.value == "half" else node.attr.value,
                }
            return self._attribute(node, scope, order, depth)
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            if isinstance(text, str) and text in DTYPE_WORDS:
                return {"k": "dtype", "v": text}
            return {"k": "str", "v": text if isinstance(text, str) else ""}
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, depth)
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in BINOPS:
            return self._where(
                node,
                {
                    "k": "bin",
                    "op": BINOPS[type(node.operator)],
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
            axes = new_axes(node)
            if axes is not None:
                out = self.tree(node.value, scope, order, depth + 1)
                for axis in axes:
                    out = {
                        "k": "call",
                        "op": "expand_dims",
                        "args": [out, const_node(axis)],
                        "kw": {},
                    }
                return out
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            comp = node.comparisons[0]
            if type(comp.operator) in CMPOPS:
                return {
                    "k": "cmp",
                    "op": CMPOPS[type(comp.operator)],
                    "l": self.tree(node.left, scope, order, depth + 1),
                    "r": self.tree(comp.comparator, scope, order, depth + 1),
                }
        if isinstance(node, (cst.Tuple, cst.List)):
            return {
                "k": "tuple",
                "items": [self.tree(e.value, scope, order, depth + 1) for e in node.elements],
            }
        if isinstance(node, cst.IfExp):  # `a if x is None else b` with x a helper's parameter
            return self._if_exp(node, scope, order, depth)
        return self._opaque(node, scope, order)

    def _opaque(self, node: cst.BaseExpression, scope: Scope, order: int) -> dict:
        code = self.ctx.code(node)
        # the same attribute read twice in one scope (`d.d_k`) is one value, one input
        key = f"attr:{' '.join(code.split())}:{id(scope)}" if attribute_chain(node) else None
        return self._input(
            code,
            self.ctx.ev.value(node, scope, order),
            key or f"node:{id(node)}",
            self._cut_origin(node, scope, order),
        )

    def _boolean(self, node: cst.BaseExpression) -> bool:
        """``~x`` is a logical not when x is a comparison or a boolean op (``~tf.equal(c, 0)``);
        on an integer it is a bitwise not, which no probe models."""
        if isinstance(node, cst.Comparison):
            return True
        if isinstance(node, cst.Call):
            op = self.op_of(node)
            return op in BOOLEAN_OPS
        return False

    def _name(self, node: cst.Name, scope: Scope, order: int, depth: int) -> dict:
        ev = self.ctx.ev
        found = self.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.value is not None and found.index is None:
            value = ev.value(found.value, found.scope, found.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            folded = self._host_constant(found.value)  # NEG_INF = float("-inf")
            if folded is not None:
                return {"k": "const", "v": jfloat(folded)}
            if self._is_opaque(found.value, found.scope):  # P = tf.placeholder(...): `P`
                return self._input(
                    node.value,
                    value,
                    f"name:{node.value}:{id(found)}",
                    self._cut_origin(found.value, found.scope, found.at),
                )
            return self._expand_once(found, node.value, depth)
        unpacked = self._unpacked(found, depth)  # `a, b = 64, 1 - p`, `a, b = self.m(x)`
        if unpacked is not None:
            return unpacked
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
            self._item_origin(found, self._base_origin(node, scope, order, 0)),
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

    def _attribute(self, node: cst.Attribute, scope: Scope, order: int, depth: int) -> dict:
        if (read := self._read_in_caller(node, scope, depth)) is not None:
            return read  # `self.x` in an inlined method: the caller's `self.x`
        ev = self.ctx.ev
        if isinstance(node.value, cst.Name):  # np.inf, math.pi: a number, not an input
            module = self.ctx.info.imports.aliases.get(node.value.value)
            number = NUMERIC_CONSTANTS.get((module or "", node.attr.value))
            if number is not None:
                return {"k": "const", "v": jfloat(number)}
        if weight_attribute(self.ctx, node, scope, order):
            return self._opaque(node, scope, order)  # `self.p`: a weight, by its own name
        binding = self_binding(node, scope, order)
        if binding is not None and binding.value is not None:
            value = ev.value(binding.value, binding.scope, binding.at)
            if value.const is not None:
                return {"k": "const", "v": jfloat(value.const)}
            if value.kind not in ("layer", "model"):
                return self.tree(binding.value, binding.scope, binding.at, depth + 1)
        return self._opaque(node, scope, order)


def slice_finding(
    ctx: Context, hit: Hit, code: str, positions, recipe: dict[str, Any]
) -> dict[str, Any] | None:
    """The probe for one finding, or None when there is nothing to probe.  ``recipe`` is the
    rule's recipe as the probe carries it (``Recipe.as_probe()``): the caller reads the rules."""
    site = hit.site
    pos = positions.get(hit.node)
    line = pos.start.line if pos else 0
    dtype = ctx.dtype(site)
    path = getattr(ctx, "path", "")
    if hit.probe_hint.get("kind") == "train":  # a training spec declared next to its rule
        return {**hit.probe_hint, "rule": code, "dtype": dtype, "path": path, "line": line}
    if recipe["check"] == "training":
        return train_probe(ctx, hit, code, dtype, line, recipe["control"])
    if not isinstance(hit.node, cst.BaseExpression) or recipe["check"] == "none":
        return None
    # a rule whose hazard is what computes the logits (a -inf mask) keeps it in the slice
    cut = not hit.probe_hint.get("keep_logits")
    slicer = Slicer(ctx, positions, stand_ins=True, cut_logits=cut)
    slicer.run_under(site.scope, site.statement)
    target = slicer.tree(hit.node, site.scope, site.order)
    if slicer.truncated and slicer.inlined:  # the helpers' bodies made it too large: without
        slicer = Slicer(ctx, positions, stand_ins=True, cut_logits=cut, inline=False)  # them
        slicer.run_under(site.scope, site.statement)
        target = slicer.tree(hit.node, site.scope, site.order)
    if target.get("k") == "input" and not slicer.unsupported:
        return None  # nothing numeric in the slice (a policy call, a compile argument)
    truncated, unsupported = slicer.truncated, slicer.unsupported
    loss = None
    value = statement_value(site.statement)
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
        "inputs": [i for i in slicer.inputs.values() if i["name"] in input_names(target, loss)],
        "eps": hit.probe_hint.get("eps"),
        "truncated": truncated,
        "recipe": recipe,
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


def train_probe(
    ctx: Context, hit: Hit, code: str, dtype: str, line: int, control: str
) -> dict[str, Any] | None:
    from ...optimizers import ADAPTIVE
    from ..epsilons import split_eps
    from ..optimizer_calls import learning_rate, optimizer_epsilon

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
        "control": control,
    }
