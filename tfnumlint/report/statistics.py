"""``--statistics``: how many findings per rule, and per verification status."""

from __future__ import annotations

import json

from ..model import Report
from .style import PLAIN, STATUS, Style
from .text import FIX_MARKER, fixable

_STATUS_ORDER = ("confirmed", "inconclusive", "refuted", "skipped")


def rows(report: Report) -> list[dict]:
    table: dict[str, dict] = {}
    for f in report.findings:
        row = table.setdefault(
            f.rule, {"code": f.rule, "name": f.name, "count": 0, "fixable": 0, "by_status": {}}
        )
        row["count"] += 1
        row["fixable"] += fixable(f)
        status = f.verification.status
        row["by_status"][status] = row["by_status"].get(status, 0) + 1
    return sorted(table.values(), key=lambda r: (-r["count"], r["code"]))


def by_status(report: Report) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in report.findings:
        out[f.verification.status] = out.get(f.verification.status, 0) + 1
    return {s: out[s] for s in _STATUS_ORDER if s in out}


def _status_text(counts: dict[str, int], style: Style) -> str:
    return ", ".join(
        f"{n} {style(s if s != 'skipped' else 'not verified', STATUS.get(s))}"
        for s, n in ((s, counts[s]) for s in _STATUS_ORDER if s in counts)
    )


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
