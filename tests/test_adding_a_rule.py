"""Adding a rule touches three files: its doc, its family module, its tests.

The README's rule table is generated from the docs (``python -m tfnumlint.ruledocs``); a
rule's verification recipe and its rewrite can be declared beside its check; the tuning
tables that also name rule codes (``rules/recipes.py``, ``grouping.py``) are optional: a rule
absent from them is probed for the generic symptoms and never merged with another.
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
from conftest import ROOT

from tfnumlint.engine import LintOptions, run_checks
from tfnumlint.fix.rewrites import FIXERS, Call, Edit, Plan, Src, fixable, plan_for, rewrite
from tfnumlint.grouping import EXPRESSION_RULES
from tfnumlint.ruledocs import all_docs, readme_rule_table, with_rule_table
from tfnumlint.rules import CHECKS, Hit, load_all, rule
from tfnumlint.rules.recipes import RECIPES, Recipe, recipe_for

PACKAGE = ROOT / "tfnumlint"
OPTIONAL_TABLES = {PACKAGE / "rules" / "recipes.py", PACKAGE / "grouping.py"}


def test_the_readme_rule_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_rule_table() in readme
    assert with_rule_table(readme) == readme
    assert readme_rule_table().count("| [TNL") == len(all_docs())


def test_a_rule_code_appears_only_in_its_family_module_and_the_optional_tables():
    load_all()
    literals = {p: _string_literals(p) for p in PACKAGE.rglob("*.py")}
    homes: dict[str, set] = {}
    for check in CHECKS:  # a rule may register checks in more than one family module
        module = check.fn.__module__.rsplit(".", 1)[-1]
        homes.setdefault(check.code, set()).add(PACKAGE / "rules" / f"{module}.py")
    assert set(homes) == set(all_docs())
    for code, home in homes.items():
        places = {p for p, found in literals.items() if code in found}
        assert home <= places, code
        assert places <= home | OPTIONAL_TABLES, (code, places - home - OPTIONAL_TABLES)


def _string_literals(path) -> set[str]:
    """Every string constant in a module (a rule code used as a key, not one named in prose)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_a_rule_absent_from_the_optional_tables_still_works():
    assert recipe_for("TNL999") == Recipe()
    assert "TNL999" not in EXPRESSION_RULES
    assert not fixable("TNL999")


def test_a_new_rule_declares_check_recipe_and_rewrite_in_one_place():
    """What a family module would hold for a new rule, end to end through the fixer."""
    load_all()
    before = (len(CHECKS), dict(RECIPES), dict(FIXERS))
    try:

        @rule("TNL999", ops={"log"}, recipe=Recipe(symptoms=("inf-value",), fixer="test-log1p"))
        def log_of_anything(site, ctx):
            yield Hit(site.node, "a log", site)

        @rewrite("test-log1p")
        def log1p_instead(ctx, hit):
            x = hit.node.args[0].value
            return Plan(
                "",
                "safe",
                "use log1p",
                [Edit(hit.node, Call("log1p", [Src(x, hit.site.scope, hit.site.order)]))],
            )

        module = cst.parse_module(
            textwrap.dedent("""
            import tensorflow as tf
            y = tf.math.log(x)
        """)
        )
        hits, _errors, ctx = run_checks(module, LintOptions(codes=frozenset({"TNL999"})))
        assert [check.code for check, _hit in hits] == ["TNL999"]
        assert recipe_for("TNL999").symptoms == ("inf-value",)
        assert fixable("TNL999")
        plan = plan_for(ctx, hits[0][1], "TNL999")
        assert plan is not None and plan.rule == "TNL999" and plan.ops == {"log1p"}
    finally:
        del CHECKS[before[0] :]
        RECIPES.clear()
        RECIPES.update(before[1])
        FIXERS.clear()
        FIXERS.update(before[2])
