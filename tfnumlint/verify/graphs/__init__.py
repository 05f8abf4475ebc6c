"""Lint a saved model in the worker: load it as a frozen graph, find the hazards of its ops,
bound them with the real weights, and look for a witness input (see lint.py)."""
