"""Lint one source: parse, build provenance, run the selected checks, place and filter findings."""

from __future__ import annotations

import io
import re
import sys
import threading
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from . import stages
from .analysis.context import Context, Hit
from .analysis.dtypectx import float_package
from .analysis.module import ModuleInfo, build
from .analysis.project import ProjectIndex
from .analysis.project_imports import imports_only
from .analysis.project_model import ModuleSummary
from .analysis.project_summary import Summariser
from .analysis.project_view import ProjectView
from .config import Settings
from .model import FileError, FileResult, Finding
from .parsing import parse_module
from .positions import Positions
from .ruledocs import all_docs
from .rules import CHECKS, Check, load_all
from .source import (
    Source,
    SourceError,
    might_use_tensorflow,
    parse_python,
    syntax_error_message,
)

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_IGNORE = re.compile(r"#\s*tfnumlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)


@dataclass
class ProjectUnit:
    """Where a file sits in the linted project, and what is known about the rest of it."""

    module: str
    is_package: bool
    index: ProjectIndex | None = None  # None: the first round, this file on its own


@dataclass
class Parsed:
    """A file's tree and walk, kept by the process that linted it for the next project round
    (the walk depends on the text alone; what depends on the index is rebuilt each round)."""

    module: cst.Module
    info: ModuleInfo


@dataclass
class UnitOutcome:
    """One file's result, its summary for the index, and the facts it depended on."""

    result: FileResult
    summary: ModuleSummary | None = None
    deps: dict[str, str] = field(default_factory=dict)
    parsed: Parsed | None = field(default=None, repr=False, compare=False)  # never pickled


@dataclass
class LintOptions:
    codes: frozenset[str]
    severities: dict[str, str] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    slice_probes: bool = False  # attach probe programs for the verifier


def suppressed(line_text: str, code: str) -> bool:
    """`# noqa`, `# noqa: TNL102`, `# tfnumlint: ignore[TNL102]` on that line."""
    for pattern in (_NOQA, _IGNORE):
        for m in pattern.finditer(line_text):
            codes = m.group("codes")
            if codes is None:  # bare: everything; an empty `ignore[]` names nothing
                return True
            wanted = {c.strip().upper() for c in re.split(r"[\s,]+", codes) if c.strip()}
            if any(code.startswith(w) for w in wanted):
                return True
    return False


def _comments(text: str) -> dict[int, str] | None:
    """Line -> its comment, so that a ``# noqa`` inside a string suppresses nothing.

    Empty when the text has no suppression marker at all (the common case: no tokenizing);
    None when it does not tokenize (then whole lines are searched)."""
    lowered = text.lower()
    if "noqa" not in lowered and "tfnumlint" not in lowered:
        return {}
    out: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError):
        return None
    return out


def _dispatch_tables(checks: Iterable[Check]):
    by_op: dict[str, list[Check]] = {}
    by_binop: dict[type, list[Check]] = {}
    by_method: dict[str, list[Check]] = {}
    module_checks: list[Check] = []
    for check in checks:
        for op in check.ops:
            by_op.setdefault(op, []).append(check)
        for tp in check.binops:
            by_binop.setdefault(tp, []).append(check)
        for m in check.methods:
            by_method.setdefault(m, []).append(check)
        if check.module:
            module_checks.append(check)
    return by_op, by_binop, by_method, module_checks


def run_checks(
    module: cst.Module,
    options: LintOptions,
    unit: ProjectUnit | None = None,
    info: ModuleInfo | None = None,
) -> tuple[list[tuple[Check, Hit]], list[FileError], Context | None]:
    """Run every selected check on a parsed module; a crashing check becomes an error entry.
    With a ``unit``, provenance also asks the project index (and records what it asked)."""
    load_all()
    if info is None:
        with stages.stage("metadata"):
            info = build(module)
    if not info.imports.uses_tensorflow:
        return [], [], None
    view = ProjectView(unit.index, unit.module, info, unit.is_package) if unit else None
    package = float_package(unit.module, unit.is_package) if unit else None
    ctx = Context(info, options.settings, view, package)
    checks = [c for c in CHECKS if c.code in options.codes]
    by_op, by_binop, by_method, module_checks = _dispatch_tables(checks)
    hits: list[tuple[Check, Hit]] = []
    errors: list[FileError] = []
    failed: set[str] = set()

    origins = ctx.ev.origins

    def run(check: Check, produce) -> None:
        if check.code in failed:
            return
        mark = len(origins)
        try:
            for hit in produce():
                if hit.origin is None and len(origins) > mark:
                    hit.origin = _named_origin(hit.message, origins[mark:])
                hits.append((check, hit))
        except RecursionError:
            failed.add(check.code)
            errors.append(
                FileError("", f"internal error in {check.code}: expression too deeply nested")
            )
        except Exception as exc:  # one rule's bug must not lose the file
            failed.add(check.code)
            errors.append(
                FileError("", f"internal error in {check.code}: {type(exc).__name__}: {exc}")
            )

    with stages.stage("rules"):
        _dispatch(info, ctx, by_op, by_binop, by_method, module_checks, run)
    return hits, errors, ctx


def _dispatch(info: ModuleInfo, ctx: Context, by_op, by_binop, by_method, module_checks, run):
    """Each call and binary operation to the checks that asked for it, then module checks."""
    imports = info.imports
    for site in info.calls:
        func = site.node.func
        op = imports.op(func)
        targets = by_op.get(op, ()) if op else ()
        if isinstance(func, cst.Attribute):
            targets = [*targets, *by_method.get(func.attr.value, ())]
        for check in targets:
            run(check, lambda check=check, site=site: check.fn(site, ctx))
    for site in info.binops:
        for check in by_binop.get(type(site.node.operator), ()):
            run(check, lambda check=check, site=site: check.fn(site, ctx))
    for check in module_checks:
        run(check, lambda check=check: check.fn(ctx))


# libcst's native parser and the analysis recurse on the C stack: a hostile file (thousands of
# nested brackets or unary operators) overflows the default 8 MiB one and kills the process with
# a segfault.  Each file is linted on a thread with a large stack instead (virtual memory: only
# the pages actually used are committed).
_STACK_BYTES = 512 * 1024 * 1024


def lint_source(source: Source, options: LintOptions) -> FileResult:
    """Lint one source on its own (no project index); never raises for bad input."""
    return lint_unit(source, options, None).result


def lint_unit(
    source: Source, options: LintOptions, unit: ProjectUnit | None, parsed: Parsed | None = None
) -> UnitOutcome:
    """Lint one source on a large-stack thread; never raises for bad input.  ``parsed``: the
    tree of this very text from an earlier round (not parsed again)."""
    box: list[UnitOutcome | BaseException] = []

    def work() -> None:
        try:
            box.append(_lint_source(source, options, unit, parsed))
        except BaseException as exc:  # handed back to the caller's thread
            box.append(exc)

    with _STACK_LOCK:
        old = threading.stack_size()
        threading.stack_size(_STACK_BYTES)
        try:
            thread = threading.Thread(target=work, name="tfnumlint-lint", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old)
    thread.join()
    (outcome,) = box
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


_STACK_LOCK = threading.Lock()


def _lint_source(
    source: Source, options: LintOptions, unit: ProjectUnit | None, parsed: Parsed | None = None
) -> UnitOutcome:
    result = FileResult(source.path)
    outcome = UnitOutcome(result)
    if not might_use_tensorflow(source.text):
        result.skipped = True
        tree, error = parse_python(source)
        if error is not None:
            result.errors.append(FileError(source.path, error))
        if unit is not None and tree is not None:  # it may re-export project names (__init__)
            outcome.summary = imports_only(
                source.text, unit.module, unit.is_package, source.path, tree, source.file
            )
        return outcome
    if parsed is None:
        module = _parse(source, result)
        if module is None:
            return outcome
    else:
        module = parsed.module
    return _analyse(source, module, parsed.info if parsed else None, options, unit, outcome)


def _parse(source: Source, result: FileResult) -> cst.Module | None:
    """The tree, or None with the reason in ``result.errors``."""
    try:
        with stages.stage("parse"):
            return parse_module(source.text)
    except cst.ParserSyntaxError as exc:
        line, col = source.locate(exc.raw_line)[1], exc.raw_column + 1
        cell, _ = source.locate(exc.raw_line)
        where = f"cell {cell}, line {line}" if cell else f"line {line}, column {col}"
        message = (
            str(exc.message).splitlines()[0] if getattr(exc, "message", None) else "invalid syntax"
        )
        message = syntax_error_message(source, f"syntax error at {where}: {message}")
        result.errors.append(FileError(source.path, message))
    except RecursionError:
        result.errors.append(
            FileError(source.path, "cannot parse: nested too deeply for the parser")
        )
    except Exception as exc:  # libcst raises a few other types on hostile input
        result.errors.append(FileError(source.path, f"cannot parse: {type(exc).__name__}: {exc}"))
    return None


def _analyse(
    source: Source,
    module: cst.Module,
    info: ModuleInfo | None,
    options: LintOptions,
    unit: ProjectUnit | None,
    outcome: UnitOutcome,
) -> UnitOutcome:
    result = outcome.result
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 20000))
    try:
        hits, errors, ctx = run_checks(module, options, unit, info=info)
        summary = None
        if unit is not None and ctx is not None:
            summary = _summarise(source, ctx, unit)
            if unit.index is None:  # the module's own facts need no other file: settle them now
                hits, errors, ctx, summary = _settle_own_facts(
                    source, module, options, unit, hits, errors, ctx, summary
                )
        result.skipped = ctx is None
        if ctx is not None:
            ctx.path = source.path
        for err in errors:
            err.path = source.path
        result.errors.extend(errors)
        positions = Positions(module, source.text)
        if hits:
            result.findings = _place(source, positions, hits, options, ctx)
        if unit is not None and ctx is not None:
            outcome.summary = summary
            outcome.deps = dict(ctx.ev.project.touched)
            outcome.parsed = Parsed(module, ctx.info)
        elif unit is not None:
            outcome.summary = imports_only(
                source.text, unit.module, unit.is_package, source.path, file=source.file
            )
    except RecursionError:
        result.errors.append(FileError(source.path, "cannot analyse: expression nested too deeply"))
    finally:
        sys.setrecursionlimit(old_limit)
    return outcome


LOCAL_ROUNDS = 3


def _settle_own_facts(source, module, options, unit, hits, errors, ctx, summary):
    """Re-run the checks on the parsed module while facts that come from the module itself
    (a helper's parameters from calls in the same file, inherited methods of local classes)
    change: the first project round then needs no re-parse for them.  The index holds only
    this module, so a fact that depends on another file stays unknown here."""
    for _ in range(LOCAL_ROUNDS):
        if summary is None:
            break
        local = ProjectIndex({unit.module: summary})
        if all(local.digest(k) == d for k, d in ctx.ev.project.touched.items()):
            break
        settled = ProjectUnit(unit.module, unit.is_package, local)
        hits, errors, ctx = run_checks(module, options, settled, info=ctx.info)
        summary = _summarise(source, ctx, settled)
    return hits, errors, ctx, summary


def _summarise(source: Source, ctx, unit: ProjectUnit) -> ModuleSummary | None:
    """The module's summary for the project index."""
    try:
        with stages.stage("summary"):
            return Summariser(
                ctx.info,
                ctx.ev,
                unit.module,
                unit.is_package,
                source.path,
                source.text,
                source.file,
            ).build()
    except RecursionError:
        return None


def _named_origin(message: str, seen: list[tuple]) -> tuple | None:
    """The call site behind a parameter the message names (`z`), if any: a value that only
    passed through the evaluation is not what the finding is about."""
    for origin in seen:
        if f"`{origin[4]}`" in message:
            return origin
    return None


def _origin_note(origin: tuple) -> tuple[str, dict]:
    """`z` is a matmul output at the call `event_rate(hot)` (train.py:19): message and JSON."""
    path, line, col, text, name, desc = origin
    where = f"{path}:{line}" if line else path
    shown = desc.removeprefix(f"`{name}` = ")  # not "`u` is `u` = ..." for `f(u)` passing u
    note = f"; `{name}` is {shown} at the call to `{text}` ({where})"
    related = {
        "path": path,
        "line": line,
        "column": col,
        "message": f"`{name}` = {desc} passed here",
    }
    return note, related


def place_hits(text: str, hits, positions, *, per_site: bool = False) -> list[tuple]:
    """The one placement and suppression path of lint and ``--fix``: ``(check, hit, range)``
    for each hit that has a position, once per (rule, span), unless a ``# noqa`` /
    ``# tfnumlint: ignore`` comment on its line or on its statement's first line names it (a
    marker inside a string is not a comment).  ``per_site`` keeps hits of the same span from
    different dispatch sites apart (a rewrite reads its site)."""
    lines = _LINE_BREAK.split(text)
    comments = _comments(text)

    def noqa_text(line: int) -> str:
        if comments is not None:
            return comments.get(line, "")
        return lines[line - 1] if line <= len(lines) else ""

    kept = []
    seen: set[tuple] = set()
    for check, hit in hits:
        pos = positions.get(hit.node)
        if pos is None:
            continue
        key: tuple = (check.code, pos.start.line, pos.start.column, pos.end.line, pos.end.column)
        if per_site:
            key += (id(hit.site.node),)
        if key in seen:
            continue
        seen.add(key)
        stmt_pos = positions.get(hit.site.statement)
        first_stmt_line = stmt_pos.start.line if stmt_pos else pos.start.line
        if suppressed(noqa_text(pos.start.line), check.code) or suppressed(
            noqa_text(first_stmt_line), check.code
        ):
            continue
        kept.append((check, hit, pos))
    return kept


def _place(source: Source, positions: Positions, hits, options: LintOptions, ctx) -> list[Finding]:
    """Positions for the reported nodes only: PositionProvider is paid for files with hits."""
    with stages.stage("positions"):
        if options.slice_probes:  # the slicer reads positions across a hit's module-level statement
            positions.resolve({hit.site.top for _, hit in hits})
        else:  # a static run places each hit by its own line
            positions.place(hits)
    lines = _LINE_BREAK.split(source.text)  # not splitlines(): a form feed does not end a line
    docs = all_docs()
    findings: list[Finding] = []
    for check, hit, pos in place_hits(source.text, hits, positions):
        line_text = lines[pos.start.line - 1] if pos.start.line <= len(lines) else ""
        doc = docs[check.code]
        message, related = hit.message, None
        if hit.origin is not None and hit.origin[4]:
            note, rel = _origin_note(hit.origin)
            message, related = message + note, [rel]
        cell, line = source.locate(pos.start.line)
        _, end_line = source.locate(pos.end.line)
        finding = Finding(
            path=source.path,
            line=line,
            column=pos.start.column + 1,
            end_line=end_line,
            end_column=pos.end.column + 1,
            rule=check.code,
            name=doc.name,
            severity=options.severities.get(check.code, doc.severity),
            message=message,
            source_line=line_text,
            cell=cell,
            related=related,
        )
        if options.slice_probes:
            from .analysis.probe_annotate import annotate_probe
            from .analysis.slicing.program import attach_program
            from .analysis.slicing.slicer import slice_finding
            from .rules.recipes import recipe_for

            with stages.stage("probes"):
                recipe = recipe_for(check.code).as_probe()
                finding.probe = slice_finding(ctx, hit, check.code, positions, recipe)
                annotate_probe(finding.probe, ctx, hit, positions)  # #11: gradient flow, domains
                # issue #23: the training rung (also for a rule with no witness probe)
                finding.probe = attach_program(finding.probe, ctx, hit, positions, check.code)
        findings.append(finding)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def lint_text(text: str, path: str = "<string>", codes: Iterable[str] | None = None) -> FileResult:
    """Convenience for tests and docs: lint a string with the given (default: all) codes."""
    load_all()
    selected = frozenset(codes) if codes is not None else frozenset(all_docs())
    return lint_source(Source(path, text, text.encode()), LintOptions(codes=selected))


__all__ = [
    "LintOptions",
    "ProjectUnit",
    "SourceError",
    "UnitOutcome",
    "lint_source",
    "lint_text",
    "lint_unit",
    "place_hits",
    "suppressed",
]
