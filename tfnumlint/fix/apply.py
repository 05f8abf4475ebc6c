"""``--fix`` / ``--diff``: plan, prove and apply rewrites, ruff style.

For every file with fixable findings: parse with libcst, re-run the checks that fired, build a
rewrite per hit (:mod:`.rewrites`), prove it (:mod:`.proof` builds the job; the verification
worker evaluates it, and the verdict is cached like a finding's), then apply the non-overlapping proven fixes, drop assignments the rewrite made dead,
add ``import tensorflow as tf`` only when the file has no TensorFlow alias, and re-lint.  Up to
:data:`MAX_PASSES` passes, so overlapping fixes (TNL103 around TNL102) settle; a second run
changes nothing.

* Only safe fixes are applied unless ``unsafe`` (``--unsafe-fixes``); suggestions never are.
* A fix whose proof fails is not offered.  Without TensorFlow no fix can be proven, so none is
  applied and one notice says so.  ``--no-verify`` does not skip the proofs of ``--fix``.
* Notebooks are not rewritten (a notice says so).
"""

from __future__ import annotations

import difflib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..analysis.module import contains, parent_map
from ..engine import LintOptions, lint_source, place_hits, run_checks
from ..model import Finding, Fix
from ..source import Source, SourceError, read_source
from . import proof as proofs
from .rewrites import API, Keep, Plan, Renderer, Src, fixable, fixable_codes, plan_for, pure

MAX_PASSES = 4


@dataclass
class _Namer:
    prefix: str  # the TensorFlow alias to write (tf, tensorflow, ...)
    import_line: str | None  # the import to add when the file has none
    backend: str | None  # a keras.backend alias, used when it offers every op of a fix


def namer_for(ctx) -> _Namer:
    aliases = ctx.info.imports.aliases
    for wanted in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
        locals_ = sorted(
            (a for a, d in aliases.items() if d == wanted), key=lambda a: (a != "tf", a)
        )
        if locals_:
            return _Namer(locals_[0], None, None)
    backend = next(
        (a for a, d in aliases.items() if d in ("tensorflow.keras.backend", "keras.backend")), None
    )
    taken = set(aliases) | set(ctx.info.root.bindings) | set(ctx.info.root.params)
    if "tf" not in taken:
        return _Namer("tf", "import tensorflow as tf", backend)
    return _Namer("tensorflow", "import tensorflow", backend)


@dataclass
class _Work:
    """One file being fixed."""

    display: str
    path: Path
    source: Source
    text: str
    findings: list[Finding]
    applied: int = 0
    plans_first: list[tuple[Finding | None, Plan]] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)


class _Replace(cst.CSTTransformer):
    def __init__(
        self, mapping: dict[int, cst.CSTNode], remove: set[int], parents: dict[int, cst.CSTNode]
    ):
        self.mapping = mapping
        self.remove = remove
        self.parents = parents

    def on_leave(self, original, updated):
        new = self.mapping.get(id(original))
        if new is not None:
            return _fit(original, new, self.parents.get(id(original)))
        if id(original) in self.remove:
            return cst.RemoveFromParent()
        return updated


def _fit(original, new, parent):
    """Keep the original's own parentheses; add some where precedence needs them."""
    lpar = getattr(original, "lpar", ())
    if lpar:
        return new.with_changes(lpar=original.lpar, rpar=original.rpar)
    operand_of = (
        cst.BinaryOperation,
        cst.UnaryOperation,
        cst.Attribute,
        cst.Subscript,
        cst.Comparison,
    )
    needs = isinstance(parent, operand_of) or (
        isinstance(parent, cst.Call) and parent.func is original
    )
    if isinstance(new, (cst.BinaryOperation, cst.UnaryOperation)) and needs:
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return new


def _analyse(text: str, options: LintOptions):
    module = cst.parse_module(text)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        hits, _errors, ctx = run_checks(module, options)
    finally:
        sys.setrecursionlimit(old)
    if ctx is None:
        return module, None, [], {}
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    placed = place_hits(text, hits, positions, per_site=True)
    kept = [(check.code, hit, pos) for check, hit, pos in placed]
    return module, ctx, kept, positions


def _render(plan: Plan, module: cst.Module, namer: _Namer) -> dict[int, cst.CSTNode] | None:
    ops = plan.ops
    backend = namer.backend if namer.import_line and all(API[o][1] for o in ops) else None
    renderer = Renderer(module, namer.prefix, backend)
    out: dict[int, cst.CSTNode] = {}
    for e in plan.edits:
        try:
            if isinstance(e.new, Keep):
                out[id(e.node)] = renderer.keep_node(e.new)
            else:
                out[id(e.node)] = cst.parse_expression(renderer.text(e.new))
        except (cst.ParserSyntaxError, TypeError, KeyError):
            return None
    plan.uses_import = backend is None and bool(ops) and namer.import_line is not None  # type: ignore[attr-defined]
    return out


def _span(positions, node) -> tuple[int, int, int, int]:
    pos = positions.get(node)
    if pos is None:
        return (0, 0, 0, 0)
    return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    a0, a1 = (a[0], a[1]), (a[2], a[3])
    b0, b1 = (b[0], b[1]), (b[2], b[3])
    return a0 < b1 and b0 < a1


def _covers(outer: tuple[int, int, int, int], inner: tuple[int, int, int, int]) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (
        outer[2],
        outer[3],
    )


def _dead_statements(ctx, parents, plans: list[Plan], rendered: dict[int, cst.CSTNode]) -> set[int]:
    """Statement lines of the plans' fold assignments that no longer have a reader."""
    out: set[int] = set()
    edits = [e for p in plans for e in p.edits]
    folds = {(name, id(scope)): (name, scope) for p in plans for name, scope in p.folds}
    for name, scope in folds.values():
        if scope.kind != "function":
            continue
        bindings = scope.bindings.get(name, [])
        if len(bindings) != 1 or bindings[0].value is None or bindings[0].index is not None:
            continue
        value = bindings[0].value
        assign = parents.get(id(value))
        line = parents.get(id(assign))
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and not line.trailing_whitespace.comment
            and not any(e.comment for e in line.leading_lines)
        ):
            continue
        if not pure(ctx, value) or any(contains(e.node, line) for e in edits):
            continue
        total = _count_names(scope.node, name)
        inside = sum(_count_names(e.node, name) for e in edits if not _nested(e, edits))
        added = sum(_count_names(n, name) for k, n in rendered.items() if not _nested_id(k, edits))
        if total - 1 - inside + added == 0:
            body = parents.get(id(line))
            if isinstance(body, cst.IndentedBlock) and len(body.body) > 1:
                out.add(id(line))
    return out


def _nested(edit, edits) -> bool:
    return any(o is not edit and contains(o.node, edit.node) for o in edits)


def _nested_id(key: int, edits) -> bool:
    own = [e for e in edits if id(e.node) == key]
    return bool(own) and _nested(own[0], edits)


def _count_names(node: cst.CSTNode, name: str) -> int:
    count = 0
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name) and n.value == name:
            count += 1
        if isinstance(n, cst.Attribute):
            stack.append(n.value)  # x.name is not a use of name
            continue
        stack.extend(n.children)
    return count


def _add_import(module: cst.Module, line: str) -> cst.Module:
    stmt = cst.parse_statement(line + "\n")
    body = list(module.body)
    last = -1
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(
            isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body
        ):
            last = i
        elif i == 0 and isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr):
            continue  # the docstring
        elif last >= 0:
            break
    if last < 0:
        first = 0
        if (
            body
            and isinstance(body[0], cst.SimpleStatementLine)
            and isinstance(body[0].body[0], cst.Expr)
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        ):
            first = 1
        while (
            first < len(body)
            and isinstance(body[first], cst.SimpleStatementLine)
            and any(
                isinstance(b, cst.ImportFrom)
                and b.module is not None
                and getattr(b.module, "value", "") == "__future__"
                for b in body[first].body
            )
        ):
            first += 1
        body.insert(first, stmt)
    else:
        body.insert(last + 1, stmt)
    return module.with_changes(body=body)


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


def _finding_key(f: Finding) -> tuple:
    return (f.rule, f.line, f.column)


class _Prover:
    """Proofs go to the verification worker; results are cached on disk like verdicts (and
    in memory across the passes of one run)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache: dict[str, dict] = {}
        self.cache_dir = cache_dir

    def run(self, jobs: list[dict | None]) -> list[dict]:
        from ..verify.runner import run_proofs

        keys = [json.dumps(j, sort_keys=True) if j is not None else None for j in jobs]
        todo = {
            k: j for k, j in zip(keys, jobs, strict=True) if k is not None and k not in self.cache
        }
        if todo:
            results = run_proofs(list(todo.values()), self.cache_dir)
            for k, r in zip(todo, results, strict=True):
                self.cache[k] = r
        return [
            self.cache[k] if k is not None else {"verdict": "failed", "detail": "nothing to probe"}
            for k in keys
        ]


def _plan_file(work: _Work, options: LintOptions, first: bool, prover_jobs: list, entries: list):
    """Plans (and proof jobs) for one pass over one file."""
    try:
        module, ctx, hits, positions = _analyse(work.text, options)
    except Exception:
        return None
    if ctx is None:
        return None
    namer = namer_for(ctx)
    by_key = {_finding_key(f): f for f in work.findings}
    plans = []
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
        plan.refuted = finding is not None and finding.verification.status == "refuted"  # type: ignore[attr-defined]
        if not plan.edits:
            plans.append((finding, plan, None, None))
            continue
        rendered = _render(plan, module, namer)
        if rendered is None:
            continue
        if len(plan.edits) == 1:
            plan.span = _span(positions, plan.edits[0].node)
            plan.replacement = module.code_for_node(next(iter(rendered.values()))).strip()
        else:
            spans = [_span(positions, e.node) for e in plan.edits]
            plan.span = min(s[:2] for s in spans) + max(s[2:] for s in spans)
            plan.replacement = "; ".join(module.code_for_node(n).strip() for n in rendered.values())
        job = proofs.build_job(ctx, positions, hit, plan, finding.verification if finding else None)
        plans.append((finding, plan, rendered, job))
        prover_jobs.append(job)
    entries.append((work, module, ctx, namer, plans))
    return True


def _apply_pass(entries, unsafe: bool, first: bool) -> list[_Work]:
    changed = []
    for work, module, ctx, namer, plans in entries:
        parents = parent_map(module)
        chosen = []
        for finding, plan, rendered, _job in plans:
            if first and finding is not None:
                work.plans_first.append((finding, plan))
            if plan.applicability == "suggestion" or rendered is None:
                continue
            if plan.proof is None or plan.proof.get("verdict") == "failed":
                work.failed.add(plan.rule)
                continue
            if plan.applicability == "unsafe" and not unsafe:
                continue
            chosen.append((plan, rendered))
        shown = [p.span for p, _r in chosen if not getattr(p, "refuted", False)]
        chosen = [
            (p, r)
            for p, r in chosen
            if not getattr(p, "refuted", False)
            or any(p.span != s and _covers(p.span, s) for s in shown)
        ]
        chosen.sort(key=lambda pr: (pr[0].span[:2], tuple(-x for x in pr[0].span[2:])))
        mapping: dict[int, cst.CSTNode] = {}
        remove: set[int] = set()
        taken: list[tuple[int, int, int, int]] = []
        need_import = False
        applied: list[Plan] = []
        for plan, rendered in chosen:
            spans = [plan.span]
            if any(_overlaps(s, t) for s in spans for t in taken):
                continue
            taken.extend(spans)
            mapping.update(rendered)
            applied.append(plan)
            need_import |= bool(getattr(plan, "uses_import", False))
            work.applied += 1
        if not mapping:
            continue
        remove |= _dead_statements(ctx, parents, applied, mapping)
        new_module = module.visit(_Replace(mapping, remove, parents))
        if need_import and namer.import_line:
            new_module = _add_import(new_module, namer.import_line)
        code = new_module.code
        try:
            compile(code, work.display, "exec")
        except SyntaxError:
            continue
        if code != work.text:
            work.text = code
            changed.append(work)
    return changed


def _proved(plan: Plan, result: dict) -> None:
    plan.proof = result
    verdict = result.get("verdict")
    if verdict == "unsafe" and plan.applicability == "safe":
        plan.applicability = "unsafe"


def _run_passes(works: list[_Work], options: LintOptions | None, unsafe: bool, prove) -> None:
    """Plan, prove (``prove(jobs) -> results``; None: nothing can be proven) and apply."""
    codes = options.codes if options is not None else fixable_codes()
    settings = options.settings if options is not None else None
    pending = works
    first = True
    for _ in range(MAX_PASSES):
        if not pending:
            break
        entries: list = []
        jobs: list = []
        for work in pending:
            fix_codes = frozenset(c for c in codes if fixable(c))
            if first and work.findings:
                fix_codes = frozenset(f.rule for f in work.findings)
            opts = (
                LintOptions(codes=fix_codes, settings=settings)
                if settings is not None
                else LintOptions(codes=fix_codes)
            )
            _plan_file(work, opts, first and bool(work.findings), jobs, entries)
        if prove is not None:
            results = prove(jobs)
        else:
            results = [
                {"verdict": "failed", "detail": "TensorFlow is not installed: cannot prove"}
                for _ in jobs
            ]
        it = iter(results)
        for _work, _module, _ctx, _namer, plans in entries:
            for _finding, plan, rendered, _job in plans:
                if rendered is not None:
                    _proved(plan, next(it))
        pending = _apply_pass(entries, unsafe, first)
        first = False


def fix_text(text: str, codes, *, unsafe: bool = False, prove=None, path: str = "<string>") -> str:
    """Fix one source text in memory (tests, docs).  ``prove`` defaults to the TF worker."""
    source = Source(path, text, text.encode())
    work = _Work(path, Path(path), source, text, [])
    prover = prove if prove is not None else _Prover().run
    _run_passes([work], LintOptions(codes=frozenset(codes)), unsafe, prover)
    return work.text


def apply_fixes(
    findings: list[Finding],
    candidates,
    *,
    write: bool,
    unsafe: bool,
    show_diff: bool,
    options: LintOptions | None = None,
    cache_dir: Path | None = None,
) -> tuple[int, str]:
    """Fix the files behind ``findings``.  Returns (exit code, diff text or a notice)."""
    by_display = {c.display: c for c in candidates}
    files: dict[str, list[Finding]] = {}
    for f in findings:
        if fixable(f.rule):
            files.setdefault(f.path, []).append(f)
    notices: list[str] = []
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
        works.append(_Work(display, cand.path, source, source.text, fs))
    have_tf = proofs.tensorflow_available()
    _run_passes(works, options, unsafe, _Prover(cache_dir).run if have_tf else None)

    # attach the first-pass fix to each finding (JSON `fix`)
    for work in works:
        for finding, plan in work.plans_first:
            if plan.proof is not None and plan.proof.get("verdict") == "failed":
                continue
            finding.fix = _fix_json(plan)

    changed = [w for w in works if w.text != w.source.text]
    available_unsafe = sum(
        1
        for w in works
        for _f, p in w.plans_first
        if p.applicability == "unsafe" and p.proof and p.proof.get("verdict") != "failed"
    )
    unproven = sum(
        1
        for w in works
        for _f, p in w.plans_first
        if p.edits and (p.proof or {}).get("verdict") == "failed"
    )
    fixed = sum(w.applied for w in changed)
    if not have_tf and any(p.edits for w in works for _f, p in w.plans_first):
        notices.append("TensorFlow is not installed: fixes cannot be proven, so none was applied")
    if show_diff:
        text = "".join(_diff(w) for w in changed)
        summary = f"Would fix {fixed} finding{'s' if fixed != 1 else ''}"
        if not unsafe and available_unsafe:
            summary += f" ({available_unsafe} more with --unsafe-fixes)"
        for n in [*notices, summary]:
            print(f"tfnumlint: {n}", file=sys.stderr)
        return (1 if changed else 0), text
    if write:
        for w in changed:
            _write(w)
        _refresh(findings, changed, options)
    msg = f"fixed {fixed} finding{'s' if fixed != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}"
    extra = []
    if not unsafe and available_unsafe:
        extra.append(f"{available_unsafe} more with --unsafe-fixes")
    if unproven and have_tf:
        extra.append(f"{unproven} not offered: the proof failed")
    if extra:
        msg += " (" + "; ".join(extra) + ")"
    notices.append(msg)
    return 0, "\n".join(notices)


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

    for work in changed:
        old = [f for f in findings if f.path == work.display]
        codes = options.codes if options is not None else frozenset(all_docs())
        opts = (
            LintOptions(
                codes=codes,
                severities=options.severities if options else {},
                settings=options.settings,
            )
            if options is not None
            else LintOptions(codes=codes)
        )
        result = lint_source(Source(work.display, work.text, work.text.encode()), opts)
        carried = {(f.rule, f.source_line.strip(), f.message): f.verification for f in old}
        fresh = []
        for f in result.findings:
            v = carried.get((f.rule, f.source_line.strip(), f.message))
            if v is not None:
                f.verification = v
            fresh.append(f)
        findings[:] = [f for f in findings if f.path != work.display] + fresh


__all__ = ["Src", "apply_fixes", "namer_for"]
