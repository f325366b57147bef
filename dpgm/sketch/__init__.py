"""``python -m dpgm.sketch``: a compressive sketch of data held by several parties, released once.

Each data holder sketches its own file into an exact (private) sum; an aggregator merges the
sums and adds the noise ONCE (one ledger, one privacy report); anyone decodes centroids from
the release (post-processing). The library side is ``dpgm.clustering.sketch``.
"""
