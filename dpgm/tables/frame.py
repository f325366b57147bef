"""A pandas DataFrame of a declared table: its cells by column, and decoded columns back as a DataFrame.

pandas is imported only where a DataFrame is given (it is not a dependency of dpgm): the columns keep the
input's names, order and dtypes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.tables.codecs import category_key
from dpgm.tables.records import Cells
from dpgm.tables.schema import TableSchema


def frame_cells(schema: TableSchema, frame: Any) -> list[Cells]:
    """The cells of the schema's columns, in the schema's order; the frame must hold exactly those columns."""
    import pandas as pd

    labels = [str(c) for c in frame.columns]
    extra = [c for c in labels if c not in schema.names]
    absent = [c for c in schema.names if c not in labels]
    if extra or absent or len(set(labels)) != len(labels):
        what = (f"columns not in the schema: {', '.join(extra)}" if extra else
                f"schema columns not in the data: {', '.join(absent)}" if absent else "a column name occurs twice")
        raise ConfigError(f"fit: the DataFrame's columns differ from the schema's ({what})")
    by_name = dict(zip(labels, frame.columns))
    return [(frame[by_name[name]].to_numpy(dtype=object), pd.isna(frame[by_name[name]]).to_numpy(dtype=bool))
            for name in schema.names]


def _typed(values: np.ndarray, dtype: str) -> Any:
    """Decoded values (None where missing) as a column of ``dtype``, the input's (bool from its labels), else
    objects."""
    import pandas as pd

    if dtype in ("bool", "boolean"):
        flags = [None if v is None else category_key(v) == "true" for v in values.tolist()]
        return pd.Series(flags, dtype="boolean" if None in flags else dtype)
    column = pd.Series(values)
    nullable = [dtype.capitalize()] if dtype.startswith(("int", "uint")) else []  # missing values in integers
    for kind in (dtype, *nullable):
        try:
            return column.astype(kind)
        except (TypeError, ValueError):
            continue
    return column  # values the dtype cannot hold (an other label among numbers): objects


def as_frame(schema: TableSchema, values: list[np.ndarray], columns: list[Any], dtypes: list[str]) -> Any:
    """The decoded columns (in the schema's order) as a DataFrame of ``columns`` (the input's labels and
    order) with the input's ``dtypes``."""
    import pandas as pd

    by_name = dict(zip(schema.names, values))
    return pd.DataFrame({label: _typed(by_name[str(label)], dtype) for label, dtype in zip(columns, dtypes)},
                        columns=columns)
