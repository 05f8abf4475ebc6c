"""SARIF 2.1.0, as GitHub code scanning accepts it."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..model import Finding, Report
from ..ruledocs import all_docs
from .advice import advice, shown_advice

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "tfnumlint/v1"  # the same value --write-baseline records


def _uri(path: str) -> str:
    """A URI reference: percent-encoded, relative to %SRCROOT% unless the path is absolute."""
    p = PurePath(path)
    return p.as_uri() if p.is_absolute() else quote(p.as_posix(), safe="/")


def _artifact(path: str) -> dict:
    uri = _uri(path)
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}


def _logical(graph: dict[str, Any]) -> list[dict[str, Any]]:
    """The op, and the Keras layer it belongs to when the model file records it."""
    out = [
        {"name": graph.get("op", ""), "fullyQualifiedName": graph.get("op", ""), "kind": "function"}
    ]
    if graph.get("layer"):
        layer = str(graph["layer"])
        out.append(
            {"name": layer.rsplit("/", 1)[-1], "fullyQualifiedName": layer, "kind": "module"}
        )
    return out


def _related_location(ident: int, related: dict[str, Any]) -> dict[str, Any]:
    """A place that explains the finding (the call site that passes the value)."""
    physical: dict[str, Any] = {"artifactLocation": _artifact(related["path"])}
    if related.get("line"):
        physical["region"] = {"startLine": related["line"]}
        if related.get("column"):
            physical["region"]["startColumn"] = related["column"]
    return {"id": ident, "physicalLocation": physical, "message": {"text": related["message"]}}


def _fixes(f: Finding) -> list[dict[str, Any]]:
    """SARIF ``fixes``: the fix's text changes as replacements of character ranges (every
    edit of the file: the rewritten expression, dead assignments, an added import)."""
    fix = f.fix
    if fix is None or not fix.edits:
        return []
    replacements = [
        {
            "deletedRegion": {"charOffset": e["offset"], "charLength": e["length"]},
            "insertedContent": {"text": e["text"]},
        }
        for e in fix.edits
    ]
    status = (fix.proof or {}).get("status", "not run")
    return [
        {
            "description": {"text": f"{fix.message} ({fix.applicability}; proof: {status})"},
            "artifactChanges": [
                {"artifactLocation": _artifact(f.path), "replacements": replacements}
            ],
        }
    ]


def as_dict(report: Report) -> dict:
    docs = all_docs()
    codes = sorted(docs)
    index = {c: i for i, c in enumerate(codes)}
    rules = [
        {
            "id": c,
            "name": docs[c].name,
            "shortDescription": {"text": docs[c].summary or docs[c].name},
            "fullDescription": {"text": docs[c].sections.get("What it does", docs[c].summary)},
            "help": {"text": docs[c].sections.get("Why is this bad", ""), "markdown": docs[c].text},
            "defaultConfiguration": {"level": _LEVEL[docs[c].severity], "enabled": docs[c].default},
        }
        for c in codes
    ]
    results = []
    for f in report.findings:
        text = f.message
        if f.verification.status != "skipped":
            text += f" [{f.verification.status}: {f.verification.detail}]"
        help_text = shown_advice(f)
        if help_text:
            text += f" help: {help_text}"
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index.get(f.rule, 0),
            "level": _LEVEL.get(f.severity, "warning"),
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(f.path),
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.end_line,
                            "endColumn": f.end_column,
                        },
                    }
                }
            ],
            "properties": {"verification": f.verification.to_json()},
        }
        if f.fix is not None:  # applicability, replacement, proof: as the JSON `fix` says
            result["properties"]["fix"] = f.fix.to_json()
            fixes = _fixes(f)
            if fixes:
                result["fixes"] = fixes
        if f.fingerprint:
            result["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
        if f.cell is not None:
            result["properties"]["cell"] = f.cell
        if advice(f):
            result["properties"]["advice"] = advice(f)
        if f.related_rules:  # merged findings of other rules on the same hazard
            result["properties"]["relatedRules"] = list(f.related_rules)
        if f.graph:  # a saved model's op and Keras layer
            result["locations"][0]["logicalLocations"] = _logical(f.graph)
            result["properties"]["graph"] = f.graph
        if f.related:
            result["relatedLocations"] = [
                _related_location(i, r) for i, r in enumerate(f.related, start=1)
            ]
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(e.path)}}],
        }
        for e in report.errors
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tfnumlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not report.errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }


def render(report: Report, **_: object) -> str:
    return json.dumps(as_dict(report), indent=2) + "\n"
