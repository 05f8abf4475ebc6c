"""One line per finding, as ruff's ``--output-format concise``."""

from __future__ import annotations

from ..model import Report
from .style import PLAIN, SEVERITY, STATUS, Style
from .text import fix_marker, location, summary


def render(report: Report, style: Style = PLAIN, quiet: bool = False, **_: object) -> str:
    out = []
    for f in report.findings:
        marker = fix_marker(f)
        status = f.verification.status
        verdict = f" ({style(status, STATUS.get(status))})" if status != "skipped" else ""
        out.append(
            f"{style(location(f), 'bold')}: {style(f.rule, 'bold_red')} "
            f"[{style(f.severity, SEVERITY.get(f.severity))}] "
            f"{style(marker, 'cyan') + ' ' if marker else ''}{f.message}{verdict}"
        )
    for e in report.errors:
        out.append(f"{style(e.path, 'bold')}: {style('error', 'bold_red')}: {e.message}")
    if not quiet:
        out += [f"note: {n}" for n in report.notices]
        out.append(summary(report))
    return "\n".join(out) + ("\n" if out else "")
