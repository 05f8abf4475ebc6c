"""Saved models as lint inputs: which paths are models, and their findings.

The parent side only: a SavedModel directory, a ``.keras``/``.h5`` file or a ``.pb``/
``.pbtxt`` GraphDef is sent to the verification worker (``{"graph": ...}``, answered by
``verify/graphs/lint.py``), whose hazards come back without rule codes; each becomes a
finding of the rule that declares it (``rules/graph.py``), at the model's path, line 1, with
the op's name as its source line, so every report format, ``--select``, the baseline and
``graph-ignore`` work on it.  No TensorFlow here.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import Cache, key
from .discovery import MODEL_SUFFIXES, Candidate, is_saved_model
from .model import FileError, FileResult, Finding, Fix, Verification
from .optimizers import OPTIMIZERS
from .ruledocs import all_docs

DEFAULT_TIMEOUT = 600.0
GRAPH_FIX = (
    "a saved graph is not rewritten: apply the stable form in the code that builds the model"
)
NO_VERIFY_NOTICE = (
    "{n} saved model{s} not analysed: linting a model runs TensorFlow (drop --no-verify)"
)


def is_model(path: Path) -> bool:
    return is_saved_model(path) or (path.is_file() and path.suffix.lower() in MODEL_SUFFIXES)


def split(candidates: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """(source files, model inputs)."""
    models = [c for c in candidates if c.data is None and is_model(c.path)]
    chosen = {id(c) for c in models}
    return [c for c in candidates if id(c) not in chosen], models


def split_models(candidates: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """As :func:`split`, without a stat of each file when no path can be a model."""
    if not any(c.path.suffix.lower() in MODEL_SUFFIXES or c.path.is_dir() for c in candidates):
        return candidates, []
    return split(candidates)


class InputRangeError(ValueError):
    pass


def input_ranges(specs: list[str]) -> dict[str, list[float]]:
    """:func:`parse_input_ranges` for the command line: a bad one is a usage error."""
    from .config import ConfigError

    try:
        return parse_input_ranges(specs)
    except InputRangeError as exc:
        raise ConfigError(str(exc)) from None


def parse_input_ranges(specs: list[str]) -> dict[str, list[float]]:
    """``NAME=LO:HI`` strings -> {name: [lo, hi]}."""
    out: dict[str, list[float]] = {}
    for spec in specs:
        name, eq, bounds = spec.partition("=")
        lo_text, colon, hi_text = bounds.partition(":")
        try:
            lo, hi = float(lo_text), float(hi_text)
        except ValueError:
            lo = hi = float("nan")
        if not (name.strip() and eq and colon) or not lo <= hi:
            raise InputRangeError(
                f"--input-range {spec!r}: expected NAME=LO:HI with LO <= HI (e.g. image=0:255)"
            )
        out[name.strip()] = [lo, hi]
    return out


@dataclass
class ModelOptions:
    codes: frozenset[str]
    severities: dict[str, str] = field(default_factory=dict)
    graph_ignore: list[str] = field(default_factory=list)
    input_ranges: dict[str, list[float]] = field(default_factory=dict)
    cache_dir: Path | None = None
    # the training rules' "high" learning rate per optimizer family (config settings)
    lr_thresholds: dict[str, float] = field(
        default_factory=lambda: {f: o.high_lr for f, o in OPTIMIZERS.items()}
    )


def lint_models(models: list[Candidate], options: ModelOptions) -> list[FileResult]:
    """One FileResult per model, in order; a model that does not load is a FileError."""
    from .verify.runner import serve, tf_version  # no TensorFlow import

    version = tf_version()
    if version is None:
        reason = "linting a saved model needs TensorFlow (install tensorflow-cpu or tensorflow)"
        return [FileResult(c.display, errors=[FileError(c.display, reason)]) for c in models]
    cache = Cache(options.cache_dir, "graph")
    ranges = json.dumps(options.input_ranges, sort_keys=True)
    # without a cache, no digest: hashing a large model's every byte is time for nothing
    keys = [
        key(model_digest(c.path), version, ranges) if options.cache_dir is not None else ""
        for c in models
    ]
    answers: list[dict[str, Any] | None] = [cache.get(k) for k in keys]
    todo = [i for i, a in enumerate(answers) if not isinstance(a, dict)]
    if todo:
        requests = [
            {"graph": {"path": str(models[i].path.resolve()), "input_ranges": options.input_ranges}}
            for i in todo
        ]
        fresh = serve(
            requests,
            lambda reason, _i: {"error": f"not analysed: {reason}", "_nocache": True},
            timeout(),
            graphs_only=True,
        )
        for i, answer in zip(todo, fresh, strict=True):
            nocache = answer.pop("_nocache", False)
            answer.pop("seconds", None)
            answers[i] = answer
            if not nocache:
                cache.put(keys[i], answer)
    return [to_result(c, a or {}, options) for c, a in zip(models, answers, strict=True)]


def timeout() -> float:
    try:
        return float(os.environ.get("TFNUMLINT_GRAPH_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def model_digest(path: Path) -> str:
    """A digest of the model's bytes (every file of a SavedModel directory)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        try:
            with f.open("rb") as stream:
                for chunk in iter(lambda: stream.read(1 << 20), b""):
                    h.update(chunk)
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


def to_result(cand: Candidate, answer: dict[str, Any], options: ModelOptions) -> FileResult:
    if answer.get("error") or "hazards" not in answer:
        reason = answer.get("error") or answer.get("detail") or "not analysed: no answer"
        return FileResult(cand.display, errors=[FileError(cand.display, str(reason))])
    from .rules import rules_for

    hazards = list(answer.get("hazards") or [])
    hazards += [
        dict(o, pattern="optimizer", lr_threshold=options.lr_thresholds.get(str(o.get("family"))))
        for o in answer.get("optimizers") or []
    ]
    findings = []
    docs = all_docs()
    for h in hazards:
        for rule in rules_for(h):
            if rule.code not in options.codes or ignored(h, options.graph_ignore):
                continue
            doc = docs[rule.code]
            op = str(h.get("op", ""))
            line = int(h.get("node") or 1)  # the op's position in the model's graph
            # a training rule's graph half is verified by its source recipe (probe), after
            spec = rule.probe(h) if rule.probe is not None else None
            probe = None
            if spec is not None:
                dtype = str(h.get("dtype") or "float32")
                probe = {
                    **spec,
                    "rule": rule.code,
                    "dtype": dtype,
                    "path": cand.display,
                    "graph": True,
                }
            findings.append(
                Finding(
                    path=cand.display,
                    line=line,
                    column=1,
                    end_line=line,
                    end_column=len(op) + 1,
                    rule=rule.code,
                    name=doc.name,
                    severity=options.severities.get(rule.code, doc.severity),
                    message=rule.message(h),
                    source_line=op,
                    verification=verification(h, cand.path) if probe is None else Verification(),
                    fix=Fix("suggestion", GRAPH_FIX) if doc.fix != "none" else None,
                    related=origin_related(h),
                    graph=graph_location(h),
                    probe=probe,
                )
            )
    return FileResult(cand.display, findings)


def graph_location(h: dict[str, Any]) -> dict[str, Any]:
    """Where in the model the finding is: the op, its layer, the line that created it."""
    keys = ("op", "op_type", "scope", "layer", "layer_kind", "model", "producer_op")
    out = {k: h[k] for k in keys if h.get(k)}
    if h.get("origin"):
        out["origin"] = dict(h["origin"])
    return out


def origin_related(h: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The author's line that created the op, as a related location (SARIF shows it)."""
    origin = h.get("origin")
    if not origin:
        return None
    return [
        {
            "path": str(origin["path"]),
            "line": int(origin["line"]),
            "message": f"`{h.get('op')}` created here (the SavedModel's debug info)",
        }
    ]


def verification(h: dict[str, Any], model: Path | None = None) -> Verification:
    repro = h.get("repro")
    if isinstance(repro, dict) and model is not None:  # --emit-repro reloads the model here
        repro = dict(repro, model=str(model.resolve()))
    return Verification(
        repro=repro if isinstance(repro, dict) else None,
        status=str(h.get("status", "inconclusive")),
        detail=str(h.get("detail", "")),
        symptom=h.get("symptom"),
        dtype=h.get("dtype"),
        inputs=h.get("inputs"),
        observed=h.get("observed"),
    )


def ignored(h: dict[str, Any], patterns: list[str]) -> bool:
    """``graph-ignore`` patterns match the op's name or its name scope."""
    names = [str(h.get("op", "")), str(h.get("scope", ""))]
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names if n)
