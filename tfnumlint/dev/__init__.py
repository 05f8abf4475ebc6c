"""Maintainer tools that keep the documentation true to the code (not part of the linter)."""
