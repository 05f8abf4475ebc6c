"""Dynamic verification of findings: slice, trace into a TF graph, probe boundary inputs.

Static side (never imports TensorFlow): ``slicer`` (a finding -> a probe tree), ``signatures``
(every spelling of an op's arguments -> one canonical form), ``contract`` (the allow-list) and
``runner`` (cache, worker process, verdicts and fix proofs).  Worker side, loaded only by the
``worker`` subprocess: ``trace`` (tree -> TF ops), ``intervals``, ``probing`` (the entry
point: one probe, one verdict) and its stages ``program`` (the traced probe), ``points``,
``symptoms``, ``climb``, ``witness`` and ``verdicts``, ``proving`` (fix proofs, same
evaluator) and ``training``.
"""
