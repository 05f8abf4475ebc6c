"""One line of advice per finding: the stable form to use or the guard to add (the rule doc's
``advice``), for a finding the verifier could not settle and that the user must still decide."""

from __future__ import annotations

from ..model import Finding
from ..ruledocs import all_docs

# the statuses whose text output ends with the advice: a confirmed finding's message already
# says what to do, and a refuted one needs nothing
ADVISED = frozenset({"inconclusive"})


def advice(f: Finding) -> str | None:
    """The advice of the finding's rule, or None when its doc has none."""
    doc = all_docs().get(f.rule)
    return doc.advice if doc is not None and doc.advice else None


def shown_advice(f: Finding) -> str | None:
    """The advice text output shows under the verdict line: only for unsettled findings."""
    return advice(f) if f.verification.status in ADVISED else None
