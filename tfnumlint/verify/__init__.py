"""Dynamic verification of findings: a probe traced into a TF graph, boundary inputs probed.

The probe comes from the static slicer (``analysis/slicing``: a finding -> a probe tree, in the
format its ``contract`` and ``signatures`` fix); no module here parses the linted source.  Static
side (never imports TensorFlow): ``runner`` (cache, worker process, verdicts and fix proofs),
the gates and the reproducers.  Worker side, loaded only by the ``worker`` subprocess:
``trace`` (tree -> TF ops), ``intervals``, ``probing`` (the entry point: one probe, one
verdict) and its stages ``program`` (the traced probe), ``points``, ``symptoms``, ``climb``,
``witness`` and ``verdicts``, ``proving`` (fix proofs, same evaluator) and ``training``.
"""
