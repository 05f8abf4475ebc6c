"""Module names of the linted tree and their import tables: which project module a name comes
from (relative imports resolved, third-party roots left out), and the summary of a file that
only re-exports names (an ``__init__`` without TensorFlow).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import libcst as cst

from .names import dotted_name, imported_names
from .project_model import (
    ModuleSummary,
)

# -- module names and imports ---------------------------------------------------------------


def module_name(
    path: Path | str, packages: dict[str, tuple[str, ...]] | None = None
) -> tuple[str, bool]:
    """The dotted module name of a file, from the packages (``__init__.py``) around it, and
    whether it is a package's ``__init__``.  ``packages``: a memo of each directory's package
    chain, for the files of one run (each directory is then looked at once)."""
    path = Path(path)
    is_package = path.stem == "__init__"
    memo = packages if packages is not None else {}
    parts = [*_package_chain(str(path.parent), memo)]
    if not is_package:
        parts.insert(0, path.stem)
    name = ".".join(reversed(parts))
    return name or path.stem, is_package


def _package_chain(directory: str, memo: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The names of ``directory`` and of its parents while each is a package, innermost
    first (empty when ``directory`` is not a package)."""
    chain = memo.get(directory)
    if chain is None:
        d = Path(directory)
        if (d / "__init__.py").is_file() or (d / "__init__.pyi").is_file():
            parent = str(d.parent)
            chain = (d.name,) if parent == directory else (d.name, *_package_chain(parent, memo))
        else:
            chain = ()
        memo[directory] = chain
    return chain


def _absolute(module: str, is_package: bool, level: int, target: str) -> str | None:
    """``from ..x import y`` inside ``module``: the absolute name of ``..x``."""
    if level == 0:
        return target
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, target] if target else base) or None


def import_table(
    nodes: Iterable[cst.Import | cst.ImportFrom], module: str, is_package: bool
) -> tuple[dict[str, tuple[str, str | None]], list[str]]:
    """Local name -> (module, symbol or None for the module itself); and star-imported modules."""
    table: dict[str, tuple[str, str | None]] = {}
    stars: list[str] = []
    for node in nodes:
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = dotted_name(alias.name)
                if not dotted:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    table[alias.asname.name.value] = (dotted, None)
                else:
                    root = dotted.split(".")[0]
                    table[root] = (root, None)
            continue
        level = len(node.relative)
        target = _absolute(
            module, is_package, level, dotted_name(node.module) if node.module else ""
        )
        if target is None:
            continue
        if isinstance(node.names, cst.ImportStar):
            stars.append(target)
            continue
        for name, local in imported_names(node.names):
            table[local] = (target, name)
    return table, stars


_THIRD_PARTY_ROOTS = frozenset({"tensorflow", "keras", "tf_keras", "numpy", "jax", "torch"})


def imports_only(
    text: str,
    module: str,
    is_package: bool,
    path: str,
    tree: ast.Module | None = None,
    file: str = "",
) -> ModuleSummary | None:
    """The summary of a module with no TensorFlow in it: only what it imports and re-exports
    (a package ``__init__`` that does ``from .layers import *``).  The stdlib parser is
    enough for that, and about ten times cheaper than libcst; ``tree`` is its parse of
    ``text`` when the caller has one; ``file``, where it was read from."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    table: list[tuple[str, str, str | None]] = []
    stars: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table.append((alias.asname, alias.name, None))
                else:
                    root = alias.name.split(".")[0]
                    table.append((root, root, None))
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node.level, node.module or "")
            if target is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    stars.append(target)
                else:
                    table.append((alias.asname or alias.name, target, alias.name))
    if not table and not stars:
        return None
    lines = text.splitlines(keepends=True)
    code = [
        "".join(lines[node.lineno - 1 : node.end_lineno])
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    reads = project_reads(text, {k: (m, s) for k, m, s in table}, code)
    return ModuleSummary(
        module, path, tuple(table), tuple(stars), (), (), (), (), text_hash=text_digest(text),
        file=file, reads=reads,
    )  # fmt: skip


# -- the files a program slice reads ----------------------------------------------------------


def text_digest(text: str) -> str:
    """A digest of a module's text (its summary carries it: a slice that reads the module's
    code, not only its summary, depends on it)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def _by_path(summaries: dict[str, ModuleSummary]) -> dict[str, str]:
    return {str(Path(s.path)): m for m, s in summaries.items() if s.path}


def imported_module(
    summaries: dict[str, ModuleSummary],
    importer: str,
    target: str,
    paths: dict[str, str] | None = None,
) -> str | None:
    """The project module ``importer`` gets by importing ``target``.  A top-level script (in
    no package) importing a top-level name gets the file next to it, as Python runs it (its
    directory is first on ``sys.path``), also when another file of the tree has that name."""
    summary = summaries.get(importer)
    if summary is None:
        return None
    if "." not in target and "." not in importer and summary.path:
        paths = _by_path(summaries) if paths is None else paths
        sibling = paths.get(str(Path(summary.path).parent / f"{target}.py"))
        if sibling is not None:
            return sibling
    return target if target in summaries else None


def project_files(
    summaries: dict[str, ModuleSummary],
    kind: str,
    module: str,
    importers: dict[str, tuple[tuple[str, str, str], ...]] | None = None,
) -> object:
    """``mod``: the path and text digest of ``module``; ``imp``: those of every module that
    imports it (``from module import f``, ``import module``, ``from pkg import module``), from
    ``importers`` (:func:`importer_table` of the same summaries) when given."""
    own = summaries.get(module)
    if own is None:
        return None
    if kind == "mod":
        return (own.path, own.text_hash)
    table = importer_table(summaries) if importers is None else importers
    return table.get(module) or None


def importer_table(
    summaries: dict[str, ModuleSummary],
) -> dict[str, tuple[tuple[str, str, str], ...]]:
    """Module -> (name, path, text digest) of each other module that imports it, sorted: one
    pass over every module's imports (asked module by module, it was a pass per question)."""
    paths = _by_path(summaries)
    found: dict[str, set[tuple[str, str, str]]] = {}
    for name, summary in summaries.items():
        if not summary.imports:
            continue
        targets: set[str | None] = set(summary.stars)
        for _, target, symbol in summary.imports:
            targets.add(imported_module(summaries, name, target, paths))
            if symbol is not None:
                targets.add(imported_module(summaries, name, f"{target}.{symbol}", paths))
        for imported in targets:
            if imported is not None and imported != name:
                found.setdefault(imported, set()).add((name, summary.path, summary.text_hash))
    return {m: tuple(sorted(v)) for m, v in found.items()}


# -- which project functions and classes other modules read ----------------------------------


def project_reads(
    text: str, imports: dict[str, tuple[str, str | None]], import_code: Iterable[str]
) -> tuple[str, ...]:
    """Dotted names of project imports the module reads (``f``, ``losses.f``, and each chain's
    prefixes), outside its import statements: a function imported only to be re-exported
    (a package ``__init__``) is read by nobody.  A text scan, so a name in a string or comment
    counts too: that only keeps a function "read", as it was before anything was known."""
    local = sorted(
        (k for k, (m, _) in imports.items() if m.split(".")[0] not in _THIRD_PARTY_ROOTS),
        key=len,
        reverse=True,
    )
    if not local:
        return ()
    pattern = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, local)) + r")(?:\.\w+)*")
    seen = Counter(pattern.findall(text))
    seen.subtract(Counter(m for code in import_code for m in pattern.findall(code)))
    out: set[str] = set()
    for chain, n in seen.items():
        if n > 0:
            parts = chain.split(".")
            out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return tuple(sorted(out))


# who reads a project function or class: (reader module, its file, its text hash, the dotted
# names it reads it by); ``STAR`` as the names: it star-imports the defining module
Reader = tuple[str, str, str, tuple[str, ...]]
STAR = ("*",)


def read_table(
    summaries: dict[str, ModuleSummary], resolve
) -> dict[tuple[str, str], tuple[Reader, ...]]:
    """(module, name) of every project function or class that another module reads -> those
    readers; a module that star-imports reads every name of the modules it star-imports."""
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for m, summary in summaries.items():
        for dotted in summary.reads:
            sym = resolve(m, dotted, 0)
            if sym is not None and sym.kind in ("function", "class") and sym.module != m:
                found.setdefault((sym.module, sym.name), {}).setdefault(m, []).append(dotted)
        for star in summary.stars:
            source = summaries.get(star)
            if source is not None:
                for name, _ in (*source.functions, *source.classes):
                    found.setdefault((star, name), {})[m] = list(STAR)
    return {
        key: tuple(
            (m, summaries[m].file, summaries[m].text_hash, tuple(sorted(names)))
            for m, names in sorted(by.items())
        )
        for key, by in found.items()
    }


def module_imported_elsewhere(summaries: dict[str, ModuleSummary], module: str) -> bool:
    """Another module imports ``module`` itself (``import mod``, ``from pkg import mod``) or
    all of it (a star): its module-level code runs there."""
    for m, summary in summaries.items():
        if m == module:
            continue
        if module in summary.stars:
            return True
        for _, target, symbol in summary.imports:
            if target == module and symbol is None:
                return True
            if symbol is not None and f"{target}.{symbol}" == module:
                return True  # `from pkg import mod`
    return False
