"""Human output in ruff's style: location, rule, message, the source with carets, then the verdict."""

from __future__ import annotations

from ..model import Finding, Report


def _location(f: Finding) -> str:
    if f.cell is not None:
        return f"{f.path}:cell {f.cell}:{f.line}:{f.column}"
    return f"{f.path}:{f.line}:{f.column}"


def _snippet(f: Finding) -> list[str]:
    if not f.source_line:
        return []
    gutter = str(f.line)
    pad = " " * len(gutter)
    line = f.source_line.rstrip("\n").expandtabs(1)
    start = max(f.column - 1, 0)
    end = f.end_column - 1 if f.end_line == f.line else len(line)
    width = max(1, min(end, len(line)) - start)
    return [f"{pad} |", f"{gutter} | {line}", f"{pad} | {' ' * start}{'^' * width}"]


def _verdict(f: Finding) -> str | None:
    v = f.verification
    if v.status == "skipped":
        return None
    return f"{v.status}: {v.detail}"


def render_finding(f: Finding) -> list[str]:
    out = [f"{_location(f)}: {f.rule} [{f.severity}] {f.message}"]
    out += _snippet(f)
    pad = " " * len(str(f.line))
    verdict = _verdict(f)
    if verdict:
        out.append(f"{pad} = verified {verdict}")
    if f.fix is not None:
        out.append(f"{pad} = fix ({f.fix.applicability}): {f.fix.message}")
    return out


def summary(report: Report) -> str:
    n = len(report.findings)
    statuses: dict[str, int] = {}
    for f in report.findings:
        statuses[f.verification.status] = statuses.get(f.verification.status, 0) + 1
    parts = [
        f"{count} {status}" for status, count in sorted(statuses.items()) if status != "skipped"
    ]
    if statuses.get("skipped"):
        parts.append(f"{statuses['skipped']} not verified")
    detail = f" ({', '.join(parts)})" if parts else ""
    files = f"{report.files} file{'s' if report.files != 1 else ''}"
    if n == 0:
        line = f"All clear: no findings in {files}."
    else:
        line = f"Found {n} finding{'s' if n != 1 else ''}{detail} in {files}."
    if report.errors:
        line += f" {len(report.errors)} file{'s' if len(report.errors) != 1 else ''} could not be analysed."
    return line


def render(report: Report, **_: object) -> str:
    out: list[str] = []
    for f in report.findings:
        out += render_finding(f)
        out.append("")
    for e in report.errors:
        out.append(f"{e.path}: error: {e.message}")
    for notice in report.notices:
        out.append(f"note: {notice}")
    out.append(summary(report))
    return "\n".join(out) + "\n"
