"""DP-SGD training: Poisson batches, ghost-clipped per-record norms, DPNorm (Alg. 3), noise, step."""
