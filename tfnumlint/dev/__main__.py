"""``python -m tfnumlint.dev COMMAND``: developer commands, one module each."""

from __future__ import annotations

import argparse
import sys

from . import new_rule


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfnumlint.dev")
    commands = parser.add_subparsers(dest="command", required=True)
    new_rule.add_parser(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
