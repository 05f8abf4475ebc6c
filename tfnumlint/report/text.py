"""Human output in ruff's style: location, rule, message, the source with carets, then the verdict."""

from __future__ import annotations

from ..model import STATUSES, Finding, Report
from ..ruledocs import all_docs
from .advice import shown_advice
from .style import PLAIN, SEVERITY, STATUS, Style

FIX_MARKER = "[*]"


def location(f: Finding) -> str:
    if f.cell is not None:
        return f"{f.path}:cell {f.cell}:{f.line}:{f.column}"
    return f"{f.path}:{f.line}:{f.column}"


def fixable(f: Finding) -> bool:
    """A rewrite exists: the proven fix when --fix/--diff planned one, else the rule's own."""
    if f.fix is not None:
        failed = (f.fix.proof or {}).get("verdict") == "failed"
        return f.fix.applicability in ("safe", "unsafe") and not failed
    doc = all_docs().get(f.rule)
    return doc is not None and doc.fix in ("safe", "unsafe")


def fix_marker(f: Finding) -> str:
    return FIX_MARKER if fixable(f) else ""


def _snippet(f: Finding, style: Style) -> list[str]:
    if not f.source_line:
        return []
    gutter = str(f.line)
    pad = " " * len(gutter)
    line = f.source_line.rstrip("\n").expandtabs(1)
    start = max(f.column - 1, 0)
    end = f.end_column - 1 if f.end_line == f.line else len(line)
    width = max(1, min(end, len(line)) - start)
    bar = style("|", "blue")
    return [
        f"{pad} {bar}",
        f"{style(gutter, 'blue')} {bar} {line}",
        f"{pad} {bar} {' ' * start}{style('^' * width, 'red')}",
    ]


def render_finding(f: Finding, style: Style = PLAIN) -> list[str]:
    marker = fix_marker(f)
    out = [
        f"{style(location(f), 'bold')}: {style(f.rule, 'bold_red')} "
        f"[{style(f.severity, SEVERITY.get(f.severity))}] "
        f"{style(marker, 'cyan') + ' ' if marker else ''}{f.message}"
    ]
    out += _snippet(f, style)
    pad = " " * len(str(f.line))
    v = f.verification
    if v.status != "skipped":
        out.append(f"{pad} = verified {style(v.status, STATUS.get(v.status))}: {v.detail}")
    help_text = shown_advice(f)
    if help_text:
        out.append(f"{pad} = {style('help', 'cyan')}: {help_text}")
    if f.fix is not None:
        out.append(f"{pad} = fix ({f.fix.applicability}): {f.fix.message}")
    return out


def status_counts(findings: list[Finding]) -> dict[str, int]:
    """How many findings have each status, in the canonical order and words (model.STATUSES)."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.verification.status] = counts.get(f.verification.status, 0) + 1
    ordered = {s: counts.pop(s) for s in STATUSES if s in counts}
    return {**ordered, **dict(sorted(counts.items()))}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def summary(report: Report) -> str:
    n = len(report.findings)
    parts = [f"{count} {status}" for status, count in status_counts(report.findings).items()]
    detail = f" ({', '.join(parts)})" if parts else ""
    files = _plural(report.files, "file")
    if n == 0:
        line = f"{'No' if report.errors else 'All clear: no'} findings in {files}."
    else:
        line = f"Found {_plural(n, 'finding')}{detail} in {files}."
    fixes = sum(1 for f in report.findings if fixable(f))
    if fixes:
        line += f" {FIX_MARKER} {fixes} from rules with a rewrite (--diff shows the proven ones)."
    line += _hidden(report)
    if report.stale:
        entries = (
            "1 baseline entry matches"
            if report.stale == 1
            else f"{report.stale} baseline entries match"
        )
        line += f" {entries} no finding any more (stale; --write-baseline refreshes the file)."
    missing = sum(1 for e in report.errors if e.missing)
    if len(report.errors) > missing:
        line += f" {_plural(len(report.errors) - missing, 'file')} could not be analysed."
    if missing:
        verb = "does" if missing == 1 else "do"
        line += f" {_plural(missing, 'path')} named on the command line {verb} not exist."
    return line


def _hidden(report: Report) -> str:
    """`` 17 hidden by the baseline, 9 of them would be shown.``: a baseline records every
    finding per rule, a run shows one per hazard, so the two counts differ."""
    out = ""
    hidden = report.hidden.get("baseline")
    if hidden:
        out += f" {hidden} hidden by the baseline"
        would = report.would_show.get("baseline")
        if would is not None:
            out += f", {would} of them would be shown"
            if report.would_show_by:  # counted when it was written, under other flags
                out += f" by {report.would_show_by}"
        out += "."
    if report.hidden.get("diff_base"):
        out += f" {report.hidden['diff_base']} hidden outside the changed lines."
    return out


def render(report: Report, style: Style = PLAIN, quiet: bool = False, **_: object) -> str:
    out: list[str] = []
    for f in report.findings:
        out += render_finding(f, style)
        out.append("")
    for e in report.errors:
        out.append(f"{style(e.path, 'bold')}: {style('error', 'bold_red')}: {e.message}")
    if not quiet:
        out += [f"note: {notice}" for notice in report.notices]
        out.append(summary(report))
    return "\n".join(out) + ("\n" if out else "")
