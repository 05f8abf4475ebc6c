"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding."""

from __future__ import annotations

from ..model import Report
from .advice import shown_advice

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, **_: object) -> str:
    out = []
    for f in report.findings:
        message = f.message
        if f.verification.status != "skipped":
            message += f"\n{f.verification.status}: {f.verification.detail}"
        help_text = shown_advice(f)
        if help_text:
            message += f"\nhelp: {help_text}"
        props = (
            f"file={_escape_prop(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},"
            f"title={_escape_prop(f'{f.rule} ({f.name})')}"
        )
        out.append(f"::{_LEVEL.get(f.severity, 'warning')} {props}::{_escape_data(message)}")
    for e in report.errors:
        out.append(
            f"::error file={_escape_prop(e.path)},title=tfnumlint::{_escape_data(e.message)}"
        )
    return "\n".join(out) + ("\n" if out else "")
