"""A one-line progress display on stderr for long runs: stage, counts, elapsed time, estimate.

Hand-written rather than a library: it is ~80 lines, costs no import time, and must stay off
entirely when stderr is not a terminal (CI logs, pre-commit, pipes) or under ``--quiet``.
"""

from __future__ import annotations

import sys
import threading
import time

_enabled: bool | None = None  # None: decide by whether stderr is a terminal
MIN_INTERVAL = 0.1  # seconds between redraws


def configure(enabled: bool | None) -> None:
    """The CLI's decision (``--quiet`` turns it off); None restores the terminal check."""
    global _enabled
    _enabled = enabled


def enabled() -> bool:
    if _enabled is not None:
        return _enabled
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """``stage done/total unit · elapsed · ~left``; a spinner-free line when total is unknown."""

    def __init__(self, total: int | None, stage: str, unit: str = "", minimum: int = 2) -> None:
        self.total = total
        self.stage = stage
        self.unit = unit
        self.on = enabled() and (total is None or total >= minimum)
        self.start = time.monotonic()
        self.done = 0
        self._drawn = 0.0
        self._width = 0
        self._lock = threading.Lock()
        self._ticker: threading.Event | None = None

    def __enter__(self) -> Progress:
        self.update(0, force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        parts = [f"tfnumlint: {self.stage}"]
        if self.total is not None:
            unit = f" {self.unit}" if self.unit else ""
            parts[0] += f" {self.done}/{self.total}{unit}"
        parts.append(_clock(elapsed))
        if self.total and 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            parts.append(f"~{_clock(left)} left")
        return " · ".join(parts)

    def update(self, done: int, force: bool = False) -> None:
        self.done = done
        if not self.on:
            return
        now = time.monotonic()
        if not force and now - self._drawn < MIN_INTERVAL and done != self.total:
            return
        self._drawn = now
        self._draw(self.line())

    def _draw(self, text: str) -> None:
        with self._lock:
            pad = " " * max(0, self._width - len(text))
            self._width = len(text)
            try:
                sys.stderr.write(f"\r{text}{pad}")
                sys.stderr.flush()
            except (OSError, ValueError):
                self.on = False

    def tick(self, every: float = 0.5) -> Progress:
        """Redraw on a timer (for a stage with no counts to report, such as one batch of proofs)."""
        if self.on and self._ticker is None:
            stop = threading.Event()
            self._ticker = stop

            def loop() -> None:
                while not stop.wait(every):
                    self._draw(self.line())

            threading.Thread(target=loop, name="tfnumlint-progress", daemon=True).start()
        return self

    def finish(self) -> None:
        if self._ticker is not None:
            self._ticker.set()
            self._ticker = None
        if self.on and self._width:
            self._draw("")
            with self._lock:
                try:
                    sys.stderr.write("\r")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
            self._width = 0
