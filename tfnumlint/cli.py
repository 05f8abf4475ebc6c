"""Command line: ``tfnumlint [PATH ...]``.  Exit 2 on usage/config/file errors, 1 on findings, else 0."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from . import __version__
from .cache import default_dir
from .config import ConfigError, load_config, resolve_codes
from .discovery import MissingPath, discover
from .engine import LintOptions
from .model import Report
from .report import FORMATS, render
from .ruledocs import all_docs
from .runner import Job, analyse, apply_per_file_ignores, default_jobs


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tfnumlint", description="A numerics linter for TensorFlow.")
    p.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)"
    )
    p.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format")
    p.add_argument(
        "--select", help="comma-separated rule codes or prefixes to enable (e.g. TNL1,TNL201)"
    )
    p.add_argument("--ignore", help="comma-separated rule codes or prefixes to disable")
    p.add_argument(
        "--no-verify", action="store_true", help="static analysis only (never imports TensorFlow)"
    )
    p.add_argument(
        "--show-refuted", action="store_true", help="also show findings the verifier refuted"
    )
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff, also apply unsafe fixes"
    )
    p.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; change nothing"
    )
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings are shown")
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="parallel processes (default: CPUs)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a pyproject.toml (or TOML file) to read settings from",
    )
    p.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    p.add_argument("--explain", metavar="CODE", help="print a rule's documentation and exit")
    p.add_argument("--version", action="version", version=f"tfnumlint {__version__}")
    return p


def _codes(arg: str | None) -> list[str] | None:
    return None if arg is None else [c for c in arg.split(",") if c.strip()]


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


def run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_rules:
        sys.stdout.write(list_rules())
        return 0
    if args.explain:
        sys.stdout.write(explain(args.explain))
        return 0
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    start = time.perf_counter()
    cwd = Path.cwd()
    config = load_config(args.config, cwd)
    codes = resolve_codes(config, _codes(args.select), _codes(args.ignore))
    try:
        candidates = discover(args.paths, cwd, config.exclude, config.extend_exclude, config.root)
    except MissingPath as exc:
        raise ConfigError(f"path does not exist: {exc}") from None
    verify = not args.no_verify
    fixing = args.fix or args.diff
    options = LintOptions(
        codes=codes,
        severities=config.severity,
        settings=config.settings,
        slice_probes=verify or fixing,
    )
    cache_dir = None if args.no_cache else default_dir()
    job = Job(options, config.fingerprint(codes), cache_dir)
    results = analyse(candidates, job, args.jobs or default_jobs())
    apply_per_file_ignores(results, config)
    findings = [f for r in results for f in r.findings]
    errors = [e for r in results for e in r.errors]
    notices: list[str] = []
    if verify and findings:
        if importlib.util.find_spec("tensorflow") is None:
            notices.append(
                "TensorFlow is not installed, so findings are not verified "
                "(pip install 'tfnumlint[tf]', or pass --no-verify)"
            )
        else:
            from .verify.runner import verify_findings

            notices += verify_findings(findings, config.settings, cache_dir)
    if fixing:
        from .fix.apply import apply_fixes

        code, text = apply_fixes(
            findings,
            candidates,
            write=args.fix,
            unsafe=args.unsafe_fixes,
            show_diff=args.diff,
            options=options,
            cache_dir=cache_dir,
        )
        if args.diff:
            sys.stdout.write(text)
            return code if not errors else 2
        notices.append(text)
    shown = [f for f in findings if args.show_refuted or f.verification.status != "refuted"]
    hidden = len(findings) - len(shown)
    if hidden and args.format == "text":
        notices.append(
            f"{hidden} finding{'s' if hidden != 1 else ''} refuted by verification and hidden (--show-refuted shows them)"
        )
    shown.sort(key=lambda f: f.sort_key)
    errors.sort(key=lambda e: (e.path, e.message))
    report = Report(shown, errors, len(candidates), time.perf_counter() - start, notices)
    sys.stdout.write(render(args.format, report))
    if args.format != "text":
        for n in notices:
            print(f"tfnumlint: {n}", file=sys.stderr)
    if errors:
        return 2
    if shown and not args.exit_zero:
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except ConfigError as exc:
        print(f"tfnumlint: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tfnumlint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # never a traceback at the user
        print(f"tfnumlint: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("TFNUMLINT_DEBUG"):
            raise
        return 2
