"""Output formats: text (ruff style), json, sarif (2.1.0), github (workflow annotations)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import Report
from . import concise, github, jsonfmt, sarif, text

# every renderer takes the report and the keyword options it knows (style, quiet), ignoring others
FORMATS: dict[str, Callable[..., str]] = {
    "text": text.render,
    "concise": concise.render,
    "json": jsonfmt.render,
    "sarif": sarif.render,
    "github": github.render,
}


def render(fmt: str, report: Report, **kwargs: Any) -> str:
    return FORMATS[fmt](report, **kwargs)
