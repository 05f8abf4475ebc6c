"""The command line's arguments: the parser, its checks of combinations that argparse cannot
express, ``--list-rules`` and ``--explain``.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import NoReturn

from . import __version__
from .config import ConfigError
from .models import input_ranges
from .report import FORMATS
from .ruledocs import all_docs

FAIL_ON = ("any", "error", "confirmed")
STDIN = "-"
_CODE_LIST = re.compile(r"^(ALL|[A-Za-z]+[0-9]*)(,(ALL|[A-Za-z]+[0-9]*))*$")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line, exit 2
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tfnumlint",
        description="A numerics linter for TensorFlow.",
        epilog="Rule documentation: tfnumlint --list-rules, tfnumlint --explain CODE.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (default: .); - reads standard input",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=list(FORMATS),
        default="text",
        help="text, concise (one line per finding), json, sarif or github (default: text)",
    )
    out.add_argument(
        "--output-file", "-o", type=Path, metavar="FILE", help="write the report to FILE"
    )
    out.add_argument(
        "--statistics", action="store_true", help="counts per rule and verification status"
    )
    out.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (auto: on a terminal, unless NO_COLOR is set)",
    )
    out.add_argument(
        "--quiet", "-q", action="store_true", help="no progress, notes or summary line"
    )
    out.add_argument(
        "--show-refuted", action="store_true", help="also show findings the verifier refuted"
    )
    sel = p.add_argument_group("rule selection")
    sel.add_argument(
        "--select",
        metavar="CODES",
        help="comma-separated rule codes or prefixes to enable (e.g. TNL1,TNL201)",
    )
    sel.add_argument(
        "--ignore", metavar="CODES", help="comma-separated rule codes or prefixes to disable"
    )
    files = p.add_argument_group("files")
    files.add_argument(
        "--exclude", metavar="PATTERNS", help="comma-separated globs that replace the excludes"
    )
    files.add_argument(
        "--extend-exclude", metavar="PATTERNS", help="comma-separated globs to exclude as well"
    )
    files.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply excludes to files named explicitly too (for pre-commit)",
    )
    files.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="the path of the code read from standard input (config, excludes, report)",
    )
    gate = p.add_argument_group("gate")
    gate.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 unless there is a usage or config error",
    )
    gate.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="any",
        help="which shown findings exit 1: any, error (severity) or confirmed (default: any)",
    )
    gate.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="hide the findings recorded in FILE (config: baseline)",
    )
    gate.add_argument(
        "--write-baseline", type=Path, metavar="FILE", help="record the current findings in FILE"
    )
    gate.add_argument(
        "--diff-base",
        metavar="REV",
        help="only findings on lines added or changed since git REV (uncommitted included)",
    )
    gate.add_argument(
        "--add-noqa",
        nargs="?",
        const="ALL",
        metavar="CODES",
        help="add # noqa directives for the findings shown (optionally only these codes)",
    )
    work = p.add_argument_group("verification and fixes")
    work.add_argument(
        "--no-verify", action="store_true", help="static analysis only (never imports TensorFlow)"
    )
    work.add_argument(
        "--input-range",
        action="append",
        default=[],
        metavar="NAME=LO:HI",
        help="a saved model input's range, e.g. image=0:255 (repeatable)",
    )
    work.add_argument(
        "--probe-timeout",
        type=float,
        metavar="SECONDS",
        help="how long one finding's verification may take (default 10, four times it "
        "for one that trains the program's slice; also TFNUMLINT_PROBE_TIMEOUT): a slow "
        "machine's training runs finish",
    )
    work.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    work.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff, also apply unsafe fixes"
    )
    work.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; change nothing"
    )
    work.add_argument(
        "--emit-repro",
        type=Path,
        metavar="DIR",
        help="write a standalone reproducer script to DIR for every confirmed finding",
    )
    run = p.add_argument_group("run")
    run.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="parallel processes (default: CPUs, at most 8): lint workers, and up to 4 "
        "TensorFlow workers for verification",
    )
    run.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    run.add_argument(
        "--profile",
        action="store_true",
        help="print the time of each stage on stderr (also: TFNUMLINT_PROFILE=1)",
    )
    run.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a pyproject.toml (or TOML file) to read settings from",
    )
    info = p.add_argument_group("information")
    info.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    info.add_argument("--explain", metavar="CODE", help="print a rule's documentation and exit")
    info.add_argument("--version", action="version", version=f"tfnumlint {__version__}")
    return p


def code_list(arg: str | None) -> list[str] | None:
    return None if arg is None else [c for c in arg.split(",") if c.strip()]


def pattern_list(arg: str) -> list[str]:
    return [c.strip() for c in arg.split(",") if c.strip()]


def list_rules() -> str:
    docs = all_docs()
    rows = [f"{'code':8} {'name':34} {'severity':8} {'fix':10} summary"]
    for code, d in docs.items():
        default = "" if d.default else " (off by default)"
        rows.append(f"{code:8} {d.name:34} {d.severity:8} {d.fix:10} {d.summary}{default}")
    return "\n".join(rows) + "\n"


def explain(code: str) -> str:
    docs = all_docs()
    doc = docs.get(code.upper())
    if doc is None:
        raise ConfigError(f"unknown rule code '{code}' (see --list-rules)")
    body = doc.text.split("---\n", 2)[-1]
    return body.lstrip("\n")


def settle_paths(args: argparse.Namespace) -> None:
    """Fill in the default path, and give back a path that argparse took for --add-noqa codes."""
    if args.add_noqa is not None and (
        not _CODE_LIST.match(args.add_noqa) or Path(args.add_noqa).exists()
    ):
        # `--add-noqa src/`: argparse took the path for the optional list of codes
        args.paths = [*args.paths, args.add_noqa]
        args.add_noqa = "ALL"
    if args.stdin_filename and args.paths not in ([], [STDIN]):
        raise ConfigError("--stdin-filename names standard input: pass - or no path")
    args.paths = args.paths or ([STDIN] if args.stdin_filename else ["."])


def check_usage(args: argparse.Namespace) -> None:
    """Flag combinations that cannot work: one clear line each, before any work is done."""
    settle_paths(args)
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    timeout = getattr(args, "probe_timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ConfigError("--probe-timeout must be a positive number of seconds")
    reading_stdin = STDIN in args.paths
    if reading_stdin and len(args.paths) > 1:
        raise ConfigError("'-' (standard input) cannot be combined with other paths")
    if reading_stdin:
        for flag, on in (
            ("--fix", args.fix),
            ("--diff", args.diff),
            ("--add-noqa", args.add_noqa is not None),
            ("--write-baseline", args.write_baseline is not None),
        ):
            if on:
                raise ConfigError(f"{flag} cannot be used on standard input")
    input_ranges(args.input_range)  # checked even when no saved model is among the paths
    if args.emit_repro is not None and args.no_verify:
        raise ConfigError("--emit-repro needs verification: drop --no-verify")
    if args.fail_on == "confirmed" and args.no_verify:
        raise ConfigError(
            "--fail-on confirmed needs verification: drop --no-verify "
            "(with --no-verify no finding can be confirmed)"
        )
    modes = [
        name
        for name, on in (
            ("--fix" if args.fix else "--diff", args.fix or args.diff),  # --diff wins, as in ruff
            ("--add-noqa", args.add_noqa is not None),
            ("--write-baseline", args.write_baseline is not None),
        )
        if on
    ]
    if len(modes) > 1:
        raise ConfigError(f"{modes[0]} and {modes[1]} cannot be used together")
