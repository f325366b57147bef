"""A declared table's attributes (``data.attribute_sizes``): which modelled item is a value of which attribute.

A table written as attribute=value items holds exactly one value of each attribute per record, and its
schema (how many values each attribute has, the items running attribute by attribute) is public. Each
part's noisy value frequencies of one attribute then add up to one, a constraint the noise breaks:
``project_values`` restores it by least squares, as post-processing (docs/guide/data.md, on tables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.config import Config


@dataclass(frozen=True)
class Schema:
    """The attributes of the modelled items."""

    of: np.ndarray  # [m]: the attribute of each modelled item
    complete: np.ndarray  # [T]: every value of the attribute is modelled (its frequencies add up to one)
    target: int | None = None  # the attribute data.schema declares its target (a classifier's column), if any


def schema_of(cfg: Config, kept: np.ndarray | None) -> Schema | None:
    """The declared schema of the modelled items (``kept``: their ids among all items, None: all), or None
    where the config declares none. The sizes add up to the item universe (checked with the plan)."""
    sizes = cfg.data.attribute_sizes
    if sizes is None:
        return None
    of = np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))
    if kept is not None:
        of = of[np.asarray(kept, dtype=np.int64)]
    return Schema(of=of, complete=np.bincount(of, minlength=len(sizes)) == np.asarray(sizes),
                  target=declared_target(cfg))


def declared_target(cfg: Config) -> int | None:
    """The attribute index of data.schema's ``target`` (declared, public), or None where it declares none."""
    if cfg.data.schema is None:
        return None
    from dpgm.tables import table_schema

    schema = table_schema(cfg.data.schema)
    return None if schema.target is None else schema.names.index(schema.target)


def simplex_projection(values: np.ndarray, total: float) -> np.ndarray:
    """The point of {p >= 0, sum p = ``total``} nearest ``values`` in L2 (Duchi et al. 2008, Fig. 1)."""
    ordered = np.sort(values)[::-1]
    running = np.cumsum(ordered) - total
    last = np.flatnonzero(ordered - running / np.arange(1, values.size + 1) > 0)[-1]
    return np.maximum(values - running[last] / (last + 1), 0.0)


def project_values(means: np.ndarray, schema: Schema, floor: float) -> np.ndarray:
    """Each part's means [k, m] with each attribute's values made to add up to one (at most one where some of
    its values are not modelled): the nearest such point in L2, as every mean carries noise of one variance.
    A value near ``floor`` (a noisy mean clipped there, perhaps rescaled since by ``table_parts``) stays: its
    noise is unknown below, and raising it would hand a rare value part of a frequent one's noise.
    Post-processing."""
    out = np.array(means, dtype=np.float64)
    for attribute, complete in enumerate(schema.complete):
        items = np.flatnonzero(schema.of == attribute)
        for row in out:
            values = row[items]
            free = values > 2.0 * floor
            if free.any() and (complete or values.sum() > 1.0):
                values[free] = simplex_projection(values[free], 1.0 - values[~free].sum())
                row[items] = np.maximum(values, floor)
    return out
