"""CONTRIBUTING.md's picture of the package names every module of ``tfnumlint/``, each under
its own folder, and names no module that does not exist (issue 26).

The picture is the first fenced block after ``## Architecture``.  A line names a folder or a
module when its first word, after the tree's drawing characters, is ``name/`` or ``name.py``;
everything after that word is its description.  A folder's modules are the lines below it
indented further than its name; a name indented as far or less closes it, and so does an arrow
off the pipeline (``├───► verify/`` is a top-level folder).  Other lines (the data passed along
the pipeline, a description's continuation) name nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRAWING = " │├└▼─►"
_NAME = re.compile(r"\w+(\.py|/)")


def picture() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    after = text[text.index("## Architecture\n") :]
    return re.search(r"^```\n(.*?)^```", after, re.M | re.S).group(1).splitlines()


def pictured_modules() -> set[str]:
    """The package paths the picture names (``verify/runner.py``), each under its folders."""
    found: set[str] = set()
    folders: list[tuple[int, str]] = []  # (column of the folder's name, the name)
    for line in picture():
        word = line.lstrip(DRAWING).split(" ", 1)[0]
        if not _NAME.fullmatch(word):
            continue
        column = len(line) - len(line.lstrip(DRAWING))
        while folders and (folders[-1][0] >= column or "►" in line[:column]):
            folders.pop()
        path = "".join(name for _, name in folders) + word
        if word.endswith("/"):
            folders.append((column, word))
        else:
            found.add(path)
    return found


def package_modules() -> set[str]:
    package = ROOT / "tfnumlint"
    return {p.relative_to(package).as_posix() for p in package.rglob("*.py")} - {
        p.relative_to(package).as_posix() for p in package.rglob("__init__.py")
    }


def test_the_picture_names_every_module_under_its_folder():
    pictured = pictured_modules()
    assert "verify/runner.py" in pictured and "ops.py" in pictured, "the picture was read"
    missing = sorted(package_modules() - pictured)
    assert not missing, (
        "add these modules to CONTRIBUTING.md's picture, each under its folder, with its one "
        f"job: {missing}"
    )


def test_every_module_the_picture_names_exists():
    stale = sorted(pictured_modules() - package_modules())
    assert not stale, (
        "CONTRIBUTING.md's picture names modules that do not exist (renamed, moved or "
        f"deleted? fix or drop their lines): {stale}"
    )
