"""Declared tables: a schema of typed columns, codecs by column kind, and the table as attribute=value items.

A table of categories and numbers becomes the item layout the generic rules model (one item per attribute
value, one attribute per column; ``dpgm.tables.records``) and the release's records become the table again
(post-processing). What is declared is public (docs/guide/tables.md).
"""

from __future__ import annotations

from dpgm.tables.codecs import CODECS, DEFAULT_BINS, MISSING, Codec
from dpgm.tables.column import Column
from dpgm.tables.schema import (
    SCHEMA_FILE,
    TableSchema,
    public_input,
    released_schema,
    schema_text,
    table_schema,
)

__all__ = ["CODECS", "DEFAULT_BINS", "MISSING", "SCHEMA_FILE", "Codec", "Column", "TableSchema",
           "public_input", "released_schema", "schema_text", "table_schema"]
