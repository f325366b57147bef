"""The sweep: the shipped generic rules beside every peer on every dataset, size and epsilon.

Reads ``rules_lodo.py`` JSON files. The shipped rules are the ``default`` rows of SHIPPED (or, for an
entry ``FILE:CANDIDATE``, the rows of the candidate that became them; a later entry's settings replace an
earlier one's); each
peer (MST, AIM, MWEM+PGM) is its rows in any file; every seed found in any of them counts once (a
seed fixes the records, the held-out queries and the noise, so two files' rows of one seed are
one run, and the sweep checks that they agree). A peer is compared with the rules on the seeds
both ran. Per setting the summary keeps the errors per length group, the groups
at or below each peer and below the marginals, the 1-, 2- and 3-way marginal TVDs and the seconds
of every method; per epsilon, each dataset's score (mean over its sizes) and the worst dataset.

    python benchmarks/rules_sweep.py --json benchmarks/results/rules_sweep.json --plot benchmarks/results/sweep_seven
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import rules_lodo
from provenance import write_json

RESULTS = Path(__file__).resolve().parent / "results"
#: The shipped rules' rows: the candidate of the file whose leave-one-dataset-out choice they are (every
#: dataset, size and epsilon, three seeds); a later file's settings replace the earlier's (``shipped_runs``):
#: the declared tables re-ran with their sizes read off the item sums, and the settings three seeds left near
#: MST or the marginals, ten seeds each; then the settings at N = 10,000 under one group below N epsilon = 20,000
#: (its candidate ``one2e4``), ten seeds each; then the settings where groups form, under one group where the
#: items' measured dependence is below 0.025 (``merge0.025``; ten seeds at N = 10,000, three above); then msnbc
#: 300,000 and whole at epsilon 1, ten seeds; then every setting where DP-SGD trained, under a tree of items in
#: its place: where one group forms (``tree_one``, ten seeds) and where groups form (``tree_all``, ten seeds but
#: msnbc 300,000 and whole at epsilon 4, three); then the declared tables declaring their schemas too
#: (``data.attribute_sizes``, as their users would: candidate ``schema``, ten seeds); then the settings where
#: groups form, under the noisy Lloyd's noise floor (a part that drains keeps its centre), ten seeds; then the
#: declared tables with their trees over their attributes (``atree``), ten seeds; then ten seeds where the sweep had
#: three at epsilon 1 and foodmart whole at epsilon 4, with the trees' fallback to independent items; then every
#: setting with the release following a noisy length histogram from N epsilon = 2,000 up (``len5_2000``), ten seeds;
#: then every setting with that histogram the length bound's (``lbound``), ten seeds; then every setting rerun under
#: the rules that read n as a noisy count, with each group's means read against the others' and one group where one
#: tree counts every pair (ten seeds).
SHIPPED = ("rules_lodo_fit_n.json", "rules_lodo_table_sizes.json", "rules_lodo_borderline_seeds10.json",
           "rules_lodo_one_group.json:one2e4", "rules_lodo_merge.json:merge0.025", "rules_lodo_msnbc_seeds10.json",
           "rules_lodo_one_group_tree.json:tree_one", "rules_lodo_tree_parts.json:tree_all",
           "rules_lodo_schema.json:schema", "rules_lodo_noise_floor.json", "rules_lodo_atree.json:atree",
           "rules_lodo_fallback_seeds10.json", "rules_lodo_lengths_gate.json:len5_2000",
           "rules_lodo_lengths_bound.json:lbound", "rules_lodo_all_pairs_shipped.json", "rules_lodo_shipped_now.json")
#: Metrics the older files' rows lack: of two rows of one run, the one holding more of them is kept.
OPTIONAL = ("tvd3", "tvd1")
#: The issue's bound on the single-item TVD: at most this multiple of MST's.
TVD1_RATIO = 1.2
#: The peers, in the order the tables show them.
PEERS = ("mst", "mwem_pgm", "aim")
Setting = tuple[str, str, float]
Runs = dict[Setting, dict[int, dict[str, Any]]]  # a method's rows by setting and seed


def setting_of(row: dict[str, Any]) -> Setting:
    return row["dataset"], rules_lodo.size_label(row["size"]), float(row["epsilon"])


def by_seed(files: dict[str, list[dict[str, Any]]], who: str) -> Runs:
    """Per setting, the rows of ``who`` (``default`` or a peer's name) by seed, over every file: a seed
    fixes the records, the queries and the method's noise, so two files' rows of one seed are the same
    run (checked: rows that disagree are an error); the row holding more of OPTIONAL is kept."""
    chosen: Runs = {}
    where: dict[tuple[Setting, int], str] = {}
    for name, rows in files.items():
        for r in rows:
            if (r.get("peer") or r["candidate"]) != who:
                continue
            s, seed = setting_of(r), r["seed"]
            old = chosen.setdefault(s, {}).get(seed)
            if old is not None and not np.allclose(rules_lodo.group_errors(old, "groups"), rules_lodo.group_errors(r, "groups")):
                raise ValueError(f"{who} on {s} seed {seed}: {where[s, seed]} and {name} disagree")
            if old is None or sum(k in r for k in OPTIONAL) > sum(k in old for k in OPTIONAL):
                chosen[s][seed], where[s, seed] = r, name
    return chosen


def _mean(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(values)) if len(values) == len(rows) and values else None


def compare(ours: dict[int, dict[str, Any]], theirs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A peer beside the rules on the seeds both ran: both errors per group (means), the groups where
    the rules are at or below the peer, and both TVDs (the 3-way and single-item ones on the seeds where
    both rows hold them)."""
    seeds = sorted(set(ours) & set(theirs))
    mine, peer = [ours[s] for s in seeds], [theirs[s] for s in seeds]
    if not seeds:
        return {"seeds": 0}
    a = np.mean([rules_lodo.group_errors(r, "groups") for r in mine], axis=0)
    b = np.mean([rules_lodo.group_errors(r, "groups") for r in peer], axis=0)
    return {"seeds": len(seeds), "groups": b.tolist(), "dpgm_groups": a.tolist(),
            "at_or_below": int(np.sum(a <= b)),
            "tvd2": _mean(peer, "tvd2"), "dpgm_tvd2": _mean(mine, "tvd2"),
            **_both("tvd3", mine, peer), **_both("tvd1", mine, peer),
            "seconds": _mean(peer, "seconds"), "rounds": _mean(peer, "rounds")}


def _both(key: str, mine: list[dict[str, Any]], peer: list[dict[str, Any]]) -> dict[str, Any]:
    """The rules' and the peer's ``key`` (a TVD), means over the seeds where both rows hold it (None where none does)."""
    pairs = [(o, p) for o, p in zip(mine, peer, strict=True) if key in o and key in p]
    if not pairs:
        return {key: None, f"dpgm_{key}": None, f"{key}_seeds": 0}
    return {key: float(np.mean([p[key] for _, p in pairs])),
            f"dpgm_{key}": float(np.mean([o[key] for o, _ in pairs])), f"{key}_seeds": len(pairs)}


def cell(ours: dict[int, dict[str, Any]], peers: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """One setting: the rules' and the marginals' means over the rules' seeds, and each peer beside them."""
    rows = list(ours.values())
    groups = np.mean([rules_lodo.group_errors(r, "groups") for r in rows], axis=0)
    marg = np.mean([rules_lodo.group_errors(r, "marginals") for r in rows], axis=0)
    first = rows[0]
    return {"dataset": first["dataset"], "size": rules_lodo.size_label(first["size"]),
            "epsilon": float(first["epsilon"]), "n_fit": first["n_fit"], "n_items": first["n_items"],
            "seeds": len(rows), "score": float(np.mean([r["score"] for r in rows])),
            "groups": groups.tolist(), "below_marginals": int(np.sum(groups < marg)),
            "tvd2": _mean(rows, "tvd2"), "tvd3": _mean([r for r in rows if "tvd3" in r], "tvd3"),
            "seconds": _mean(rows, "seconds"),
            "marginals": {"groups": marg.tolist(), "tvd2": _mean(rows, "marginals_tvd2"),
                          "tvd3": _mean(rows, "marginals_tvd3"), "seconds": _mean(rows, "marginals_seconds")},
            "peers": {p: compare(ours, by[setting_of(first)]) for p, by in peers.items()
                      if setting_of(first) in by}}


def _order(c: dict[str, Any]) -> tuple[float, int, float]:
    d = rules_lodo.DATASETS.index(c["dataset"]) if c["dataset"] in rules_lodo.DATASETS else 99
    return c["epsilon"], d, float("inf") if c["size"] == "full" else float(c["size"])


def shipped_rows(files: dict[str, list[dict[str, Any]]], shipped: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each ``shipped`` entry's rows of the shipped rules, as ``default`` rows: ``FILE`` names a file's
    ``default`` rows, ``FILE:CANDIDATE`` the rows of the candidate that became the shipped rules."""
    out = {}
    for entry in shipped:
        name, _, candidate = entry.partition(":")
        if name in files:
            out[entry] = [{**r, "candidate": "default"} for r in files[name] if r["candidate"] == (candidate or "default")]
    return out


def shipped_runs(files: dict[str, list[dict[str, Any]]], shipped: Sequence[str]) -> Runs:
    """The shipped rules' rows by setting and seed: a later ``shipped`` entry's settings replace the earlier
    entries' rows of those settings (it re-ran them under a change of the rules); within an entry, as
    ``by_seed``."""
    runs: Runs = {}
    for entry, rows in shipped_rows(files, shipped).items():
        runs.update(by_seed({entry: rows}, "default"))
    return runs


def gather(files: dict[str, list[dict[str, Any]]], shipped: Sequence[str]) -> tuple[Runs, dict[str, Runs]]:
    """The shipped rules' rows (``shipped_runs``) and each peer's (from any file), by setting and seed."""
    return shipped_runs(files, shipped), {p: by_seed(files, p) for p in PEERS}


def sweep(files: dict[str, list[dict[str, Any]]], shipped: Sequence[str]) -> list[dict[str, Any]]:
    """Every setting the shipped rules ran on, with the peers beside them."""
    return cells_of(*gather(files, shipped))


def cells_of(ours: Runs, peers: dict[str, Runs]) -> list[dict[str, Any]]:
    """One ``cell`` per setting of ``ours``, in the tables' order."""
    return sorted((cell(seeds, peers) for seeds in ours.values()), key=_order)


def worst(cells: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per epsilon: each dataset's score (mean over its sizes) and the worst of these."""
    out: dict[str, dict[str, Any]] = {}
    for eps in sorted({c["epsilon"] for c in cells}):
        per: dict[str, list[float]] = {}
        for c in cells:
            if c["epsilon"] == eps:
                per.setdefault(c["dataset"], []).append(c["score"])
        means = {d: float(np.mean(v)) for d, v in per.items()}
        bad = max(means, key=means.__getitem__)
        out[format(eps, "g")] = {"per_dataset": means, "worst": bad, "worst_score": means[bad],
                                 "mean": float(np.mean(list(means.values())))}
    return out


def targets(cells: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per epsilon, how many settings meet each of the issue's per-setting targets."""
    out: dict[str, dict[str, Any]] = {}
    for eps in sorted({c["epsilon"] for c in cells}):
        at = [c for c in cells if c["epsilon"] == eps]
        row: dict[str, Any] = {"settings": len(at), "below_marginals_5_of_5": sum(c["below_marginals"] == 5 for c in at)}
        for p in PEERS:
            run = [c["peers"][p] for c in at if c["peers"].get(p, {}).get("seeds")]
            row[p] = {"settings": len(run), "at_or_below_4_of_5": sum(x["at_or_below"] >= 4 for x in run),
                      "tvd2_at_or_below": sum(x["dpgm_tvd2"] <= x["tvd2"] for x in run
                                              if x["tvd2"] is not None and x["dpgm_tvd2"] is not None),
                      "tvd3_at_or_below": sum(x["dpgm_tvd3"] <= x["tvd3"] for x in run
                                              if x["tvd3"] is not None and x["dpgm_tvd3"] is not None),
                      "tvd3_settings": sum(x["tvd3"] is not None for x in run),
                      "tvd1_within": sum(x["dpgm_tvd1"] <= TVD1_RATIO * x["tvd1"] for x in run if x["tvd1"] is not None),
                      "tvd1_settings": sum(x["tvd1"] is not None for x in run)}
        out[format(eps, "g")] = row
    return out


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ratio(peer: dict[str, Any], key: str) -> float | None:
    """The rules' ``key`` over the peer's, on the seeds where both hold it."""
    return None if peer.get(key) is None else peer[f"dpgm_{key}"] / peer[key]


def text(cells: Sequence[dict[str, Any]]) -> str:
    """The sweep as fixed-width text: per setting the score, the groups below the marginals and at or
    below each peer, the 2-way TVDs and the seconds; then each epsilon's worst dataset."""
    names = {"mst": "MST", "mwem_pgm": "MWEM", "aim": "AIM"}
    head = (f"{'setting':<26}{'seeds':>6}{'score':>8}{'<marg':>7}"
            + "".join(f"{'<=' + names[p]:>8}" for p in PEERS)
            + f"{'TVD2':>9}" + "".join(f"{names[p]:>9}" for p in PEERS)
            + f"{'TVD3':>9}" + "".join(f"{names[p]:>9}" for p in PEERS) + f"{'TVD1/MST':>9}"
            + f"{'s dpgm':>8}" + "".join(f"{'s ' + names[p]:>9}" for p in PEERS) + f"{'AIM rounds':>11}")
    lines = [("score: mean log(error / marginals' error) over the 5 length groups; <marg: groups below the "
             "marginals; <=PEER: groups at or below the peer on the seeds both ran (peer's seeds in brackets); "
             "TVD2, TVD3: 2-way and 3-way marginal TVD (a peer's 3-way on the seeds where both rows hold it); "
             "TVD1/MST: the single-item TVD over MST's; s: seconds of one fit with its sampling and scoring, one thread; AIM rounds: "
             "the rounds AIM made under its public cap of 40"), head]
    for c in cells:
        ps = [c["peers"].get(p, {"seeds": 0}) for p in PEERS]
        lines.append(
            f"{c['dataset'] + '/' + c['size'] + ' eps ' + format(c['epsilon'], 'g'):<26}{c['seeds']:>6}"
            f"{c['score']:>+8.3f}{c['below_marginals']:>5}/5"
            + "".join(f"{(str(x['at_or_below']) + '/5(' + str(x['seeds']) + ')') if x['seeds'] else '-':>8}" for x in ps)
            + f"{_num(c['tvd2'], '.4f'):>9}" + "".join(f"{_num(x.get('tvd2'), '.4f'):>9}" for x in ps)
            + f"{_num(c['tvd3'], '.4f'):>9}" + "".join(f"{_num(x.get('tvd3'), '.4f'):>9}" for x in ps)
            + f"{_num(_ratio(c['peers'].get('mst', {}), 'tvd1'), '.2f'):>9}"
            + f"{_num(c['seconds'], '.0f'):>8}" + "".join(f"{_num(x.get('seconds'), '.0f'):>9}" for x in ps)
            + f"{_num(c['peers'].get('aim', {}).get('rounds'), '.0f'):>11}")
    for eps, w in worst(cells).items():
        lines.append(f"  epsilon {eps}: per dataset (mean over its sizes) "
                     + ", ".join(f"{d} {v:+.3f}" for d, v in w["per_dataset"].items())
                     + f"; mean {w['mean']:+.3f}; worst {w['worst']} {w['worst_score']:+.3f}")
    return "\n".join(lines)


def plot_rows(ours: Runs, peers: dict[str, Runs]) -> list[dict[str, Any]]:
    """The rows the plots draw: the shipped rules' and each peer's, on the settings the shipped rules ran on."""
    return [r for by in (ours, *peers.values()) for s, seeds in by.items() if s in ours for r in seeds.values()]


def read(names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Each named file's rows (rows without an epsilon get the file's; rows of the older
    single-epsilon files keep theirs)."""
    return {Path(n).name: rules_lodo.read_rows(str(n)) for n in names}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="*", help="rules_lodo.py JSON files (default: results/rules_lodo*.json)")
    p.add_argument("--shipped", nargs="+", default=list(SHIPPED),
                   help="the files (names) whose default rows are the shipped rules; FILE:CANDIDATE: that "
                        "candidate's rows, when it became the shipped rules")
    p.add_argument("--json", metavar="PATH", help="write the summary here")
    p.add_argument("--plot", metavar="DIR", help="one PNG per dataset in DIR: the rules, the peers, the marginals")
    args = p.parse_args(argv)
    names = args.files or sorted(str(f) for f in RESULTS.glob("rules_lodo*.json"))
    missing = [n for n in names if not Path(n).is_file()]
    if missing:
        print(f"error: no such file: {missing[0]}", file=sys.stderr)
        return 2
    files = read(names)
    ours, peers = gather(files, args.shipped)
    cells = cells_of(ours, peers)
    if not cells:
        print("error: no default rows in the shipped files", file=sys.stderr)
        return 2
    print(text(cells))
    if args.json:
        write_json(args.json, {"files": sorted(files), "shipped": list(args.shipped), "cells": cells,
                               "worst": worst(cells), "targets": targets(cells)})
    if args.plot:
        for path in rules_lodo.plot_peers(plot_rows(ours, peers), Path(args.plot)):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
