"""``mbi`` (the optional extra ``peers``), imported only when a fit runs: its domain over the
binary items, its measurements and mirror-descent fit (McKenna et al. 2019)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation.pgm.workload import Clique


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


def mbi_domain(n_items: int) -> Any:
    mbi = import_mbi()
    return mbi.Domain(tuple(attr(j) for j in range(n_items)), (2,) * n_items)


def fit_model(measurements: list[Any], n_items: int, iters: int, warm_start: Any = None) -> Any:
    """mbi's mirror descent (Algorithm 1 of McKenna et al. 2019) on the noisy measurements."""
    mbi = import_mbi()
    estimator = mbi.estimation.MirrorDescent()
    return estimator.estimate(mbi_domain(n_items), measurements, iters=iters, warm_start=warm_start)


def measurement(clique: Clique, y: np.ndarray, sigma: float) -> Any:
    mbi = import_mbi()
    return mbi.LinearMeasurement(
        np.asarray(y, dtype=np.float64), clique_attrs(clique), stddev=float(sigma)
    )


def model_cliques(model: Any) -> list[Clique]:
    return [tuple(sorted(int(a) for a in cl)) for cl in model.cliques]
