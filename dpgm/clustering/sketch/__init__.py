"""DP compressive k-means: the sketch of a dataset, its private release, and CL-OMPR decoding.

The dataset is compressed into one vector of random generalised moments (Schellekens et al.,
SPARS 2019, eq. 2-3), released once with noise, and decoded into k centroids by CL-OMPR
(Keriven et al. 2017). One concept per module:

- ``signature``: f_e / f_q, their constants and the sketch sum's sensitivities;
- ``frequencies``: the public frequencies Omega;
- ``operator``: the sketch map and the exact (private) ``SketchSum``;
- ``private``: merging holders' sums and the ONE noisy release (``PrivateSketch``);
- ``projection`` and ``spec``: public projection, shared parameters, operator construction;
- ``cl_ompr`` and ``decoder``: centroids from a released sketch (post-processing);
- ``partitioner``: ``SketchPartitioner`` and ``from_config`` for ``partition.method: sketch``;
- ``files``: sum and release files for the multi-holder workflow of ``python -m dpgm.sketch``.
"""

from __future__ import annotations

from dpgm.clustering.sketch.frequencies import adapted_radius, draw_frequencies
from dpgm.clustering.sketch.operator import (
    OperatorMismatch,
    SketchOperator,
    SketchSum,
    check_same_operator,
    random_subsets,
)
from dpgm.clustering.sketch.partitioner import SketchOptions, SketchPartitioner, from_config
from dpgm.clustering.sketch.private import (
    PrivateSketch,
    SketchNoise,
    merge_sums,
    plan_noise,
    release_sketch,
)
from dpgm.clustering.sketch.projection import Projection, make_projection
from dpgm.clustering.sketch.signature import (
    C_F,
    GAIN,
    MAX_ABS,
    l1_sensitivity,
    l2_sensitivity,
    theorem1_sigma_xi,
)
from dpgm.clustering.sketch.spec import Sketcher, SketchSpec, draw_sketcher

__all__ = [
    "C_F",
    "GAIN",
    "MAX_ABS",
    "OperatorMismatch",
    "PrivateSketch",
    "Projection",
    "SketchNoise",
    "SketchOperator",
    "SketchOptions",
    "SketchPartitioner",
    "SketchSpec",
    "SketchSum",
    "Sketcher",
    "adapted_radius",
    "check_same_operator",
    "draw_frequencies",
    "draw_sketcher",
    "from_config",
    "l1_sensitivity",
    "l2_sensitivity",
    "make_projection",
    "merge_sums",
    "plan_noise",
    "random_subsets",
    "release_sketch",
    "theorem1_sigma_xi",
]
