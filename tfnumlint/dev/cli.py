"""``python -m tfnumlint.dev readme --check | --write``: the documentation's generated parts;
``python -m tfnumlint.dev new-rule TNLxxx FAMILY``: a new rule's three files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfnumlint.dev import new_rule
from tfnumlint.dev.examples import ExampleError, doc_paths, stale_examples, write_examples
from tfnumlint.ruledocs import with_rule_table

ROOT = Path(__file__).resolve().parents[2]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tfnumlint.dev")
    commands = parser.add_subparsers(dest="command", required=True)
    readme = commands.add_parser(
        "readme",
        help="the README's rule table and every `$ tfnumlint ...` example in README.md, "
        "CONTRIBUTING.md and docs/",
    )
    mode = readme.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 if a generated part is stale")
    mode.add_argument("--write", action="store_true", help="regenerate them in place")
    new_rule.add_parser(commands)
    return parser


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "new-rule":
        return int(args.run(args))
    try:
        return _write(root) if args.write else _check(root)
    except ExampleError as exc:
        print(f"tfnumlint.dev: {exc}", file=sys.stderr)
        return 2


def _write(root: Path) -> int:
    readme = root / "README.md"
    readme.write_text(with_rule_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
    for path in doc_paths(root):
        if write_examples(path, root):
            print(f"rewrote {path.relative_to(root)}")
    return 0


def _check(root: Path) -> int:
    stale = []
    readme_text = (root / "README.md").read_text(encoding="utf-8")
    if with_rule_table(readme_text) != readme_text:
        stale.append("README.md: the rule table (python -m tfnumlint.ruledocs)")
    for path in doc_paths(root):
        for example in stale_examples(path, root):
            stale.append(f"{path.relative_to(root)}: $ tfnumlint {example.command}")
    for line in stale:
        print(f"stale: {line}")
    if stale:
        print("run `python -m tfnumlint.dev readme --write` to regenerate them")
    return 1 if stale else 0
