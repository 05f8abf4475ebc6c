"""The rename test: names never decide a verdict.

Alpha-renames every user identifier (functions, classes, methods, parameters, variables,
attributes the project assigns) and every user file and folder name of a tree with libcst,
lints the original and the renamed copy, and compares each finding's status by location
(mapped back through the rename: lines are kept, so a finding is keyed by its original file,
line and rule).  TensorFlow/Keras APIs, imported names, builtins, keyword arguments of calls
that do not go to project code, attribute names of framework objects, and methods that
override framework hooks (``call``, ``build``, ``get_config``, ``train_step``, ...) stay.

    python benchmarks/rename.py DIR [DIR ...]     # copies each DIR to a temporary folder
    python benchmarks/rename.py --wild-sample 40 --seed 0 --wild-report wild.json \
        examples ../shared/corpus ../shared/nanruns
            # the issue's set: + 40 files of the wild set with a finding in `run.py --json`'s report

Last line: ``PASS|FAIL findings=N changed=C appeared=A disappeared=D`` (PASS: no finding
changes status and at most 2% appear or disappear).  The originals are never modified.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

# Methods the framework calls by name (Keras layers, models, metrics, losses, optimizers,
# callbacks, schedules, initializers, tf.Module, unittest): renaming them changes what runs.
FRAMEWORK_HOOKS = frozenset(
    {"call", "build", "get_config", "from_config", "train_step", "test_step", "predict_step",
     "compute_output_shape", "compute_mask", "compute_loss", "compute_metrics", "update_state",
     "result", "reset_state", "reset_states", "merge_state", "get_updates", "apply_gradients",
     "minimize", "get_gradients", "update_step", "build_from_config", "get_build_config",
     "on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end", "on_train_begin",
     "on_train_end", "on_train_batch_begin", "on_train_batch_end", "on_test_begin",
     "on_test_end", "on_predict_begin", "on_predict_end", "setUp", "tearDown", "setUpClass",
     "tearDownClass", "self", "cls", "add_weight", "add_loss", "add_metric", "add_update",
     "kernel", "bias", "trainable_variables", "trainable_weights", "variables", "weights",
     "losses", "metrics", "optimizer", "layers", "inputs", "outputs", "input", "output",
     "compile", "fit", "evaluate", "predict", "summary", "save", "load_weights",
     "save_weights", "get_weights", "set_weights", "name", "dtype", "shape", "trainable",
     "built", "units", "activation", "learning_rate", "lr", "iterations", "numpy", "assign",
     "assign_add", "assign_sub", "read_value", "value", "apply", "fn", "reduction",
     "sample", "log_prob", "prob", "_sample_n", "_log_prob", "_prob", "_mean", "_variance",
     "_stddev", "_entropy", "_cdf", "_log_cdf", "_resource_apply_dense", "_create_slots",
     "_resource_apply_sparse", "_prepare_local", "get_slot_names", "get_slot", "training",
     "mask",
     # TFP's Distribution and Bijector call these by name (the base class's public methods
     # dispatch to them): an override keeps its name
     "_parameter_properties", "_parameter_control_dependencies", "_sample_control_dependencies",
     "_event_shape_tensor", "_batch_shape_tensor", "_event_shape", "_batch_shape",
     "_default_event_space_bijector", "_log_survival_function", "_survival_function",
     "_quantile", "_mode", "_covariance", "_log_normalization", "_forward", "_inverse",
     "_forward_log_det_jacobian", "_inverse_log_det_jacobian", "_is_increasing"}
)  # fmt: skip


def framework_attributes() -> frozenset[str]:
    """Attribute and method names of the framework's base classes (overrides keep them)."""
    try:
        import tensorflow as tf  # the benchmark may import TF; tfnumlint's static side never does
    except ImportError:
        return frozenset()
    bases = [tf.keras.layers.Layer, tf.keras.Model, tf.keras.losses.Loss, tf.keras.metrics.Metric,
             tf.keras.optimizers.Optimizer, tf.keras.callbacks.Callback, tf.Module, tf.Variable,
             tf.keras.optimizers.schedules.LearningRateSchedule, tf.keras.initializers.Initializer,
             tf.keras.layers.Dense, tf.test.TestCase]  # fmt: skip
    return frozenset(n for b in bases for n in dir(b))


# Keras passes these to `call` by keyword (it inspects the signature): they stay everywhere.
KEEP_NAMES = frozenset(dir(builtins)) | {"self", "cls", "__name__", "__file__", "training", "mask"}


def alpha(index: int, like: str) -> str:
    """A meaningless name of the same shape: ``_`` kept, capitals kept, no English word."""
    letters = ""
    n = index
    while True:
        letters = "bcdfghjklmnpqrstvwxz"[n % 20] + letters
        n //= 20
        if n == 0:
            break
    core = like.lstrip("_")
    prefix = like[: len(like) - len(core)]
    name = f"qz{letters}"
    if core.isupper() and len(core) > 1:
        name = name.upper()
    elif core[:1].isupper():
        name = name.capitalize()
    return prefix + name


class _Collect(cst.CSTVisitor):
    """Names the project binds: defs, classes, parameters, assignment targets, self attributes."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        self.methods: set[str] = set()
        self.imports: list[tuple[str, str]] = []  # (module root, "" if relative; bound name)
        self.depth_in_class: list[bool] = []  # innermost last: a class body (True) or a def

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth_in_class and self.depth_in_class[-1]:
            self.methods.add(node.name.value)  # a method: called as obj.method()
        else:
            self.names.add(node.name.value)
        self.depth_in_class.append(False)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth_in_class.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.add(node.name.value)
        self.depth_in_class.append(True)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth_in_class.pop()

    def visit_Param(self, node: cst.Param) -> None:
        self.names.add(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._targets(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        root = "" if node.relative else _dotted(node.module).split(".")[0] if node.module else ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            self.imports.append((root, _dotted(bound).split(".")[0]))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            self.imports.append((_dotted(alias.name).split(".")[0], _dotted(bound).split(".")[0]))

    def _targets(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for e in node.elements:
                self._targets(e.value)
        elif isinstance(node, cst.StarredElement):
            self._targets(node.value)
        elif isinstance(node, cst.Attribute) and _dotted(node.value) == "self":
            self.attrs.add(node.attr.value)


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


@dataclass
class Renaming:
    """The one mapping applied to the whole tree (identifiers, attributes, modules)."""

    names: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, str] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # file or folder stem -> new stem
    functions: set[str] = field(default_factory=set)  # project callables whose keywords move
    external: set[str] = field(default_factory=set)  # names bound by imports of other packages


class _Rename(cst.CSTTransformer):
    def __init__(self, r: Renaming) -> None:
        self.r = r
        self.functions: list[str] = []  # the enclosing definitions' names, innermost last

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.functions.append(node.name.value)
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.functions.pop()
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.r.names.get(updated.value) or self.r.modules.get(updated.value)
        return updated.with_changes(value=new) if new else updated

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        attr = original.attr.value  # leave_Name saw the attr too: decide it here
        if self._api(original.value):
            return updated.with_changes(attr=original.attr)  # tf.linalg.norm stays
        in_project = _dotted(original.value).split(".")[0] in self.r.modules
        new = self.r.attrs.get(attr) or (self.r.modules.get(attr) if in_project else None)
        if not new and in_project:
            new = self.r.names.get(attr)  # `losses.bce(...)`: a function of a project module
        return updated.with_changes(attr=cst.Name(new or attr))

    def visit_Arg(self, node: cst.Arg) -> bool:
        return True

    def _api(self, node: cst.CSTNode) -> bool:
        """An attribute chain rooted at another package's import (`tf.linalg`, `np`): its
        attributes and its calls' keywords are that package's API, whatever the project binds."""
        while isinstance(node, cst.Attribute):
            node = node.value
        return isinstance(node, cst.Name) and node.value in self.r.external

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        root = _dotted(original.module).split(".")[0] if original.module else ""
        if original.relative or root in self.r.modules:
            return updated
        return original  # `from tensorflow.keras import layers`: API names stay

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        last = _dotted(original.func).rsplit(".", 1)[-1]
        # TFP's `_parameter_properties` returns `dict(name=...)` keyed by the constructor's
        # parameter names, which the framework matches by name: the keys move with them
        properties = last == "dict" and self.functions[-1:] == ["_parameter_properties"]
        if not properties and (last not in self.r.functions or self._api(original.func)):
            return updated  # a framework call: its keywords are API
        args = []
        for a in updated.args:
            if a.keyword is not None and a.keyword.value in self.r.names:
                a = a.with_changes(keyword=cst.Name(self.r.names[a.keyword.value]))
            args.append(a)
        return updated.with_changes(args=args)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        # keywords were renamed by leave_Name; restore them, leave_Call decides
        if original.keyword is not None:
            return updated.with_changes(keyword=original.keyword)
        return updated


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _top_level(root: Path) -> set[str]:
    return {p.stem for p in root.iterdir()}


def _installed(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def plan(root: Path, framework: frozenset[str] | None = None) -> Renaming:
    """One mapping for the whole tree: every name it binds, except what it imports.
    ``framework``: attribute names of framework classes (default: read from TensorFlow)."""
    c = _Collect()
    parsed = {}
    for path in _sources(root):
        try:
            parsed[path] = cst.parse_module(path.read_text())
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        parsed[path].visit(c)
    r = Renaming()
    stems = set()
    for path in _sources(root):
        rel = path.relative_to(root)
        stems |= {part for part in rel.parent.parts}
        if path.stem != "__init__":
            stems.add(path.stem)
    # a folder deep in the tree named like an installed package (`.../python/keras/`) does not
    # make `import keras` the project's: only a package at the tree's top does
    top = _top_level(root)
    installed = {s for s in stems if s not in top and _installed(s)}
    stems -= installed
    external = {bound for root, bound in c.imports if root and root not in stems}
    hooks = FRAMEWORK_HOOKS | (framework_attributes() if framework is None else framework)
    kept_methods = c.methods & hooks
    stems -= external | hooks  # a file named like an imported API name keeps its name
    for i, name in enumerate(sorted(stems - KEEP_NAMES)):
        r.modules[name] = alpha(i, name.lower())
    n = len(r.modules)
    members = (c.attrs | c.methods) - hooks - external - KEEP_NAMES - stems
    for name in sorted((c.names - KEEP_NAMES - external - stems - kept_methods) | members):
        if not (name.startswith("__") and name.endswith("__")):
            r.names[name] = alpha(n, name)
            n += 1
    r.attrs = {a: r.names[a] for a in members if a in r.names}
    r.functions = set(r.names)
    r.external = external
    return r


def rename_tree(src: Path, dst: Path, r: Renaming) -> dict[str, str]:
    """Write the renamed copy of ``src`` to ``dst``; return new relative path -> original."""
    back: dict[str, str] = {}
    for path in _sources(src):
        rel = path.relative_to(src)
        parts = [r.modules.get(p, p) for p in rel.parent.parts]
        stem = rel.stem if rel.stem == "__init__" else r.modules.get(rel.stem, rel.stem)
        new_rel = Path(*parts, stem + rel.suffix)
        out = dst / new_rel
        out.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text()
        # an unparsable file is copied as it is: it is an error both times
        with contextlib.suppress(cst.ParserSyntaxError, UnicodeDecodeError):
            text = cst.parse_module(text).visit(_Rename(r)).code
        out.write_text(text)
        back[new_rel.as_posix()] = rel.as_posix()
    for extra in src.rglob("*"):  # data files, configs: copied under their renamed folders
        if extra.is_file() and extra.suffix != ".py" and "__pycache__" not in extra.parts:
            rel = extra.relative_to(src)
            target = dst / Path(*[r.modules.get(p, p) for p in rel.parent.parts], rel.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(extra, target)
    return back


Key = tuple[str, int, str]


def lint(root: Path, verify: bool) -> list[dict]:
    """Findings of ``root`` (every status, refuted included), linted from inside it."""
    cmd = [sys.executable, "-m", "tfnumlint", "--format", "json", "--exit-zero", "--no-cache"]
    cmd += ["--show-refuted"] + ([] if verify else ["--no-verify"]) + ["."]
    env = dict(os.environ)
    # a verdict must not depend on the machine's load: the training rung's time safety net is a
    # share of the probe budget, so give it the tests' budget (tests/conftest.py)
    env.setdefault("TFNUMLINT_PROBE_TIMEOUT", "60")
    here = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here), env.get("PYTHONPATH", "")]))
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=3000, env=env)
    return json.loads(p.stdout)["findings"]


def statuses(findings: list[dict], back: dict[str, str] | None = None) -> dict[Key, list[str]]:
    out: dict[Key, list[str]] = {}
    for f in findings:
        path = Path(f["path"]).as_posix().removeprefix("./")
        if back is not None:
            path = back.get(path, path)
        status = (f.get("verification") or {}).get("status", "shown")
        out.setdefault((path, f["line"], f["rule"]), []).append(status)
    return {k: sorted(v) for k, v in out.items()}


@dataclass
class Comparison:
    total: int
    changed: list[tuple[Key, list[str], list[str]]]
    appeared: list[tuple[Key, list[str]]]
    disappeared: list[tuple[Key, list[str]]]

    @property
    def passed(self) -> bool:
        moved = len(self.appeared) + len(self.disappeared)
        return not self.changed and moved <= 0.02 * max(self.total, 1)


def compare(before: dict[Key, list[str]], after: dict[Key, list[str]]) -> Comparison:
    changed = [(k, before[k], after[k]) for k in before if k in after and before[k] != after[k]]
    appeared = [(k, after[k]) for k in after if k not in before]
    gone = [(k, before[k]) for k in before if k not in after]
    return Comparison(sum(len(v) for v in before.values()), changed, appeared, gone)


def run(dirs: list[Path], verify: bool = True) -> Comparison:
    """Copy, rename, lint both and compare, over every tree in ``dirs`` together."""
    before: dict[Key, list[str]] = {}
    after: dict[Key, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, d in enumerate(dirs):
            orig, new = Path(tmp) / f"a{i}", Path(tmp) / f"b{i}"
            shutil.copytree(d, orig, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            back = rename_tree(orig, new, plan(orig))
            for k, v in statuses(lint(orig, verify)).items():
                before[(f"{d.name}/{k[0]}", k[1], k[2])] = v
            for k, v in statuses(lint(new, verify), back).items():
                after[(f"{d.name}/{k[0]}", k[1], k[2])] = v
    return compare(before, after)


def wild_sample(dest: Path, n: int, seed: int, report: Path | None = None) -> Path:
    """``n`` seeded random files of the wild set (``../shared/wild``'s cache) copied into
    ``dest/wild`` (one folder per package, relative paths kept): the issue's "40-file sample of
    the wild set".  Drawn from the files with a finding in ``report`` (a JSON report of
    ``../shared/wild/run.py --json``), else from those that import TensorFlow or Keras (most of
    which have no finding at all)."""
    import random

    wild = Path(os.environ.get("TFNL_WILD_CACHE") or Path.home() / ".cache" / "tfnumlint-wild")
    cache = wild.resolve()
    if report is not None:
        found = {Path(f["path"]).resolve() for f in json.loads(report.read_text())["findings"]}
        files = sorted(p for p in found if p.is_relative_to(cache / "src"))
    else:
        files = sorted(
            p
            for p in (cache / "src").rglob("*.py")
            if "tensorflow" in (text := p.read_text(errors="replace")) or "keras" in text
        )
    if len(files) < n:
        raise SystemExit(
            f"the wild cache {cache} has {len(files)} files; run ../shared/wild/run.py"
        )
    out = dest / "wild"
    for p in random.Random(seed).sample(files, n):
        rel = p.relative_to(cache / "src")
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, out / rel)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--no-verify", action="store_true", help="static pass only")
    ap.add_argument("--wild-sample", type=int, default=0, help="add N files of the wild set")
    ap.add_argument("--seed", type=int, default=0, help="the wild sample's seed")
    ap.add_argument("--wild-report", type=Path, help="sample files with a finding in this report")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = list(args.dirs)
        if args.wild_sample:
            dirs.append(wild_sample(Path(tmp), args.wild_sample, args.seed, args.wild_report))
        result = run(dirs, verify=not args.no_verify)
    for key, a, b in result.changed:
        print(f"changed     {key[0]}:{key[1]} {key[2]}  {','.join(a)} -> {','.join(b)}")
    for key, b in result.appeared:
        print(f"appeared    {key[0]}:{key[1]} {key[2]}  {','.join(b)}")
    for key, a in result.disappeared:
        print(f"disappeared {key[0]}:{key[1]} {key[2]}  {','.join(a)}")
    word = "PASS" if result.passed else "FAIL"
    print(
        f"{word} findings={result.total} changed={len(result.changed)} "
        f"appeared={len(result.appeared)} disappeared={len(result.disappeared)}"
    )
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
