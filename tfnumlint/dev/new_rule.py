"""``new-rule TNLxxx FAMILY``: the three files a new rule consists of, as stubs to fill in.

A rule is its doc (``rules/TNLxxx.md``: metadata and the text users read), its check in the
family module (``tfnumlint/rules/FAMILY.py``, where its recipe and rewrite are declared too),
and its case folder (``tests/rules/TNLxxx/``: triggering and clean programs and the snapshot of
what the tool says about them).  Nothing else needs to change: the README's rule table is
generated from the docs, and the rule registry, the verifier and the case tests find the rule
by its code.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..ops import REGISTRY
from ..ruledocs import SECTIONS, docs_in, with_rule_table

FAMILIES = ("logs", "domain", "overflow", "precision", "training", "datascale")
CODE = re.compile(r"TNL\d{3}\Z")

DOC = """---
code: {code}
name: {name}
severity: warning
default: true
fix: none
summary: {summary}
---

# {code} · {name}

{sections}
"""

CHECK = '''

@rule("{code}", ops={{"{op}"}})
def {function}(site: Site, ctx: Context):
    """Why a call of `{op}` is hazardous here, from what its operands are (their producers)."""
    x = ctx.arg(site.node, 0, "x")
    if x is not None and ctx.val(x, site).can_be_zero:
        yield Hit(site.node, "{op} of a value that can be exactly 0", site)
'''

# a layer's call: its input is the program's data, so the verifier can confirm the case
# (in a helper nothing calls, a witness on the sign of `x` is only a stated condition)
BAD_CASE = '''"""A program {code} must flag (the line marked `# error: {code}`)."""
import tensorflow as tf


class Case(tf.keras.layers.Layer):
    def call(self, x):
        return {spelling}(tf.nn.relu(x))  # error: {code}
'''

GOOD_CASE = '''"""The stable form: {code} must stay silent."""
import tensorflow as tf


class Case(tf.keras.layers.Layer):
    def call(self, x):
        return {spelling}(tf.nn.relu(x) + 1.0)
'''


def scaffold(root: Path, code: str, family: str, name: str, op: str) -> list[Path]:
    """Write the rule's doc, check stub and case folder under ``root``; the paths written."""
    if not CODE.match(code):
        raise ValueError(f"{code!r} is not a rule code like TNL207")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    doc = root / "rules" / f"{code}.md"
    cases = root / "tests" / "rules" / code
    if doc.exists() or cases.exists():
        raise ValueError(f"{code} exists already")
    if op not in REGISTRY or not REGISTRY[op].spellings:
        raise ValueError(f"unknown op {op!r}: add it to tfnumlint/ops.py first")
    spelling = REGISTRY[op].spellings[0]
    module = root / "tfnumlint" / "rules" / f"{family}.py"
    doc.write_text(_doc_text(code, name, op, spelling), encoding="utf-8")
    function = name.replace("-", "_")
    with module.open("a", encoding="utf-8") as out:
        out.write(CHECK.format(code=code, op=op, function=function))
    cases.mkdir(parents=True)
    (cases / "bad_example.py").write_text(
        BAD_CASE.format(code=code, spelling=spelling), encoding="utf-8"
    )
    (cases / "good_example.py").write_text(
        GOOD_CASE.format(code=code, spelling=spelling), encoding="utf-8"
    )
    readme = root / "README.md"
    if readme.is_file():  # generated, never edited by hand
        table = with_rule_table(readme.read_text(encoding="utf-8"), docs_in(root / "rules"))
        readme.write_text(table, encoding="utf-8")
    return [doc, module, cases]


def _doc_text(code: str, name: str, op: str, spelling: str) -> str:
    example = f"```python\n{_body(BAD_CASE, code, spelling)}```"
    instead = f"```python\n{_body(GOOD_CASE, code, spelling)}```"
    bodies = {
        "What it does": f"Flags `{op}` of a value that can be exactly 0.",
        "Example": example,
        "Use instead": instead,
    }
    sections = "\n\n".join(f"## {title}\n{bodies.get(title, 'TODO')}" for title in SECTIONS)
    summary = f"{op} of a value that can be exactly 0"
    return DOC.format(code=code, name=name, summary=summary, sections=sections)


def _body(case: str, code: str, spelling: str) -> str:
    """A case program without its docstring line, as the doc shows it."""
    return case.format(code=code, spelling=spelling).split("\n", 1)[1].lstrip("\n")


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("new-rule", help="create a rule's doc, check stub and case folder")
    p.add_argument("code", help="the new rule's code, e.g. TNL207")
    p.add_argument("family", choices=FAMILIES, help="the family module that holds the check")
    p.add_argument("--name", default=None, help="the rule's kebab-case name (default: new-rule)")
    p.add_argument(
        "--op", default="rsqrt", help="the canonical op (tfnumlint/ops.py) the stub subscribes to"
    )
    p.add_argument("--root", type=Path, default=Path.cwd(), help="the project root")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    name = args.name or f"new-rule-{args.code[3:]}"
    try:
        written = scaffold(args.root, args.code, args.family, name, args.op)
    except ValueError as err:
        print(f"new-rule: {err}")
        return 2
    for path in written:
        print(f"wrote {path}")
    print("then: fill in the TODO sections, and record the cases' snapshot (tests/rules/README.md)")
    return 0
