"""Model profiles (per-layer parameter tensors and gradient scales) shipped as JSON data files."""
