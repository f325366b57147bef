"""DP subspace clustering (Wang, Wang and Singh, NIPS 2015) as the ``subspace`` partitioner.

distance.py (subspace distances, k-means subspace cost), sulq.py (SuLQ k-plane), bingham.py (matrix
Bingham sampling), gibbs.py (the exponential mechanism by Gibbs sampling), tsc.py (non-private TSC),
sample_aggregate.py (Alg. 1), partitioner.py (``DPSubspaceClustering`` and ``SubspaceOptions``).
"""

from __future__ import annotations

from dpgm.clustering.subspace.partitioner import DPSubspaceClustering, SubspaceOptions

__all__ = ["DPSubspaceClustering", "SubspaceOptions"]
