"""Plain data passed between the pipeline stages: findings, verdicts, fixes, errors."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# every verification status, in the order reports list them: the one word each output uses
STATUSES = ("confirmed", "inconclusive", "refuted", "skipped")


@dataclass
class Verification:
    status: str = "skipped"  # confirmed | refuted | inconclusive | skipped
    detail: str = "the verifier did not run on this finding"
    symptom: str | None = None
    dtype: str | None = None
    inputs: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None
    seconds: float = 0.0
    # a confirmation's evidence as traced (the probe, its shapes): what --emit-repro rebuilds
    repro: dict[str, Any] | None = None
    # the gates the verdict passed, in order: each one's status after it, and why it changed
    trail: list[dict[str, str]] | None = None

    @property
    def rung(self) -> str | None:
        """The evidence a confirmation rests on: "witness" (the slice at a witness point) or
        "training" (a training simulation)."""
        return (self.repro or {}).get("rung") if self.status == "confirmed" else None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and k != "repro"}


@dataclass
class Fix:
    """A finding's fix: the rewritten expression (``replacement`` over line/column..), every
    change to the file's text (``edits``: offset, length, lines, text), the rules it removes,
    and its proof (``status``: proven | failed | not run)."""

    applicability: str  # safe | unsafe | suggestion
    message: str
    replacement: str | None = None
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    proof: dict[str, Any] | None = None
    rules: list[str] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    name: str
    severity: str
    message: str
    source_line: str = ""
    cell: int | None = None  # notebook cell (1-based) when the file is a notebook
    verification: Verification = field(default_factory=Verification)
    fix: Fix | None = None
    probe: dict[str, Any] | None = None  # the sliced probe program, for the verifier
    fingerprint: str | None = None  # stable identity for baselines and SARIF (see fingerprint.py)
    related_rules: list[str] = field(default_factory=list)  # merged: same hazard, other rules
    related: list[dict[str, Any]] | None = None  # e.g. the call site that passes the value
    repro: str | None = None  # the reproducer script written for it (--emit-repro)
    # a saved model's finding: the op, its Keras layer, the author's line (debug info)
    graph: dict[str, Any] | None = None

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.rule, self.message)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "verification": self.verification.to_json(),
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.cell is not None:
            out["cell"] = self.cell
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        if self.related_rules:
            out["related_rules"] = list(self.related_rules)
        if self.related:
            out["related"] = self.related
        if self.verification.rung is not None:
            out["rung"] = self.verification.rung
        if self.repro is not None:
            out["repro"] = self.repro
        if self.graph is not None:
            out["graph"] = self.graph
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        data = dict(data)
        data.pop("rung", None)  # derived from the verification
        data["verification"] = Verification(**_known(Verification, data.get("verification")))
        fix = data.get("fix")
        data["fix"] = Fix(**fix) if fix else None
        return cls(**data)


MISSING_PATH = "no such file or directory"  # the error of a named path that does not exist


@dataclass
class FileError:
    path: str
    message: str

    @property
    def missing(self) -> bool:
        return self.message == MISSING_PATH

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message}


@dataclass
class FileResult:
    """Everything one file produced; what the cache stores."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped: bool = False  # no TensorFlow/Keras import: not analysed


@dataclass
class Report:
    findings: list[Finding]
    errors: list[FileError]
    files: int
    seconds: float
    notices: list[str] = field(default_factory=list)
    hidden: dict[str, int] = field(default_factory=dict)  # why -> count: baseline, diff_base
    stale: int = 0  # baseline entries that no finding matches any more
    # why -> how many of the findings hidden for that reason a run without it shows
    would_show: dict[str, int] = field(default_factory=dict)
    would_show_by: str | None = None  # when the baseline counted under other flags than this run


@dataclass
class Counted:
    """How many hidden findings a run without the filter shows, and by which run if not this."""

    counts: dict[str, int] = field(default_factory=dict)
    by: str | None = None


def _known(cls: type, data: dict[str, Any] | None) -> dict[str, Any]:
    """The keys of ``data`` that ``cls`` has as fields: a verdict written by another build of
    the tool (a field added or dropped since) still reads, instead of stopping the run."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in (data or {}).items() if k in names}
