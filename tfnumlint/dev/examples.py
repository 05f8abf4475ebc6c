"""Example outputs in the documentation, produced by running the tool.

A fenced block whose first line is ``$ tfnumlint ARGS`` is an example: the rest of the block is
what ``tfnumlint ARGS`` prints (standard output, then standard error), run from the repository
root without colour. Witness texts change with the verifier, so they are never typed by hand:
``python -m tfnumlint.dev readme --write`` reruns every example and replaces its output, and
the test suite reruns them to check that the documentation still shows what the tool prints.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROMPT = "$ tfnumlint "
_BLOCK = re.compile(
    r"^```[^\n]*\n" + re.escape(PROMPT) + r"(?P<command>[^\n]*)\n(?P<output>.*?)^```[ \t]*$",
    re.M | re.S,
)
# A training simulation can pass the 10 s probe budget on a busy machine; the documentation
# shows the verdict, not a timeout (timing is measured in benchmarks/).
PROBE_TIMEOUT = "60"


class ExampleError(Exception):
    """An example command that is a usage error or crashes: the documentation is wrong."""


@dataclass(frozen=True)
class Example:
    command: str  # the arguments after `$ tfnumlint `, as written
    output: str  # the block's text after the command line, without its final newline
    start: int  # offsets of ``output`` in the document
    end: int


Runner = Callable[[str], str]


def doc_paths(root: Path) -> list[Path]:
    """The documents whose examples are generated: the README, CONTRIBUTING and docs/."""
    paths = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    return [p for p in paths if p.is_file()]


def examples_in(text: str) -> list[Example]:
    found = []
    for m in _BLOCK.finditer(text):
        output = m.group("output")
        found.append(Example(m.group("command"), output.removesuffix("\n"), *m.span("output")))
    return found


def run_example(command: str, root: Path) -> str:
    """What ``tfnumlint COMMAND`` prints when run from ``root``, as the block shows it."""
    env = dict(os.environ, NO_COLOR="1", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("FORCE_COLOR", None)
    env.setdefault("TFNUMLINT_PROBE_TIMEOUT", PROBE_TIMEOUT)
    proc = subprocess.run(
        [sys.executable, "-m", "tfnumlint", *shlex.split(command)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode == 2 or "Traceback" in proc.stderr:
        raise ExampleError(f"`tfnumlint {command}` failed (exit {proc.returncode}): {proc.stderr}")
    lines = (proc.stdout + proc.stderr).rstrip("\n").splitlines()
    return "\n".join(line.rstrip() for line in lines)


def regenerate(text: str, run: Runner) -> str:
    """``text`` with every example's output replaced by what ``run(command)`` prints."""
    pieces, last = [], 0
    for example in examples_in(text):
        output = run(example.command)
        pieces += [text[last : example.start], output + "\n" if output else ""]
        last = example.end
    return "".join(pieces) + text[last:]


def stale_examples(path: Path, root: Path) -> list[Example]:
    text = path.read_text(encoding="utf-8")
    return [e for e in examples_in(text) if run_example(e.command, root) != e.output]


def write_examples(path: Path, root: Path) -> bool:
    """Regenerate ``path``'s examples in place; True when the file changed."""
    text = path.read_text(encoding="utf-8")
    new = regenerate(text, lambda command: run_example(command, root))
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text
