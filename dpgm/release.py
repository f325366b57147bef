"""Release: draw synthetic records from a trained mixture and write them out (paper section 4.4).

Pure post-processing: reads only a run's release/ folder (model weights, noisy part sizes,
item names, privacy report; see artifact.py), never the training data or the run's private/
folder, and writes nothing to the ledger. Every output file is written atomically and streamed in chunks.

When the run partitioned by label (artifact.PartLabels), each part is one declared label: a
record's label is its part's, so the labels of a release follow the noisy label histogram (the
noisy part sizes, already on the ledger). A label request (``labels``, ``per_label``) only
changes which parts are drawn: still post-processing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dpgm.artifact import (
    FORMATS,
    MAX_PNG_IMAGES,
    MAX_RECORDS,
    ReleasedMixture,
    check_record_limit,
    load_release,
    release_dir,
)
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DpgmError
from dpgm.io import atomic_write, atomic_write_json, check_free_space, check_output
from dpgm.mixture_draws import check_acceptance, draw_records, mixture_shares
from dpgm.models.tilt import features, length_problem, resample
from dpgm.privacy.verdict import stamped
from dpgm.progress import progress_scope, stage_bar, timed
from dpgm.release_writers import text_stream, write_csv, write_png, write_table_csv, write_transactions
from dpgm.tables import TableSchema, released_schema
from dpgm.threads import serial_blas

#: Draws per released record whose tilt follows a record-length histogram (``_Following.pool``): a larger pool lets
#: the tilt reach rarer lengths, and move the rest further from what the models measured.
LENGTH_POOL = 3

#: One step of a release: (shares over the parts, number of records drawn with them).
Draw = tuple[np.ndarray, int]


@torch.no_grad()
def sample_chunks(
    mixture: ReleasedMixture,
    n: int,
    generator: torch.Generator,
    *,
    chunk_size: int = 10_000,
    threshold: float | None = None,
    shares: np.ndarray | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (records uint8 [c, m], parts [c]) chunks totalling ``n`` synthetic records.

    Each record's part is drawn with probability proportional to the NOISY part size
    (docs/paper.md, note 4; ``mixture_shares``), or by ``shares`` when given (see ``draw_plan``), then the record from
    that part's model: Bernoulli draws, or probabilities >= ``threshold`` when one is given.
    A record with fewer than ``mixture.min_items`` items (``data.min_items``) is rejected and
    drawn again from its part: each part's model conditioned on that public fact (post-processing,
    ``part_records``); see ``check_acceptance`` for the bound. When the run released a record-length histogram
    (``model.length_noise_multiplier``), the kept records follow it (``_Following``); when it measured
    global item pairs, a plain release (no ``shares`` or ``threshold``) follows them (``_Tilt``).
    """
    probs = torch.as_tensor(mixture_shares(mixture) if shares is None else shares, dtype=torch.float64)
    lengths = _length_targets(mixture)
    tilt = _Following(lengths, threshold) if lengths is not None else (
        _tilt_of(mixture) if shares is None and threshold is None else None)
    if tilt is None:
        done = drawn = 0
        while done < n:
            with timed("drawing"):
                records, parts, tried = draw_records(mixture, min(chunk_size, n - done), probs, generator, threshold,
                                                     mixture.min_items)
            drawn += tried
            done = _checked(mixture, done, drawn, len(records))
            if len(records):
                yield records, parts
        return
    yield from _tilted_chunks(tilt, mixture, n, chunk_size, probs, generator)


def _checked(mixture: ReleasedMixture, done: int, drawn: int, kept: int) -> int:
    """The records released so far with ``kept`` more, after ``check_acceptance`` of the draws they took."""
    if mixture.min_items > 0:
        check_acceptance(done + kept, drawn, mixture.min_items)
    return done + kept


def _tilted_chunks(tilt: _Tilt | _Following, mixture: ReleasedMixture, n: int, chunk_size: int,
                   probs: torch.Tensor, generator: torch.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``sample_chunks`` with a tilt, in two stages: each chunk's pool is drawn here (every use of ``generator``,
    ``_Pool``) while the previous chunk's tilt is fitted on a worker thread, one chunk after another (each from the
    last one's theta): the records of one stage after the other, in the same order, with the two overlapping.
    BLAS runs on one thread meanwhile (``serial_blas``)."""
    done = drawn = 0
    fitting: Future | None = None
    with serial_blas(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpgm-tilt") as worker:
        while done < n:
            pool = tilt.pool(mixture, min(chunk_size, n - done), probs, generator)
            drawn += pool.tried
            done = _checked(mixture, done, drawn, pool.count)
            previous = fitting
            fitting = worker.submit(contextvars.copy_context().run, _picks, tilt, pool) if pool.count else None
            if previous is not None:
                yield previous.result()
        if fitting is not None:
            yield fitting.result()


def _length_targets(mixture: ReleasedMixture) -> torch.Tensor | None:
    """The noisy record-length shares the release follows (none below ``min_items``), or None."""
    if mixture.length_shares is None:
        return None
    shares = torch.as_tensor(mixture.length_shares, dtype=torch.float64).clone()
    shares[: mixture.min_items] = 0.0
    return shares / shares.sum() if float(shares.sum()) > 0 else None


@dataclass
class _Pool:
    """One chunk's draws before its tilt: the pool (records, parts), the records it gives (``count``: the chunk's,
    none from an empty pool) and the draws they count for (``tried``: their share of the pool's), the resample's
    uniform ``offset``, the picks' random ``order``, and the tilt's problem (features, targets, ridge)."""

    records: np.ndarray
    parts: np.ndarray
    count: int
    tried: int
    offset: float = 0.0
    order: np.ndarray | None = None
    problem: tuple[sp.csr_matrix, np.ndarray, np.ndarray | None] | None = None

    @torch.no_grad()
    def picks(self, start: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(records, parts, theta): the pool's tilt from ``start`` (``resample``), its picks in the pool's order."""
        f, targets, ridge = self.problem
        with timed("tilt"):
            picks, theta = resample(f, targets, count=self.count, offset=self.offset, ridge=ridge, start=start)
        picks = picks[self.order]
        return self.records[picks], self.parts[picks], theta


def _draw_pool(mixture: ReleasedMixture, c: int, size: int, probs: torch.Tensor, generator: torch.Generator,
               threshold: float | None) -> _Pool:
    """``size`` independent draws for a chunk of ``c`` records, then the offset and order of its picks: every use
    of the generator a tilted chunk makes. The draws counted are the c records' share (``check_acceptance``
    bounds rejections, not the pool)."""
    with timed("drawing"):
        pool, parts, drawn = draw_records(mixture, size, probs, generator, threshold, mixture.min_items,
                                          systematic=False)
    if len(pool) == 0:
        return _Pool(pool, parts, 0, drawn)
    offset = float(torch.rand(1, generator=generator, dtype=torch.float64))
    order = torch.randperm(c, generator=generator).numpy()
    return _Pool(pool, parts, c, drawn * c // len(pool), offset, order)


@dataclass
class _Tilt:
    """The targets a release follows (``_tilt_of``; post-processing) and the last chunk's tilt, the next one's start."""

    edges: np.ndarray
    targets: np.ndarray
    empty: bool
    theta: np.ndarray | None = None

    def pool(self, mixture: ReleasedMixture, c: int, probs: torch.Tensor, generator: torch.Generator) -> _Pool:
        """``pairs_pool`` x c draws for c records, and their tilt to the item and pair frequencies (``features``).
        Independent draws: the tilt sets the followed frequencies itself and its resample draws the rest anew, so
        systematic draws bought nothing here (docs/results.md) and cost time."""
        pool = _draw_pool(mixture, c, c * mixture.pairs_pool, probs, generator, None)
        if pool.count:
            with timed("tilt"):
                pool.problem = features(pool.records, self.edges, empty=self.empty), self.targets, None
        return pool


def _tilt_of(mixture: ReleasedMixture) -> _Tilt | None:
    """The item and pair frequencies the release follows, or None. Measured over non-empty records, they are
    scaled by the non-empty share when empty records are a part, and that share is a target too."""
    if mixture.pair_edges is None or mixture.pair_targets is None:
        return None
    empty = None if mixture.empty_size is None else float(mixture_shares(mixture)[-1])
    targets = mixture.pair_targets if empty is None else np.append(mixture.pair_targets * (1.0 - empty), empty)
    return _Tilt(mixture.pair_edges, targets, empty=empty is not None)


@dataclass
class _Following:
    """The record-length shares a release follows (``_length_targets``), the draws' threshold, and the last chunk's
    tilt, the next one's start (every chunk poses the same features: the parts, their items and pairs, the lengths)."""

    shares: torch.Tensor
    threshold: float | None = None
    theta: np.ndarray | None = None

    def pool(self, mixture: ReleasedMixture, c: int, probs: torch.Tensor, generator: torch.Generator) -> _Pool:
        """LENGTH_POOL x c draws for c records, and their tilt (dpgm.models.tilt, ``length_problem``) to the noisy
        length shares that keeps each part's share, its items' frequencies and its tree's pairs'."""
        pool = _draw_pool(mixture, c, c * LENGTH_POOL, probs, generator, self.threshold)
        if pool.count:
            with timed("tilt"):
                pool.problem = length_problem(pool.records, pool.parts, mixture.models, probs.numpy(),
                                              self.shares.numpy())
        return pool


def _picks(tilt: _Tilt | _Following, pool: _Pool) -> tuple[np.ndarray, np.ndarray]:
    """A chunk's records and parts: its pool resampled systematically by the tilt's weights, in random order (the
    followed frequencies move, what the models measured stays; post-processing); the next chunk's tilt starts
    from this one's theta."""
    records, parts, tilt.theta = pool.picks(tilt.theta)
    return records, parts


def _label_parts(mixture: ReleasedMixture, labels: Sequence[int] | None) -> list[int]:
    """The parts of the requested labels, in the order asked (default: every declared label)."""
    if mixture.part_labels is None:
        raise DpgmError("--labels and --per-label need a run partitioned by label (partition.method: label); "
                        "this run's parts are not labels")
    wanted = mixture.part_labels.labels if labels is None else dict.fromkeys(labels)
    return [mixture.part_labels.part_of(int(label)) for label in wanted]


def _restricted_shares(shares: np.ndarray, parts: list[int]) -> np.ndarray:
    """``shares`` kept on ``parts`` and renormalised: the release conditioned on its label being one of
    them (equal shares when the noisy histogram gives them none)."""
    kept = np.zeros_like(shares)
    kept[parts] = shares[parts]
    total = kept.sum()
    if total > 0:
        return kept / total
    kept[parts] = 1.0 / len(parts)
    return kept


def draw_plan(mixture: ReleasedMixture, n: int | None, *, labels: Sequence[int] | None = None,
              per_label: int | None = None) -> list[Draw]:
    """What a release draws, in turn, as (part shares, records) pairs.

    No label request: ``n`` records, parts by noisy size. ``labels``: ``n`` records of those
    labels, the noisy label histogram renormalised over them. ``per_label``: exactly that many
    records of each requested label (every declared label by default), in the order asked.
    """
    shares = mixture_shares(mixture)
    if labels is None and per_label is None:
        return [(shares, n)]
    parts = _label_parts(mixture, labels)
    if per_label is None:
        return [(_restricted_shares(shares, parts), n)]
    if per_label * len(parts) > MAX_RECORDS:
        raise DpgmError(f"{per_label:,} records of each of {len(parts)} labels: more than the "
                        f"{MAX_RECORDS:,} records one release may draw")
    return [(np.eye(len(shares))[j], per_label) for j in parts]


def plan_chunks(mixture: ReleasedMixture, plan: list[Draw], generator: torch.Generator, *,
                threshold: float | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The (records, parts) chunks of every step of ``plan`` in turn (see ``sample_chunks``)."""
    for shares, count in plan:
        yield from sample_chunks(mixture, count, generator, threshold=threshold, shares=shares)


def sample_dataset(run_dir: str | Path, n: int, *, seed: int | None = None) -> BinaryDataset:
    """``n`` synthetic records from a run, in memory (CSR), for evaluation and benchmarks."""
    mixture = load_release(run_dir)
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    rows = [sp.csr_matrix(records) for records, _ in sample_chunks(mixture, n, generator)]
    return BinaryDataset(records=sp.vstack(rows).tocsr(), item_names=mixture.item_names, name="synthetic",
                         image_shape=mixture.image_shape)


def check_counts(n: int | None, per_label: int | None, names: tuple[str, str] = ("--n", "--per-label")) -> None:
    """One-line errors unless exactly one of ``n`` (records in all) and ``per_label`` (records of
    each label) is given, and it is >= 1; ``names`` are the caller's words for them."""
    if (n is None) == (per_label is None):
        raise DpgmError(f"give either {names[0]} (records in all) or {names[1]} (records of each label), not both"
                        if n is not None else f"{names[0]} is required (or {names[1]} N for N records of each label)")
    for name, count in zip(names, (n, per_label)):
        if count is not None and count < 1:
            raise DpgmError(f"{name} must be >= 1, got {count}")
        check_record_limit(count, name)


def least_bytes(mixture: ReleasedMixture, records: int, fmt: str, *, gzipped: bool,
                table: TableSchema | None = None) -> int:
    """A lower bound on a release's file size, to refuse one that cannot fit before drawing it.

    csv: a digit and a comma or newline per value (a declared table's: a comma or newline per column);
    transactions: at least ``min_items`` ids of
    two bytes, else a newline, per record; png: 0 (at most MAX_PNG_IMAGES); gzip packs <= 1032:1.
    """
    if fmt == "png":
        return 0
    if fmt == "csv" and table is not None:
        per_record = len(table.columns)
    elif fmt == "csv":
        per_record = 2 * (mixture.n_items + (mixture.part_labels is not None))
    else:
        per_record = max(1, 2 * mixture.min_items)
    size = records * per_record
    return size // 1032 if gzipped else size


def _check_request(n: int | None, per_label: int | None, fmt: str, threshold: float | None) -> None:
    """One-line errors for a request that makes no sense, before anything is loaded."""
    check_counts(n, per_label)
    if fmt not in FORMATS:
        raise DpgmError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if threshold is not None and not 0 < threshold < 1:
        raise DpgmError(f"--threshold must be in (0, 1), got {threshold}")


def release(
    run_dir: str | Path,
    out: str | Path,
    n: int | None,
    *,
    fmt: str = "csv",
    seed: int | None = None,
    threshold: float | None = None,
    labels: Sequence[int] | None = None,
    per_label: int | None = None,
    progress: bool = True,
    mkdir: bool = False,
) -> dict[str, Any]:
    """Draw records from a run's mixture into ``out`` and put the privacy report beside it.

    ``n`` records in all, or ``per_label`` of each label (see ``draw_plan``; ``labels`` picks
    the labels of a run partitioned by label). ``out`` ending in .gz is gzip-compressed; its
    folder must exist unless ``mkdir``.
    """
    _check_request(n, per_label, fmt, threshold)
    check_output(Path(out), mkdir=mkdir)
    mixture = load_release(run_dir)
    if fmt == "png" and mixture.image_shape is None:
        raise DpgmError("--format png needs image data; this run's records are not images")
    plan = draw_plan(mixture, n, labels=labels, per_label=per_label)
    rows = None if mixture.part_labels is None else _label_parts(mixture, labels)
    total = sum(count for _, count in plan)
    if fmt == "png" and total > MAX_PNG_IMAGES:
        raise DpgmError(
            f"--format png: at most {MAX_PNG_IMAGES:,} images in one grid, got {total:,}")
    out = Path(out)
    check_output(Path(f"{out}.privacy.json"), mkdir=False)
    table = released_schema(release_dir(run_dir))  # a declared table: its records decoded to its columns
    check_free_space(out.parent, least_bytes(mixture, total, fmt, gzipped=out.name.endswith(".gz"), table=table),
                     f"--out {out}: {total:,} records")
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    spent = float(mixture.report["epsilon"])  # the run's; a release spends nothing more
    with progress_scope(enabled=progress, epsilon=lambda: spent):
        bar = stage_bar("sampling", total, unit="rec")

    def counted(chunks):
        for chunk in chunks:
            bar.advance(len(chunk[0]))
            with timed("writing"):  # the writer's work on the chunk, until it asks for the next
                yield chunk

    chunks = counted(plan_chunks(mixture, plan, generator, threshold=threshold))
    if fmt == "png":
        write_png(out, chunks, mixture.image_shape, rows)
    else:
        with atomic_write(out, "wb") as raw, text_stream(raw, gzipped=out.name.endswith(".gz")) as fh:
            if fmt == "csv" and table is not None:
                write_table_csv(fh, chunks, table, np.random.default_rng(seed))
            elif fmt == "csv":
                write_csv(fh, chunks, mixture.item_names, mixture.part_labels)
            else:
                write_transactions(fh, chunks, mixture.item_ids)
    bar.close()
    report = stamped(mixture.report)  # the run's verdict first
    report["release"] = {"records": total, "format": fmt, "sampling_seed_fixed": seed is not None,
                         "threshold": threshold, "min_items": mixture.min_items,
                         "labels": _released_labels(mixture, rows, fmt), "per_label": per_label,
                         "note": "post-processing of the trained models: no extra privacy cost"}
    atomic_write_json(Path(f"{out}.privacy.json"), report)
    return report


def _released_labels(mixture: ReleasedMixture, rows: list[int] | None, fmt: str) -> dict[str, Any] | None:
    """The release's labels for its report: the labels drawn and, for csv, the label column."""
    if rows is None:
        return None
    return {"labels": [mixture.part_labels.labels[j] for j in rows],
            "column": mixture.part_labels.column if fmt == "csv" else None}
