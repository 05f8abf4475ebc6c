"""``--fix`` / ``--diff``: plan, prove and apply rewrites, ruff style.

For every file with fixable findings: parse with libcst, re-run the checks that fired, build a
rewrite per hit (:mod:`.rewrites`), render it in the file's spelling (:mod:`.render`), prove it
(:mod:`.proof` builds the job; the verification worker evaluates it, and the verdict is cached
like a finding's), then splice the non-overlapping proven fixes in, drop assignments the
rewrite made dead, add ``import tensorflow as tf`` only when the file has no TensorFlow alias
(:mod:`.splice`), and re-lint.  Up to :data:`MAX_PASSES` passes, so overlapping fixes (TNL103
around TNL102) settle; a second run changes nothing.

* Only safe fixes are applied unless ``unsafe`` (``--unsafe-fixes``); suggestions never are,
  and notebooks are not rewritten (a notice says so).
* A fix whose proof fails is not offered.  Without TensorFlow no fix can be proven, so none is
  applied and one notice says so.  ``--no-verify`` does not skip the proofs of ``--fix``.
"""

from __future__ import annotations

import difflib
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange

from .. import collector
from ..analysis.context import Context, Hit
from ..analysis.module import parent_map
from ..cache import Cache
from ..config import Settings
from ..discovery import Candidate
from ..engine import LintOptions, Parsed, ProjectUnit, lint_unit, place_hits, run_checks
from ..model import Finding, Fix
from ..parsing import parse_module, reparse_changed
from ..positions import NodePositions
from ..source import Source, SourceError, read_source
from . import described, forked, tally
from . import proof as proofs
from .hazards import counts, groups_by_hit, hit_spans, judge, leaves_detail, text_edits
from .ir import Plan
from .render import Namer, namer_for, render_plan
from .rewrites import fixable, fixable_codes, plan_for
from .splice import Rendered, Span, covers, overlaps, splice_plans

MAX_PASSES = 4

Placed = tuple[str, Hit, CodeRange]  # rule code, hit, where it sits


@dataclass
class _Work:
    """One file being fixed."""

    display: str
    path: Path
    source: Source
    text: str
    findings: list[Finding]  # every finding of the file (the hazard groups need them all)
    unit: ProjectUnit | None = None  # its place in the linted project: cross-module facts
    applied: list[tuple[Plan, Finding | None]] = field(default_factory=list)  # every pass
    applied_later: int = 0  # plans applied after the first pass (hazards found on new text)
    plans_first: list[tuple[Finding, Plan]] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)
    touched: dict[str, str] = field(default_factory=dict)  # project facts its analyses read


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
    text: str,
    options: LintOptions,
    unit: ProjectUnit | None = None,
    parsed: Parsed | None = None,
    tree: cst.Module | None = None,
) -> tuple[cst.Module, Context | None, list[Placed], NodePositions]:
    """Parse (unless lint's tree and walk of this text are ``parsed``, or ``tree`` is this
    text's tree) and run the checks with lint's project facts (``unit``); hits placed,
    suppressed and positioned as lint does."""
    if parsed is not None:
        module = parsed.module
    else:
        module = tree if tree is not None else parse_module(text)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        hits, _errors, ctx = run_checks(module, options, unit, parsed.info if parsed else None)
    finally:
        sys.setrecursionlimit(old)
    positions = NodePositions(module, text)
    if ctx is None:
        return module, None, [], positions
    positions.place(hits)
    placed = place_hits(text, hits, positions, per_site=True)
    kept = [(check.code, hit, pos) for check, hit, pos in placed]
    return module, ctx, kept, positions


def _span(positions: NodePositions, node: cst.CSTNode) -> Span:
    pos = positions.get(node)
    if pos is None:
        return (0, 0, 0, 0)
    return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)


def _finding_key(f: Finding) -> tuple[str, int, int]:
    return (f.rule, f.line, f.column)


def _plan_file(
    work: _Work, options: LintOptions, first: bool, parsed: Parsed | None = None, prove: bool = True
) -> _FilePass | None:
    """Plans (and, to ``prove`` them, proof jobs) for one pass over one file; None when it
    does not analyse.  Each rendered plan is spliced alone and the file linted again
    (:mod:`.hazards`): a plan that leaves a rule of its hazard group, or adds one, gets a
    failed proof and no job."""
    try:
        module, ctx, hits, positions = _analyse(work.text, options, work.unit, parsed)
    except Exception:
        return None
    if ctx is None:
        return None
    _note_facts(work, ctx)
    namer = namer_for(ctx)
    parents = positions.parents
    spans = hit_spans([(code, pos) for code, _hit, pos in hits])
    groups = groups_by_hit(spans)
    before = counts(spans)
    by_key = {_finding_key(f): f for f in work.findings}
    planned = []
    for i, (code, hit, pos) in enumerate(hits):
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
        spliced = splice_plans(work.display, module, ctx, namer, parents, [(plan, rendered)])
        if spliced is None:
            continue
        new_text, new_module = spliced
        after = _relint(new_text, options, work, reparse_changed(module, new_module))
        if after is None:
            continue
        plan.edits_text = text_edits(work.text, new_text)
        judge(plan, [spans[j] for j in groups[i]], before, after)
        if plan.leaves:
            plan.proof = {"verdict": "failed", "detail": leaves_detail(plan)}
            planned.append(_Planned(finding, plan, rendered))
            continue
        verification = finding.verification if finding else None
        job = proofs.build_job(ctx, positions, hit, plan, verification) if prove else None
        planned.append(_Planned(finding, plan, rendered, job))
    return _FilePass(work, module, ctx, namer, planned)


def _relint(
    text: str, options: LintOptions, work: _Work, tree: cst.Module | None = None
) -> Counter[str] | None:
    """The hits per rule of the same checks on a rewritten text, whose tree ``tree`` is when
    given (None: it does not analyse)."""
    try:
        _module, ctx, hits, _positions = _analyse(text, options, work.unit, tree=tree)
    except Exception:
        return None
    if ctx is None:
        return None
    _note_facts(work, ctx)
    found = counts(hit_spans([(code, pos) for code, _hit, pos in hits]))
    ctx.info.release()  # freed by reference counting, not by the collector (collector.py)
    return found


def _note_facts(work: _Work, ctx: Context) -> None:
    if ctx.ev.project is not None:
        work.touched.update(ctx.ev.project.touched)


def _describe(
    plan: Plan,
    module: cst.Module,
    positions: NodePositions,
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
    """The proven, non-overlapping plans this run may apply.  Safe plans are chosen first and
    unsafe ones only where no safe plan sits, so ``--unsafe-fixes`` only adds fixes; within
    each, the plan that removes the most hazards wins, then the outermost."""
    work = entry.work
    candidates = []
    for p in entry.planned:
        plan = p.plan
        if first and p.finding is not None:
            work.plans_first.append((p.finding, plan))
        if plan.applicability == "suggestion" or p.rendered is None:
            continue
        if plan.leaves or plan.proof is None or plan.proof.get("verdict") == "failed":
            work.failed.add(plan.rule)
            continue
        if plan.applicability == "unsafe" and not unsafe:
            continue
        candidates.append((plan, p.rendered))
    shown = [p.span for p, _r in candidates if not p.refuted]
    candidates = [
        (p, r)
        for p, r in candidates
        if not p.refuted or any(p.span != s and covers(p.span, s) for s in shown)
    ]
    taken: list[tuple[Plan, Rendered]] = []
    for applicability in ("safe", "unsafe"):
        pool = [(p, r) for p, r in candidates if p.applicability == applicability]
        pool.sort(key=lambda pr: _preference(pr[0]))
        for plan, rendered in pool:
            if not any(overlaps(plan.span, t.span) for t, _r in taken):
                taken.append((plan, rendered))
    return taken


def _preference(plan: Plan) -> tuple:
    """Most hazards removed first, then by position, outermost first."""
    return (-sum(plan.removed.values()), plan.span[:2], tuple(-x for x in plan.span[2:]))


def _apply_pass(entries: list[_FilePass], unsafe: bool, first: bool) -> list[_Work]:
    """Splice each file's chosen plans in; the files whose text changed."""
    changed = []
    for entry in entries:
        work = entry.work
        chosen = _choose(entry, unsafe, first)
        if not chosen:
            continue
        parents = parent_map(entry.module)
        spliced = splice_plans(work.display, entry.module, entry.ctx, entry.namer, parents, chosen)
        if spliced is None:
            continue
        code = spliced[0]
        finding_of = {id(p.plan): p.finding for p in entry.planned}
        for plan, _r in chosen:
            work.applied.append((plan, finding_of.get(id(plan))))
            work.applied_later += 0 if first else 1
        if code != work.text:
            work.text = code
            changed.append(work)
    return changed


def _failed_proofs(jobs: list[proofs.Job | None]) -> list[proofs.Result]:
    return [
        {"verdict": "failed", "detail": "TensorFlow is not installed: cannot prove"} for _ in jobs
    ]


Memo = dict[tuple[str, str, frozenset[str], bool], _FilePass]  # planned passes, by text


def _run_passes(
    works: list[_Work],
    options: LintOptions | None,
    unsafe: bool,
    prove: proofs.Prove | None,
    memo: Memo | None = None,
) -> None:
    """Plan, prove (``prove(jobs) -> results``; None: nothing can be proven) and apply.  The
    first pass lints with the rules of the file's findings (the hazard groups the report
    shows); later passes with every enabled rule.  ``memo`` keeps the planned passes, so a
    second run in the other mode plans (and re-lints) a text only once: planning does not
    depend on the mode, only the choice does."""
    codes = options.codes if options is not None else fixable_codes()
    settings = options.settings if options is not None else Settings()
    pending = works
    first = True
    for _ in range(MAX_PASSES):
        if not pending:
            break
        entries: list[_FilePass] = []
        for work in pending:
            lint_codes = frozenset(codes)
            if first and work.findings:
                lint_codes = frozenset(f.rule for f in work.findings)
            opts = LintOptions(codes=lint_codes, settings=settings)
            key = (work.display, work.text, lint_codes, first)
            entry = memo.get(key) if memo is not None else None
            if entry is not None:
                entry = _FilePass(work, entry.module, entry.ctx, entry.namer, entry.planned)
            else:
                entry = _plan_file(work, opts, first and bool(work.findings))
                if entry is not None and memo is not None:
                    memo[key] = entry
            if entry is not None:
                entries.append(entry)
        to_prove = [
            p for e in entries for p in e.planned if p.rendered is not None and not p.plan.leaves
        ]
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
    """The files behind fixable findings, read again (notebooks are left alone), each with
    all of its findings: a fix must remove the other rules of its hazard group too."""
    by_display = {c.display: c for c in candidates}
    files: dict[str, list[Finding]] = {}
    for f in findings:
        files.setdefault(f.path, []).append(f)
    works: list[_Work] = []
    for display, fs in sorted(files.items()):
        cand = by_display.get(display)
        if cand is None or not any(fixable(f.rule) for f in fs):
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


def _copies(works: list[_Work]) -> list[_Work]:
    """Fresh works over the same files and findings, for a second run in the other mode."""
    return [_Work(w.display, w.path, w.source, w.source.text, w.findings, w.unit) for w in works]


def _fixed(works: list[_Work]) -> int:
    return sum(tally.fixed_count(w.findings, w.applied, w.applied_later) for w in works)


def describe_fixes(
    findings: list[Finding],
    candidates: Iterable[Candidate],
    options: LintOptions | None = None,
    units: Mapping[str, ProjectUnit] | None = None,
    cache_dir: Path | None = None,
    fingerprint: str = "",
    jobs: int = 1,
    trees: Mapping[str, tuple[bytes, Parsed]] | None = None,
) -> None:
    """Attach each finding's fix without proving it (JSON and SARIF of a plain lint run): the
    plan, its edits and hazards, and a proof that says it was not run in this invocation.
    With a ``cache_dir``, a file's fixes are kept like its findings (:mod:`.described`); the
    files the cache misses are planned in ``jobs`` forked processes (:mod:`.forked`).
    ``trees``: display path -> (raw text, tree and walk) lint kept, used while the text is that."""
    works = _works(findings, candidates, units or {}, [])
    codes = options.codes if options is not None else fixable_codes()
    settings = options.settings if options is not None else Settings()
    cache = Cache(cache_dir, described.NAMESPACE)
    todo: list[tuple[_Work, LintOptions, str]] = []
    for work in works:
        opts = LintOptions(codes=frozenset(f.rule for f in work.findings), settings=settings)
        if not opts.codes:
            opts = LintOptions(codes=frozenset(codes), settings=settings)
        k = described.entry_key(fingerprint, work.unit, work.source.raw, opts.codes, work.findings)
        if not described.load(cache, k, work.unit, work.findings):
            todo.append((work, opts, k))

    def describe(i: int) -> list[Fix | None]:
        work, opts, k = todo[i]
        kept = (trees or {}).get(work.display)
        parsed = kept[1] if kept is not None and kept[0] == work.source.raw else None
        _describe_file(work, opts, k, cache, parsed)
        return [f.fix for f in work.findings]  # one pickle: a hazard group's fix stays shared

    if jobs > 1 and len(todo) > 1:
        weights = [len(work.source.raw) for work, _, _ in todo]
        described_fixes = forked.run_forked(describe, weights, min(jobs, len(todo)))
        if described_fixes is not None:
            for (work, _, _), fixes in zip(todo, described_fixes, strict=True):
                for f, fix in zip(work.findings, fixes, strict=True):
                    f.fix = fix
            return
    with collector.paused():  # as in the static pass: young collections between files only
        for i in range(len(todo)):
            collector.between_files()
            describe(i)


def _describe_file(
    work: _Work, opts: LintOptions, k: str, cache: Cache, parsed: Parsed | None = None
) -> None:
    """Plan one file's fixes, attach them to its findings and cache them."""
    entry = _plan_file(work, opts, True, parsed, prove=False)
    if entry is not None:
        plans_first = [(p.finding, p.plan) for p in entry.planned if p.finding is not None]
        tally.attach(work.findings, plans_first, [], proven=False)
        entry.ctx.info.release()  # nothing reads the walk again
    if cache.dir is not None:
        described.store(cache, k, work.findings, work.touched)


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
    module's facts is found again, and fixed.  Without ``unsafe`` the run is repeated in
    memory with unsafe fixes (proofs come from the first run's memory), so the "M more with
    --unsafe-fixes" it reports is what ``--unsafe-fixes`` then fixes."""
    notices: list[str] = []
    works = _works(findings, candidates, units or {}, notices)
    have_tf = proofs.tensorflow_available()
    prover = proofs.Prover(cache_dir).run if have_tf else None
    memo: Memo = {}
    _run_passes(works, options, unsafe, prover, memo)

    firsts = [plan for w in works for _f, plan in w.plans_first]
    for work in works:  # attach each hazard group's fix to its findings (JSON `fix`)
        applied = [p for p, _f in work.applied]
        tally.attach(work.findings, work.plans_first, applied, proven=have_tf)

    changed = [w for w in works if w.text != w.source.text]
    fixed = _fixed(changed)
    more = 0
    if not unsafe and have_tf and any(p.applicability == "unsafe" for p in firsts):
        shadow = _copies(works)
        _run_passes(shadow, options, True, prover, memo)
        more = max(0, _fixed(shadow) - fixed)
    unproven = _unproven(works)
    if not have_tf and any(p.edits for p in firsts):
        notices.append("TensorFlow is not installed: fixes cannot be proven, so none was applied")
    if show_diff:
        text = "".join(_diff(w) for w in changed)
        summary = f"Would fix {_plural(fixed, 'finding')}"
        if more:
            summary += f" ({more} more with --unsafe-fixes)"
        for n in [*notices, summary]:
            print(f"tfnumlint: {n}", file=sys.stderr)
        return (1 if changed else 0), text
    if write:
        for w in changed:
            _write(w)
        _refresh(findings, changed, options)
    msg = f"fixed {_plural(fixed, 'finding')} in {_plural(len(changed), 'file')}"
    extra = []
    if more:
        extra.append(f"{more} more with --unsafe-fixes")
    if unproven and have_tf:
        extra.append(f"{unproven} not offered: the proof failed")
    if extra:
        msg += " (" + "; ".join(extra) + ")"
    notices.append(msg)
    return 0, "\n".join(notices)


def _unproven(works: list[_Work]) -> int:
    """Findings with a rewrite none of whose plans is offered (each proof failed)."""
    count = 0
    for w in works:
        fixes = {id(f.fix): f.fix for f in w.findings if f.fix is not None and f.fix.edits}
        count += sum(1 for fx in fixes.values() if fx.proof and fx.proof["status"] == "failed")
    return count


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
        carried = {(f.rule, f.source_line.strip(), f.message): f for f in old}
        fresh = []
        for f in result.findings:
            was = carried.get((f.rule, f.source_line.strip(), f.message))
            if was is not None:
                f.verification = was.verification
                if was.line == f.line and was.fix is not None and not was.fix.edits:
                    f.fix = was.fix  # a suggestion: it does not depend on where the text moved
            fresh.append(f)
        findings[:] = [f for f in findings if f.path != work.display] + fresh
