"""Command line: ``tfnumlint [PATH ...]``.

Exit codes: 2 on a usage or config error, or when a file could not be analysed; 1 when a shown
finding matches ``--fail-on``; else 0.  ``--exit-zero`` makes everything but a usage or config
error exit 0.

The arguments are declared in ``cli_args.py``, the paths and the project root are settled in
``cli_inputs.py``; this module runs the stages and reports.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from . import collector, progress, stages
from .cache import default_dir
from .cli_args import (
    build_parser,
    check_usage,
    code_list,
    explain,
    list_rules,
)
from .cli_inputs import Inputs, gather_inputs, source_reader
from .config import Config, ConfigError, named_codes, resolve_codes
from .engine import LintOptions
from .model import Counted, FileError, Finding, Report
from .models import ModelOptions, input_ranges, lint_models, split_models
from .report import render
from .report.notes import baseline_breakdown, gated_notes, refuted_notes
from .report.style import Style, use_colour
from .report.text import location
from .runner import Job, analyse_run, apply_per_file_ignores, default_jobs
from .shown import show, shown_ids
from .source import SourceError, read_source


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
    check_usage(args)
    if args.probe_timeout is not None:  # the TensorFlow workers and the verdict cache read it
        os.environ["TFNUMLINT_PROBE_TIMEOUT"] = repr(args.probe_timeout)
    if args.profile:
        stages.enable()
    progress.configure(False if args.quiet else None)
    start = time.perf_counter()
    cwd = Path.cwd()
    inputs = gather_inputs(args, cwd)
    config = inputs.config
    codes = resolve_codes(config, code_list(args.select), code_list(args.ignore))
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
    jobs = args.jobs or default_jobs()
    bar = progress.Progress(len(inputs.candidates), "analysing", "files", minimum=20)
    # the JSON and SARIF fix descriptions start from the trees the pass parsed
    describing = args.format in ("json", "sarif") and not fixing and not recording
    with collector.keeping(), bar:
        analysed = analyse_run(inputs.candidates, job, jobs, bar, keep_fixable=describing)
    ranges = input_ranges(args.input_range)
    lint_graphs = models and not args.no_verify  # a saved model needs TensorFlow
    graph_options = ModelOptions(
        codes,
        config.severity,
        config.graph_ignore,
        ranges,
        cache_dir,
        dict(config.settings.lr_thresholds),
    )
    results = analysed.results + (lint_models(models, graph_options) if lint_graphs else [])
    apply_per_file_ignores(results, config)
    findings = [f for r in results for f in r.findings]
    errors = sorted(
        [*inputs.missing, *(e for r in results for e in r.errors)],
        key=lambda e: (e.path, e.message),
    )

    from . import fingerprint

    source_of = source_reader(inputs)
    scoped = recording or baseline is not None
    identities = fingerprint.assign(findings, inputs.root, source_of, scoped)
    named = named_codes(config, code_list(args.select))
    if recording:
        for n in _verify(findings, config, cache_dir, jobs) if verify and findings else []:
            _say(args, n)
        return _write_baseline(args, inputs, findings, identities, errors, named)
    # hidden findings are never verified: the gate's cost follows what it shows
    findings, hidden, stale, would_show = _filter(
        findings, identities, baseline, changed, inputs, verify
    )
    with stages.stage("verification"):
        notices = _verify(findings, config, cache_dir, jobs) if verify and findings else []
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

        with stages.stage("fix descriptions"):  # its checks count as metadata, provenance, rules
            _on_large_stack(
                describe_fixes,
                _in_shown_files(findings, named, args.show_refuted),
                inputs.candidates,
                options,
                analysed.units,
                cache_dir,
                job.fingerprint,
                jobs,
                analysed.trees,
            )
    analysed.release_trees()
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

    packages: dict[str, tuple[str, ...]] = {}
    for c in candidates:
        try:
            text = read_source(c.path, c.display, c.data).text
            package = float_package(*module_name(c.path, packages))
        except Exception:  # any unreadable file says nothing about the dtype
            continue
        yield c.display, text, package


def _noqa_codes(args: argparse.Namespace) -> set[str] | None:
    """The codes ``--add-noqa=CODES`` names (checked like --select); None for all."""
    if args.add_noqa is None or args.add_noqa.upper() == "ALL":
        return None
    from .config import expand_codes

    return expand_codes(code_list(args.add_noqa) or [], "--add-noqa")


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


def _verify(
    findings: list[Finding], config: Config, cache_dir: Path | None, jobs: int
) -> list[str]:
    """Verdicts on ``findings`` (in place), from up to ``jobs`` workers; the notices to show."""
    from .verify.runner import NO_TF_NOTICE, verify_findings  # no TensorFlow import

    if importlib.util.find_spec("tensorflow") is None:
        return [NO_TF_NOTICE]

    return verify_findings(findings, config.settings, cache_dir, jobs)


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


def _in_shown_files(
    findings: list[Finding], named: frozenset[str], show_refuted: bool
) -> list[Finding]:
    """The findings of the files where the report shows one: a file whose every finding is
    refuted or gated shows no fix, so it is not planned (nor linted again per rewrite).  A
    shown file keeps all its findings: a hazard group's fix may come from a hidden member."""
    ids, _ = shown_ids(findings, named, show_refuted)
    files = {f.path for f in findings if id(f) in ids}
    return [f for f in findings if f.path in files]


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
        if argv is not None:  # in-process: its objects are collectable again; the command
            collector.thaw()  # line exits next, and the exit's collection need not walk them


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
