"""``--fix`` / ``--diff``: plan, prove and apply rewrites, ruff style.

For every file with fixable findings: parse with libcst, re-run the checks that fired, build a
rewrite per hit (:mod:`.rewrites`), render it in the file's spelling (:mod:`.render`), prove it
(:mod:`.proof` builds the job; the verification worker evaluates it, and the verdict is cached
like a finding's), then splice the non-overlapping proven fixes in, drop assignments the
rewrite made dead, add ``import tensorflow as tf`` only when the file has no TensorFlow alias
(:mod:`.splice`), and re-lint.  Up to :data:`MAX_PASSES` passes, so overlapping fixes (TNL103
around TNL102) settle; a second run changes nothing.

* Only safe fixes are applied unless ``unsafe`` (``--unsafe-fixes``); suggestions never are.
* A fix whose proof fails is not offered.  Without TensorFlow no fix can be proven, so none is
  applied and one notice says so.  ``--no-verify`` does not skip the proofs of ``--fix``.
* Notebooks are not rewritten (a notice says so).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..analysis.context import Context, Hit
from ..analysis.module import parent_map
from ..config import Settings
from ..discovery import Candidate
from ..engine import LintOptions, ProjectUnit, lint_unit, place_hits, run_checks
from ..model import Finding, Fix
from ..source import Source, SourceError, read_source
from . import proof as proofs
from .ir import Plan
from .render import Namer, namer_for, render_plan
from .rewrites import fixable, fixable_codes, plan_for
from .splice import Replace, Span, add_import, covers, dead_statements, overlaps

MAX_PASSES = 4

Rendered = dict[int, cst.CSTNode]  # id of an original node -> its replacement
Placed = tuple[str, Hit, CodeRange]  # rule code, hit, where it sits


@dataclass
class _Work:
    """One file being fixed."""

    display: str
    path: Path
    source: Source
    text: str
    findings: list[Finding]
    unit: ProjectUnit | None = None  # its place in the linted project: cross-module facts
    applied: int = 0
    plans_first: list[tuple[Finding, Plan]] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)


@dataclass
class _Planned:
    """One plan of a pass: the finding it fixes (first pass), its rendering and proof job."""

    finding: Finding | None
    plan: Plan
    rendered: Rendered | None  # None: a suggestion, nothing to splice or prove
    job: proofs.Job | None = None


@dataclass
class _FilePass:
    """One file in one pass: its parse, and the plans made on it."""

    work: _Work
    module: cst.Module
    ctx: Context
    namer: Namer
    planned: list[_Planned]


def _analyse(
    text: str, options: LintOptions, unit: ProjectUnit | None = None
) -> tuple[cst.Module, Context | None, list[Placed], Mapping[cst.CSTNode, CodeRange]]:
    """Parse and run the checks, with the project facts lint had (``unit``), placed and
    suppressed exactly as lint places them."""
    module = cst.parse_module(text)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        hits, _errors, ctx = run_checks(module, options, unit)
    finally:
        sys.setrecursionlimit(old)
    if ctx is None:
        return module, None, [], {}
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    placed = place_hits(text, hits, positions, per_site=True)
    kept = [(check.code, hit, pos) for check, hit, pos in placed]
    return module, ctx, kept, positions


def _span(positions: Mapping[cst.CSTNode, CodeRange], node: cst.CSTNode) -> Span:
    pos = positions.get(node)
    if pos is None:
        return (0, 0, 0, 0)
    return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)


def _fix_json(plan: Plan) -> Fix:
    line, col, end_line, end_col = plan.span
    return Fix(
        applicability=plan.applicability,
        message=plan.message,
        replacement=plan.replacement or None,
        line=line,
        column=col + 1 if line else 0,
        end_line=end_line,
        end_column=end_col + 1 if end_line else 0,
        proof=plan.proof,
    )


def _finding_key(f: Finding) -> tuple[str, int, int]:
    return (f.rule, f.line, f.column)


def _plan_file(work: _Work, options: LintOptions, first: bool) -> _FilePass | None:
    """Plans (and proof jobs) for one pass over one file; None when it does not analyse."""
    try:
        module, ctx, hits, positions = _analyse(work.text, options, work.unit)
    except Exception:
        return None
    if ctx is None:
        return None
    namer = namer_for(ctx)
    by_key = {_finding_key(f): f for f in work.findings}
    planned = []
    for code, hit, pos in hits:
        if not fixable(code):
            continue
        finding = by_key.get((code, pos.start.line, pos.start.column + 1)) if first else None
        if first and finding is None:
            continue
        plan = plan_for(ctx, hit, code)
        if plan is None:
            continue
        # a refuted finding's fix is applied only when it subsumes a shown one (TNL103 around TNL102)
        plan.refuted = finding is not None and finding.verification.status == "refuted"
        if not plan.edits:
            planned.append(_Planned(finding, plan, None))
            continue
        rendered = render_plan(plan, module, namer)
        if rendered is None:
            continue
        _describe(plan, module, positions, rendered)
        verification = finding.verification if finding else None
        job = proofs.build_job(ctx, positions, hit, plan, verification)
        planned.append(_Planned(finding, plan, rendered, job))
    return _FilePass(work, module, ctx, namer, planned)


def _describe(
    plan: Plan,
    module: cst.Module,
    positions: Mapping[cst.CSTNode, CodeRange],
    rendered: Rendered,
) -> None:
    """The plan's span and replacement text, as the JSON ``fix`` reports them."""
    if len(plan.edits) == 1:
        plan.span = _span(positions, plan.edits[0].node)
        plan.replacement = module.code_for_node(next(iter(rendered.values()))).strip()
    else:
        spans = [_span(positions, e.node) for e in plan.edits]
        start, end = min(s[:2] for s in spans), max(s[2:] for s in spans)
        plan.span = (start[0], start[1], end[0], end[1])
        plan.replacement = "; ".join(module.code_for_node(n).strip() for n in rendered.values())


def _choose(entry: _FilePass, unsafe: bool, first: bool) -> list[tuple[Plan, Rendered]]:
    """The proven plans this run may apply, outermost first at each position."""
    work = entry.work
    chosen = []
    for p in entry.planned:
        plan = p.plan
        if first and p.finding is not None:
            work.plans_first.append((p.finding, plan))
        if plan.applicability == "suggestion" or p.rendered is None:
            continue
        if plan.proof is None or plan.proof.get("verdict") == "failed":
            work.failed.add(plan.rule)
            continue
        if plan.applicability == "unsafe" and not unsafe:
            continue
        chosen.append((plan, p.rendered))
    shown = [p.span for p, _r in chosen if not p.refuted]
    chosen = [
        (p, r)
        for p, r in chosen
        if not p.refuted or any(p.span != s and covers(p.span, s) for s in shown)
    ]
    chosen.sort(key=lambda pr: (pr[0].span[:2], tuple(-x for x in pr[0].span[2:])))
    return chosen


def _apply_pass(entries: list[_FilePass], unsafe: bool, first: bool) -> list[_Work]:
    """Splice each file's chosen, non-overlapping plans in; the files whose text changed."""
    changed = []
    for entry in entries:
        work, module = entry.work, entry.module
        parents = parent_map(module)
        mapping: Rendered = {}
        taken: list[Span] = []
        need_import = False
        applied: list[Plan] = []
        for plan, rendered in _choose(entry, unsafe, first):
            if any(overlaps(plan.span, t) for t in taken):
                continue
            taken.append(plan.span)
            mapping.update(rendered)
            applied.append(plan)
            need_import |= plan.uses_import
            work.applied += 1
        if not mapping:
            continue
        remove = dead_statements(entry.ctx, parents, applied, mapping)
        new_module = module.visit(Replace(mapping, remove, parents))
        if need_import and entry.namer.import_line:
            new_module = add_import(new_module, entry.namer.import_line)
        code = new_module.code
        try:
            compile(code, work.display, "exec")
        except SyntaxError:
            continue
        if code != work.text:
            work.text = code
            changed.append(work)
    return changed


def _failed_proofs(jobs: list[proofs.Job | None]) -> list[proofs.Result]:
    return [
        {"verdict": "failed", "detail": "TensorFlow is not installed: cannot prove"} for _ in jobs
    ]


def _run_passes(
    works: list[_Work], options: LintOptions | None, unsafe: bool, prove: proofs.Prove | None
) -> None:
    """Plan, prove (``prove(jobs) -> results``; None: nothing can be proven) and apply."""
    codes = options.codes if options is not None else fixable_codes()
    settings = options.settings if options is not None else Settings()
    pending = works
    first = True
    for _ in range(MAX_PASSES):
        if not pending:
            break
        entries: list[_FilePass] = []
        for work in pending:
            fix_codes = frozenset(c for c in codes if fixable(c))
            if first and work.findings:
                fix_codes = frozenset(f.rule for f in work.findings)
            opts = LintOptions(codes=fix_codes, settings=settings)
            entry = _plan_file(work, opts, first and bool(work.findings))
            if entry is not None:
                entries.append(entry)
        to_prove = [p for e in entries for p in e.planned if p.rendered is not None]
        jobs = [p.job for p in to_prove]
        results = prove(jobs) if prove is not None else _failed_proofs(jobs)
        for p, result in zip(to_prove, results, strict=True):
            proofs.proved(p.plan, result)
        pending = _apply_pass(entries, unsafe, first)
        first = False


def fix_text(
    text: str,
    codes: Iterable[str],
    *,
    unsafe: bool = False,
    prove: proofs.Prove | None = None,
    path: str = "<string>",
) -> str:
    """Fix one source text in memory (tests, docs).  ``prove`` defaults to the TF worker."""
    source = Source(path, text, text.encode())
    work = _Work(path, Path(path), source, text, [])
    prover = prove if prove is not None else proofs.Prover().run
    _run_passes([work], LintOptions(codes=frozenset(codes)), unsafe, prover)
    return work.text


def _works(
    findings: list[Finding],
    candidates: Iterable[Candidate],
    units: Mapping[str, ProjectUnit],
    notices: list[str],
) -> list[_Work]:
    """The files behind fixable findings, read again (notebooks are left alone)."""
    by_display = {c.display: c for c in candidates}
    files: dict[str, list[Finding]] = {}
    for f in findings:
        if fixable(f.rule):
            files.setdefault(f.path, []).append(f)
    works: list[_Work] = []
    for display, fs in sorted(files.items()):
        cand = by_display.get(display)
        if cand is None:
            continue
        try:
            source = read_source(cand.path, display)
        except SourceError:
            continue
        if source.is_notebook:
            notices.append(f"{display}: notebooks are not rewritten by --fix")
            continue
        works.append(_Work(display, cand.path, source, source.text, fs, units.get(display)))
    return works


def _offered(plan: Plan) -> bool:
    """The proof did not fail (a suggestion has none and is always offered)."""
    return plan.proof is None or plan.proof.get("verdict") != "failed"


def apply_fixes(
    findings: list[Finding],
    candidates: Iterable[Candidate],
    *,
    write: bool,
    unsafe: bool,
    show_diff: bool,
    options: LintOptions | None = None,
    cache_dir: Path | None = None,
    units: Mapping[str, ProjectUnit] | None = None,
) -> tuple[int, str]:
    """Fix the files behind ``findings``.  Returns (exit code, diff text or a notice).
    ``units``: each file's place in the linted project, so that a finding that needs another
    module's facts is found again, and fixed."""
    notices: list[str] = []
    works = _works(findings, candidates, units or {}, notices)
    have_tf = proofs.tensorflow_available()
    _run_passes(works, options, unsafe, proofs.Prover(cache_dir).run if have_tf else None)

    firsts = [plan for w in works for _f, plan in w.plans_first]
    for work in works:  # attach the first-pass fix to each finding (JSON `fix`)
        for finding, plan in work.plans_first:
            if _offered(plan):
                finding.fix = _fix_json(plan)

    changed = [w for w in works if w.text != w.source.text]
    available_unsafe = sum(
        1 for p in firsts if p.applicability == "unsafe" and p.proof and _offered(p)
    )
    unproven = sum(1 for p in firsts if p.edits and not _offered(p))
    fixed = sum(w.applied for w in changed)
    if not have_tf and any(p.edits for p in firsts):
        notices.append("TensorFlow is not installed: fixes cannot be proven, so none was applied")
    if show_diff:
        text = "".join(_diff(w) for w in changed)
        summary = f"Would fix {_plural(fixed, 'finding')}"
        if not unsafe and available_unsafe:
            summary += f" ({available_unsafe} more with --unsafe-fixes)"
        for n in [*notices, summary]:
            print(f"tfnumlint: {n}", file=sys.stderr)
        return (1 if changed else 0), text
    if write:
        for w in changed:
            _write(w)
        _refresh(findings, changed, options)
    msg = f"fixed {_plural(fixed, 'finding')} in {_plural(len(changed), 'file')}"
    extra = []
    if not unsafe and available_unsafe:
        extra.append(f"{available_unsafe} more with --unsafe-fixes")
    if unproven and have_tf:
        extra.append(f"{unproven} not offered: the proof failed")
    if extra:
        msg += " (" + "; ".join(extra) + ")"
    notices.append(msg)
    return 0, "\n".join(notices)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _diff(work: _Work) -> str:
    return "".join(
        difflib.unified_diff(
            work.source.text.splitlines(keepends=True),
            work.text.splitlines(keepends=True),
            fromfile=f"a/{work.display}",
            tofile=f"b/{work.display}",
        )
    )


def _write(work: _Work) -> None:
    """Write the fixed text with the file's own line endings and byte-order mark."""
    raw = work.source.raw
    newline = "\r\n" if b"\r\n" in raw else "\n"
    text = work.text if newline == "\n" else work.text.replace("\r\n", "\n").replace("\n", "\r\n")
    bom = b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b""
    work.path.write_bytes(bom + text.encode("utf-8"))


def _refresh(findings: list[Finding], changed: list[_Work], options: LintOptions | None) -> None:
    """Replace the findings of rewritten files by a fresh static lint of the new text."""
    if not changed:
        return
    from ..ruledocs import all_docs

    if options is not None:
        opts = LintOptions(
            codes=options.codes, severities=options.severities, settings=options.settings
        )
    else:
        opts = LintOptions(codes=frozenset(all_docs()))
    for work in changed:
        old = [f for f in findings if f.path == work.display]
        source = Source(work.display, work.text, work.text.encode())
        result = lint_unit(source, opts, work.unit).result
        carried = {(f.rule, f.source_line.strip(), f.message): f.verification for f in old}
        fresh = []
        for f in result.findings:
            v = carried.get((f.rule, f.source_line.strip(), f.message))
            if v is not None:
                f.verification = v
            fresh.append(f)
        findings[:] = [f for f in findings if f.path != work.display] + fresh
