"""Train on synthetic, test on real: a fixed classifier trained on dpgm's labelled release.

For each epsilon (delta 1e-5) and seed: train dpgm (``--config``, default configs/mnist_labels.yaml:
one VAE per digit, ``privacy.target_epsilon`` = epsilon), release ``--release`` labelled images
(default 60,000; labels follow the noisy label histogram, images from each label's model), train
the fixed classifier below on them and report its accuracy on the real test set. Also, once per
seed: ``real`` (the same classifier on the real training set: the ceiling) and ``nonprivate``
(the same dpgm config with every noise multiplier set to ``TINY`` = 1e-6 and no target epsilon:
dpgm's config system has no switch that turns privacy off, so this is the definition; its epsilon
is astronomically large, so it is a ceiling for the method, never a release).

The classifier was fixed before any dpgm tuning and is never selected on the test set:

    conv 3x3, 32 channels (padding 1) - ReLU - max-pool 2x2
    conv 3x3, 64 channels (padding 1) - ReLU - max-pool 2x2
    fully connected 128 - ReLU - fully connected 10
    inputs: the binary images as 0/1 floats; loss: cross-entropy; Adam, learning rate 1e-3,
    batch 128, a fixed number of epochs (``EPOCHS``: 3 for 28x28 images, 30 for 8x8 digits,
    whose training set is 50 times smaller), initialised and shuffled from the seed.

By default there is no model selection: the weights after the last epoch are evaluated.
``--select-on validation`` keeps the epoch with the best accuracy on a validation split carved
from the classifier's OWN training set (its last twelfth: 5,000 of 60,000; synthetic images for
dpgm and nonprivate, so the private data are never looked at again; real training images for
real), and then trains on the other eleven twelfths. ``--select-on test`` is refused with a
one-line error and exit code 2 before anything is loaded.

Choosing dpgm's own config (model, sampling) uses ``--evaluate-on validation``: the last
``HOLDOUT`` training images (10,000 for MNIST) take the test set's place, and dpgm, the
classifier and ``real`` see only the others; the test set is not even loaded. Figures reported
against the anchors use the default ``--evaluate-on test`` with configs chosen this way.

Datasets (``--dataset``):
  mnist    $DPGM_DATA_DIR/mnist IDX files, train (60,000) and test (10,000), pixels >= 0.5.
  fashion  Fashion-MNIST in the same IDX format, from ``--fashion-dir`` (default
           $DPGM_DATA_DIR/fashion-mnist, else /usr/share/datasets/fashion-mnist, where
           Debian's package ``dataset-fashion-mnist`` puts it); never downloaded. The dpgm
           config defaults to mnist_labels, which was not tuned for it.
  digits   scikit-learn's 8x8 digits (shipped with scikit-learn; a smoke run in seconds):
           a fixed 30% (539 images, permutation seed 0) is the test set, the rest (1,258) the
           training set; config digits_labels; same CNN (the FC layer sees 64 x 2 x 2).

JSON (``--json``, through provenance.write_json): ``settings``, ``classifier`` (the architecture
and schedule above) and ``results``, one object per (epsilon, seed, method) with ``epsilon``
(null for real and nonprivate), ``seed``, ``method`` (dpgm, nonprivate, real), ``accuracy`` (on
the real test set; the mean of ``accuracies``, one per ``--repeats``: a fresh draw and classifier
each), ``seconds`` (dpgm + classifier), ``dpgm_seconds`` (partition, training and
release; null for real), ``classifier_seconds`` and ``threshold`` (null: Bernoulli pixels); ``privacy`` lists each dpgm run's epsilon and delta from its privacy report
(``epsilon_spent``). ``--png``: one row per label, left to right
``--png-per`` images of each dpgm epsilon, then nonprivate, then real (first seed), grey gaps.

    python benchmarks/train_on_synthetic.py --epsilons 1 10 --seeds 3 --json tos.json --png tos.png
    python benchmarks/train_on_synthetic.py --dataset digits --epsilons 1 10 --seeds 1 --json /tmp/tos.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json

DATASETS = ("mnist", "fashion", "digits")
CONFIGS = {"mnist": "mnist_labels", "fashion": "mnist_labels", "digits": "digits_labels"}
RELEASE = {"mnist": 60_000, "fashion": 60_000, "digits": 1_258}  # the size of the real training set
EPOCHS = {"mnist": 3, "fashion": 3, "digits": 30}
DELTA = 1e-5
TINY = 1e-6  # every noise multiplier of the nonprivate run
REDRAWS = 20  # --labels-as-items: rounds of n drawn records at most, to find n holding exactly one label
#: Every noise multiplier a config can hold: set to TINY for the nonprivate run.
NOISE_KEYS = ("partition.noise_multiplier", "model.mean_noise_multiplier", "training.noise_multiplier",
              "training.hist_noise_multiplier", "data.top_items_noise_multiplier")
VALIDATION_SHARE = 12  # --select-on validation: the last 1/12 of the classifier's training set
DIGITS_TEST_SHARE = 0.3
HOLDOUT = {"mnist": 10_000, "fashion": 10_000, "digits": 300}  # --evaluate-on validation
BATCH = 128
LEARNING_RATE = 1e-3
FASHION_DIRS = ("fashion-mnist",)  # under $DPGM_DATA_DIR
FASHION_SYSTEM = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist

CLASSIFIER = {
    "layers": ["conv3x3(32, pad 1)", "relu", "maxpool2", "conv3x3(64, pad 1)", "relu", "maxpool2",
               "fc(128)", "relu", "fc(10)"],
    "input": "binary images as 0/1 floats", "loss": "cross-entropy", "optimizer": "adam",
    "learning_rate": LEARNING_RATE, "batch": BATCH, "epochs": EPOCHS,
    "selection": "none (last epoch) unless --select-on validation; never the test set",
}


class Refused(Exception):
    """A request the benchmark refuses: one line on stderr, exit code 2."""


# ---------------------------------------------------------------- the fixed classifier


def make_cnn(image_shape: tuple[int, int], classes: int = 10) -> Any:
    """The fixed CNN (module docstring) for images of ``image_shape``."""
    from torch import nn

    h, w = (s // 4 for s in image_shape)
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * h * w, 128), nn.ReLU(), nn.Linear(128, classes),
    )


def _tensor(images: np.ndarray, image_shape: tuple[int, int]) -> Any:
    import torch

    return torch.as_tensor(np.asarray(images), dtype=torch.float32).reshape(-1, 1, *image_shape)


def accuracy(model: Any, images: np.ndarray, labels: np.ndarray, image_shape: tuple[int, int]) -> float:
    """Share of ``images`` the model labels correctly."""
    import torch

    model.eval()
    x, y = _tensor(images, image_shape), torch.as_tensor(labels)
    with torch.no_grad():
        right = sum(int((model(x[i: i + 1000]).argmax(1) == y[i: i + 1000]).sum()) for i in range(0, len(x), 1000))
    return right / len(x)


def train_classifier(images: np.ndarray, labels: np.ndarray, image_shape: tuple[int, int], *, epochs: int,
                     seed: int, select_on: str) -> Any:
    """The fixed CNN trained on (images, labels); with ``select_on == "validation"``, the epoch best on
    the last 1/VALIDATION_SHARE of them (trained on the rest), else the last epoch."""
    import copy

    import torch

    if select_on == "test":  # main() refuses earlier; this guards any other caller
        raise Refused("selecting on the test set is not allowed")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    n_val = len(images) // VALIDATION_SHARE if select_on == "validation" else 0
    cut = len(images) - n_val
    x, y = _tensor(images[:cut], image_shape), torch.as_tensor(np.asarray(labels[:cut]), dtype=torch.long)
    model = make_cnn(image_shape)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    best, best_acc = None, -1.0
    for _ in range(epochs):
        model.train()
        order = torch.randperm(cut, generator=generator)
        for i in range(0, cut, BATCH):
            batch = order[i: i + BATCH]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x[batch]), y[batch]).backward()
            optimizer.step()
        if n_val:
            acc = accuracy(model, images[cut:], labels[cut:], image_shape)
            if acc > best_acc:
                best, best_acc = copy.deepcopy(model.state_dict()), acc
    if best is not None:
        model.load_state_dict(best)
    return model


# ---------------------------------------------------------------- data


def load_data(args: argparse.Namespace, threshold: float) -> tuple[Any, Any]:
    """(train, evaluation) BinaryDatasets with labels: the test set, or with ``--evaluate-on
    validation`` the last HOLDOUT training images (then train is the rest, and the test set is
    not loaded); ``--limit`` keeps the first N training images."""
    from dpgm.data import data_dir, load_digits, load_mnist

    if args.dataset == "digits":
        data = load_digits(threshold=threshold)
        order = np.random.default_rng(0).permutation(data.n_records)
        n_test = round(DIGITS_TEST_SHARE * data.n_records)
        train, test = data.subset(np.sort(order[n_test:])), data.subset(np.sort(order[:n_test]))
    else:
        folder = data_dir() / "mnist" if args.dataset == "mnist" else fashion_dir(args.fashion_dir)
        train = load_mnist("train", threshold=threshold, directory=folder)
        test = load_mnist("test", threshold=threshold, directory=folder) if args.evaluate_on == "test" else None
    if args.evaluate_on == "validation":
        cut = train.n_records - HOLDOUT[args.dataset]
        train, test = train.subset(np.arange(cut)), train.subset(np.arange(cut, train.n_records))
    return train.subset(np.arange(min(args.limit or train.n_records, train.n_records))), test


def fashion_dir(given: Path | None) -> Path:
    """Where Fashion-MNIST's IDX files are: ``given``, $DPGM_DATA_DIR/fashion-mnist, Debian's folder."""
    from dpgm.data import data_dir

    candidates = [given] if given is not None else [data_dir() / d for d in FASHION_DIRS] + [FASHION_SYSTEM]
    for folder in candidates:
        if (folder / "train-images-idx3-ubyte.gz").is_file() or (folder / "train-images-idx3-ubyte").is_file():
            return folder
    raise Refused(f"Fashion-MNIST not found in {', '.join(map(str, candidates))} (it is never downloaded: "
                  "install Debian's dataset-fashion-mnist or pass --fashion-dir)")


# ---------------------------------------------------------------- dpgm


def dpgm_config(args: argparse.Namespace) -> dict[str, Any]:
    """The config file's YAML as a dict (a shipped config's name or a path)."""
    import yaml

    from dpgm.config import resolve_config_path

    return yaml.safe_load(resolve_config_path(args.config or CONFIGS[args.dataset]).read_text())


def synthesize(config: dict[str, Any], train: Any, epsilon: float | None, seed: int,
               threads: int, overrides: Sequence[str] = (), label_items: bool = False) -> tuple[Any, dict[str, Any]]:
    """Train dpgm on ``train`` at ``epsilon`` (None: the nonprivate run): (its released mixture,
    privacy report). ``overrides``: ``--set``; ``label_items``: ``train`` carries its labels as items."""
    from dpgm.artifact import load_release
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train as train_dpgm

    with tempfile.TemporaryDirectory(prefix="dpgm-tos-") as tmp:
        sets = [*overrides, f"runs_dir={tmp}", "name=tos", f"seed={seed}", f"threads={threads}",
                f"privacy.delta={DELTA}"]
        if epsilon is None:
            sets += ["privacy.target_epsilon=null", "partition.target_epsilon=null"]
            sets += [f"{key}={TINY}" for key in NOISE_KEYS]
        else:
            sets += [f"privacy.target_epsilon={epsilon}"]
        cfg = config_from_dict(config, sets)
        if cfg.partition.method != "label" and not label_items:
            raise Refused(f"the dpgm config must partition by label (partition.method: label), "
                          f"not {cfg.partition.method}: the release needs labels")
        run_dir, report = train_dpgm(cfg, data=train, progress=False)
        return load_release(run_dir), report


def with_label_items(data: Any) -> Any:
    """The records with their label as ten more items (one-hot, last): what ``--labels-as-items`` trains on."""
    import scipy.sparse as sp

    from dpgm.data.dataset import BinaryDataset

    onehot = sp.csr_matrix((np.ones(data.n_records, dtype=np.uint8), (np.arange(data.n_records), data.labels)),
                           shape=(data.n_records, 10))
    return BinaryDataset(records=sp.hstack([sp.csr_matrix(data.records), onehot], format="csr"),
                         item_names=[*data.item_names, *(f"label={j}" for j in range(10))], name=data.name)


def draw_label_items(mixture: Any, n: int, seed: int, threshold: float | None,
                     pixels: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` labelled images from a release whose records end in ten label items: a record's label is its one
    label item; records holding none or several are drawn again (rejection, post-processing)."""
    import torch

    from dpgm.release import sample_chunks

    generator, images, labels, have = torch.Generator().manual_seed(seed), [], [], 0
    for _ in range(REDRAWS):
        if have >= n:
            break
        for records, _ in sample_chunks(mixture, n, generator, threshold=threshold):
            records = np.asarray(records)
            one = records[:, pixels:].sum(axis=1) == 1
            images.append(records[one, :pixels])
            labels.append(np.argmax(records[one, pixels:], axis=1))
            have += int(one.sum())
    if have < n:
        raise Refused(f"--labels-as-items: fewer than {n} of {REDRAWS} x {n} drawn records hold exactly one label")
    return np.concatenate(images)[:n], np.concatenate(labels)[:n]


def draw(mixture: Any, n: int, seed: int, threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` labelled images from a released mixture: (images uint8 [n, m], labels [n]); pixels are
    Bernoulli draws, or the decoder's probabilities >= ``threshold`` (generate.py --threshold)."""
    import torch

    from dpgm.release import sample_chunks

    generator = torch.Generator().manual_seed(seed)
    chunks = list(sample_chunks(mixture, n, generator, threshold=threshold))
    images = np.concatenate([records for records, _ in chunks])
    labels = np.asarray(mixture.part_labels.labels)[np.concatenate([parts for _, parts in chunks])]
    return images, labels


# ---------------------------------------------------------------- the benchmark


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", choices=DATASETS, default="mnist")
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (plus --seed)")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--config", default=None,
                   help="dpgm config (a shipped name or a path; default mnist_labels, digits_labels for digits)")
    p.add_argument("--set", dest="sets", nargs="+", default=[], metavar="KEY=VALUE",
                   help="overrides of the dpgm config (section.key=value), for dpgm and nonprivate alike")
    p.add_argument("--limit", type=int, default=None, help="use only the first N training images (smoke runs)")
    p.add_argument("--release", type=int, default=None,
                   help="synthetic images per dpgm run (default: 60,000; 1,258 for digits)")
    p.add_argument("--classifier-epochs", type=int, default=None,
                   help="override the fixed schedule (smoke runs only: 3 epochs, 30 for digits)")
    p.add_argument("--select-on", choices=("none", "validation", "test"), default="none",
                   help="model selection: none (the last epoch) or validation (a split of the classifier's "
                   "own training set); test is refused")
    p.add_argument("--thresholds", nargs="+", type=_threshold, default=[None], metavar="T",
                   help="how dpgm's images are drawn: bernoulli (default) or a threshold T in (0, 1) on the "
                   "decoder's probabilities (generate.py --threshold); several: each from the same trained models")
    p.add_argument("--evaluate-on", choices=("test", "validation"), default="test",
                   help="test: the real test set; validation: the last training images (10,000 for MNIST), "
                   "held out from dpgm and the classifier, for choosing dpgm configs")
    p.add_argument("--repeats", type=int, default=1,
                   help="per trained model, R releases drawn and R classifiers trained (seeds ``repeat_seed``); "
                   "the accuracy is their mean. Two draws of one release can differ by ~0.8 points on MNIST, "
                   "so choosing between configs wants R > 1")
    p.add_argument("--labels-as-items", action="store_true",
                   help="train dpgm on the images with their label as ten more items (one-hot), so that any "
                   "partitioner can be used (e.g. --config mnist --set partition.method=lloyd partition.init=random); "
                   "a synthetic image's label is its one label item (records with none or several are redrawn)")
    p.add_argument("--no-nonprivate", action="store_true", help="skip the nonprivate run")
    p.add_argument("--no-real", action="store_true", help="skip the classifier on the real training set")
    p.add_argument("--threads", type=int, default=1, help="torch threads (dpgm and the classifier)")
    p.add_argument("--fashion-dir", type=Path, default=None, help="folder of Fashion-MNIST's IDX files")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--png", default=None, metavar="PATH", help="grid of samples, one row per label")
    p.add_argument("--png-per", type=int, default=8, help="images of each method in a row of the PNG")
    return p.parse_args(argv)


def _threshold(text: str) -> float | None:
    if text == "bernoulli":
        return None
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"a threshold must be in (0, 1) or 'bernoulli', got {text}")
    return value


def repeat_seed(seed: int, repeat: int) -> int:
    """The draw and classifier seed of repeat r of a run's ``seed``: the seed itself for r = 0 (a single
    repeat is the plain benchmark), far from every run seed after."""
    return seed if repeat == 0 else seed + 1_000_003 * repeat


def check_args(args: argparse.Namespace) -> None:
    """Refuse a bad request before any work."""
    if args.select_on == "test":
        raise Refused("selecting on the test set is not allowed: the test set only measures the final "
                      "classifier (use --select-on validation, a split of the training data)")
    for name in ("seeds", "threads", "png_per", "repeats"):
        if getattr(args, name) < 1:
            raise Refused(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("limit", "release", "classifier_epochs"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise Refused(f"--{name.replace('_', '-')} must be >= 1")
    if any(not 0 < e < float("inf") for e in args.epsilons):
        raise Refused("--epsilons must be > 0")


def table(results: list[dict[str, Any]]) -> str:
    """Mean +- sd accuracy over seeds and mean seconds, per (method, epsilon)."""
    cells: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["method"], r["epsilon"], r.get("threshold")), []).append(r)
    lines = [f"{'method':>10} {'epsilon':>8} {'draw':>9} {'seeds':>5} {'accuracy':>17} {'dpgm s':>8} {'classifier s':>12}"]
    for (method, eps, threshold), rows in cells.items():
        acc = np.array([r["accuracy"] for r in rows])
        dp = [r["dpgm_seconds"] for r in rows if r["dpgm_seconds"] is not None]
        drawn = "bernoulli" if threshold is None else f">= {threshold:g}"
        lines.append(f"{method:>10} {'-' if eps is None else format(eps, 'g'):>8} {drawn:>9} {len(rows):>5} "
                     f"{acc.mean():>8.4f} +- {acc.std(ddof=1) if len(acc) > 1 else 0.0:.4f} "
                     f"{np.mean(dp) if dp else 0.0:>8.1f} {np.mean([r['classifier_seconds'] for r in rows]):>12.1f}")
    return "\n".join(lines)


def write_png(path: str, shown: list[tuple[np.ndarray, np.ndarray]], image_shape: tuple[int, int],
              per: int) -> None:
    """One row per label: ``per`` images of each (images, labels) set in turn, a grey cell between sets."""
    from dpgm.imaging import BACKGROUND, write_png_rows

    gap = np.full((1, *image_shape), BACKGROUND, dtype=np.float32)
    rows = []
    for label in range(10):
        blocks = [images[labels == label][:per].reshape(-1, *image_shape).astype(np.float32) for images, labels in shown]
        rows.append(np.concatenate([part for block in blocks for part in (block, gap)][:-1]))
    write_png_rows(Path(path), rows)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from dpgm.threads import set_threads

    threads = set_threads(args.threads)
    print(f"threads: {threads}", flush=True)
    config = dpgm_config(args)
    threshold = float((config.get("data") or {}).get("threshold", 0.5))
    train, test = load_data(args, threshold)
    shape = train.image_shape
    n_release = args.release or RELEASE[args.dataset]
    epochs = args.classifier_epochs or EPOCHS[args.dataset]
    print(f"{args.dataset}: {train.n_records} training and {test.n_records} {args.evaluate_on} images {shape}, "
          f"release {n_release}, classifier {epochs} epochs, selection {args.select_on}", flush=True)
    real_x, real_y, test_x, test_y = train.dense(np.uint8), train.labels, test.dense(np.uint8), test.labels
    results: list[dict[str, Any]] = []
    spent: list[dict[str, Any]] = []
    shown: list[tuple[np.ndarray, np.ndarray]] = []

    def measure(method: str, epsilon: float | None, seed: int, data: Callable[[int], tuple[np.ndarray, np.ndarray]],
                dpgm_seconds: float | None, threshold: float | None = None) -> None:
        """Train and test the classifier ``args.repeats`` times, on ``data(seed of repeat r)``; one result row.
        The first draw is the release of dpgm's run and counts in its seconds; the others count as the classifier's."""
        start = time.perf_counter()
        accs, first_draw = [], 0.0
        for r in range(args.repeats):
            drawing = time.perf_counter()
            images, labels = data(repeat_seed(seed, r))
            if r == 0:
                first_draw = time.perf_counter() - drawing
            if r == 0 and seed == args.seed and threshold == args.thresholds[0]:
                shown.append((images, labels))
            model = train_classifier(images, labels, shape, epochs=epochs, seed=repeat_seed(seed, r),
                                     select_on=args.select_on)
            accs.append(accuracy(model, test_x, test_y, shape))
        acc = float(np.mean(accs))
        seconds = time.perf_counter() - start - first_draw
        dpgm_seconds = None if dpgm_seconds is None else dpgm_seconds + first_draw
        results.append({"epsilon": epsilon, "seed": seed, "method": method, "accuracy": acc, "accuracies": accs,
                        "seconds": seconds + (dpgm_seconds or 0.0), "dpgm_seconds": dpgm_seconds,
                        "classifier_seconds": seconds, "threshold": threshold})
        where = ("" if epsilon is None else f" at epsilon {epsilon:g}") + ("" if threshold is None else f", threshold {threshold:g}")
        dp = "" if dpgm_seconds is None else f", dpgm {dpgm_seconds:.1f} s"
        each = "" if len(accs) == 1 else " (" + " ".join(f"{a:.4f}" for a in accs) + ")"
        print(f"  seed {seed} {method}{where}: accuracy {acc:.4f}{each}{dp}, classifier {seconds:.1f} s", flush=True)
        if args.json:  # after every run, so that a stopped run keeps what it measured
            save(args, results, spent)

    dpgm_train = with_label_items(train) if args.labels_as_items else train
    pixels = train.n_items

    def drawn(mixture: Any, seed: int, threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
        if args.labels_as_items:
            return draw_label_items(mixture, n_release, seed, threshold, pixels)
        return draw(mixture, n_release, seed, threshold)

    for seed in range(args.seed, args.seed + args.seeds):
        runs = [(eps, "dpgm") for eps in args.epsilons] + ([] if args.no_nonprivate else [(None, "nonprivate")])
        for eps, method in runs:
            start = time.perf_counter()
            mixture, report = synthesize(config, dpgm_train, eps, seed, threads, args.sets, args.labels_as_items)
            trained = time.perf_counter() - start
            spent.append({"method": method, "epsilon": eps, "seed": seed, "epsilon_spent": report["epsilon"],
                          "delta": report["delta"]})
            for threshold in args.thresholds:
                measure(method, eps, seed, lambda s, m=mixture, t=threshold: drawn(m, s, t), trained, threshold)
        if not args.no_real:
            measure("real", None, seed, lambda s: (real_x, real_y), None)
    print(table(results))
    if args.png:
        write_png(args.png, shown, shape, args.png_per)
        print(f"wrote {args.png} (rows: labels 0-9; left to right: "
              + ", ".join([f"dpgm eps {e:g}" for e in args.epsilons] + ["nonprivate"] * (not args.no_nonprivate)
                          + ["real"] * (not args.no_real)) + ")")
    return results


def save(args: argparse.Namespace, results: list[dict[str, Any]], spent: list[dict[str, Any]]) -> None:
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    settings.update(delta=DELTA, nonprivate_noise_multiplier=TINY,
                    release_default=RELEASE[args.dataset], config_used=args.config or CONFIGS[args.dataset])
    write_json(args.json, {"settings": settings, "classifier": CLASSIFIER, "results": results,
                           "privacy": spent})


def main(argv: Sequence[str] | None = None) -> int:
    from dpgm.errors import DpgmError

    args = parse_args(argv)
    try:
        check_args(args)  # before anything is loaded
        run(args)
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    except DpgmError as exc:  # e.g. a target epsilon the config cannot reach
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
