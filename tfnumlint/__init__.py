"""tfnumlint: a numerics linter for TensorFlow."""

__version__ = "0.1.0"
