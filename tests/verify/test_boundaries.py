"""Layering: TensorFlow is imported in one package, on its worker side only, and libcst
nowhere in that package.

``tfnumlint/verify`` has a static half (runner, gates, reproducers: plain data, no TensorFlow)
and a worker half (the modules the ``worker`` subprocess loads).  Every other module is static
and must never import the worker half, directly or through another module.  The probes it
judges come from ``analysis/slicing`` (the slicer, the probe contract, the signatures).
Checked on the source (``ast``), so an import hidden in a function body counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tfnumlint"
# probing.py's stages in the order they may import each other (CONTRIBUTING.md's picture)
PROBING_STAGES = (
    "program",
    "points",
    "symptoms",
    "signs",  # the free inputs' signs a witness rests on (witness.py asks)
    "climb",
    "witness",
    "downstream",
    "verdicts",
    "related",  # the related-inputs review (a witness's values computed from one source)
    "upstream",
    "stand_ins",
    "spread",
)
WORKER_SIDE = frozenset(
    f"tfnumlint.verify.{m}"
    for m in (
        *("worker", "trace", "trace_ops", "intervals", "proving", "compiled", "training"),
        "training_text",
        *("training_base", "training_saturation", "training_steps"),  # the training recipes
        "training_rung",  # the training rung: trains the program's slice (issue 23)
        # the probing pipeline: its entry point and its stages
        *("probing", *PROBING_STAGES),
        # saved models, loaded and linted in the worker (verify/graphs)
        *(
            f"graphs.{m}"
            for m in (
                *("screen", "loader", "ranges", "patterns", "inputs", "search", "layers"),
                "training",  # the loss a .keras file or a TF1 training graph keeps
                "training_step",  # the optimizer and the losses its updates are of
                "stack",  # the model the training rules simulate, read from the graph
            )
        ),
        "graphs.lint",
    )
)
TF_PACKAGES = {"tfnumlint.verify", "tfnumlint.verify.graphs"}
TF_ROOTS = ("tensorflow", "keras", "tf_keras")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, at any depth of its code."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join([*parent, base]) if base else ".".join(parent)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def all_modules() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def test_tensorflow_is_imported_in_one_package_only():
    importers = {
        name
        for name, deps in all_modules().items()
        if any(d == root or d.startswith(root + ".") for d in deps for root in TF_ROOTS)
    }
    assert importers, "the worker must import TensorFlow somewhere"
    assert {name.rsplit(".", 1)[0] for name in importers} <= TF_PACKAGES, importers
    assert importers <= WORKER_SIDE, importers - WORKER_SIDE


def test_static_modules_never_reach_the_worker_side():
    graph = all_modules()
    static = [name for name in graph if name not in WORKER_SIDE]
    for start in static:
        seen, stack = set(), [start]
        while stack:
            current = stack.pop()
            for dep in graph.get(current, ()):
                assert dep not in WORKER_SIDE, f"{start} reaches {dep} (via {current})"
                if dep in graph and dep not in seen:
                    seen.add(dep)
                    stack.append(dep)


def test_the_probing_stages_point_one_way():
    """probing.py runs the stages; a stage imports only the stages before it, so none reaches
    the entry point and they form no import cycle."""
    graph = all_modules()
    for i, stage in enumerate(PROBING_STAGES):
        later = [f"tfnumlint.verify.{s}" for s in ("probing", *PROBING_STAGES[i:])]
        deps = graph[f"tfnumlint.verify.{stage}"]
        bad = {d for d in deps for m in later if d == m or d.startswith(m + ".")}
        assert not bad, (stage, bad)


def test_the_fix_package_has_no_evaluator_of_its_own():
    """Proofs go to the verification worker: fix/ holds no TensorFlow and no subprocess."""
    for path in (PACKAGE / "fix").glob("*.py"):
        deps = imports(path)
        assert "subprocess" not in deps, path.name
        assert not any(d.startswith(TF_ROOTS) for d in deps), path.name


def test_the_verifier_and_the_fixer_hold_no_rule_codes():
    """Rule knowledge travels with the rule (rules/recipes.py: the probe recipe, the training
    control, the name of the rewrite): verify/ and fix/ are keyed by none of its codes."""
    paths = [*(PACKAGE / "verify").rglob("*.py"), *(PACKAGE / "fix").rglob("*.py")]
    assert len(paths) >= 10, paths
    for path in paths:
        assert '"TNL' not in path.read_text(encoding="utf-8"), path.name


def test_every_named_rewrite_exists_and_every_rewrite_has_a_rule():
    from tfnumlint.fix.rewrites import FIXERS
    from tfnumlint.rules.recipes import RECIPES

    named = {r.fixer for r in RECIPES.values() if r.fixer}
    assert named == set(FIXERS), named ^ set(FIXERS)


def test_layers_point_one_way():
    """analysis/ (and the shared tables) sit below the rules; verify/ and fix/ read the rules'
    public names only (no ``_private`` internals)."""
    graph = all_modules()
    below_rules = [n for n in graph if n.startswith("tfnumlint.analysis")]
    below_rules += ["tfnumlint.optimizers", "tfnumlint.config"]
    for name in below_rules:
        assert name in graph, name
        reached = {d for d in graph[name] if d.startswith("tfnumlint.")}
        assert not {d for d in reached if d.startswith("tfnumlint.rules")}, name
    for name, deps in graph.items():
        if name.startswith(("tfnumlint.verify", "tfnumlint.fix")):
            private = [d for d in deps if d.startswith("tfnumlint.rules") and "._" in d]
            assert not private, (name, private)


def test_static_analysis_never_imports_the_verifier_or_the_rules():
    """analysis/ is the static pass: the verifier reads its facts (input domains, gradient
    flow, the sliced probe), never the other way round, and the rules sit above it (the engine
    hands the slicer a rule's recipe)."""
    graph = all_modules()
    analysis = [n for n in graph if n.startswith("tfnumlint.analysis")]
    assert len(analysis) >= 20, analysis
    assert "tfnumlint.analysis.slicing.slicer" in analysis, "the walk reaches sub-packages"
    for name in analysis:
        above = {d for d in graph[name] if d.startswith(("tfnumlint.verify", "tfnumlint.rules"))}
        assert not above, (name, above)


def test_the_verifier_walks_no_code_with_libcst():
    """Every libcst walk is static analysis and lives in analysis/ (the slicer's in
    analysis/slicing): no module of verify/ imports libcst, at any depth of its code."""
    graph = all_modules()
    verifier = [n for n in graph if n.startswith("tfnumlint.verify")]
    assert len(verifier) >= 30, verifier
    for name in verifier:
        read = {d for d in graph[name] if d == "libcst" or d.startswith("libcst.")}
        assert not read, (name, read)


def test_the_verifier_reads_only_the_rules_recipes():
    """verify/ learns how to check a finding from the recipe its rule declares
    (``rules/recipes.py``), nothing else of the rules: the facts both need (epsilons, an
    optimizer call's learning rate and epsilon) live in analysis/."""
    graph = all_modules()
    verifier = [n for n in graph if n.startswith("tfnumlint.verify")]
    assert len(verifier) >= 30, verifier
    allowed = "tfnumlint.rules.recipes"
    for name in verifier:
        read = {d for d in graph[name] if d.startswith("tfnumlint.rules")}
        assert all(d == allowed or d.startswith(allowed + ".") for d in read), (name, read)


def test_benchmarks_do_not_import_the_tests():
    benchmarks = PACKAGE.parent / "benchmarks"
    scripts = list(benchmarks.glob("*.py"))
    assert scripts
    for path in scripts:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            bad = [n for n in names if n.split(".")[0] in ("tests", "conftest", "probe_helpers")]
            assert not bad, (path.name, bad)
