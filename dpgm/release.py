"""Release: draw synthetic records from a trained mixture and write them out (paper section 4.4).

Pure post-processing: reads only the released artefacts of a run directory (model weights,
noisy part sizes, item names, privacy report), never the training data, and writes nothing
to the ledger. Every output file is written atomically and streamed in chunks.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from tqdm import tqdm

from dpgm.config import ModelConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DpgmError
from dpgm.io import atomic_write, atomic_write_json
from dpgm.models import build_model
from dpgm.training.mixture import part_probabilities

#: Files of a run directory that make up the release.
MODELS_FILE = "models.pt"
REPORT_FILE = "privacy_report.json"
FORMATS = ("csv", "transactions", "png")


@dataclass
class ReleasedMixture:
    """The k trained models with the released (noisy) part sizes and the data's shape."""

    models: list[nn.Module]
    noisy_sizes: np.ndarray
    item_names: list[str]
    image_shape: tuple[int, int] | None
    report: dict[str, Any]
    item_ids: list[int]  # each column's id in the source file's item universe (transactions output)

    @property
    def n_items(self) -> int:
        return len(self.item_names)


def save_release(
    run_dir: Path,
    models: list[nn.Module],
    noisy_sizes: np.ndarray,
    model_cfg: ModelConfig,
    item_names: list[str],
    image_shape: tuple[int, int] | None,
    item_ids: list[int] | None = None,
) -> None:
    """Write ``models.pt``: plain tensors and built-ins only, loadable with weights_only=True.

    ``item_ids`` maps each column to its id in the source data (after a top-items restriction).
    """
    payload = {
        "state_dicts": [{k: v.detach().cpu() for k, v in m.state_dict().items()} for m in models],
        "noisy_sizes": torch.as_tensor(np.asarray(noisy_sizes, dtype=np.float64)),
        "model": {"kind": model_cfg.kind, "hidden": list(model_cfg.hidden), "latent": model_cfg.latent,
                  "rbm_hidden": model_cfg.rbm_hidden, "gibbs_steps": model_cfg.gibbs_steps,
                  "chains": model_cfg.chains},
        "item_names": list(item_names),
        "item_ids": [int(i) for i in item_ids] if item_ids is not None else list(range(len(item_names))),
        "image_shape": list(image_shape) if image_shape else None,
    }
    with atomic_write(run_dir / MODELS_FILE, "wb") as fh:
        torch.save(payload, fh)


def load_release(run_dir: str | Path) -> ReleasedMixture:
    """Load a run directory's release (weights_only=True: no code is unpickled)."""
    run_dir = Path(run_dir)
    path = run_dir / MODELS_FILE
    if not path.is_file():
        raise DpgmError(f"{run_dir}: no {MODELS_FILE} (is this a finished train.py run directory?)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        report = json.loads((run_dir / REPORT_FILE).read_text())
    except FileNotFoundError:
        raise DpgmError(f"{run_dir}: no {REPORT_FILE}; refusing to release without a privacy report") from None
    except Exception as exc:  # noqa: BLE001 (a corrupt or foreign file fails in many ways)
        raise DpgmError(f"{path}: cannot load the release ({exc.__class__.__name__}: {exc})") from None
    cfg = ModelConfig(**payload["model"])
    n_items = len(payload["item_names"])
    models = []
    for state in payload["state_dicts"]:
        model = build_model(cfg, n_items)
        model.load_state_dict(state)
        model.eval()
        models.append(model)
    shape = payload["image_shape"]
    return ReleasedMixture(
        models=models,
        noisy_sizes=payload["noisy_sizes"].numpy(),
        item_names=list(payload["item_names"]),
        image_shape=tuple(shape) if shape else None,
        report=report,
        item_ids=list(payload.get("item_ids", range(n_items))),
    )


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
    probabilities >= ``threshold`` when one is given.
    """
    probs = part_probabilities(mixture.noisy_sizes)
    done = 0
    while done < n:
        c = min(chunk_size, n - done)
        parts = torch.multinomial(probs, c, replacement=True, generator=generator)
        out = torch.empty(c, mixture.n_items, dtype=torch.uint8)
        for j in torch.unique(parts).tolist():
            where = (parts == j).nonzero(as_tuple=True)[0]
            model = mixture.models[j]
            if threshold is None:
                out[where] = model.sample(len(where), generator).to(torch.uint8)
            else:
                out[where] = (model.sample_probs(len(where), generator) >= threshold).to(torch.uint8)
        done += c
        yield out.numpy(), parts.numpy()


def sample_dataset(run_dir: str | Path, n: int, *, seed: int | None = None) -> BinaryDataset:
    """``n`` synthetic records from a run, in memory (CSR), for evaluation and benchmarks."""
    mixture = load_release(run_dir)
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    rows = [sp.csr_matrix(records) for records, _ in sample_chunks(mixture, n, generator)]
    return BinaryDataset(records=sp.vstack(rows).tocsr(), item_names=mixture.item_names, name="synthetic",
                         image_shape=mixture.image_shape)


def _write_csv(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], names: list[str]) -> None:
    fh.write(",".join(names) + "\n")
    for records, _ in chunks:
        np.savetxt(fh, records, fmt="%d", delimiter=",")


def _write_transactions(fh: io.TextIOBase, chunks: Iterator[tuple[np.ndarray, np.ndarray]], ids: list[int]) -> None:
    """One line per record: the source-data ids of its items, ascending (the ../shared/data format)."""
    ids_array = np.asarray(ids)
    for records, _ in chunks:
        fh.writelines(" ".join(map(str, ids_array[np.flatnonzero(row)])) + "\n" for row in records)


def image_grid(images: np.ndarray, nrow: int) -> np.ndarray:
    """Tile images [n, h, w] into one [rows*(h+1)-1, nrow*(w+1)-1] array with 1-pixel gaps."""
    n, h, w = images.shape
    rows = -(-n // nrow)
    grid = np.full((rows * (h + 1) - 1, nrow * (w + 1) - 1), 0.5, dtype=np.float32)
    for i, img in enumerate(images):
        r, c = divmod(i, nrow)
        grid[r * (h + 1): r * (h + 1) + h, c * (w + 1): c * (w + 1) + w] = img
    return grid


def write_png_grid(path: Path, images: np.ndarray, nrow: int) -> None:
    """Save a grid of images (values in [0, 1]) as a PNG, atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    plt.imsave(buf, image_grid(np.asarray(images, dtype=np.float32), nrow), cmap="gray", vmin=0, vmax=1, format="png")
    with atomic_write(path, "wb") as fh:
        fh.write(buf.getvalue())


@torch.no_grad()
def part_sample_grid(mixture_models: list[nn.Module], image_shape: tuple[int, int], generator: torch.Generator,
                     per_part: int = 8) -> np.ndarray:
    """Images [k * per_part, h, w]: one row of Bernoulli means per part (paper Fig. 4)."""
    rows = [m.sample_probs(per_part, generator).reshape(per_part, *image_shape).cpu().numpy() for m in mixture_models]
    return np.concatenate(rows)


def release(
    run_dir: str | Path,
    out: str | Path,
    n: int,
    *,
    fmt: str = "csv",
    seed: int | None = None,
    threshold: float | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Draw ``n`` records from a run's mixture into ``out`` and put the privacy report beside it."""
    if n < 1:
        raise DpgmError(f"--n must be >= 1, got {n}")
    if fmt not in FORMATS:
        raise DpgmError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if threshold is not None and not 0 < threshold < 1:
        raise DpgmError(f"--threshold must be in (0, 1), got {threshold}")
    mixture = load_release(run_dir)
    if fmt == "png" and mixture.image_shape is None:
        raise DpgmError("--format png needs image data; this run's records are not images")
    generator = torch.Generator()
    generator.manual_seed(seed if seed is not None else int(torch.seed()))
    out = Path(out)
    bar = tqdm(total=n, unit="rec", disable=not progress or n < 50_000, desc="sampling")

    def counted(chunks):
        for chunk in chunks:
            bar.update(len(chunk[0]))
            yield chunk

    chunks = counted(sample_chunks(mixture, n, generator, threshold=threshold))
    if fmt == "png":
        records = np.concatenate([r for r, _ in chunks]).astype(np.float32)
        write_png_grid(out, records.reshape(-1, *mixture.image_shape), nrow=int(np.ceil(np.sqrt(n))))
    else:
        with atomic_write(out, "w") as fh:
            if fmt == "csv":
                _write_csv(fh, chunks, mixture.item_names)
            else:
                _write_transactions(fh, chunks, mixture.item_ids)
    bar.close()
    report = dict(mixture.report)
    report["release"] = {"records": n, "format": fmt, "sampling_seed_fixed": seed is not None,
                         "threshold": threshold, "note": "post-processing of the trained models: no extra privacy cost"}
    atomic_write_json(Path(f"{out}.privacy.json"), report)
    return report
