"""Release: draw synthetic records from a trained mixture and write them out (paper section 4.4).

Pure post-processing: reads only a run's release/ folder (model weights, noisy part sizes,
item names, privacy report; see artifact.py), never the training data or the run's private/
folder, and writes nothing to the ledger. Every output file is written atomically and streamed in chunks.
"""

from __future__ import annotations

import contextlib
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import scipy.sparse as sp
import torch

from dpgm.artifact import FORMATS, ReleasedMixture, load_release
from dpgm.clustering.base import size_shares
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DpgmError
from dpgm.imaging import write_png_grid
from dpgm.io import atomic_write, atomic_write_json, check_output
from dpgm.progress import progress_scope, stage_bar

#: A release gives up when, after at least MIN_DRAWS draws, fewer than MIN_ACCEPTANCE of them held
#: ``data.min_items`` items: the draws stay within max(MIN_DRAWS, n / MIN_ACCEPTANCE) plus one chunk.
MIN_DRAWS = 10_000
MIN_ACCEPTANCE = 0.01


def _draw(mixture: ReleasedMixture, c: int, probs: torch.Tensor, generator: torch.Generator,
          threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
    """``c`` records (uint8 [c, m]) and their parts: part by noisy size, then the part's model."""
    parts = torch.multinomial(probs, c, replacement=True, generator=generator)
    out = torch.empty(c, mixture.n_items, dtype=torch.uint8)
    for j in torch.unique(parts).tolist():
        where = (parts == j).nonzero(as_tuple=True)[0]
        model = mixture.models[j]
        if threshold is None:
            out[where] = model.sample(len(where), generator).to(torch.uint8)
        else:
            out[where] = (model.sample_probs(len(where), generator) >= threshold).to(torch.uint8)
    return out.numpy(), parts.numpy()


def _check_acceptance(accepted: int, drawn: int, min_items: int) -> None:
    """Refuse to go on drawing when the models almost never give a record of ``min_items`` items."""
    if drawn >= MIN_DRAWS and accepted < MIN_ACCEPTANCE * drawn:
        raise DpgmError(
            f"only {accepted} of {drawn} synthetic records held at least data.min_items = {min_items} items "
            f"(fewer than {MIN_ACCEPTANCE:.0%}): the models almost never draw such records; "
            f"lower data.min_items or train longer")


@torch.no_grad()
def sample_chunks(
    mixture: ReleasedMixture,
    n: int,
    generator: torch.Generator,
    *,
    chunk_size: int = 10_000,
    threshold: float | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (records uint8 [c, m], parts [c]) chunks totalling ``n`` synthetic records.

    Each record's part is drawn with probability proportional to the NOISY part size
    (DESIGN.md 3.4), then the record from that part's model: Bernoulli draws, or
    probabilities >= ``threshold`` when one is given. A record with fewer than
    ``mixture.min_items`` items (``data.min_items``) is rejected and drawn again: the mixture
    conditioned on that public fact (post-processing); see ``_check_acceptance`` for the bound.
    """
    probs = torch.as_tensor(size_shares(mixture.noisy_sizes), dtype=torch.float64)
    done = drawn = 0
    while done < n:
        records, parts = _draw(mixture, min(chunk_size, n - done), probs, generator, threshold)
        drawn += len(records)
        if mixture.min_items > 0:
            keep = records.sum(axis=1, dtype=np.int64) >= mixture.min_items
            records, parts = records[keep], parts[keep]
            _check_acceptance(done + len(records), drawn, mixture.min_items)
        done += len(records)
        if len(records):
            yield records, parts


def sample_dataset(run_dir: str | Path, n: int, *, seed: int | None = None) -> BinaryDataset:
    """``n`` synthetic records from a run, in memory (CSR), for evaluation and benchmarks."""
    mixture = load_release(run_dir)
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    rows = [sp.csr_matrix(records) for records, _ in sample_chunks(mixture, n, generator)]
    return BinaryDataset(records=sp.vstack(rows).tocsr(), item_names=mixture.item_names, name="synthetic",
                         image_shape=mixture.image_shape)


@contextlib.contextmanager
def _text_stream(raw: IO[bytes], *, gzipped: bool) -> Iterator[io.TextIOBase]:
    """A text stream over the binary file ``raw`` (left open): gzip-compressed when asked."""
    target = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if gzipped else raw
    text = io.TextIOWrapper(target, encoding="utf-8", newline="\n")
    yield text
    text.flush()
    text.detach()
    if gzipped:
        target.close()  # writes the gzip trailer; ``raw`` stays open for the atomic rename


def _write_csv(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], names: list[str]) -> None:
    fh.write(",".join(names) + "\n")
    for records, _ in chunks:
        np.savetxt(fh, records, fmt="%d", delimiter=",")


def _write_transactions(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], ids: list[int]) -> None:
    """One line per record: the source-data ids of its items, ascending (the ../shared/data format)."""
    ids_array = np.asarray(ids)
    for records, _ in chunks:
        fh.writelines(" ".join(map(str, ids_array[np.flatnonzero(row)])) + "\n" for row in records)


def release(
    run_dir: str | Path,
    out: str | Path,
    n: int,
    *,
    fmt: str = "csv",
    seed: int | None = None,
    threshold: float | None = None,
    progress: bool = True,
    mkdir: bool = False,
) -> dict[str, Any]:
    """Draw ``n`` records from a run's mixture into ``out`` and put the privacy report beside it.

    ``out`` ending in .gz is gzip-compressed; its folder must exist unless ``mkdir``.
    """
    if n < 1:
        raise DpgmError(f"--n must be >= 1, got {n}")
    if fmt not in FORMATS:
        raise DpgmError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if threshold is not None and not 0 < threshold < 1:
        raise DpgmError(f"--threshold must be in (0, 1), got {threshold}")
    check_output(Path(out), mkdir=mkdir)
    mixture = load_release(run_dir)
    if fmt == "png" and mixture.image_shape is None:
        raise DpgmError("--format png needs image data; this run's records are not images")
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    out = Path(out)
    spent = float(mixture.report["epsilon"])  # the run's; a release spends nothing more
    with progress_scope(enabled=progress, epsilon=lambda: spent):
        bar = stage_bar("sampling", n, unit="rec")

    def counted(chunks):
        for chunk in chunks:
            bar.advance(len(chunk[0]))
            yield chunk

    chunks = counted(sample_chunks(mixture, n, generator, threshold=threshold))
    if fmt == "png":
        records = np.concatenate([r for r, _ in chunks]).astype(np.float32)
        write_png_grid(out, records.reshape(-1, *mixture.image_shape), nrow=int(np.ceil(np.sqrt(n))))
    else:
        with atomic_write(out, "wb") as raw, _text_stream(raw, gzipped=out.name.endswith(".gz")) as fh:
            if fmt == "csv":
                _write_csv(fh, chunks, mixture.item_names)
            else:
                _write_transactions(fh, chunks, mixture.item_ids)
    bar.close()
    report = dict(mixture.report)
    report["release"] = {"records": n, "format": fmt, "sampling_seed_fixed": seed is not None,
                         "threshold": threshold, "min_items": mixture.min_items,
                         "note": "post-processing of the trained models: no extra privacy cost"}
    atomic_write_json(Path(f"{out}.privacy.json"), report)
    return report
