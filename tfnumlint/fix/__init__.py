"""Fixes: verified rewrites of risky numerics (``--fix``, ``--diff``, ``--unsafe-fixes``).

:mod:`.rewrites` builds rewrites with libcst (no TensorFlow), :mod:`.proof` proves them in a
TensorFlow subprocess, :mod:`.apply` applies them to files or prints a diff.
"""
