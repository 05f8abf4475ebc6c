"""The project index's plain data: what one module's summary holds (functions and their
returns, classes, call sites, bindings) and the symbols the index resolves, with the JSON form
the cache stores (decoding gives back equal objects, so digests do not change).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TypeVar

from .values import Val

T = TypeVar("T")

# path, line, column, the call's text, the parameter, what the argument is
Origin = tuple[str, int, int, str, str, str]

MAX_CALL_SITES = 32  # a parameter's fact joins at most this many call sites (sorted by place)
MAX_DEPTH = 12  # re-export chains, base-class chains
MAX_HOPS = 3  # a parameter passed on as it is: its callers' callers, at most this far out
NO_FACT = "-"


@dataclass(frozen=True)
class ReturnCandidate:
    """One ``return`` of a function, as far as it can be told without its caller."""

    val: Val | None = None  # a value made inside the function
    param: str | None = None  # ...or one of its parameters, returned as is
    apply: str | None = None  # ...or a parameter called on ``val`` (a passed activation)
    when: tuple[str, bool] | None = None  # only when (that parameter is None) == flag
    # a returned tuple: the parameter each item returns as it was passed (None: ``val``'s item)
    items: tuple[str | None, ...] | None = None
    # a uniform draw between two parameters: (minval's, maxval's; None where ``val`` has the end)
    bounds: tuple[str | None, str | None] | None = None


@dataclass(frozen=True)
class FunctionSummary:
    module: str
    qualname: str
    positional: tuple[str, ...]  # parameters filled by position (``self`` dropped for methods)
    keyword_only: tuple[str, ...]
    defaults: tuple[tuple[str, Val | None, bool], ...]  # name, its value, literally None
    returns: tuple[ReturnCandidate, ...]
    discrete: bool = False  # every return is a whole number or a boolean (analysis/discrete.py)
    # every return is a whole number: (its lower bound, why) (analysis/wholes.py: a shape)
    whole: tuple[float, str] | None = None

    def default(self, name: str) -> tuple[Val | None, bool] | None:
        for n, val, is_none in self.defaults:
            if n == name:
                return val, is_none
        return None


@dataclass(frozen=True)
class ClassSummary:
    name: str
    bases: tuple[str, ...]  # dotted, as written; resolved in the defining module
    attrs: tuple[tuple[str, Val], ...]
    methods: tuple[str, ...]
    assigned: tuple[str, ...] = ()  # every attribute the class assigns
    transforms: tuple[tuple[str, float, bool, float, str], ...] = ()  # (attr, lo, lo_open, hi, why)


@dataclass(frozen=True)
class CallSite:
    """A call of a project function: ``("sym", module, dotted)`` names the callee as written
    in ``module``; ``("method", module, class, name)`` is a method of a known class."""

    callee: tuple[str, ...]
    positional: tuple[Val | None, ...]
    keywords: tuple[tuple[str, Val], ...]
    origin: Origin
    # arguments that are the calling function's own parameters, passed on as they are:
    # (slot: the position as a string or the keyword, module, the caller's qualname, its
    # parameter), so that the parameter's fact follows that caller's callers (several hops)
    forwards: tuple[tuple[str, str, str, str], ...] = ()
    # relations the caller's class asserts between two of the attributes it passes: (slot a,
    # op, slot b, why): ``_pdf(self.low, self.high)`` with ``assert_less(self.low, self.high)``
    relations: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True)
class ModuleSummary:
    module: str
    path: str
    imports: tuple[tuple[str, str, str | None], ...]  # local name, module, symbol (None: module)
    stars: tuple[str, ...]
    functions: tuple[tuple[str, FunctionSummary], ...]
    classes: tuple[tuple[str, ClassSummary], ...]
    bindings: tuple[tuple[str, Val], ...]
    calls: tuple[CallSite, ...]
    # callees of the project calls that pass nothing informative (whether every caller of a
    # function passes a known value is a fact too: `pall|...`)
    opaque_calls: tuple[tuple[str, ...], ...] = ()
    text_hash: str = ""  # of the module's text: a program slice that reads it depends on it
    file: str = ""  # the file it was read from (``path`` is as the user named it)
    reads: tuple[str, ...] = ()  # dotted project imports it reads (project_imports.project_reads)


@dataclass(frozen=True)
class Symbol:
    """What a name means in a module: a function, a class, a module or a value."""

    kind: str
    module: str
    name: str = ""
    val: Val | None = None


# -- JSON form, for the cache -------------------------------------------------------------------

_CODEC_TYPES: dict[str, type] = {}


def _codec_types() -> dict[str, type]:
    if not _CODEC_TYPES:
        for tp in (Val, ReturnCandidate, FunctionSummary, ClassSummary, CallSite, ModuleSummary):
            # a field named like a marker would make a fields object read as a tuple
            assert not {f.name for f in dataclasses.fields(tp)} & {"t", "d", "f"}, tp
            _CODEC_TYPES[tp.__name__] = tp
    return _CODEC_TYPES


def to_jsonable(obj: object) -> object:
    """Plain JSON for a summary: dataclasses by name (fields at their default left out),
    tuples marked, so that decoding gives back an equal object (and the same digests)."""
    if isinstance(obj, tuple):
        return {"t": [to_jsonable(x) for x in obj]}
    if isinstance(obj, (list, str, int, float, bool)) or obj is None:
        return obj
    tp = type(obj)
    if tp.__name__ in _codec_types() and dataclasses.is_dataclass(obj):
        fields = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            fields[f.name] = to_jsonable(value)
        return {"d": tp.__name__, "f": fields}
    raise TypeError(f"cannot encode {tp.__name__}")


def from_jsonable(data: object) -> object:
    if isinstance(data, dict):
        if "t" in data:
            return tuple(from_jsonable(x) for x in data["t"])
        tp = _codec_types()[data["d"]]
        return tp(**{k: from_jsonable(v) for k, v in data["f"].items()})
    if isinstance(data, list):
        return [from_jsonable(x) for x in data]
    return data


def _hook(obj: dict) -> object:
    """:func:`from_jsonable` for one JSON object, its members already decoded (``json``'s
    ``object_hook`` calls it innermost first).  Unambiguous because a summary holds no plain
    dict other than a dataclass's fields, and no field is named ``t``, ``d`` or ``f``."""
    if len(obj) == 1 and "t" in obj:
        return tuple(obj["t"])
    if len(obj) == 2 and "d" in obj and "f" in obj:
        return _codec_types()[obj["d"]](**obj["f"])
    return obj


def dumps(summary: ModuleSummary) -> str:
    """A summary as JSON text (:func:`to_jsonable`)."""
    return json.dumps(to_jsonable(summary), separators=(",", ":"))


def loads(text: str) -> ModuleSummary:
    """The summary :func:`dumps` wrote, decoded by the JSON parser's object hook (several
    times faster than :func:`from_jsonable` over the parsed data); ValueError if it is not one."""
    if not isinstance(text, str):
        raise ValueError("not a summary")
    try:
        summary = json.loads(text, object_hook=_hook)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a summary: {exc}") from None
    if not isinstance(summary, ModuleSummary):
        raise ValueError("not a summary")
    return summary
