"""``--statistics``: how many findings per rule, and per verification status."""

from __future__ import annotations

import json

from ..model import Report
from .style import PLAIN, STATUS, Style
from .text import FIX_MARKER, fixable, status_counts


def rows(report: Report) -> list[dict]:
    table: dict[str, dict] = {}
    for f in report.findings:
        row = table.setdefault(
            f.rule, {"code": f.rule, "name": f.name, "count": 0, "fixable": 0, "findings": []}
        )
        row["count"] += 1
        row["fixable"] += fixable(f)
        row["findings"].append(f)
    for row in table.values():
        row["by_status"] = status_counts(row.pop("findings"))
    return sorted(table.values(), key=lambda r: (-r["count"], r["code"]))


def by_status(report: Report) -> dict[str, int]:
    return status_counts(report.findings)


def _status_text(counts: dict[str, int], style: Style) -> str:
    return ", ".join(f"{n} {style(s, STATUS.get(s))}" for s, n in counts.items())


def render_text(report: Report, style: Style = PLAIN) -> str:
    table = rows(report)
    if not table:
        return "No findings.\n"
    total = sum(r["count"] for r in table)
    width = len(str(total))
    name_width = max(len(r["name"]) for r in table)
    out = []
    for r in table:
        marker = FIX_MARKER if r["fixable"] else "   "
        out.append(
            f"{r['count']:>{width}}  {style(r['code'], 'bold_red')}  {style(marker, 'cyan')} "
            f"{r['name']:<{name_width}}  {_status_text(r['by_status'], style)}"
        )
    out.append(f"{total:>{width}}  total   {_status_text(by_status(report), style)}")
    return "\n".join(out) + "\n"


def render_json(report: Report) -> str:
    data = {"rules": rows(report), "by_status": by_status(report), "total": len(report.findings)}
    return json.dumps(data, indent=2) + "\n"
