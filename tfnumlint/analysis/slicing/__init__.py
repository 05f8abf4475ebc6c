"""Slicing: a finding's code read back into a probe, the plain data the verifier's worker traces.

The static half of verification (libcst, no TensorFlow): the expression slicer (``slicer``,
``calls``, ``tools``), where the flagged value goes (``uses``), the program's own training
(``program`` and its ``program_*`` readers), and the probe's format, which the slicer writes
and the worker reads (``contract``, ``signatures``).  Nothing here is imported on load: the
worker reads ``contract`` and ``signatures`` without the slicer.
"""
