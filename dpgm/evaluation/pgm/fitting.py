"""``mbi`` (the optional extra ``peers``), imported only when a fit runs: its domain over the
attributes (binary items: every size 2), its measurements and mirror-descent fit (McKenna et al. 2019)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation.pgm.workload import Clique, as_sizes

#: Every fit compiles JAX programs that stay cached, each holding memory maps of its own; a process may hold
#: about 65,000 maps, after which compiling fails (LLVM: cannot allocate memory), a few AIM runs into a
#: benchmark. JAX's caches are cleared every this many fits (a recompile then: results are unchanged).
CLEAR_EVERY = 25
_fits = itertools.count(1)


def import_mbi() -> Any:
    """Import ``mbi`` (optional extra ``peers``) with JAX in float64, as mbi advises for n > 1e5."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import mbi
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            f"AIM/MST/MWEM+PGM need the optional package mbi ({exc}): pip install -e '.[peers]'"
        ) from exc
    return mbi


def attr(j: int) -> str:
    return str(j)


def clique_attrs(clique: Clique) -> tuple[str, ...]:
    return tuple(attr(j) for j in clique)


def mbi_domain(sizes: int | Sequence[int]) -> Any:
    """mbi's Domain of attributes "0".."d-1" of ``sizes`` values (an integer m: m binary items)."""
    mbi = import_mbi()
    shape = as_sizes(sizes)
    return mbi.Domain(tuple(attr(j) for j in range(len(shape))), shape)


def fit_model(measurements: list[Any], sizes: int | Sequence[int], iters: int, warm_start: Any = None) -> Any:
    """mbi's mirror descent (Algorithm 1 of McKenna et al. 2019) on the noisy measurements."""
    mbi = import_mbi()
    if next(_fits) % CLEAR_EVERY == 0:
        import jax

        jax.clear_caches()
    estimator = mbi.estimation.MirrorDescent()
    return estimator.estimate(mbi_domain(sizes), measurements, iters=iters, warm_start=warm_start)


def measurement(clique: Clique, y: np.ndarray, sigma: float) -> Any:
    mbi = import_mbi()
    return mbi.LinearMeasurement(
        np.asarray(y, dtype=np.float64), clique_attrs(clique), stddev=float(sigma)
    )


def merged_measurement(j: int, y: np.ndarray, sigma: float, mapping: np.ndarray, sizes: Sequence[int]) -> Any:
    """Attribute ``j``'s 1-way measurement re-expressed on its compressed values (``mapping[v]``: the new
    value of v): a merged value's noisy counts are summed and scaled to keep noise std ``sigma``, as
    private-pgm's MST does (mbi's ``LinearMeasurement.compress``). Post-processing."""
    return measurement((j,), y, sigma).compress({attr(j): np.asarray(mapping)}, mbi_domain(sizes))


def model_cliques(model: Any) -> list[Clique]:
    return [tuple(sorted(int(a) for a in cl)) for cl in model.cliques]
