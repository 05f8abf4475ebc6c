"""Developer commands (``python -m tfnumlint.dev ...``): never imported by the linter itself."""
