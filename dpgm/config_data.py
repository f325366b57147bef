"""The ``data`` section of a run's config: where the records come from and the public facts declared about them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from dpgm.config_fields import opt, require
from dpgm.errors import ConfigError


@dataclass
class DataConfig:
    source: Literal["mnist", "digits", "transactions", "csv", "parquet"] = opt(
        "digits", "which loader reads the records (parquet: 0/1 or boolean columns, one record per row; needs pyarrow)")
    path: str | None = opt(None, "file for transactions/csv/parquet, or a folder or glob pattern of files that form "
                                 "one dataset; for mnist the folder of IDX files (default: $DPGM_DATA_DIR/mnist or "
                                 "data/mnist)")
    split: Literal["train", "test"] = opt("train", "mnist split used as the private data")
    threshold: float = opt(0.5, "binarisation threshold for image intensities scaled to [0, 1] (paper: 0.5)")
    top_items: int | None = opt(None, "keep only the m most frequent items, chosen by train.py from NOISY counts and "
                                      "charged as stage 'items' (null: all items)")
    top_items_noise_multiplier: float = opt(10.0, "sigma of the Gaussian on the normalised item counts that choose "
                                                  "top_items (sensitivity 1)")
    n_items: int | None = opt(None, "transactions without an items file: the public item universe, ids 0..n_items-1 "
                                    "(the universe is never read off the private data)")
    label_column: str | None = opt(None, "csv, parquet: name of the integer label column (null: no labels)")
    limit: int | None = opt(None, "use only the first N records (quick experiments)")
    chunk_mb: float | None = opt(None, "transactions, csv, parquet: read the file this many MB at a time and never "
                                       "hold it whole (data larger than memory; every pass over the records reads it "
                                       "again); null: load it into memory")
    min_items: int = opt(0, "every record holds at least this many items: a public fact about how the data were "
                            "collected (msnbc: a session has at least one page view). Records with fewer are dropped "
                            "at load (and, with top_items, after the item choice), a per-record rule under which DP "
                            "still holds; how many were dropped is private and never shown. The release draws again "
                            "every synthetic record with fewer (post-processing, no privacy cost)")
    attributes: int | None = opt(None, "a table written as attribute=value items: the number of attributes, each "
                                       "record holding one item per attribute (a public fact of the schema). "
                                       "rules: public then clips every record's statistics to that many items, "
                                       "spends nothing on a private length bound and picks a model for tables "
                                       "(docs/guide/configs.md); listed in the privacy report's public_inputs")
    attribute_sizes: list[int] | None = opt(  # noqa: RUF009
        None, "a table whose attribute=value items run attribute by attribute in item id order: the number of values "
              "of each attribute (a public fact of the schema; sets data.attributes to their number). A tree of items "
              "then makes each group's noisy value frequencies of one attribute add up to one (post-processing)")
    schema: str | dict[str, Any] | None = opt(  # noqa: RUF009
        None, "csv: a declared table of categories and numbers: the path of its schema (JSON or YAML: top-level "
              "columns, each with name, kind, categories or lower/upper/bins, missing; relative to the current "
              "folder, else to $DPGM_DATA_DIR) or the schema itself. Public: it sets data.attribute_sizes, and the "
              "release decodes its records back to the table's columns (docs/guide/tables.md)")
    records_magnitude: int | None = opt(None, "rules: public: the declared order of magnitude N of the number of "
                                              "records (a power of ten, N <= n < 10 N; null: read off the data and "
                                              "listed in the privacy report's public_inputs)")
    download: bool = opt(False, "mnist: fetch the IDX files with torchvision when missing (never in tests)")

    def validate(self) -> None:
        require(0.0 < self.threshold < 1.0, "data", "threshold", f"must be in (0, 1), got {self.threshold}")
        require(self.top_items is None or self.top_items >= 1, "data", "top_items", "must be >= 1")
        require(self.top_items_noise_multiplier > 0, "data", "top_items_noise_multiplier", "must be > 0")
        require(self.limit is None or self.limit >= 1, "data", "limit", "must be >= 1")
        require(self.chunk_mb is None or self.chunk_mb > 0, "data", "chunk_mb", "must be > 0")
        require(self.chunk_mb is None or self.source in ("transactions", "csv", "parquet"), "data", "chunk_mb",
                 "reads transaction, CSV and Parquet files only")
        require(self.chunk_mb is None or self.limit is None, "data", "chunk_mb", "cannot be combined with data.limit")
        require(self.min_items >= 0, "data", "min_items", "must be >= 0")
        require(self.n_items is None or self.n_items >= 1, "data", "n_items", "must be >= 1")
        require(self.attributes is None or self.attributes >= 1, "data", "attributes", "must be >= 1")
        if self.schema is not None:
            self._declare_table()
        if self.attribute_sizes is not None:
            require(len(self.attribute_sizes) >= 1 and all(int(v) >= 1 for v in self.attribute_sizes), "data",
                    "attribute_sizes", "must list at least one attribute, each of at least one value")
            require(self.attributes in (None, len(self.attribute_sizes)), "data", "attribute_sizes",
                    f"lists {len(self.attribute_sizes)} attributes but data.attributes is {self.attributes}")
            self.attributes = len(self.attribute_sizes)
        require(self.records_magnitude is None
                 or (self.records_magnitude >= 1 and math.log10(self.records_magnitude).is_integer()),
                 "data", "records_magnitude", "must be a power of ten (1, 10, 100, ...)")
        require(self.source not in ("transactions", "csv", "parquet") or bool(self.path), "data", "path",
                 f"is required for source {self.source}")

    def _declare_table(self) -> None:
        """The attribute sizes the declared schema sets (checked now: a bad declaration fails before any data)."""
        from dpgm.tables import table_schema

        try:
            sizes = table_schema(self.schema).attribute_sizes
        except ConfigError as exc:
            raise ConfigError(f"data.schema: {exc}") from None
        require(self.label_column is None, "data", "label_column",
                "not with data.schema: declare the label as one of its columns")
        require(self.chunk_mb is None, "data", "chunk_mb", "not with data.schema: a table is read into memory")
        require(self.attribute_sizes in (None, sizes), "data", "attribute_sizes",
                "differs from the sizes data.schema declares (leave it out)")
        self.attribute_sizes = sizes
