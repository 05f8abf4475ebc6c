"""Rule metadata and documentation, read from ``rules/TNLxxx.md`` (the single source).

The docs ship inside the wheel as ``tfnumlint/_ruledocs``; in a source checkout they are
read from the top-level ``rules/`` folder.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

SECTIONS = (
    "What it does",
    "Why is this bad",
    "Example",
    "Use instead",
    "Fix safety",
    "How it is verified",
)


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    severity: str
    default: bool
    fix: str
    summary: str
    text: str
    sections: dict[str, str]
    # ``default: confirmed``: on by default, but a finding is shown only when the verifier
    # confirms it, unless the rule is selected by its code (a smell alone never fails CI)
    evidence: bool = False
    # one line: the stable form to use or the guard to add, shown under an inconclusive verdict
    advice: str = ""

    def code_block(self, section: str) -> str | None:
        """The first ```python block of a section."""
        m = re.search(r"```python\n(.*?)```", self.sections.get(section, ""), re.S)
        return m.group(1) if m else None


def docs_dir() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_ruledocs"
    if packaged.is_dir():
        return packaged
    return here.parent / "rules"


def parse_doc(text: str) -> RuleDoc:
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise ValueError("rule doc has no front matter")
    meta: dict[str, str] = {}
    for line in m.group(1).splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            meta[key.strip()] = value.split("  #")[0].strip()
    body = text[m.end() :]
    sections: dict[str, str] = {}
    parts = re.split(r"^## (.+)$", body, flags=re.M)
    for title, content in zip(parts[1::2], parts[2::2], strict=False):
        sections[title.strip()] = content.strip("\n")
    return RuleDoc(
        code=meta["code"],
        name=meta["name"],
        severity=meta["severity"],
        default=meta.get("default", "true").lower() != "false",
        evidence=meta.get("default", "").lower() == "confirmed",
        fix=meta.get("fix", "none"),
        summary=meta.get("summary", ""),
        advice=meta.get("advice", ""),
        text=text,
        sections=sections,
    )


@functools.cache
def all_docs() -> dict[str, RuleDoc]:
    return docs_in(docs_dir())


def docs_in(folder: Path) -> dict[str, RuleDoc]:
    """The rule docs of one folder, by code."""
    docs = {}
    for path in sorted(folder.glob("TNL*.md")):
        doc = parse_doc(path.read_text(encoding="utf-8"))
        docs[doc.code] = doc
    return docs


README_TABLE_HEAD = "| code | name | severity | fix | what it finds |\n|---|---|---|---|---|\n"


def readme_rule_table(docs: dict[str, RuleDoc] | None = None) -> str:
    """The README's rule table, generated from the docs (``python -m tfnumlint.ruledocs``
    rewrites it), so that adding a rule never means hand-editing the README."""
    rows = []
    for code, doc in sorted((all_docs() if docs is None else docs).items()):
        summary = doc.summary if doc.default else f"(off by default) {doc.summary}"
        if doc.evidence:
            summary = f"(shown when a simulation confirms it) {doc.summary}"
        rows.append(
            f"| [{code}](rules/{code}.md) | {doc.name} | {doc.severity} | {doc.fix} | {summary} |\n"
        )
    return README_TABLE_HEAD + "".join(rows)


def with_rule_table(readme: str, docs: dict[str, RuleDoc] | None = None) -> str:
    """``readme`` with its rule table replaced by :func:`readme_rule_table` (of ``docs``, by
    default the installed ones)."""
    start = readme.index(README_TABLE_HEAD)
    end = start + len(README_TABLE_HEAD)
    while readme.startswith("| [TNL", end):
        end = readme.index("\n", end) + 1
    return readme[:start] + readme_rule_table(docs) + readme[end:]


if __name__ == "__main__":  # regenerate the README's rule table in place
    readme_path = Path(__file__).resolve().parent.parent / "README.md"
    readme_path.write_text(
        with_rule_table(readme_path.read_text(encoding="utf-8")), encoding="utf-8"
    )
