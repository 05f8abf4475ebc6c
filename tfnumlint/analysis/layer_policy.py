"""The dtype a project's Keras layer computes in: the global mixed-precision policy, or the
``dtype`` its instances are built with.

Keras casts a layer's floating inputs to the layer's compute dtype before its ``call`` runs.
Under ``set_global_policy("mixed_float16")`` (any spelling: ``tf.keras.mixed_precision``, the
``experimental.set_policy`` of TF 2.1-2.3, ``keras.config.set_dtype_policy``, a ``Policy``
object passed to it) a layer built without a ``dtype`` computes in float16, while one built
with ``dtype="float32"`` (``tf.float32``, ``Policy("float32")``) computes in float32 whatever
the policy.  So the policy decides the dtype of a layer's code only through the instances the
program builds: a class whose every instance is float32 is float32 code, one with a float16
instance (or none in view, under the policy) is float16 code.  Read from API calls and keyword
arguments only; the class's and the instances' names never count.

A value cast inside the code (``tf.cast(x, tf.float32)``) computes in the dtype of the cast:
:func:`operand_dtype` follows a value back to such a cast.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .dtypectx import FLOAT_WORDS, dtype_word
from .module import ClassInfo, ModuleInfo, Scope, Site, call_arg
from .names import ImportMap

# a policy's name -> the dtype a layer under it computes in
_POLICY_COMPUTE = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16", **FLOAT_WORDS}
PRECISION = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}
# the scope markers (dtypectx) a mixed-precision policy leaves, which the layer's own dtype
# replaces in its class
_POLICY_MARKERS = frozenset({"mixed_float16", "mixed_bfloat16"})
_MARKER_DTYPE = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                 "float32": "float32"}  # fmt: skip
# Keras classes a layer subclass derives from (resolved, normalised paths)
# Keras classes a layer subclass derives from: the last part of a resolved, normalised
# ``keras.`` path (``keras.layers.Layer``, ``keras.Model``), besides every ``keras.layers`` class
_LAYER_BASES = frozenset({"Layer", "Model", "Sequential"})
_POLICY_CLASSES = frozenset(
    {"keras.mixed_precision.Policy", "keras.mixed_precision.DTypePolicy", "keras.DTypePolicy",
     "keras.mixed_precision.experimental.Policy", "keras.dtype_policies.DTypePolicy"}
)  # fmt: skip
_MAX_DEPTH = 8


@dataclass(frozen=True)
class LayerDtype:
    """The dtype a layer class's code computes in, and why (for a message)."""

    dtype: str
    why: str


def lowest(dtypes) -> str | None:
    """The lowest precision among dtype names (None for none)."""
    known = [d for d in dtypes if d in PRECISION]
    return min(known, key=PRECISION.__getitem__) if known else None


def policy_dtype(node: cst.BaseExpression | None, scope: Scope, imports: ImportMap,
                 depth: int = 0) -> str | None:  # fmt: skip
    """The compute dtype a dtype or policy argument names: ``"mixed_float16"``,
    ``tf.float32``, ``Policy("mixed_bfloat16")``, a name bound to one of them."""
    if node is None or depth > _MAX_DEPTH:
        return None
    if isinstance(node, cst.Call):
        if imports.resolve(node.func) not in _POLICY_CLASSES:
            return None
        return policy_dtype(call_arg(node, 0, "name"), scope, imports, depth + 1)
    if isinstance(node, cst.Name):
        bindings = scope.bindings_of(node.value)
        if bindings and bindings[-1].value is not None and bindings[-1].index is None:
            b = bindings[-1]
            return policy_dtype(b.value, b.scope, imports, depth + 1)
    word = dtype_word(node, scope)
    return _POLICY_COMPUTE.get(word) if word is not None else None


def global_policy(info: ModuleInfo) -> tuple[str, str, Site] | None:
    """(compute dtype, policy name, call site) of the module's global mixed-precision policy:
    the lowest precision any ``set_global_policy`` call of the module sets (a layer may be
    built under any of them); None when no call sets a policy the code names."""
    found: list[tuple[str, str, Site]] = []
    for site in info.calls:
        if info.imports.op(site.node.func) != "set_policy":
            continue
        arg = call_arg(site.node, 0, "policy")
        dtype = policy_dtype(arg, site.scope, info.imports)
        if dtype is None:
            continue
        name = "mixed_" + dtype if dtype in ("float16", "bfloat16") else dtype
        found.append((dtype, name, site))
    if not found:
        return None
    return min(found, key=lambda f: PRECISION[f[0]])


def layer_class(cls: ClassInfo, info: ModuleInfo, seen: set[int] | None = None) -> bool:
    """A subclass of a Keras layer or model, through the module's own classes."""
    seen = seen if seen is not None else set()
    if id(cls) in seen:
        return False
    seen.add(id(cls))
    for resolved, base in zip(cls.bases, cls.node.bases, strict=False):
        if resolved.startswith("keras.") and (
            resolved.startswith("keras.layers.") or resolved.rsplit(".", 1)[-1] in _LAYER_BASES
        ):
            return True
        local = info.classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
        if local is not None and layer_class(local, info, seen):
            return True
    return False


def _family(name: str, info: ModuleInfo) -> set[str]:
    """The module class ``name`` and the module classes derived from it (their instances run
    its methods)."""
    family = {name}
    grew = True
    while grew:
        grew = False
        for other, cls in info.classes.items():
            if other in family:
                continue
            if any(
                isinstance(b.value, cst.Name) and b.value.value in family for b in cls.node.bases
            ):
                family.add(other)
                grew = True
    return family


def instances(name: str, info: ModuleInfo) -> list[Site]:
    """The calls that build an instance of module class ``name`` or of a module subclass."""
    family = _family(name, info)
    out = []
    for site in info.calls:
        func = site.node.func
        if not (isinstance(func, cst.Name) and func.value in family):
            continue
        bindings = site.scope.bindings_of(func.value)
        if bindings and all(b.value is None for b in bindings):  # the class statement's own
            out.append(site)
    return out


def _init_dtype(cls: ClassInfo, info: ModuleInfo) -> tuple[bool, str | None]:
    """(given, dtype) of ``super().__init__(dtype=...)`` in the class's ``__init__``."""
    init = cls.method_scopes.get("__init__")
    if init is None:
        return False, None
    for site in info.calls:
        func = site.node.func
        if site.scope is not init or not isinstance(func, cst.Attribute):
            continue
        if func.attr.value != "__init__" or not isinstance(func.value, cst.Call):
            continue
        arg = call_arg(site.node, 99, "dtype")
        if arg is not None:
            return True, policy_dtype(arg, site.scope, info.imports)
    return False, None


def _instance_dtype(site: Site, info: ModuleInfo, policy: str | None) -> tuple[str | None, str]:
    """(the compute dtype of the instance ``site`` builds, how it is set): the dtype it is
    built with, else the one its class's ``__init__`` passes on, else the policy's.  (None,
    "unknown") for a dtype the code does not name; (None, "") for none at all."""
    call = site.node
    line = info.module.code_for_node(call).split("(", 1)[0]
    arg = call_arg(call, 99, "dtype")
    if arg is not None:
        dtype = policy_dtype(arg, site.scope, info.imports)
        return dtype, f"`{line}(dtype=...)`" if dtype else "unknown"
    if any(a.star == "**" for a in call.args):
        return None, "unknown"
    assert isinstance(call.func, cst.Name)
    cls = info.classes.get(call.func.value)
    given, dtype = _init_dtype(cls, info) if cls is not None else (False, None)
    if given:
        return dtype, f"`{line}.__init__`'s dtype" if dtype else "unknown"
    return policy, "the policy" if policy else ""


def layer_dtype(cls: ClassInfo, info: ModuleInfo) -> LayerDtype | None:
    """The dtype the code of a Keras layer class computes in, when a mixed-precision policy or
    an instance's ``dtype`` decides it; None for a class that is not a Keras layer, or when
    neither a policy nor an instance sets its dtype (or one instance's dtype is not known)."""
    if not layer_class(cls, info):
        return None
    policy = global_policy(info)
    policy_compute = policy[0] if policy is not None else None
    name = cls.node.name.value
    built = instances(name, info)
    if not built:
        if policy is None:
            return None
        return LayerDtype(policy[0], _policy_why(policy, info, name, "no instance in view"))
    dtypes: list[str] = []
    hows: dict[str, str] = {}
    for site in built:
        dtype, how = _instance_dtype(site, info, policy_compute)
        if dtype is None:
            if how == "unknown":  # a dtype the code does not name
                return None
            continue  # no policy, no dtype: the project's float
        dtypes.append(dtype)
        hows.setdefault(dtype, how)
    low = lowest(dtypes)
    if low is None or (policy is None and low not in ("float16", "bfloat16")):
        return None
    if hows[low] == "the policy" and policy is not None:
        return LayerDtype(
            low, _policy_why(policy, info, name, "an instance is built without dtype")
        )
    return LayerDtype(low, f"{hows[low]} makes `{name}`'s call compute in {low}")


def _policy_why(policy: tuple[str, str, Site], info: ModuleInfo, name: str, which: str) -> str:
    dtype, word, site = policy
    line = _line(info, site.node)
    where = f" on line {line}" if line else ""
    return f"the {word} policy set{where} makes `{name}`'s call compute in {dtype} ({which})"


def _line(info: ModuleInfo, node: cst.CSTNode) -> int:
    """The 1-based line a node starts on, from the module's text (no position provider)."""
    code = info.module.code
    text = info.module.code_for_node(node)
    at = code.find(text)
    return code.count("\n", 0, at) + 1 if at >= 0 else 0


def scope_class(scope: Scope) -> ClassInfo | None:
    """The module class whose method (or a function nested in one) ``scope`` is."""
    s: Scope | None = scope
    while s is not None:
        if s.kind == "class":
            return s.cls if s.parent is not None and s.parent.kind == "module" else None
        s = s.parent
    return None


def class_scope_dtype(scope: Scope, info: ModuleInfo, layer: LayerDtype) -> str:
    """The dtype the code of ``scope`` (in a layer class) computes in: the layer's own dtype,
    lowered by a dtype the code itself sets (a cast to float16), never by the policy's markers
    (the layer's dtype already says what the policy does to it)."""
    markers: set[str] = set()
    s: Scope | None = scope
    while s is not None:
        markers |= s.dtype_markers
        s = s.parent
    own = {_MARKER_DTYPE[m] for m in markers - _POLICY_MARKERS if m in _MARKER_DTYPE}
    return lowest(own | {layer.dtype}) or layer.dtype


# ---------------------------------------------------------------- a value's own cast

_KEEPS_DTYPE_DEPTH = 12


def operand_dtype(node: cst.BaseExpression, scope: Scope, order: int, imports: ImportMap,
                  depth: int = 0) -> str | None:  # fmt: skip
    """The dtype a value was cast to in its own code: ``tf.cast(x, tf.float32)``, or a name
    bound to such a value, or an op or arithmetic of one (TF ops keep their input's dtype, and
    both operands of a float op share one).  None when no cast is in view: the value computes
    in its context's dtype."""
    if depth > _KEEPS_DTYPE_DEPTH:
        return None
    if isinstance(node, cst.Name):
        bindings = [b for b in scope.bindings.get(node.value, ()) if b.visible <= order]
        value = bindings[-1].value if bindings and bindings[-1].index is None else None
        if value is None:
            return None
        b = bindings[-1]
        return operand_dtype(value, b.scope, b.at, imports, depth + 1)
    if isinstance(node, cst.BinaryOperation):
        sides = (
            operand_dtype(s, scope, order, imports, depth + 1) for s in (node.left, node.right)
        )
        return next((d for d in sides if d is not None), None)
    if isinstance(node, cst.UnaryOperation):
        return operand_dtype(node.expression, scope, order, imports, depth + 1)
    if isinstance(node, cst.Call):
        op = imports.op(node.func)
        if op is None:
            return None
        if op in ("cast", "saturate_cast"):
            word = dtype_word(call_arg(node, 1, "dtype") or node.func, scope)
            return FLOAT_WORDS.get(word or "")
        given = call_arg(node, 99, "dtype")
        if given is not None:
            return FLOAT_WORDS.get(dtype_word(given, scope) or "")
        first = call_arg(node, 0, "x", "input", "input_tensor", "tensor", "a")
        return operand_dtype(first, scope, order, imports, depth + 1) if first is not None else None
    return None
