"""The JSON contract: ``{"version": 1, "tool", "findings", "errors", "summary"}``."""

from __future__ import annotations

import json

from .. import __version__
from ..model import Report
from .advice import advice
from .statistics import by_status


def as_dict(report: Report) -> dict:
    by_rule: dict[str, int] = {}
    for f in report.findings:
        by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
    return {
        "version": 1,
        "tool": {"name": "tfnumlint", "version": __version__},
        "findings": [{**f.to_json(), "advice": advice(f)} for f in report.findings],
        "errors": [e.to_json() for e in report.errors],
        "summary": {
            "files": report.files,
            "findings": len(report.findings),
            "by_rule": dict(sorted(by_rule.items())),
            "by_status": by_status(report),
            "hidden": dict(sorted(report.hidden.items())),
            "hidden_would_show": dict(sorted(report.would_show.items())),
            "baseline_stale": report.stale,
            "seconds": round(report.seconds, 3),
        },
    }


def render(report: Report, **_: object) -> str:
    return json.dumps(as_dict(report), indent=2) + "\n"
