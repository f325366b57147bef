"""The release's file formats: CSV (0/1 columns, the label last; a declared table's own columns),
transactions (the source-data ids of each record's items, one line a record), PNG grids; text streamed chunk by chunk,
gzip-compressed when asked (dpgm/release.py draws the chunks and writes atomically)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from dpgm.artifact import PartLabels
from dpgm.imaging import write_png_grid, write_png_rows
from dpgm.tables import TableSchema
from dpgm.tables.records import decode


@contextlib.contextmanager
def text_stream(raw: IO[bytes], *, gzipped: bool) -> Iterator[io.TextIOBase]:
    """A text stream over the binary file ``raw`` (left open): gzip-compressed when asked."""
    target = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if gzipped else raw
    text = io.TextIOWrapper(target, encoding="utf-8", newline="\n")
    yield text
    text.flush()
    text.detach()
    if gzipped:
        target.close()  # writes the gzip trailer; ``raw`` stays open for the atomic rename


def write_csv(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], names: list[str],
               labels: PartLabels | None) -> None:
    """Header and 0/1 rows; with label parts, the record's label as the LAST column."""
    fh.write(",".join(names + ([labels.column] if labels else [])) + "\n")
    part_label = None if labels is None else np.asarray(labels.labels)
    for records, parts in chunks:
        rows = records if part_label is None else np.column_stack((records, part_label[parts]))
        np.savetxt(fh, rows, fmt="%d", delimiter=",")


def write_table_csv(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], schema: TableSchema,
                    rng: np.random.Generator) -> None:
    """A declared table: the header of its columns, then each record decoded (``dpgm.tables.records``), a
    missing value as an empty field."""
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(schema.names)
    for records, _ in chunks:
        columns = [[_cell(v) for v in values.tolist()] for values in decode(schema, records, rng)]
        writer.writerows(zip(*columns))


def _cell(value: object) -> str:
    """A decoded value as CSV text: empty where missing, a datetime in ISO form."""
    if value is None:
        return ""
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if isoformat is not None else str(value)


def write_png(out: Path, chunks: Iterator[tuple[np.ndarray, np.ndarray]], image_shape: tuple[int, int],
               rows: list[int] | None) -> None:
    """An image grid: one row per part in ``rows`` (the requested labels' parts), else a square."""
    records, parts = (np.concatenate(x) for x in zip(*chunks))
    images = records.astype(np.float32).reshape(-1, *image_shape)
    if rows is None:
        write_png_grid(out, images, nrow=int(np.ceil(np.sqrt(len(images)))))
    else:
        write_png_rows(out, [images[parts == j] for j in rows])


def write_transactions(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], ids: list[int]) -> None:
    """One line per record: the source-data ids of its items, ascending (the ../shared/data format)."""
    words = np.array([str(i) for i in ids], dtype=object)
    for records, _ in chunks:
        rows, columns = np.nonzero(records)  # row by row, columns ascending: one pass over the chunk
        held = words[columns].tolist()
        ends = np.cumsum(np.bincount(rows, minlength=len(records))).tolist()
        fh.write("".join(" ".join(held[start:end]) + "\n" for start, end in zip([0, *ends[:-1]], ends)))
