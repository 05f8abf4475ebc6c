"""ANSI colour for terminal output; plain text everywhere else."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "cyan": "36",
    "bold_red": "1;31",
}
SEVERITY = {"error": "bold_red", "warning": "yellow", "info": "blue"}
STATUS = {"confirmed": "red", "inconclusive": "yellow", "refuted": "green"}


def use_colour(choice: str, stream_is_tty: bool, env: Mapping[str, str] | None = None) -> bool:
    """``--color always|never|auto``; auto follows the terminal, NO_COLOR and FORCE_COLOR."""
    if env is None:
        env = os.environ
    if choice == "always":
        return True
    if choice == "never" or env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    return stream_is_tty and env.get("TERM") != "dumb"


@dataclass(frozen=True)
class Style:
    on: bool = False

    def __call__(self, text: str, style: str | None) -> str:
        if not self.on or not style or not text:
            return text
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


PLAIN = Style(False)
