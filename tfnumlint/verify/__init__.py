"""Dynamic verification: slice (static) -> trace -> intervals -> boundary probing (TensorFlow)."""
