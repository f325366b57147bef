"""The subcommands of ``python -m dpgm.sketch``: spec, sum, release, combine, decode, assign."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpgm.clustering.noisy_lloyd import nearest_centre
from dpgm.clustering.sketch import PrivateSketch, SketchSpec, merge_sums, plan_noise, release_sketch
from dpgm.clustering.sketch.decoder import decode_sketch, part_sizes
from dpgm.clustering.sketch.files import (
    check_spec,
    read_centres,
    read_release,
    read_spec,
    read_sum,
    write_centres,
    write_release,
    write_spec,
    write_sum,
)
from dpgm.data import load_csv, load_transactions
from dpgm.errors import DataError
from dpgm.io import atomic_write_json, atomic_write_text
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.verdict import stamped


def load_records(path: str, fmt: str | None, label_column: str | None, items: int) -> np.ndarray | sp.csr_matrix:
    """A holder's 0/1 records with exactly ``items`` columns (transactions: missing ids are 0)."""
    fmt = fmt or ("csv" if path.lower().endswith(".csv") else "transactions")
    if fmt == "csv":
        records = load_csv(path, label_column=label_column).records
    else:
        records = load_transactions(path).records
    if records.shape[1] > items or (records.shape[1] < items and fmt == "csv"):
        raise DataError(f"{path}: {records.shape[1]} item columns, the sketch spec has {items} items")
    if records.shape[1] < items:
        records = sp.csr_matrix((records.data, records.indices, records.indptr), shape=(records.shape[0], items))
    return records


def cmd_spec(args: argparse.Namespace) -> str:
    spec = SketchSpec(items=args.items, seed=args.seed, size=args.size, sigma2=args.sigma2,
                      signature=args.signature, measurements=args.measurements,
                      frequencies=args.frequencies, projection=args.projection)
    spec.build()  # refuse parameters the operator refuses (e.g. r > m) before anyone sketches
    write_spec(args.output, spec)
    return f"wrote {args.output} (public; fingerprint {spec.fingerprint()}): give it to every holder"


def cmd_sum(args: argparse.Namespace) -> str:
    spec = read_spec(args.spec)
    records = load_records(args.data, args.format, args.label_column, spec.items)
    total = spec.build().raw.sum(records, np.random.default_rng(args.seed))
    write_sum(args.output, total, spec)
    return f"wrote {args.output} (PRIVATE exact sum, owner-only): send it only to the aggregator"


def noise_generator() -> np.random.Generator:
    """The release's noise: fresh OS entropy, never a seed (a seeded release could be replayed)."""
    return np.random.default_rng()


def _distinct(paths: list[str]) -> None:
    seen: dict[Path, str] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise DataError(f"{p}: the same sum file is given twice (each holder counts once)")
        seen[key] = p


def cmd_release(args: argparse.Namespace) -> str:
    _distinct(args.sums)
    spec = read_spec(args.spec or args.sums[0])
    sketcher = spec.build()
    sums = [read_sum(p, spec, sketcher.raw.fingerprint()) for p in args.sums]
    noise = plan_noise(args.mechanism, target_epsilon=args.epsilon,
                       noise_multiplier=args.noise_multiplier or 1.0, delta=args.delta)
    accountant = Accountant(delta=args.delta, budget_epsilon=args.budget)
    released = release_sketch(merge_sums(sums), sketcher.raw, noise, accountant=accountant, rng=noise_generator())
    report = stamped({**accountant.report(), "release": "compressive sketch sum and record count (SPARS 2019, eq. 3)",
                      "holders": len(sums), "spec_fingerprint": spec.fingerprint(),
                      "stage_epsilon": noise.stage_epsilon(args.delta), "sketch": released.privacy})
    guarantee = {"epsilon": report["epsilon"], "not_private": report["not_private"]}  # sketch.json's verdict
    released = dataclasses.replace(released, holders=len(sums), privacy={**released.privacy, **guarantee})
    out = Path(args.output)
    write_release(out / "sketch.json", released, spec)
    accountant.ledger.save(out / "ledger.json")
    atomic_write_json(out / "privacy_report.json", report)
    head = "" if "warning" not in report else report["warning"] + "\n"  # the verdict first: a weak guarantee
    return (f"{head}wrote {out}/sketch.json, ledger.json, privacy_report.json: epsilon = {report['epsilon']:.4g}, "
            f"delta = {args.delta:.3g}")


def cmd_combine(args: argparse.Namespace) -> str:
    _distinct(args.sketches)
    spec, _, first = read_release(args.sketches[0])
    others = []
    for path in args.sketches[1:]:
        other_spec, _, released = read_release(path)
        check_spec(path, other_spec, spec)
        others.append(released)
    write_release(args.output, PrivateSketch.merge([first, *others]), spec)
    return f"wrote {args.output}: {len(others) + 1} releases combined (post-processing, no privacy cost)"


def cmd_decode(args: argparse.Namespace) -> str:
    spec, sketcher, released = read_release(args.sketch)
    result = decode_sketch(released, sketcher, args.k, np.random.default_rng(args.seed), decodes=args.decodes)
    data = write_centres(args.output, spec, sketcher, result, part_sizes(result, released), released.privacy)
    head = "" if "warning" not in data else data["warning"] + "\n"  # the release's verdict first
    return f"{head}wrote {args.output}: {args.k} centres (post-processing of the release, no privacy cost)"


def cmd_assign(args: argparse.Namespace) -> str:
    spec, centres = read_centres(args.centres)
    records = load_records(args.data, args.format, args.label_column, spec.items)
    parts = nearest_centre(spec.build().projection.apply(records), centres)
    atomic_write_text(args.output, "".join(f"{int(j)}\n" for j in parts), private=True)
    return f"wrote {args.output} (PRIVATE: the part of each of your records, one a line, owner-only)"
