"""Render rewrite IR as source, in the file's own spelling (its ``tf`` alias or Keras backend).

The text is parsed back into libcst nodes, so a rendering that is not an expression is caught
here rather than written to a file.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops as op_registry
from ..analysis.context import Context
from .ir import IR, Bin, Call, Keep, Neg, Num, Plan, Reuse, Src


def api(op: str) -> tuple[str, str | None]:
    """How a rewrite writes a canonical op: (path under the tensorflow module, Keras-backend
    name or None), from the op registry's ``render``."""
    entry = op_registry.REGISTRY.get(op)
    if entry is None or entry.render is None:
        raise KeyError(f"the op registry has no rendering for {op!r}")
    return entry.render


# node types that never need parentheses as an operand
_ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
)


@dataclass
class Namer:
    """How a file spells TensorFlow, and the import to add when it has none."""

    prefix: str  # the TensorFlow alias to write (tf, tensorflow, ...)
    import_line: str | None  # the import to add when the file has none
    backend: str | None  # a keras.backend alias, used when it offers every op of a fix


def namer_for(ctx: Context) -> Namer:
    """The file's own TensorFlow alias; else its Keras backend, or a new ``tf`` import."""
    aliases = ctx.info.imports.aliases
    for wanted in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
        locals_ = sorted(
            (a for a, d in aliases.items() if d == wanted), key=lambda a: (a != "tf", a)
        )
        if locals_:
            return Namer(locals_[0], None, None)
    backend = next(
        (a for a, d in aliases.items() if d in ("tensorflow.keras.backend", "keras.backend")), None
    )
    taken = set(aliases) | set(ctx.info.root.bindings) | set(ctx.info.root.params)
    if "tf" not in taken:
        return Namer("tf", "import tensorflow as tf", backend)
    return Namer("tensorflow", "import tensorflow", backend)


class Renderer:
    """Render IR to source text, in the file's spelling (``tf.`` alias or Keras backend)."""

    def __init__(
        self,
        module: cst.Module,
        prefix: str,
        backend: str | None = None,
        bound: dict[int, str] | None = None,
    ) -> None:
        self.module = module
        self.prefix = prefix  # e.g. "tf"
        self.backend = backend  # e.g. "K" when every op of a plan exists in keras.backend
        self.bound = bound or {}  # id(original operand) -> the name it was bound to (bind.py)

    def text(self, ir: IR, operand: bool = False) -> str:
        if isinstance(ir, Src) and id(ir.node) in self.bound:
            return self.bound[id(ir.node)]
        if isinstance(ir, Src):
            code = self.module.code_for_node(ir.node).strip()
            if operand and not _atomic(ir.node):
                return f"({code})"
            return code
        if isinstance(ir, Num):
            return ir.text if not (operand and ir.text.startswith("-")) else f"({ir.text})"
        if isinstance(ir, Neg):
            return f"-{self.text(ir.x, operand=True)}"
        if isinstance(ir, Bin):
            left = self.text(ir.left, operand=True)
            right = self.text(ir.right, operand=True)
            out = f"{left} {ir.op} {right}"
            return f"({out})" if operand else out
        if isinstance(ir, Call):
            return self._call(ir)
        if isinstance(ir, Keep):
            return self.module.code_for_node(self.keep_node(ir)).strip()
        if isinstance(ir, Reuse):
            args = list(ir.node.args)
            args[0] = args[0].with_changes(value=cst.parse_expression(self.text(ir.arg)))
            return self.module.code_for_node(
                ir.node.with_changes(args=args, lpar=[], rpar=[])
            ).strip()
        raise TypeError(f"cannot render {ir!r}")

    def _call(self, ir: Call) -> str:
        path, kname = api(ir.op)
        if self.backend and kname:
            callee = f"{self.backend}.{kname}"
        else:
            callee = f"{self.prefix}.{path}"
        parts = [self.text(a) for a in ir.args]
        parts += [f"{k}={self.text(v)}" for k, v in ir.kw]
        return f"{callee}({', '.join(parts)})"

    def keep_node(self, ir: Keep) -> cst.Call:
        """The original call with ``ir.set_kw`` set: replaced in place, or appended."""
        call = ir.node
        args = list(call.args)
        done = set()
        for i, a in enumerate(args):
            if a.keyword is not None and a.keyword.value in ir.set_kw:
                value = cst.parse_expression(self.text(ir.set_kw[a.keyword.value]))
                args[i] = a.with_changes(value=value)
                done.add(a.keyword.value)
        for name, v in ir.set_kw.items():
            if name in done:
                continue
            value = cst.parse_expression(self.text(v))
            new = cst.Arg(
                value=value,
                keyword=cst.Name(name),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            if args:
                last = args[-1]
                comma = last.comma
                args[-1] = last.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
                if isinstance(comma, cst.Comma):
                    new = new.with_changes(comma=comma)  # keep a trailing comma (and newline)
            args.append(new)
        return call.with_changes(args=args)


def _atomic(node: cst.CSTNode) -> bool:
    if isinstance(node, _ATOMIC):
        return True
    return bool(getattr(node, "lpar", None))


def render_plan(
    plan: Plan, module: cst.Module, namer: Namer, bound: dict[int, str] | None = None
) -> dict[int, cst.CSTNode] | None:
    """The replacement node of each edit, keyed by the id of the node it replaces; None when
    one does not render.  Sets ``plan.uses_import`` when the file's import must be added.
    ``bound``: operands written as the name they were bound to (:mod:`.bind`)."""
    ops = plan.ops
    backend = namer.backend if namer.import_line and all(api(o)[1] for o in ops) else None
    renderer = Renderer(module, namer.prefix, backend, bound)
    out: dict[int, cst.CSTNode] = {}
    for e in plan.edits:
        try:
            if isinstance(e.new, Keep):
                out[id(e.node)] = renderer.keep_node(e.new)
            else:
                out[id(e.node)] = cst.parse_expression(renderer.text(e.new))
        except (cst.ParserSyntaxError, TypeError, KeyError):
            return None
    plan.uses_import = backend is None and bool(ops) and namer.import_line is not None
    return out
