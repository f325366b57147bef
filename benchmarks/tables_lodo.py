"""Leave-one-dataset-out (LODO) check of the table rules, beside AIM, MST and independent marginals.

Each shared table (``tables/NAME/``: a CSV and its declared schema, ``NAME.schema.json``; diabetes-130
without its two identifier columns, as its README says) is split once (seeded) into a fit half and a
held-out half. For each fit size (a record count, skipped above the fit half, or ``full``: the whole fit
half), epsilon and seed, every method is fitted on the same seeded sample of the fit half at the same
(epsilon, delta = 1/(100 N)) and draws as many records as it was fitted on:

- dpgm's table path, ``dpgm.Synthesizer(epsilon, schema=...).fit(frame)``, once per candidate: a patch of
  ``dpgm.rules`` constants (or of another dpgm module's, by dotted path) as in rules_lodo.py; ``default``
  is the rules as shipped;
- ``marginals`` (always run: the reference of the score): the item frequencies of the table's
  attribute=value items, one noisy release clipped at one item per column (public: the schema), sampled
  column by column from each column's frequencies normalised (independent columns);
- ``aim`` and ``mst`` (``--peers``; need mbi): the authors' mechanisms on the columns' categorical domain,
  fitted on each column's value index under the schema's discretization (a category, a bin of a number by
  the schema's bins, missing the last: ``Table.codes``, the values the workload error counts) with the
  columns' sizes (``dpgm.evaluation.pgm.CodedRecords``); their draws are decoded back to the table
  (``dpgm.tables.records.decode``);
- ``dpctgan`` and ``patectgan`` (``--peers``; need ``--deep-python``): smartnoise-synth's deep DP
  synthesizers on the same codes, every column categorical over its declared domain, run by the Python of
  an environment of their own (``benchmarks/peers/snsynth_table.py``: smartnoise-synth pins opacus < 0.15
  and mbi < 2, which do not install beside dpgm's) on ``--threads`` threads.

Scores, on the held-out half (``dpgm.evaluation.table_metrics``): AIM's workload error (mean TVD of the
1-, 2- and 3-way marginals of the schema's discretization; all triples up to ``--max-triples``, else a
sample seeded per table, the same for every method), train-on-synthetic on the README's target (a
classifier trained on the release, tested on the held-out half: AUC and accuracy, beside the same
classifier trained on the fit sample), the numeric columns' Wasserstein distances, and seconds. A
candidate's score on one setting (table, size, epsilon) is log(its workload error / the marginals'),
averaged over seeds (below 0: better than independent columns); the LODO choice among the candidates
is rules_lodo.py's summary of these scores.

    python benchmarks/tables_lodo.py --sizes 3000 --epsilons 1 --seeds 1 --peers aim mst marginals \\
        --peer-options aim.max_rounds=40 --json benchmarks/results/tables_lodo.json
    python benchmarks/tables_lodo.py --summarize benchmarks/results/tables_lodo.json --plot DIR
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from counting_queries import default_data_dir
from provenance import write_json
from rules_lodo import owner, patched, peer_options, row_size, size_order

from dpgm.data.dataset import BinaryDataset
from dpgm.data.table import table_dataset
from dpgm.errors import ConfigError
from dpgm.evaluation.baselines import CodedRecords, baseline_options, fit_baseline
from dpgm.evaluation.table_data import Table, table_of
from dpgm.evaluation.table_metrics import wasserstein, workload_error
from dpgm.evaluation.train_on_synthetic import train_on_synthetic
from dpgm.privacy.calibrate import default_delta
from dpgm.tables import TableSchema, table_schema
from dpgm.tables.frame import frame_cells
from dpgm.tables.records import Cells, decode

TABLES = ("bank-marketing", "credit-default", "diabetes-130", "online-shoppers", "salary", "nist-taxi",
          "temporal-match2")
#: Columns left out of a table before synthesis (its README: identifiers).
DROP = {"diabetes-130": ("encounter_id", "patient_nbr")}
#: Candidates: patches of the rules as shipped ("default": none), keys as rules_lodo.py's.
CANDIDATES: dict[str, dict[str, Any]] = {
    "default": {},
    # the attribute tree's pair tables over every value (no groups of rare values)
    "no_groups": {"dpgm.stages.attribute_pairs.RARE_SIGMAS": 0.0},
    # rare values below one standard deviation of a cell's noise grouped (MST: three)
    "rare1": {"dpgm.stages.attribute_pairs.RARE_SIGMAS": 1.0},
    # one part per table at any size
    "onepart": {"dpgm.rules.TABLE_RECORDS_PER_PART": 10**9},
    # a VAE with one softmax output per attribute trained by DP-SGD (``model.kind: table_vae``, stated as a user
    # would; the rules set the rest) in place of the tree over the attributes
    "tvae": {},
    # no value's count over all records where parts form (the parts' means alone; before: shipped)
    "nototals": {"dpgm.rules.TABLE_TOTALS_SHARE": 0.0},
    # every value's count over all records at 10% of rho where parts form (shipped: 25%)
    "ttot10": {"dpgm.rules.TABLE_TOTALS_SHARE": 0.1},
    # a declared table's groups by DP Lloyd (the rules before; shipped: DP kernel k-means), in 10, 5 or 20
    # iterations, or with every value's count over all records at 10% or 40% of rho
    "lloyd": {"dpgm.rules.TABLE_PARTITIONER": "lloyd"},
    "it5": {"dpgm.rules.TABLE_PARTITIONER": "lloyd", "dpgm.rules.LLOYD_ITERATIONS": 5},
    "it20": {"dpgm.rules.TABLE_PARTITIONER": "lloyd", "dpgm.rules.LLOYD_ITERATIONS": 20},
    "lttot10": {"dpgm.rules.TABLE_PARTITIONER": "lloyd", "dpgm.rules.TABLE_TOTALS_SHARE": 0.1},
    "lttot40": {"dpgm.rules.TABLE_PARTITIONER": "lloyd", "dpgm.rules.TABLE_TOTALS_SHARE": 0.4},
    # a part per 5,000 (the rules before), 10,000 (shipped) or 15,000 records at epsilon 1 for a declared table
    "p5": {"dpgm.rules.TABLE_RECORDS_PER_PART": 5_000},
    "p10": {"dpgm.rules.TABLE_RECORDS_PER_PART": 10_000},
    "p15": {"dpgm.rules.TABLE_RECORDS_PER_PART": 15_000},
    # the attribute tree's edges scored as MST scores them (their distance from independence alone; shipped: less the
    # expected L1 noise of their released tables, AIM's quality score)
    "mstscore": {"dpgm.stages.attribute_pairs.NOISE_PENALTY": 0.0},
    # each attribute's frequencies from its noisy means alone (shipped: pooled with its edges' noisy table margins)
    "nopool": {"dpgm.stages.attribute_pairs.MARGIN_WEIGHT": 0.0},
    # a group of rare values holding half its attribute's frequency or more shares it in proportion to their noisy
    # means whatever their spread (noisyrare: the rules before; shipped: equally unless they spread beyond their
    # noise); only a group of every value does so (onegroup), and always equally (allrare: lost on credit-default's
    # ages)
    "noisyrare": {"dpgm.stages.attribute_pairs.SPREAD_LEVEL": 1.0},
    "onegroup": {"dpgm.stages.attribute_pairs.HEAVY_SHARE": 1.0},
    "allrare": {"dpgm.stages.attribute_pairs.SPREAD_LEVEL": 0.0, "dpgm.stages.attribute_pairs.HEAVY_SHARE": 1.0},
    # tables_lodo_tan.json also holds the rows of every attribute drawn given the declared target as well as its
    # parent where the released triple shows the link (tan: model.options.target_parent, the triples' tables in
    # place of the pairs'), the same with every link kept (tanall), with the triples beside the pairs' at 10% of rho
    # taken from the means' (tanall2), and of that 10% given to the pairs (m48; tanm48): rules since removed (lost
    # on the 3-way error, no gain in AUC), their patches and code under "removed_candidates"
    # tables_lodo_target.json holds the rows of a declared target's values as the groups at every size (tgt0,
    # partition.method column): a rule since removed (lost on the 3-way error), its patch under "removed_candidates"
    # tables_lodo_parts.json also holds the rows of second parents (``model.options.triple_noise_multiplier``) from
    # N x epsilon = 30,000 up at 30% (tri3) or 10% (tri1) of rho beside the tree's 10% : 30%, in one part (tri3one),
    # from 10,000 up (tri3s10), with a part per 15,000 records (tri3p15), and of epsilon counted up to 1 in k (kmin1,
    # tri3kmin1): rules since removed (a wash beside the parts' own size), their patches under "removed_candidates"
    # tables_lodo_large.json also holds the rows of one part for a table of more than 12 attributes (tattr12, seed 0;
    # a rule since removed: lost)
    # tables_lodo_attribute_tree.json also holds the rows of DP-SGD above 1,000 items of a declared table (the rules
    # before a tree over its attributes took DP-SGD's place there too: diabetes-130's 2,733 items)
    # tables_lodo_fix.json also holds the rows of the part sizes read off the noisy means' sums (sums; before: with
    # no groups) and of a group of rare values sharing its mass equally (uniform, MST's decompression): both lost
}
#: Config options a candidate states (as its user would; the rules set every other), beside its patch of the rules.
STATED: dict[str, dict[str, Any]] = {"tvae": {"model.kind": "table_vae"}}
#: Peers fitted on the same records; ``marginals`` is always fitted (the score's reference).
PEERS = ("marginals", "mst", "aim", "dpctgan", "patectgan")
#: Peers run by another environment's Python (``--deep-python``): this script, their end of the pipe.
DEEP_PEERS, DEEP_SCRIPT = ("dpctgan", "patectgan"), Path(__file__).resolve().parent / "peers" / "snsynth_table.py"
#: The peers' generators are seeded with this integer plus the seed (marginals: MARGINALS_SEED).
PEER_SEED, MARGINALS_SEED = 3_000, 2_000
#: Display order and plot colours of the methods (dpgm is C0).
COLOURS = {"dpgm": "C0", "marginals": "C7", "mst": "C1", "aim": "C3", "dpctgan": "C4", "patectgan": "C5"}


def candidate_patch(name: str) -> dict[str, Any]:
    """Candidate ``name``'s patch; refuses a constant that does not exist."""
    patch = CANDIDATES[name]
    unknown = [key for key in patch if not hasattr(*owner(key))]
    if unknown:
        raise SystemExit(f"candidate {name}: no constant {', '.join(unknown)} (dpgm.rules, or a dotted path)")
    return patch


def read_frame(name: str, folder: Path) -> tuple[Any, TableSchema, str]:
    """Table ``name``'s DataFrame (its schema's columns, DROP's left out), its schema and target column."""
    import pandas as pd

    spec = json.loads((folder / name / f"{name}.schema.json").read_text())
    drop = DROP.get(name, ())
    spec["columns"] = [c for c in spec["columns"] if c["name"] not in drop]
    schema = table_schema(spec)
    frame = pd.read_csv(folder / name / f"{name}.csv.gz", keep_default_na=False, na_values=[""])
    return frame[schema.names], schema, spec["target"]


class Split:
    """One table split once (seed 0): the fit half (a permutation prefix) and the held-out half."""

    def __init__(self, name: str, folder: Path) -> None:
        self.name = name
        self.frame, self.schema, self.target = read_frame(name, folder)
        self.table = table_of(self.schema, frame_cells(self.schema, self.frame), name)
        self.order = np.random.default_rng(0).permutation(self.table.n)
        self.half = self.table.n // 2
        self.held_out = self.table.rows(np.sort(self.order[self.half:]))

    def fit_rows(self, size: int | None, seed: int) -> np.ndarray:
        """The fit sample's rows: the whole fit half, or ``size`` of it drawn by the seed."""
        pick = (self.order[:self.half] if size is None
                else np.random.default_rng([seed, 11]).choice(self.order[:self.half], size, replace=False))
        return np.sort(pick)


@dataclass(frozen=True)
class Fit:
    """One fit sample: its rows as a DataFrame, as a Table, and the run's seed and (epsilon, delta)."""

    frame: Any
    table: Table
    seed: int
    epsilon: float
    delta: float


def cells_of(values: list[np.ndarray]) -> list[Cells]:
    """Decoded columns (None where missing) as cells."""
    return [(v, np.array([x is None for x in v], dtype=bool)) for v in values]


def decoded(split: Split, records: Any, rng: np.random.Generator) -> Table:
    """Synthetic attribute=value records as a table (``decode``: post-processing)."""
    return table_of(split.schema, cells_of(decode(split.schema, records, rng)), "synthetic")


def one_hot(codes: np.ndarray, sizes: Sequence[int]) -> sp.csr_matrix:
    """Records of each column's value index (codes [n, k]) as attribute=value items, one per column."""
    offsets = np.cumsum([0, *sizes[:-1]])
    items = (np.asarray(codes, dtype=np.int64) + offsets).ravel()
    data = np.ones(items.size, dtype=np.uint8)
    return sp.csr_matrix((data, items, np.arange(0, items.size + 1, len(sizes))), shape=(len(codes), sum(sizes)))


def column_draws(probabilities: np.ndarray, sizes: list[int], n: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``n`` records of one item per column, each column's value drawn from its items' frequencies
    normalised (uniform where they are all 0): independent columns (post-processing)."""
    codes, offset = np.empty((n, len(sizes)), dtype=np.int64), 0
    for j, size in enumerate(sizes):
        p = np.clip(probabilities[offset: offset + size], 0.0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(size, 1.0 / size)
        codes[:, j] = rng.choice(size, n, p=p)
        offset += size
    return one_hot(codes, sizes)


def marginals_draws(model: Any, schema: TableSchema, n: int, rng: np.random.Generator) -> sp.csr_matrix:
    """The marginals' records on a table: one value per column, drawn independently (``column_draws``)."""
    return column_draws(model.probabilities, schema.attribute_sizes, n, rng)


def coded_draws(model: Any, schema: TableSchema, n: int, rng: np.random.Generator) -> sp.csr_matrix:
    """A peer's own draws of each column's value index, as attribute=value records (decoded afterwards)."""
    return one_hot(model.sample(n, rng).codes, schema.attribute_sizes)


def items_of(split: Split, fit: Fit) -> BinaryDataset:
    """The fit sample as attribute=value items (``dpgm.tables.records.encode``: one item per column)."""
    return table_dataset(split.schema, fit.table.cells, split.name)


def codes_of(split: Split, fit: Fit) -> CodedRecords:
    """The fit sample as each column's value index on the schema's discretization, with the columns' sizes."""
    return CodedRecords(fit.table.codes, tuple(split.schema.attribute_sizes), tuple(split.schema.names))


#: Per peer, where not the defaults (a coded table in, codes out): what it is fitted on, its options on a
#: table, from the public schema (the marginals: each record holds one item per column, so the clip at that
#: length changes nothing and bounds the sensitivity), its generator's seed base and how its records are drawn.
INPUTS = {"marginals": items_of}
TABLE_OPTIONS = {"marginals": lambda schema: {"max_length": len(schema.names)}}
SEED_BASE = {"marginals": MARGINALS_SEED}
DRAWS = {"marginals": marginals_draws}


def fit_deep_peer(peer: str, split: Split, fit: Fit, args: argparse.Namespace) -> tuple[Table, dict[str, Any]]:
    """A deep peer (``DEEP_PEERS``) fitted on the fit sample's codes by ``--deep-python``; its draws as a table."""
    with tempfile.TemporaryDirectory() as tmp:
        codes, out = Path(tmp) / "fit.npz", Path(tmp) / "synthetic.npz"
        np.savez(codes, codes=fit.table.codes, sizes=np.asarray(split.schema.attribute_sizes))
        argv = [args.deep_python, str(DEEP_SCRIPT), "--synth", peer, "--codes", str(codes), "--out", str(out),
                "--epsilon", repr(fit.epsilon), "--delta", repr(fit.delta), "--records", str(fit.table.n),
                "--seed", str(PEER_SEED + fit.seed), "--threads", str(args.threads)]
        threads = str(args.threads)
        done = subprocess.run(argv, check=False, capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"{peer} failed (exit {done.returncode}): {last}")
        drawn = np.load(out)["codes"]
    rng = np.random.default_rng(PEER_SEED + fit.seed)
    return decoded(split, one_hot(drawn, split.schema.attribute_sizes), rng), {"options": {}, "rounds": None,
                                                                               "spent_epsilon": fit.epsilon}


def fit_peer(peer: str, split: Split, fit: Fit, args: argparse.Namespace) -> tuple[Table, dict[str, Any]]:
    """Peer ``peer`` fitted on the fit sample (``INPUTS``: the columns' codes, or items); its release as a table."""
    if peer in DEEP_PEERS:
        return fit_deep_peer(peer, split, fit, args)
    real = INPUTS.get(peer, codes_of)(split, fit)
    rng = np.random.default_rng(SEED_BASE.get(peer, PEER_SEED) + fit.seed)
    options = {**TABLE_OPTIONS.get(peer, lambda schema: {})(split.schema), **peer_options(args, peer)}
    fitted = fit_baseline(peer, real, epsilon=fit.epsilon, delta=fit.delta, rng=rng,
                          options=baseline_options(peer, options))
    records = DRAWS.get(peer, coded_draws)(fitted.model, split.schema, fit.table.n, rng)
    report = {"options": options, "rounds": fitted.report.get("rounds"), "spent_epsilon": fitted.report.get("epsilon")}
    return decoded(split, records, rng), report


def fit_dpgm(candidate: str, fit: Fit, split: Split, args: argparse.Namespace) -> tuple[Table, dict[str, Any]]:
    """dpgm's table path under ``candidate``'s patch; its release of as many records as it was fitted on."""
    import dpgm

    old = patched(candidate_patch(candidate))
    try:
        synth = dpgm.Synthesizer(epsilon=fit.epsilon, delta=fit.delta, schema=split.schema, seed=fit.seed,
                                 options={"threads": args.threads, **STATED.get(candidate, {})}).fit(fit.frame)
    finally:
        patched(old)
    out = synth.sample(fit.table.n, seed=fit.seed)
    report = synth.privacy_report
    return table_of(split.schema, frame_cells(split.schema, out), "synthetic"), {"spent_epsilon": report.get("epsilon")}


def scores(split: Split, fit: Fit, synthetic: Table, max_triples: int) -> dict[str, Any]:
    """The release's workload error, train-on-synthetic and Wasserstein distances on the held-out half."""
    work = workload_error(split.held_out, synthetic, max_triples=max_triples, rng=np.random.default_rng(0))
    tos = train_on_synthetic(fit.table, synthetic, split.target, holdout=split.held_out, seed=fit.seed)
    dist = wasserstein(split.held_out, synthetic)
    present = [v for v in dist.values() if v is not None]
    return {"workload": {k: v for k, v in work.to_dict().items() if k != "columns"},
            "tvd1": work.oneway, "tvd2": work.twoway, "tvd3": work.threeway, "workload_error": work.average,
            "auc": tos.synthetic.auc, "accuracy": tos.synthetic.accuracy,
            "real_auc": tos.real.auc, "real_accuracy": tos.real.accuracy,
            "wasserstein": dist, "wasserstein_mean": float(np.mean(present)) if present else None}


def peer_runs(split: Split, peer: str, args: argparse.Namespace) -> bool:
    """Whether ``peer`` runs on this table: unless ``--skip PEER:TABLE`` names it (noted in the settings)."""
    if f"{peer}:{split.name}" not in args.skip:
        return True
    note = f"{peer} on {split.name}: --skip"
    if note not in args.skipped:
        args.skipped.append(note)
        print(f"  skip {note}", flush=True)
    return False


def run_setting(split: Split, size: int | None, epsilon: float, args: argparse.Namespace,
                rows: list[dict[str, Any]], done: dict[tuple[str, str, float, str, int], dict[str, Any]]) -> None:
    """Every method and seed on one (table, size, epsilon); appends a row after each fit and saves."""
    label = "full" if size is None else str(size)
    peers = ["marginals", *(p for p in args.peers if p != "marginals" and peer_runs(split, p, args))]
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        methods = [f"peer:{p}" for p in peers] + list(args.candidates)
        if all((split.name, label, epsilon, m, seed) in done for m in methods):
            continue
        index = split.fit_rows(size, seed)
        table = split.table.rows(index)
        fit = Fit(split.frame.iloc[index], table, seed, epsilon, default_delta(table.n))
        common = {"dataset": split.name, "size": label, "n_fit": table.n, "epsilon": epsilon, "seed": seed,
                  "delta": fit.delta, "n_columns": len(split.schema.names), "n_items": sum(split.schema.attribute_sizes)}
        for method in methods:
            key = (split.name, label, epsilon, method, seed)
            if key in done:
                continue
            start = time.perf_counter()
            peer = method.removeprefix("peer:") if method.startswith("peer:") else None
            synthetic, extra = fit_peer(peer, split, fit, args) if peer else fit_dpgm(method, fit, split, args)
            fit_seconds = time.perf_counter() - start
            row = {**common, "candidate": method, **({"peer": peer} if peer else {}), **extra,
                   **scores(split, fit, synthetic, args.max_triples), "fit_seconds": fit_seconds,
                   "seconds": time.perf_counter() - start}
            if not peer:
                reference = done[(split.name, label, epsilon, "peer:marginals", seed)]
                row["score"] = math.log(row["workload_error"] / reference["workload_error"])
            rows.append(row)
            done[key] = row
            print(f"  {split.name}/{label} eps {epsilon:g} {method}#{seed}: workload {row['workload_error']:.4f} "
                  f"2-way {row['tvd2']:.4f} 3-way {row['tvd3']:.4f} AUC {_num(row['auc'])} ({fit_seconds:.0f} s)",
                  flush=True)
            save(args, rows)


def save(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    """The JSON so far (after every fit, so that a stopped run keeps what it measured)."""
    if not args.json:
        return
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    write_json(args.json, {"settings": settings, "candidates": CANDIDATES, "drop": DROP, "rows": rows})


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}g}"


def method_of(row: dict[str, Any], candidate: str = "default") -> str | None:
    """A row's method in the comparison: its peer, ``dpgm`` for ``candidate``, None for other candidates."""
    return row.get("peer") or ("dpgm" if row["candidate"] == candidate else None)


def comparison(rows: list[dict[str, Any]], candidate: str = "default") -> dict[float, dict[tuple[str, str], dict[str, dict[str, Any]]]]:
    """Per epsilon, per (table, size), per method: the means over seeds of the scores that the tables show."""
    cells: dict[float, dict[tuple[str, str], dict[str, list[dict[str, Any]]]]] = {}
    for r in rows:
        method = method_of(r, candidate)
        if method:
            cell = cells.setdefault(float(r["epsilon"]), {}).setdefault((r["dataset"], row_size(r)), {})
            cell.setdefault(method, []).append(r)

    def mean(rs: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in rs if r.get(key) is not None]
        return float(np.mean(values)) if values else None

    keys = ("tvd1", "tvd2", "tvd3", "workload_error", "auc", "accuracy", "real_auc", "wasserstein_mean",
            "fit_seconds")
    return {eps: {s: {m: {k: mean(rs, k) for k in keys} | {"seeds": len(rs)} for m, rs in by.items()}
                  for s, by in at.items()} for eps, at in cells.items()}


def methods_in(table: dict[tuple[str, str], dict[str, dict[str, Any]]]) -> list[str]:
    """The methods a comparison holds, dpgm first, then the peers in COLOURS' order."""
    found = {m for by in table.values() for m in by}
    return [m for m in COLOURS if m in found] + sorted(found - set(COLOURS))


def mean_seconds(table: dict[tuple[str, str], dict[str, dict[str, Any]]], method: str) -> float:
    """A method's mean seconds per fit and draw over the settings of a comparison."""
    return float(np.mean([by[method]["fit_seconds"] for by in table.values() if method in by]))


def setting_order(s: tuple[str, str]) -> tuple[int, tuple[float, int]]:
    """Sort key of a (table, size) setting: TABLES' order, then the size."""
    return (TABLES.index(s[0]) if s[0] in TABLES else len(TABLES), size_order(s[1]))


def comparison_text(rows: list[dict[str, Any]], candidate: str = "default") -> str:
    """Per epsilon: a row per table and size; per method its 2-way and 3-way workload error and AUC."""
    lines = []
    for eps, at in sorted(comparison(rows, candidate).items()):
        methods = methods_in(at)
        lines += [f"epsilon {eps:g}: 2-way / 3-way workload error (mean TVD, lower is better), train-on-synthetic AUC",
                  f"{'table/size':<24}" + "".join(f"{m:>24}" for m in methods) + f"{'real AUC':>10}"]
        for s in sorted(at, key=setting_order):
            by = at[s]
            cells = [f"{_num(by[m]['tvd2'])} / {_num(by[m]['tvd3'])} / {_num(by[m]['auc'])}" if m in by else "-"
                     for m in methods]
            real = next(iter(by.values()))["real_auc"]  # the same real classifier beside every method
            lines.append(f"{s[0] + '/' + s[1]:<24}" + "".join(f"{c:>24}" for c in cells) + f"{_num(real):>10}")
        lines.append("seconds per fit and draw: " + ", ".join(f"{m} {mean_seconds(at, m):.0f}" for m in methods))
        lines.append("")
    return "\n".join(lines)


Scores = dict[float, dict[str, dict[str, dict[str, float]]]]


def candidate_scores(rows: list[dict[str, Any]]) -> Scores:
    """Per epsilon, table, size and candidate: the mean over seeds of the score (log of the workload error over the
    marginals')."""
    kept: dict[float, dict[str, dict[str, dict[str, list[float]]]]] = {}
    for r in rows:
        if not r.get("peer") and "score" in r:
            at = kept.setdefault(float(r["epsilon"]), {}).setdefault(r["dataset"], {})
            at.setdefault(row_size(r), {}).setdefault(r["candidate"], []).append(r["score"])
    return {eps: {t: {z: {c: float(np.mean(v)) for c, v in by.items()} for z, by in sizes.items()}
                  for t, sizes in at.items()} for eps, at in kept.items()}


def held_out(on: dict[str, dict[str, float]], candidate: str) -> float:
    """A candidate's score on one table: the mean over its sizes (nan where one lacks it)."""
    return float(np.mean([by.get(candidate, math.nan) for by in on.values()]))


def candidates_in(settings: Iterable[dict[str, float]]) -> list[str]:
    """The candidates scored on any of ``settings``: CANDIDATES' order first, then the others' (rules since removed,
    whose rows a result file keeps)."""
    seen = {c for by in settings for c in by}
    return [c for c in CANDIDATES if c in seen] + sorted(seen - set(CANDIDATES))


def lodo_choice(at: dict[str, dict[str, dict[str, float]]], table: str) -> str | None:
    """The candidate of the lowest mean score over the other tables' settings, among those that every one of them
    and every setting of ``table`` hold."""
    others = [by for t, sizes in at.items() if t != table for by in sizes.values()]
    common = [c for c in candidates_in(others) if all(c in by for by in [*others, *at[table].values()])]
    return min(common, key=lambda c: float(np.mean([by[c] for by in others]))) if common else None


def one_rule_text(rows: list[dict[str, Any]]) -> str:
    """Leave-one-table-out with one rule for every epsilon: each held-out table gets the candidate of the lowest mean
    score over the other tables' settings (every size and epsilon) that hold every candidate, scored on its own."""
    settings = {(t, z, eps): by for eps, at in candidate_scores(rows).items() for t, sizes in at.items()
                for z, by in sizes.items()}
    names = candidates_in(settings.values())
    full = {k: by for k, by in settings.items() if all(c in by for c in names)}
    held: dict[str, tuple[str, float, float, int]] = {}
    if "default" not in names:
        return ""
    for t in sorted({k[0] for k in full}, key=lambda t: setting_order((t, "0"))):
        others, mine = [by for k, by in full.items() if k[0] != t], [by for k, by in full.items() if k[0] == t]
        if others:
            chosen = min(names, key=lambda c: float(np.mean([by[c] for by in others])))
            held[t] = (chosen, *(float(np.mean([by[c] for by in mine])) for c in (chosen, "default")), len(mine))
    if not held:
        return ""
    lines = [f"LODO with one rule for every epsilon, among {', '.join(names)} (settings where all ran)",
             *(f"  {t:<18}{c:<10}{a:>+8.3f}  default {d:+.3f}  ({n} settings)" for t, (c, a, d, n) in held.items())]
    for i, label in ((1, "LODO choice"), (2, "default")):
        worst = max(held, key=lambda t: held[t][i])
        lines.append(f"  {label:<12} mean over held-out tables {np.mean([h[i] for h in held.values()]):+.3f}, "
                     f"worst {held[worst][i]:+.3f} ({worst})")
    return "\n".join(lines) + "\n"


def lodo_text(rows: list[dict[str, Any]]) -> str:
    """Per epsilon, a line per held-out table: the LODO choice, its score there beside the default's and the best
    candidate's (a line per size below where there are several), then the mean and worst held-out scores."""
    lines = []
    for eps, at in sorted(candidate_scores(rows).items()):
        tables = sorted(at, key=lambda t: setting_order((t, "0")))
        wide = max(len(t) for t in tables) + 2
        names = max([len(c) for c in candidates_in(by for sizes in at.values() for by in sizes.values())]
                    + [len("LODO choice")]) + 2
        lines += [(f"LODO at epsilon {eps:g} (score: log(workload error / marginals'), mean over the table's sizes; "
                   "below 0: better than the marginals)"),
                  f"  {'held out':<{wide}}{'sizes':<16}{'LODO choice':<{names}}{'chosen':>8}{'default':>9}  best on it"]
        held: dict[str, dict[str, float]] = {}
        for t in tables:
            chosen, on = lodo_choice(at, t), at[t]
            if chosen is None:
                lines.append(f"  {t:<{wide}}no other table's settings to choose on")
                continue
            best = min((c for c in candidates_in(on.values()) if not math.isnan(held_out(on, c))),
                       key=lambda c: held_out(on, c))
            held[t] = {"chosen": held_out(on, chosen), "default": held_out(on, "default"), "best": held_out(on, best)}
            sizes = ",".join(sorted(on, key=size_order))
            lines.append(f"  {t:<{wide}}{sizes:<16}{chosen:<{names}}{held[t]['chosen']:>+8.3f}"
                         f"{held[t]['default']:>+9.3f}  {best} {held[t]['best']:+.3f}")
            for z, by in sorted(on.items(), key=lambda i: size_order(i[0])) if len(on) > 1 else ():
                top = min(by, key=by.__getitem__)
                lines.append(f"  {'':<{wide}}{z:<16}{'':<{names}}{by.get(chosen, math.nan):>+8.3f}"
                             f"{by.get('default', math.nan):>+9.3f}  {top} {by[top]:+.3f}")
        for who, label in (("chosen", "LODO choice"), ("default", "default"), ("best", "best per table (oracle)")):
            if held:
                worst = max(held, key=lambda t: held[t][who])
                lines.append(f"  {label:<25} mean over held-out tables {np.mean([h[who] for h in held.values()]):+.3f}, "
                             f"worst {held[worst][who]:+.3f} ({worst})")
        lines.append("")
    return "\n".join(lines)


def summarize(rows: list[dict[str, Any]]) -> str:
    """The comparison per epsilon, then the LODO choice among the candidates (``lodo_text``)."""
    return comparison_text(rows) + "\n" + lodo_text(rows) + one_rule_text(rows)


def plot(rows: list[dict[str, Any]], folder: Path, candidate: str = "default") -> list[Path]:
    """One PNG per table: the workload error against the fit size, a line per method, a panel per epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    points: dict[str, dict[float, dict[str, dict[int, list[float]]]]] = {}
    for r in rows:
        method = method_of(r, candidate)
        if method:
            by = points.setdefault(r["dataset"], {}).setdefault(float(r["epsilon"]), {}).setdefault(method, {})
            by.setdefault(r["n_fit"], []).append(r["workload_error"])
    written = []
    for table, at in sorted(points.items(), key=lambda t: setting_order((t[0], "0"))):
        fig, axes = plt.subplots(1, len(at), figsize=(4.2 * len(at), 3.2), squeeze=False, sharey=True)
        for ax, (eps, by) in zip(axes[0], sorted(at.items())):
            for method in [m for m in COLOURS if m in by] + sorted(set(by) - set(COLOURS)):
                sizes = sorted(by[method])
                ax.plot(sizes, [np.mean(by[method][n]) for n in sizes], "-" if method == "dpgm" else "--",
                        marker="o", color=COLOURS.get(method), label=method)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{table}, epsilon {eps:g}", fontsize=9)
            ax.set_xlabel("records fitted", fontsize=8)
            ax.set_ylabel("workload error (mean TVD, 1-3 way)", fontsize=8)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"{table}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def read_rows(paths: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of result files."""
    return [r for path in paths for r in json.loads(Path(path).read_text())["rows"]]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    p.add_argument("--sizes", nargs="+", default=["3000", "30000", "full"],
                   help="fit sizes: 'full' (the whole fit half) or a record count (skipped above the fit half)")
    p.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--first-seed", type=int, default=0,
                   help="run seeds FIRST_SEED .. FIRST_SEED + SEEDS - 1 (split one setting's seeds over processes)")
    p.add_argument("--candidates", nargs="+", default=["default"], choices=list(CANDIDATES))
    p.add_argument("--peers", nargs="*", default=["marginals"], choices=PEERS,
                   help="fit these beside dpgm (marginals always: the score's reference; aim and mst need mbi; "
                        "dpctgan and patectgan need --deep-python)")
    p.add_argument("--deep-python", default=os.environ.get("DPGM_DEEP_PEER_PYTHON"), metavar="PYTHON",
                   help="the Python of an environment with smartnoise-synth, for the deep peers "
                        "(default: $DPGM_DEEP_PEER_PYTHON)")
    p.add_argument("--peer-options", nargs="*", default=[], metavar="PEER.KEY=VALUE",
                   help="a peer's options, e.g. aim.max_rounds=40 (a public cap on AIM's rounds)")
    p.add_argument("--skip", nargs="*", default=[], metavar="PEER:TABLE",
                   help="do not fit these peers on these tables (e.g. aim:diabetes-130 where it takes too long)")
    p.add_argument("--max-triples", type=int, default=1000,
                   help="all 3-way marginals up to this many, else a sample of this many (seeded, the same for all)")
    p.add_argument("--threads", type=int, default=1, help="dpgm's torch and BLAS threads (config key threads)")
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--resume", action="store_true", help="keep the rows already in --json and skip their runs")
    p.add_argument("--summarize", nargs="+", default=None, metavar="JSON",
                   help="only print the summary of these files")
    p.add_argument("--plot", type=Path, default=None, metavar="DIR",
                   help="with --summarize: one PNG per table in DIR (workload error against size)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summarize:
        rows = read_rows(args.summarize)
        print(summarize(rows))
        for path in plot(rows, args.plot) if args.plot else []:
            print(f"wrote {path}")
        return 0
    for name in args.candidates:
        candidate_patch(name)
    deep = [p for p in args.peers if p in DEEP_PEERS]
    if deep and not (args.deep_python and Path(args.deep_python).is_file()):
        raise ConfigError(f"tables_lodo: the deep peers ({', '.join(deep)}) need --deep-python, the Python of an environment with "
                          "smartnoise-synth (pip install smartnoise-synth there)")
    folder = (args.data_dir or default_data_dir()) / "tables"
    kept = json.loads(Path(args.json).read_text()) if args.resume and args.json and Path(args.json).exists() else {}
    rows = kept.get("rows", [])
    done = {(r["dataset"], row_size(r), float(r["epsilon"]), r["candidate"], r["seed"]): r for r in rows}
    args.skipped = list(kept.get("settings", {}).get("skipped", []))  # what was not run, and why
    splits: dict[str, Split] = {}
    for size in [None if z == "full" else int(z) for z in args.sizes]:  # small sizes first
        for name in args.tables:
            if name not in splits:
                splits[name] = Split(name, folder)
                s = splits[name]
                print(f"== {name}: {s.table.n} records, {len(s.schema.names)} columns, "
                      f"{sum(s.schema.attribute_sizes)} values, fit half {s.half}", flush=True)
            if size is not None and size > splits[name].half:
                args.skipped.append(f"{name}/{size}: the fit half holds {splits[name].half} records")
                print(f"  skip {args.skipped[-1]}", flush=True)
                continue
            for eps in args.epsilons:
                run_setting(splits[name], size, eps, args, rows, done)
    save(args, rows)
    print(summarize(rows))
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
