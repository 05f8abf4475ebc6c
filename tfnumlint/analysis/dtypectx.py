"""Dtype context from real dtype positions only, and the project's float type.

float16 changes every threshold (exp overflows past 11.09, 1e-8 is 0), so the context must come
from code that really sets a dtype: a ``dtype=`` argument, the dtype of ``tf.cast``,
``x.astype(...)``, ``tf.Variable(..., dtype=...)``, or the mixed-precision policy
(``set_global_policy("mixed_float16")``, ``Policy(...)``), including a name bound to a dtype
(``dt = tf.float16; tf.cast(x, dt)``).  A dtype used as a dict key, in ``np.finfo(np.float16)``
or a local that happens to be called ``half`` says nothing about the dtype the code runs in.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

import libcst as cst

LOW_PRECISION = frozenset({"float16", "half", "bfloat16", "mixed_float16", "mixed_bfloat16"})
CONTEXT = LOW_PRECISION | {"float32"}
_DTYPE_KEYWORDS = frozenset({"dtype", "compute_dtype", "variable_dtype", "policy", "dtype_policy"})
# Calls whose N-th positional argument is a dtype or a policy name.
_POSITIONAL = {
    "cast": 1,
    "saturate_cast": 1,
    "astype": 0,
    "set_global_policy": 0,
    "set_policy": 0,
    "Policy": 0,
    "DTypePolicy": 0,
    "set_floatx": 0,
    "as_dtype": 0,
    "placeholder": 0,
    "zeros": 1,
    "ones": 1,
    "zeros_like": 1,
    "ones_like": 1,
    "constant": 1,
    "convert_to_tensor": 1,
    "TensorSpec": 1,
    "get_variable": 2,
    "random_normal": 3,
    "random_uniform": 3,
    "normal": 3,
    "uniform": 3,
    "range": 3,
    "Input": 3,
    "eye": 3,
}


def _callee(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _bound_word(name: str, scope) -> str | None:
    """``dt = tf.float16`` (the latest binding in the scope chain) -> ``float16``."""
    s = scope
    while s is not None:
        bindings = s.bindings.get(name)
        if bindings:
            value = bindings[-1].value
            return _literal_word(value) if value is not None else None
        s = s.parent
    return None


def _literal_word(value: cst.BaseExpression) -> str | None:
    if isinstance(value, cst.Attribute):
        return value.attr.value
    if isinstance(value, cst.SimpleString):
        return value.value.strip("'\"")
    return None


def dtype_word(value: cst.BaseExpression, scope) -> str | None:
    """The dtype an argument names, following one assignment for a plain name."""
    word = _literal_word(value)
    if word is None and isinstance(value, cst.Name):
        word = value.value if value.value in ("float16", "bfloat16") else None
        word = word or _bound_word(value.value, scope)
    return word


def low_precision_words(node: cst.Call, scope) -> set[str]:
    """Low-precision dtypes this call really sets (an empty set for a bare mention)."""
    return context_words(node, scope) & LOW_PRECISION


def context_words(node: cst.Call, scope) -> set[str]:
    """The dtypes this call really sets that decide a scope's context: the low-precision
    ones, and float32, which wins over a float64 project default (a local cast to float32
    computes in float32 whatever the project's float is)."""
    position = _POSITIONAL.get(_callee(node))
    words: set[str] = set()
    positional = 0
    for arg in node.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            at_dtype = arg.keyword.value in _DTYPE_KEYWORDS
        else:
            at_dtype = positional == position
            positional += 1
        if at_dtype:
            word = dtype_word(arg.value, scope)
            if word in CONTEXT:
                words.add(word)
    return words


# ---------------------------------------------------------------- the project's float type
#
# A library may compute in float64 throughout (a Gaussian-process library's
# ``default_float()``, Keras' ``set_floatx("float64")``): there ``1 + 2e-15`` keeps its
# epsilon.  Read from the project's own code, only where the float64 is written there: a
# ``set_floatx`` call, or a default-float helper whose return or whose module's float setting
# is a float64 literal.  Test files are left out (a test may switch the dtype for itself), and
# any disagreement (one call sets float32, another float64) leaves the default, float32.

FLOAT_WORDS = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                "float32": "float32", "single": "float32", "float64": "float64",
                "double": "float64"}  # fmt: skip
# A zero-argument call in a dtype position (`dtype=f()`, `tf.cast(x, f())`, `.astype(f())`):
# the syntax of a dtype helper's use, whatever the helper is called (issue 22).
_HELPER_CALL = r"(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\(\s*\)"
# Each form apart, led by its literal, which the regex engine finds with a fast scan (one
# pattern with a leading ``\b`` and an alternation tries every position: 0.8 s on TF's
# python/ops); the word boundary is checked on each match.
_DTYPE_USES = (
    (re.compile(r"dtype\s*=\s*" + _HELPER_CALL), True),
    (re.compile(r"cast\([^()]*?,\s*" + _HELPER_CALL), True),
    (re.compile(r"\.astype\(\s*" + _HELPER_CALL), False),
)
_WORD_CHAR = re.compile(r"\w")


def dtype_helpers(text: str) -> set[str]:
    """The names of zero-argument calls in a dtype position."""
    names = set()
    for pattern, bounded in _DTYPE_USES:
        for m in pattern.finditer(text):
            start = m.start()
            if bounded and start > 0 and _WORD_CHAR.match(text, start - 1):
                continue
            names.add(m.group(1))
    return names


def project_float(sources: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """(float type, where it was read) when the project's own code fixes it as float64, else
    None.  ``sources`` are (display path, text) pairs; a file that does not parse says
    nothing."""
    found: dict[str, str] = {}
    own = [(path, text) for path, text in sources if not _is_test_path(path)]
    helpers = {name for _, text in own for name in dtype_helpers(text)}
    for path, text in own:
        if "set_floatx" not in text and not any(f"def {h}(" in text for h in helpers):
            continue  # nothing worth parsing
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a file that does not parse (or nests too deep) says nothing
        for word, how in _float_settings(tree, helpers):
            found.setdefault(word, f"{path}: {how}")
    if set(found) != {"float64"}:
        return None
    return "float64", found["float64"]


def float_package(module: str, is_package: bool) -> str:
    """Whose float setting a module follows: its top-level package (``gpflow`` for
    ``gpflow.kernels.misc``), or "" for a loose script outside any package (the scripts of
    one run share one).  A run over several libraries keeps each library's own float type."""
    return module.split(".")[0] if is_package or "." in module else ""


def project_floats(
    sources: Iterable[tuple[str, str, str]],
) -> dict[str, tuple[str, str]]:
    """package (:func:`float_package`) -> (float type, where it was read), for each package
    whose own code fixes it as float64; ``sources`` are (display path, text, package)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for path, text, package in sources:
        groups.setdefault(package, []).append((path, text))
    found = {package: project_float(texts) for package, texts in groups.items()}
    return {package: f for package, f in found.items() if f is not None}


def _is_test_path(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def _float_settings(tree: ast.Module, helpers: set[str]) -> Iterator[tuple[str, str]]:
    """(dtype, how) for each place in a module that sets the project's float type: a
    ``set_floatx`` call, or a module-level function without parameters that the project calls
    in a dtype position (``helpers``) and that returns one float type."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node.func) == "set_floatx" and node.args:
            word = _ast_float_word(node.args[0])
            if word is not None:
                yield word, f"set_floatx({word!r})"
    for node in tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name in helpers
            and not node.args.args
            and not node.args.posonlyargs
        ):
            word = _helper_result(node, tree)
            if word is not None:
                yield word, f"{node.name}() is {word}"


def _helper_result(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> str | None:
    """What a default-float helper returns: a float literal it returns, else the one float
    literal its module's declarations hold (``FLOAT = Value("FLOAT", np.float64)``,
    ``_FLOATX = "float64"``); None when that is not one dtype."""
    returned = {
        _ast_float_word(n.value)
        for n in ast.walk(func)
        if isinstance(n, ast.Return) and n.value is not None
    }
    if returned and None not in returned:
        return returned.pop() if len(returned) == 1 else None
    settings: set[str | None] = set()
    for node in _declarations(tree.body):
        if node.value is not None:
            settings |= {
                _ast_float_word(n) for n in ast.walk(node.value) if isinstance(n, ast.expr)
            }
    settings -= {None}
    return settings.pop() if len(settings) == 1 else None


def _declarations(body: list[ast.stmt]) -> Iterator[ast.Assign | ast.AnnAssign]:
    """Module- and class-level assignments (a config's defaults), not those inside functions:
    ``FLOAT = _Value("PKG_FLOAT", np.float64)`` in a class of settings."""
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from _declarations(node.body)


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _ast_float_word(node: ast.expr) -> str | None:
    """``tf.float64``, ``np.float64``, ``"float64"``, ``float64`` -> ``float64``."""
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value
    else:
        return None
    return FLOAT_WORDS.get(name)
