"""Command line: ``tfnumlint [PATH ...]``.

Exit codes: 2 on a usage or config error, or when a file could not be analysed; 1 when a shown
finding matches ``--fail-on``; else 0.  ``--exit-zero`` makes everything but a usage or config
error exit 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from . import __version__, progress, stages
from .cache import default_dir
from .config import Config, ConfigError, load_config, named_codes, resolve_codes
from .discovery import (
    DEFAULT_EXCLUDES,
    Candidate,
    discover,
    exclude_spec,
    excluded_explicitly,
)
from .engine import LintOptions
from .model import MISSING_PATH, Counted, FileError, Finding, Report
from .models import ModelOptions, input_ranges, lint_models, split_models
from .report import FORMATS, render
from .report.notes import baseline_breakdown, gated_notes, refuted_notes
from .report.style import Style, use_colour
from .report.text import location
from .ruledocs import all_docs
from .runner import Job, analyse_run, apply_per_file_ignores, default_jobs
from .shown import show, shown_ids
from .source import Source, SourceError, read_source

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
        help="parallel processes (default: CPUs)",
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


def _codes(arg: str | None) -> list[str] | None:
    return None if arg is None else [c for c in arg.split(",") if c.strip()]


def _patterns(arg: str) -> list[str]:
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


@dataclass
class Inputs:
    """What to analyse, and where the project (config, excludes, fingerprints) is rooted."""

    candidates: list[Candidate]
    config: Config
    root: Path
    stdin: Source | None = None
    missing: list[FileError] = field(default_factory=list)  # named paths that do not exist


def _settle_paths(args: argparse.Namespace) -> None:
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


def _check_usage(args: argparse.Namespace) -> None:
    """Flag combinations that cannot work: one clear line each, before any work is done."""
    _settle_paths(args)
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
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


def _project_root(config: Config, cwd: Path) -> Path:
    """The directory fingerprint paths are relative to: the config's, else the repository's."""
    if config.path is not None:
        return config.root
    for d in [cwd, *cwd.parents]:
        if (d / ".git").exists():
            return d
    return cwd


def _inputs(args: argparse.Namespace, cwd: Path) -> Inputs:
    stdin_name = args.stdin_filename
    config_start = cwd
    if stdin_name:
        config_start = (cwd / stdin_name).parent.resolve()
        if not config_start.is_dir():
            config_start = cwd
    config = load_config(args.config, config_start)
    if args.exclude is not None:
        config.exclude = _patterns(args.exclude)
    if args.extend_exclude is not None:
        config.extend_exclude = [*config.extend_exclude, *_patterns(args.extend_exclude)]
    force = args.force_exclude or config.force_exclude
    root = _project_root(config, cwd)
    if args.paths == [STDIN]:
        return _stdin_inputs(stdin_name, cwd, config, root, force)
    missing: list[str] = []
    candidates = discover(
        args.paths, cwd, config.exclude, config.extend_exclude, config.root, force, missing
    )
    errors = [FileError(path, MISSING_PATH) for path in missing]
    return Inputs(candidates, config, root, missing=errors)


def _stdin_inputs(name: str | None, cwd: Path, config: Config, root: Path, force: bool) -> Inputs:
    """Standard input as one candidate named ``name``; none when --force-exclude excludes it."""
    data = sys.stdin.buffer.read()  # read even when excluded: the writer must not see a broken pipe
    path = cwd / (name or "stdin.py")
    patterns = (DEFAULT_EXCLUDES if config.exclude is None else config.exclude) + list(
        config.extend_exclude
    )
    if name and force and excluded_explicitly(path, exclude_spec(patterns), config.root):
        return Inputs([], config, root)
    display = name or "-"
    try:
        source = read_source(path, display, data)
    except SourceError:
        source = None  # reported by the analysis, like any unreadable file
    return Inputs([Candidate(path, display, data)], config, root, stdin=source)


def _source_reader(inputs: Inputs):
    by_display = {c.display: c for c in inputs.candidates}

    def source_of(display: str) -> Source | None:
        if inputs.stdin is not None and display == inputs.stdin.path:
            return inputs.stdin
        cand = by_display.get(display)
        if cand is None:
            return None
        try:
            return read_source(cand.path, display)
        except (SourceError, OSError):
            return None

    return source_of


def _fails(findings: list[Finding], fail_on: str) -> bool:
    if fail_on == "error":
        return any(f.severity == "error" for f in findings)
    if fail_on == "confirmed":
        return any(f.verification.status == "confirmed" for f in findings)
    return bool(findings)


def _say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"tfnumlint: {message}", file=sys.stderr)


def run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_rules:
        sys.stdout.write(list_rules())
        return 0
    if args.explain:
        sys.stdout.write(explain(args.explain))
        return 0
    _check_usage(args)
    if args.profile:
        stages.enable()
    progress.configure(False if args.quiet else None)
    start = time.perf_counter()
    cwd = Path.cwd()
    inputs = _inputs(args, cwd)
    config = inputs.config
    codes = resolve_codes(config, _codes(args.select), _codes(args.ignore))
    inputs.candidates, models = split_models(inputs.candidates)
    noqa_codes = _noqa_codes(args)
    baseline = _load_baseline(args, config)
    changed = None
    if args.diff_base is not None:
        from .changed import changed_lines

        changed = changed_lines(args.diff_base, cwd)

    with stages.stage("float type"):
        float_notices = _settle_float_type(config, inputs.candidates)
    recording = args.write_baseline is not None
    verify = not args.no_verify  # a baseline is verified too: it says what a run would show
    fixing = args.fix or args.diff
    options = LintOptions(
        codes=codes,
        severities=config.severity,
        settings=config.settings,
        slice_probes=verify or fixing,
    )
    cache_dir = None if args.no_cache else default_dir()
    job = Job(options, config.fingerprint(codes), cache_dir)
    with progress.Progress(len(inputs.candidates), "analysing", "files", minimum=20) as bar:
        analysed = analyse_run(inputs.candidates, job, args.jobs or default_jobs(), bar)
    ranges = input_ranges(args.input_range)
    lint_graphs = models and not args.no_verify  # a saved model needs TensorFlow
    graph_options = ModelOptions(codes, config.severity, config.graph_ignore, ranges, cache_dir)
    results = analysed.results + (lint_models(models, graph_options) if lint_graphs else [])
    apply_per_file_ignores(results, config)
    findings = [f for r in results for f in r.findings]
    errors = sorted(
        [*inputs.missing, *(e for r in results for e in r.errors)],
        key=lambda e: (e.path, e.message),
    )

    from . import fingerprint

    source_of = _source_reader(inputs)
    scoped = recording or baseline is not None
    identities = fingerprint.assign(findings, inputs.root, source_of, scoped)
    named = named_codes(config, _codes(args.select))
    if recording:
        for n in _verify(findings, config, cache_dir) if verify and findings else []:
            _say(args, n)
        return _write_baseline(args, inputs, findings, identities, errors, named)
    # hidden findings are never verified: the gate's cost follows what it shows
    findings, hidden, stale, would_show = _filter(
        findings, identities, baseline, changed, inputs, verify
    )
    with stages.stage("verification"):
        notices = _verify(findings, config, cache_dir) if verify and findings else []
    notices += float_notices if args.format in ("text", "concise") else []
    if models and args.no_verify:
        from .models import NO_VERIFY_NOTICE

        notices.append(NO_VERIFY_NOTICE.format(n=len(models), s="s" if len(models) != 1 else ""))
    if fixing:
        from .fix.apply import apply_fixes

        with progress.Progress(None, "proving and applying fixes").tick():
            code, text = apply_fixes(
                findings,
                inputs.candidates,
                write=args.fix,
                unsafe=args.unsafe_fixes,
                show_diff=args.diff,
                options=options,
                cache_dir=cache_dir,
                units=analysed.units,
            )
        if args.diff:
            _emit(args, text)
            return 0 if args.exit_zero else 2 if errors else code
        notices.append(text)
        # the rewritten files were linted again: their findings need identities and filters
        identities = fingerprint.assign(findings, inputs.root, source_of, scoped)
        findings, hidden, stale, would_show = _filter(
            findings, identities, baseline, changed, inputs, verify
        )
    elif args.format in ("json", "sarif") and findings:
        from .fix.apply import describe_fixes

        _on_large_stack(describe_fixes, findings, inputs.candidates, options, analysed.units)
    if args.add_noqa is not None:  # per rule, before same-hazard findings are merged
        visible = [f for f in findings if args.show_refuted or f.verification.status != "refuted"]
        return _add_noqa(args, inputs, visible, noqa_codes, errors, options)
    with stages.stage("grouping"):  # one hazard, one finding; then what a run shows
        outcome = show(findings, named, args.show_refuted)
    shown = outcome.findings
    if args.format in ("text", "concise"):
        notices += gated_notes(outcome.gated) + refuted_notes(outcome.refuted)
    shown.sort(key=lambda f: f.sort_key)
    if args.emit_repro is not None:
        from .verify.repro import emit_all  # no TensorFlow import

        notices += emit_all(shown, args.emit_repro)
    seconds = time.perf_counter() - start
    report = Report(
        shown,
        errors,
        len(inputs.candidates) + len(models),
        seconds,
        notices,
        hidden,
        stale,
        would_show.counts,
        would_show.by,
    )
    _emit(args, _render(args, report))
    if args.format not in ("text", "concise") or args.statistics:
        for n in notices:
            _say(args, n)
    if args.exit_zero:
        return 0
    if errors:
        return 2
    return 1 if _fails(shown, args.fail_on) else 0


def _settle_float_type(config: Config, candidates) -> list[str]:
    """The float type each linted package computes in: the config's ``float`` for all, else
    the one a package's own code fixes (analysis/dtypectx.project_floats); the notices naming
    where it was read."""
    if config.settings.float_type is not None:
        return []
    from .analysis.dtypectx import project_floats

    found = project_floats(_texts(candidates))
    config.settings.float_packages = {package: f for package, (f, _) in found.items()}
    return [
        f"{'`' + package + '` computes' if package else 'the project computes'} in {f} "
        f"({where}): epsilons and probes use it where no local dtype says otherwise (`float` "
        "in [tool.tfnumlint] overrides)"
        for package, (f, where) in sorted(found.items())
    ]


def _texts(candidates):
    """Each readable candidate's text and package, read as linting reads it (a FIFO, a
    symlink loop or an undecodable file is skipped here and reported by the lint)."""
    from .analysis.dtypectx import float_package
    from .analysis.project_imports import module_name

    for c in candidates:
        try:
            text = read_source(c.path, c.display, c.data).text
            package = float_package(*module_name(Path(c.path)))
        except Exception:  # any unreadable file says nothing about the dtype
            continue
        yield c.display, text, package


def _noqa_codes(args: argparse.Namespace) -> set[str] | None:
    """The codes ``--add-noqa=CODES`` names (checked like --select); None for all."""
    if args.add_noqa is None or args.add_noqa.upper() == "ALL":
        return None
    from .config import expand_codes

    return expand_codes(_codes(args.add_noqa) or [], "--add-noqa")


def _load_baseline(args: argparse.Namespace, config: Config):
    """``--baseline``, else the config's ``baseline`` (relative to the config file)."""
    if args.write_baseline is not None:
        return None
    path = args.baseline
    if path is None and config.baseline is not None:
        path = config.root / config.baseline
    if path is None:
        return None
    from . import baseline as baselines

    return baselines.load(path)


def _verify(findings: list[Finding], config: Config, cache_dir: Path | None) -> list[str]:
    """Verdicts on ``findings`` (in place); the notices to show."""
    from .verify.runner import NO_TF_NOTICE, verify_findings  # no TensorFlow import

    if importlib.util.find_spec("tensorflow") is None:
        return [NO_TF_NOTICE]

    return verify_findings(findings, config.settings, cache_dir)


def _filter(findings: list[Finding], identities, baseline, changed, inputs: Inputs, verify: bool):
    """Drop the findings the baseline holds and those off the changed lines: (shown, hidden
    per reason, stale baseline entries, how many hidden ones a run without the filter shows)."""
    hidden: dict[str, int] = {}
    would_show: dict[str, int] = {}
    counted_by = None
    stale = 0
    if baseline is not None:
        from . import baseline as baselines
        from .fingerprint import project_path

        analysed = {project_path(c.display, inputs.root) for c in inputs.candidates}
        applied = baselines.apply(baseline, findings, identities, analysed, inputs.root)
        findings, stale = applied.shown, applied.stale
        hidden["baseline"] = applied.hidden
        if applied.would_show is not None:
            would_show["baseline"] = applied.would_show
            if baseline.verified is not None and baseline.verified != verify:
                counted_by = "a verified run" if baseline.verified else "a --no-verify run"
    if changed is not None:
        kept = [f for f in findings if changed.contains(f)]
        hidden["diff_base"] = len(findings) - len(kept)
        findings = kept
    return findings, hidden, stale, Counted(would_show, counted_by)


def _render(args: argparse.Namespace, report: Report) -> str:
    to_terminal = args.output_file is None and _isatty(sys.stdout)
    style = Style(use_colour(args.color, to_terminal))
    if args.statistics:
        from .report import statistics

        if args.format == "json":
            return statistics.render_json(report)
        return statistics.render_text(report, style)
    if args.format in ("text", "concise"):
        return render(args.format, report, style=style, quiet=args.quiet)
    return render(args.format, report)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _emit(args: argparse.Namespace, text: str) -> None:
    """The report goes to stdout, or to ``--output-file`` (its directory is created)."""
    if args.output_file is None:
        sys.stdout.write(text)
        return
    try:
        args.output_file.parent.mkdir(parents=True, exist_ok=True)
        args.output_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {args.output_file}: {exc.strerror or exc}") from None


def _list_errors(errors: list[FileError]) -> None:
    for e in errors:
        print(f"{e.path}: error: {e.message}", file=sys.stderr)


def _write_baseline(
    args, inputs: Inputs, findings: list[Finding], identities, errors, named: frozenset[str]
) -> int:
    from . import baseline as baselines
    from .fingerprint import project_path

    paths = {f.path: project_path(f.path, inputs.root) for f in findings}
    ids, visible = shown_ids(findings, named, args.show_refuted)
    verified = not args.no_verify and importlib.util.find_spec("tensorflow") is not None
    written = baselines.write(args.write_baseline, findings, identities, paths, ids, verified)
    _list_errors(errors)
    files = len({f.path for f in findings})
    _say(
        args,
        f"wrote {written.count} finding{'s' if written.count != 1 else ''} in {files} file"
        f"{'s' if files != 1 else ''} to {args.write_baseline}"
        + (f" ({baseline_breakdown(written, visible, args.no_verify)})" if written.count else "")
        + (f"; {len(errors)} could not be analysed (listed above)" if errors else ""),
    )
    return 2 if errors and not args.exit_zero else 0


def _add_noqa(
    args, inputs: Inputs, shown: list[Finding], codes, errors, options: LintOptions
) -> int:
    from .noqa import add_noqa

    chosen = [f for f in shown if codes is None or f.rule in codes]
    files = {c.display: c.path for c in inputs.candidates}
    result = add_noqa(chosen, files)
    _list_errors(errors)
    skipped = result.skipped + _still_flagged(chosen, result.edited, files, options)
    for why in skipped:
        print(f"tfnumlint: not suppressed: {why}", file=sys.stderr)
    _say(
        args,
        f"added {result.added} noqa directive{'s' if result.added != 1 else ''} "
        f"in {result.files} file{'s' if result.files != 1 else ''}",
    )
    return 2 if errors and not args.exit_zero else 0


def _still_flagged(
    chosen: list[Finding], edited: list[str], files: dict[str, Path], options: LintOptions
) -> list[str]:
    """Lint the edited files again: a directive that did not suppress its finding is reported."""
    from .engine import lint_source

    wanted = {(f.path, f.rule, f.cell, f.line, f.column) for f in chosen}
    static = LintOptions(
        codes=options.codes, severities=options.severities, settings=options.settings
    )
    out = []
    for display in edited:
        try:
            result = lint_source(read_source(files[display], display), static)
        except (SourceError, OSError):
            continue
        for f in result.findings:
            if (f.path, f.rule, f.cell, f.line, f.column) in wanted:
                out.append(f"{location(f)}: {f.rule} is still reported after --add-noqa")
    return out


def main(argv: list[str] | None = None) -> int:
    start = time.perf_counter()
    try:
        return _main(argv)
    finally:
        if stages.enabled():
            stages.report(time.perf_counter() - start)


def _main(argv: list[str] | None) -> int:
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


def _on_large_stack(fn, *args) -> None:
    """Run ``fn`` on a thread with a large stack, as the engine lints: planning fixes parses
    the file again, and a deeply nested expression would overflow the main thread's stack."""
    import threading

    old = threading.stack_size(512 * 1024 * 1024)
    try:
        thread = threading.Thread(target=fn, args=args, daemon=True)
        thread.start()
    finally:
        threading.stack_size(old)
    thread.join()
