"""Centroids from a released sketch: CL-OMPR (``cl_ompr.py``) in the projection's box.

Pure post-processing of the release: the decoder reads the normalised sketch of eq. (3),
the public operator and public or data-independent start points, never the records.
"""

from __future__ import annotations

import numpy as np

from dpgm.clustering.base import size_shares
from dpgm.clustering.sketch.cl_ompr import DecodeResult, decode
from dpgm.clustering.sketch.operator import check_same_operator
from dpgm.clustering.sketch.private import PrivateSketch
from dpgm.clustering.sketch.spec import Sketcher

#: Densities of the data-independent random 0/1 records that seed CL-OMPR without a public sample.
SEED_DENSITIES = (0.01, 0.03, 0.1, 0.3, 0.5)


def random_records(n_items: int, rng: np.random.Generator, per_density: int = 50) -> np.ndarray:
    """Random 0/1 records of several densities: start points for the atom search (no public data)."""
    p = np.repeat(SEED_DENSITIES, per_density)[:, None]
    return (rng.random((len(p), n_items)) < p).astype(np.float64)


def decode_sketch(
    released: PrivateSketch,
    sketcher: Sketcher,
    k: int,
    rng: np.random.Generator,
    *,
    decodes: int = 3,
    public: np.ndarray | None = None,
) -> DecodeResult:
    """Best of ``decodes`` CL-OMPR runs on ``released.normalised()``, centroids in the projected
    space; start points: the projected public sample, else ``random_records``."""
    check_same_operator(released.fingerprint, sketcher.raw.fingerprint())
    proj = sketcher.projection
    starts = public if public is not None else random_records(proj.n_items, rng)
    return decode(
        released.normalised(), sketcher.operator, k, proj.lower, proj.upper, rng,
        restarts=decodes, candidates=proj.apply(starts),
    )


def part_sizes(result: DecodeResult, released: PrivateSketch) -> np.ndarray:
    """Noisy part sizes: decoded weight shares times the released count (negatives count as 0)."""
    return size_shares(result.weights) * max(released.count, 0.0)
