"""Maintainer tools (``python -m tfnumlint.dev ...``): the documentation's generated parts and the
new-rule scaffold. Not part of the linter: nothing in it is imported by a lint run."""
