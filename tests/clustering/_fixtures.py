"""Small binary datasets with clear clusters, shared by the clustering tests."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset


def block_dataset(
    n: int = 600, k: int = 3, block: int = 10, seed: int = 0, sparse: bool = False
) -> BinaryDataset:
    """n records, k labels; label j switches on items j*block..(j+1)*block-1 with prob 0.9."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    probs = np.full((n, k * block), 0.05)
    for j in range(k):
        probs[labels == j, j * block : (j + 1) * block] = 0.9
    records = (rng.random(probs.shape) < probs).astype(np.uint8)
    return BinaryDataset(
        records=sp.csr_matrix(records) if sparse else records,
        item_names=[f"i{j}" for j in range(k * block)],
        labels=labels,
        name=f"blocks-{seed}",
    )
