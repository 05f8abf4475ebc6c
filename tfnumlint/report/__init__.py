"""Output formats: text (ruff style), json, sarif (2.1.0), github (workflow annotations)."""

from __future__ import annotations

from ..model import Report
from . import concise, github, jsonfmt, sarif, text

FORMATS = {
    "text": text.render,
    "concise": concise.render,
    "json": jsonfmt.render,
    "sarif": sarif.render,
    "github": github.render,
}


def render(fmt: str, report: Report, **kwargs) -> str:
    return FORMATS[fmt](report, **kwargs)
