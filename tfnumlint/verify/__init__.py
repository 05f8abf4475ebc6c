"""Dynamic verification of findings: slice, trace into a TF graph, probe boundary inputs.

``runner`` (the parent side) never imports TensorFlow; ``worker`` runs in a subprocess and
imports ``trace``, ``intervals``, ``probing`` and ``training``, which do.
"""
