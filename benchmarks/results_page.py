"""The documentation's results page (docs/results.md), generated from benchmarks/results/.

Every figure on the page is read from a benchmark's JSON, and every table names the file it
comes from (with the commit and date of its provenance where the file has one). After a
benchmark writes new JSON, regenerate the page:

    python benchmarks/results_page.py            # rewrite docs/results.md
    python benchmarks/results_page.py --check    # exit 1 if docs/results.md is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sweep_report as sweep

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "results.md"
#: Train on synthetic, test on real: the runs of the shipped labelled MNIST configs.
TOS_FILES = (
    "tos/final_mnist_s01.json", "tos/final_mnist_s1.json", "tos/final_mnist_s2.json",
    "tos/final_s12_seed0.json", "tos/final_s12_seed1.json", "tos/final_s12_seed2.json",
    "tos/final_fashion_s0.json",
)
GOWALLA_10_SEEDS = ("gowalla_eps1_10seeds_dpgm.json", "gowalla_eps1_10seeds_mst.json")
METHODS = {"dpgm (generic)": "dpgm (generic)", "aim": "AIM", "mst": "MST",
           "mwem_pgm": "MWEM+PGM", "mwem": "MWEM", "marginals": "marginals"}
THROUGHPUT = {"plain": "non-private (no clipping, no noise)", "opacus": "Opacus",
              "dpgm_fixed": "dpgm, fixed clipping", "dpgm_adaptive": "dpgm, DPNorm clipping"}
TOS_METHODS = {"dpgm": "dpgm", "nonprivate": "dpgm, no noise", "real": "real images"}


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text())


def load_if_there(name: str) -> dict[str, Any] | None:
    """A benchmark's JSON, or None where it was not run (its section is then left out)."""
    return load(name) if (RESULTS / name).is_file() else None


def source(*names: str) -> str:
    """'Source: `benchmarks/results/NAME` (commit, date)' for each file, from its provenance."""
    parts = []
    for name in names:
        prov = load(name).get("provenance") or {}
        about = [f"commit {prov['commit'][:7]}" + " with local changes" * bool(prov.get("dirty"))
                 ] if prov.get("commit") else []
        about += [prov["date"][:10]] if prov.get("date") else []
        parts.append(f"`benchmarks/results/{name}`" + (f" ({', '.join(about)})" if about else ""))
    return "Source: " + "; ".join(parts) + "."


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def seconds(value: float) -> str:
    """Whole seconds from 10 s on, two significant digits below."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def mean_sd(values: Sequence[float], digits: int = 3) -> str:
    """'mean ± sd' (sample sd) of several values, the value alone for one."""
    if len(values) == 1:
        return num(values[0], digits)
    return f"{num(float(np.mean(values)), digits)} ± {num(float(np.std(values, ddof=1)), 2)}"


def timings() -> str:
    """Seconds per shipped config: of each config, the newest run in the timing files."""
    newest: dict[str, tuple[str, str, dict[str, Any]]] = {}
    files = sorted(RESULTS.glob("config_timings*.json")) + sorted(RESULTS.glob("timing_*.json"))
    for path in files:
        data = load(path.name)
        date = (data.get("provenance") or {}).get("date", "")
        for run in data["runs"]:
            quiet_default = run.get("threads", "default") == "default" and not run.get("busy", False)
            if run.get("returncode") == 0 and quiet_default and date >= newest.get(run["config"], ("",))[0]:
                newest[run["config"]] = (date, path.name, run)
    rows = []
    for config, (_, name, run) in sorted(newest.items(), key=lambda kv: kv[1][2]["seconds"]):
        made = run.get("generate_records")
        gen = f"{made:,} records in {run['generate_seconds']:.1f} s" if made else ""
        rows.append((f"`{config}`", f"{run['seconds']:.1f}", gen, f"`{name}`"))
    used = sorted({name for _, name, _ in newest.values()})
    return "\n\n".join([
        "## Time per shipped config",
        ("`python train.py --config NAME`, each run a fresh process (imports, loading, partition, "
        "training, release files), default threads, on the machine its provenance describes "
        "(`benchmarks/config_timings.py`). Of each config, the newest run is shown."),
        table(("config", "seconds to train", "generating", "file"), rows),
        source(*used)])


def generic_time() -> str:
    """The whole generic run beside MST's, on one 500,000 x 100 dataset (the time target: within 2x)."""
    data = load("generic_time.json")
    ds, dpgm, mst = data["dataset"], data["dpgm"], data["mst"]
    rows = [("dpgm (generic)", f"{dpgm['run_s']:.1f}", f"{dpgm['release_s']:.1f}", f"{dpgm['total_s']:.1f}",
             f"{dpgm['epsilon_spent']:.3f}"),
            ("MST", f"{mst['fit_s']:.1f}", f"{mst['sample_s']:.1f}", f"{mst['total_s']:.1f}",
             f"{mst['epsilon_spent']:.3f}")]
    return "\n\n".join([
        "## Time of the generic run beside MST's",
        (f"`benchmarks/generic_time.py`: {ds['records']:,} records x {ds['items']} items ({ds['construction']}), "
         f"epsilon {data['epsilon']:g}, delta {data['delta']:g}, {data['settings']['threads']} thread; dpgm's "
         f"whole run (every stage up to the release folder) and its release of {dpgm['n_synthetic']:,} records, "
         f"MST's fit and its sampling of as many (the rules' plan: {dpgm['plan']['k']} group(s), partition "
         f"{dpgm['plan']['partition']}). dpgm / MST: {data['ratio']:.2f}, both timed in the same run."),
        table(("method", "fit seconds", "sampling seconds", "total seconds", "epsilon spent"), rows),
        source("generic_time.json")])


def accounting() -> str:
    """The paper's MNIST plan: epsilon under each change of analysis."""
    data = load("paper_epsilon.json")
    plan = data["plan"]
    rows = [(r["label"].replace("DESIGN.md 3.", "docs/paper.md, note "), f"{r['epsilon']:.4f}",
             num(r["order"])) for r in data["rows"]]
    rows.append(("privacy loss distribution (PLD) accountant, for comparison",
                 f"{data['pld_epsilon']:.4f}", ""))
    rows.append(("the paper's published value", f"{data['paper_epsilon']}", ""))
    return "\n\n".join([
        "## Privacy accounting: the paper's MNIST plan",
        (f"{plan['kmeans_iterations']} DP k-means iterations (noisy counts and sums, sigma_K = "
        f"{plan['sigma_k']:g}), then {plan['steps']:,} DP-SGD steps ({plan['epochs']:g} epochs, "
        f"q = {plan['sampling_rate']:g}) each releasing a DPNorm histogram (sigma_C = "
        f"{plan['sigma_c']:g}) and a gradient (sigma_G = {plan['sigma_g']:g}) from one Poisson "
        f"batch; delta = {plan['delta']:g}. One change of analysis per row "
        "(`benchmarks/paper_epsilon.py`); dpgm's analyses are the rows naming `bound='joint'` "
        "(the default) and `bound='holder'`."),
        table(("analysis", "epsilon", "RDP order"), rows),
        source("paper_epsilon.json")])


def throughput_rates(data: dict[str, Any]) -> dict[tuple[float, str], float]:
    """Median records per second of one run of dpsgd_throughput.py, by (expected batch, variant)."""
    return {(r["expected_batch_size"], r["variant"]): r["records_per_s"]
            for r in data["results"] + data.get("extra_results", [])}


def throughput() -> str:
    """DP-SGD records per second against Opacus and non-private training, with dpgm's ratios to both."""
    data = load("dpsgd_throughput.json")
    runs = data["results"] + data.get("extra_results", [])
    rate = throughput_rates(data)
    rows = []
    for run in runs:
        b = run["expected_batch_size"]
        ratios = [f"{run['records_per_s'] / rate[(b, ref)]:.2f}x" if (b, ref) in rate else "-"
                  for ref in ("plain", "opacus")]
        rows.append((f"{b:g}", THROUGHPUT.get(run["variant"], run["variant"]), f"{run['records_per_s']:,.0f}",
                     f"{run['best_records_per_s']:,.0f}", *ratios))
    return "\n\n".join([
        "## DP-SGD throughput",
        (f"{data['model']}; data: {data['data']}, n = {data['n']:,}; {data['threads']} thread(s), "
         f"torch {data['torch']}, {data['rounds']} interleaved rounds of {data['epochs'] / data['rounds']:g} epoch "
         "per variant; the median round's records per second, the best round's, and the ratios to non-private "
         "training and to Opacus in the same run (`benchmarks/dpsgd_throughput.py`). At the paper's batch size "
         "the Gaussian noise for every parameter, drawn each step whatever the batch, is most of the gap to "
         "non-private training (about 1.1 ms of a 7 ms step for this model's 316,000 parameters)."),
        table(("expected batch", "training", "records/s", "best round, records/s", "x non-private", "x Opacus"),
              rows),
        source("dpsgd_throughput.json")])


def throughput_gpu() -> str:
    """The same benchmark on a GPU (``--device cuda``) beside the same machine's CPU cores."""
    gpu, cpu = load("dpsgd_throughput_cuda.json"), load("dpsgd_throughput_gpu_host_cpu.json")
    on_gpu, on_cpu = throughput_rates(gpu), throughput_rates(cpu)
    rows = [(f"{b:g}", THROUGHPUT.get(v, v), f"{r:,.0f}", f"{r / on_gpu[(b, 'opacus')]:.2f}x",
             f"{on_cpu[(b, v)]:,.0f}", f"{on_cpu[(b, v)] / on_cpu[(b, 'opacus')]:.2f}x", f"{r / on_cpu[(b, v)]:.2f}x")
            for (b, v), r in on_gpu.items()]
    return "\n\n".join([
        "## DP-SGD throughput on a GPU",
        (f"The benchmark above with `--device cuda` on one {gpu['device']} (torch {gpu['torch']}) and, on the same "
         f"machine, with `--device cpu` on {cpu['threads']} threads; data: {gpu['data']}, n = {gpu['n']:,}. "
         "Measured before the gradient noise was drawn on the GPU: dpgm drew it from its CPU stream and moved it "
         "there (today's `training.device_noise: false`), Opacus from a generator on the GPU. On the GPU, dpgm and "
         "Opacus run at about the same speed for this model; on the CPU, dpgm runs several times faster than "
         "Opacus."),
        table(("expected batch", "training", "GPU records/s", "x Opacus (GPU)", "CPU records/s", "x Opacus (CPU)",
               "GPU / CPU"), rows),
        source("dpsgd_throughput_cuda.json", "dpsgd_throughput_gpu_host_cpu.json")])


def dependence_section() -> str:
    """Item dependence (exact, on the fit samples) beside what the rules' groups bought: a lead for the rules."""
    data = load("dependence.json")
    rows = [(r["dataset"], r["size"], f"{r['phi']:.4f}", f"{r['top_eigen']:.3f}", f"{r['tree_mi']:.3f}",
             f"{r['tree_l1']:.4f}", f"{r['groups_gain']:+.3f}" if "groups_gain" in r else "") for r in data["rows"]]
    return "\n\n".join([
        "## Item dependence and what groups buy (a lead, not private)",
        ("`benchmarks/dependence.py --compare results/rules_lodo_one_group.json --one one5e4 --epsilon 4`: on each "
         "fit sample of the leave-one-dataset-out grid (seed 0), computed exactly, the mean absolute correlation of "
         "the item pairs (phi), the largest eigenvalue of the items' correlation matrix over the number of items, "
         "the Chow-Liu tree's mutual information over the items' entropies, and the heaviest spanning tree of the "
         "pairs' L1 distances from independence per record and edge (MST's score: against released means, "
         "sensitivity m - 1, so one cheap release could measure it); beside them, where N = 10,000 at "
         "epsilon 4, the score of one group minus that of the rules' 8 groups (ten seeds; > 0: the groups help). "
         "The groups help where the largest eigenvalue share is 0.065 or more (msnbc, gowalla) and buy nothing or "
         "lose where it is about 0.02 (retail, t10i4d100k); the tree's L1 distance separates them too, by less "
         "(0.027 and more against 0.020 and less). These are exact statistics of the data; the rules measure "
         "the last privately (`dpgm/stages/dependence.py`, 2% of rho where groups form) and form one group "
         "below 0.025 (below: \"One group where the items barely depend on each other\")."),
        table(("dataset", "fit size", "phi", "top eigenvalue / m", "tree MI / entropy", "tree L1 per edge",
               "groups' gain, epsilon 4"),
              rows),
        source("dependence.json")])


def capacity_section() -> str:
    """What each model family reaches fitted exactly, beside the shipped rules and the peers on the same split."""
    files = [name for name in ("model_capacity.json", "model_capacity_more.json") if load_if_there(name) is not None]
    if not files:
        return ""
    fitted = [r for name in files for r in load(name)["rows"]]
    sweep = {(c["dataset"], c["size"], c["epsilon"]): c for c in load("rules_sweep.json")["cells"]}
    rows = [(r["dataset"], r["size"], r["model"], num(r["tvd1"], 4), num(r["tvd2"], 4), num(r["tvd3"], 4))
            for r in fitted]
    for (dataset, size, eps), c in sweep.items():
        if any(r["dataset"] == dataset and r["size"] == size for r in fitted) and eps == 1.0:
            rows.append((dataset, size, "dpgm, epsilon 1", num(c["peers"]["mst"].get("dpgm_tvd1"), 4),
                         num(c["tvd2"], 4), num(c["tvd3"], 4)))
            rows += [(dataset, size, f"{METHODS.get(p, p)}, epsilon 1", num(v.get("tvd1"), 4), num(v["tvd2"], 4),
                      num(v.get("tvd3"), 4)) for p, v in c["peers"].items()]
    return "\n\n".join([
        "## What a model family reaches at best (a lead, not private)",
        ("`benchmarks/model_capacity.py --datasets msnbc --sizes 3000 30000`: each model fitted EXACTLY (no noise) "
         "to the fit sample of the leave-one-dataset-out grid (seed 0) and as many records drawn from it, one by "
         "one (independent draws), scored by the marginal TVDs to the held-out half; `sample` is the fit sample "
         "itself (what the split alone costs), `tree` the Chow-Liu tree the generic rules fit with noise, `bn<K>` "
         "PrivBayes's greedy network of at most K parents per item, `mix<K>` K exact trees over k-means groups "
         "(the rules' model where groups form), all noise-free. Beside them, from the sweep, the shipped rules and "
         "the peers at epsilon 1 (means over their seeds; dpgm's single-item TVD on MST's seeds). At 30,000 msnbc "
         "records AIM's 2- and 3-way TVDs are those of a noise-free network of three parents per item, below one "
         "tree's even without noise, where the rules form one group (N epsilon = 10,000); eight groups' trees "
         "would beat it without noise (0.0038 and 0.0068), two would not (0.0051, as the private two groups of "
         "`tparts1e4` reached: \"More groups for the trees\"). gowalla whole and t10i4d100k (`--datasets gowalla "
         "t10i4d100k --sizes 30000 full --bn --mix 8`, `model_capacity_more.json`; gowalla's fit half is under "
         "30,000) have far less structure to find: the tree's 2-way TVD is under 0.0001 (t10i4d100k 30,000), 0.0002 "
         "(t10i4d100k whole) and 0.0004 (gowalla) below independent items', against 0.0025 on msnbc 30,000, and "
         "eight exact groups take off 0.0002, 0.0001 and 0.0006 more, against 0.0028. At epsilon 1 the rules' 2-way "
         "TVD on t10i4d100k 30,000 (0.0029) is 0.0002 above the noise-free tree's."),
        table(("dataset", "fit size", "model", "1-way TVD", "2-way TVD", "3-way TVD"), rows),
        *[source(name) for name in files]])


GPU_NOISE = (("gpu_noise_mnist_e2_stream.json", "2", "GPU", "CPU stream, moved to the GPU (`device_noise: false`)"),
             ("gpu_noise_mnist_e2_device.json", "2", "GPU", "on the GPU, reseeded each step (default)"),
             ("gpu_noise_mnist_e2_host_cpu.json", "2", "the same machine's CPU", "CPU stream"),
             ("gpu_noise_mnist_stream.json", "20 (the plan)", "GPU", "CPU stream, moved to the GPU (`device_noise: false`)"),
             ("gpu_noise_mnist_device.json", "20 (the plan)", "GPU", "on the GPU, reseeded each step (default)"))


def mnist_gpu() -> str:
    """The paper's MNIST plan on one GPU, its gradient noise drawn on the CPU or on the GPU."""
    runs = {name: load(name) for name, *_ in GPU_NOISE}
    first = runs[GPU_NOISE[0][0]]["provenance"]
    rows = [(epochs, where, noise, f"{runs[name]['runs'][0]['seconds']:.1f}", f"`{name}`")
            for name, epochs, where, noise in GPU_NOISE]
    return "\n\n".join([
        "## The MNIST plan on a GPU: where the gradient noise is drawn",
        ("`benchmarks/config_timings.py --configs mnist --threads 16 --set device=cuda --set seed=0` on one NVIDIA "
         f"H100 80GB HBM3 machine with {first['machine']['cpus']} cores (torch {first['versions']['torch']}), with "
         "`--set training.device_noise=false` or not, and with `--set training.epochs=2` for the shorter runs; the "
         "host CPU run leaves out `device=cuda`. Each run is one fresh `train.py` process (data loading, the "
         "kernel k-means partition, ten VAEs of 316,000 parameters trained together, the release files). With "
         "the noise on the CPU stream, each step's 3.2 million normals are drawn on one CPU thread and copied to "
         "the GPU, and that bounds the run; drawn on the GPU from a generator that one draw of the stream reseeds "
         "each step (docs/guide/distributed.md, \"On a GPU\"), the whole plan takes about a third of the time. "
         "The same plan on the 2-core machine that runs the other benchmarks takes about 250 s "
         "(`config_timings_mnist.json`, another machine). The runs' local changes are the commit that adds these "
         "files."),
        table(("epochs", "trained on", "gradient noise", "seconds", "file"), rows),
        source(*runs)])


def group_means(cell: dict[str, Any]) -> list[str]:
    return [num((cell["groups"].get(str(g)) or {}).get("mean")) for g in sweep.GROUPS]


def tvd_means(cell: dict[str, Any]) -> list[str]:
    return [num((cell["tvd"].get(m) or {}).get("mean")) for m in sweep.TVDS]


def counting() -> str:
    """The sweep at epsilon 1 on the full datasets, and dpgm's standing at every setting."""
    data = load("sweep_report/summary.json")
    cells = {(c["dataset"], c["size"], c["epsilon"], c["method"]): c for c in data["cells"]}
    queries, marginals = [], []
    for ds in sorted({k[0] for k in cells if k[1] == "all" and k[2] == 1.0}):
        here = {k[3] for k in cells if k[:3] == (ds, "all", 1.0)}
        for method in sweep.method_order(here):
            cell = cells[(ds, "all", 1.0, method)]
            queries.append((ds, METHODS.get(method, method), *group_means(cell)))
            marginals.append((ds, METHODS.get(method, method), *tvd_means(cell),
                              seconds(cell["seconds"]["mean"]), cell["seeds"]))
    aim_limits = {load(f"sweep/{p.name}")["settings"].get("aim_time_limit")
                  for p in (RESULTS / "sweep").glob("*_baselines.json")}
    wins = [(w["dataset"] + ("" if w["size"] == "all" else f", {int(w['size']):,} records"),
             f"{w['epsilon']:g}", w["groups <= AIM"], w["groups < MWEM"],
             w["groups < marginals"], f"{yes(w['2-way <= MST'])} / {yes(w['3-way <= MST'])}",
             num(w["1-way / MST"], 2)) for w in data["wins"]]
    return "\n\n".join([
        "## Counting queries and marginals",
        ("`benchmarks/counting_queries.py` on msnbc (17 items), retail and gowalla (their 100 most "
        "frequent items): 1,000 random item-set queries per dataset in 5 length groups, the mean "
        "relative error per group, and the average total variation distance (TVD) of the 1-, 2- "
        "and 3-way marginals; dpgm with the generic config (`configs/transactions.yaml`), "
        "marginals: independent noisy item frequencies; every "
        "method at the same epsilon through the same accountant, means over the seeds. AIM ran "
        f"with a time limit of {', '.join(f'{t:g}' for t in sorted(aim_limits))} s. One thread "
        "per run on a shared 2-core machine, so the seconds are upper bounds. Aggregated by "
        "`benchmarks/sweep_report.py` from `benchmarks/results/sweep/*.json`."),
        "### At epsilon 1",
        "Mean relative error of the counting queries, per length group:",
        table(("dataset", "method", *(f"group {g}" for g in sweep.GROUPS)), queries),
        "Average TVD of the marginals, and the seconds per run:",
        table(("dataset", "method", "TVD 1-way", "2-way", "3-way", "seconds", "seeds"),
              marginals),
        "### dpgm against the baselines at every epsilon and size",
        ("Groups (of 5) where dpgm's mean error is at or below AIM's, below MWEM's and below "
        "independent marginals'; whether dpgm's 2- and 3-way TVDs are at or below MST's; dpgm's "
        "1-way TVD over MST's. The whole dataset, or a random sample of that many records."),
        table(("data", "epsilon", "groups <= AIM", "< MWEM", "< marginals",
               "2-/3-way TVD <= MST", "1-way TVD / MST"), wins),
        source("sweep_report/summary.json"),
        gowalla_pairs()])


def yes(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def gowalla_pairs() -> str:
    """gowalla's marginals with 10 seeds, where 3 seeds left dpgm and MST level on pairs."""
    runs, _ = sweep.merge({name: load(name) for name in GOWALLA_10_SEEDS})
    cells = sweep.aggregate(runs)
    rows = []
    for method in sweep.method_order({k[3] for k in cells}):
        cell = cells[("gowalla", "all", 1.0, method)]
        rows.append((METHODS.get(method, method),
                     *(sweep.fmt(cell["tvd"][m]) for m in sweep.TVDS),
                     seconds(cell["seconds"]["mean"]), cell["seeds"]))
    return "\n\n".join([
        "### gowalla's marginals over 10 seeds",
        "The same protocol at epsilon 1 with 10 seeds for dpgm and MST (mean ± sd).",
        table(("method", "TVD 1-way", "2-way", "3-way", "seconds", "seeds"), rows),
        source(*GOWALLA_10_SEEDS)])


def train_on_synthetic() -> str:
    """A fixed CNN trained on labelled dpgm images, tested on the real test set."""
    acc: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    secs: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for name in TOS_FILES:
        data = load(name)
        s = data["settings"]
        for r in data["results"]:
            eps = "" if r["epsilon"] is None else num(r["epsilon"])
            key = (s["dataset"], s["config_used"], r["method"], eps)
            acc[key].append(r["accuracy"])
            secs[key] += [r["dpgm_seconds"]] if r.get("dpgm_seconds") else []
    rows = [(ds, f"`{config}`", TOS_METHODS.get(method, method), eps, mean_sd(v), len(v),
             f"{np.mean(secs[k]) / 60:.0f}" if secs[k] else "")
            for k, v in acc.items() for ds, config, method, eps in [k]]
    return "\n\n".join([
        "## Train on synthetic, test on real",
        ("`benchmarks/train_on_synthetic.py`: 60,000 labelled images released by a config, a "
        "fixed small CNN trained on them and tested on the real test set (delta 1e-5; the "
        "configs were chosen on a validation split of the training images, never the test set). "
        "Trained on: the release of the config at that epsilon, the same config without noise, "
        "or the real training images. Accuracy: mean ± sd over the seeds (each seed's figure is "
        "in the JSON). Minutes: the dpgm run (partition, training, release) at one thread."),
        table(("data", "config", "trained on", "epsilon", "accuracy", "seeds", "minutes"),
              rows),
        source(*TOS_FILES)])


def audit() -> str:
    """The audits per setting: the claim, the weakened runs' true epsilon, the lower bound and its cap, honest,
    with the noise cut tenfold and with it off (``--noise-scale``)."""
    data = load("audit.json")
    rows = [(r["setting"], r["audited"], f"x{r['noise_scale']:g}", f"{r['claimed_epsilon']:.3g}",
             f"{r['true_epsilon']:.3g}", f"{r['lower_bound']:.2f} ({r['epsilon_cap']:.2f})", r["right"],
             "refuted" if r["lower_bound"] > r["claimed_epsilon"] else "not refuted")
            for r in data["results"]]
    return "\n\n".join([
        "## Empirical privacy audit",
        ("`python -m dpgm.audit` (`benchmarks/audit.py`): a lower bound on epsilon at 95% confidence, for each "
         "setting run honestly, with every noise secretly cut tenfold and with it off (`--noise-scale`: the claim "
         "stays the honest run's). DP-SGD by the one-run audit (Steinke, Nasr, Jagielski 2023) with gradient "
         "canaries read off every step's released gradient, its guesses sized so that the cap (the bound if every "
         "guess is right) clears the claim; the statistics releases by a threshold test over runs on two "
         "neighbours (Clopper-Pearson), each release at its own epsilon 1. Right: correct guesses (DP-SGD) or "
         "runs told apart (releases). Every weakened run is refuted, no honest one is."),
        table(("setting", "audited", "noise", "claimed epsilon", "true epsilon", "lower bound (cap)", "right",
               "verdict"), rows),
        source("audit.json")])


def generic_rules() -> str:
    """The generic rules chosen by leave-one-dataset-out over the seven transaction datasets."""
    import rules_lodo  # the benchmark's own summary: one computation of the choice, here and on its command line

    name = "rules_lodo_seven_bound.json"
    summary = rules_lodo.summarize(rules_lodo.read_rows(str(RESULTS / name)))
    return "\n".join([
        "## The generic rules, chosen over seven datasets", "",
        ("Each candidate patches the generic rules (`dpgm/rules.py`); `default` is the rule before the "
         "length bound, `lb90`/`lb99` clip the noisy means at the 90%/99% quantile of a noisy length "
         "histogram, `_totals20` adds the item totals the means agree with. A score is the mean over "
         "five length groups of log(dpgm's error / independent marginals' error) on 500 counting "
         "queries over the held-out half of the data (below 0: dpgm better). Leave-one-dataset-out: "
         "the rule chosen without dataset X is scored on X; the mean and the worst held-out dataset "
         "are the figures that matter. One seed per setting."),
        "", "```text", summary.rstrip(), "```", "", source(name),
        *(part for title, file, what in TRIED for part in tried(title, file, what))])


#: Rule families tried after the length bound: (heading, file, what the candidates change). In each
#: file ``default`` is the rules of its commit (the provenance): before the balanced clip.
TRIED = (
    ("The clip of the means balanced against their noise (shipped: lbalmax16)", "rules_lodo_seven_lbalmax.json",
     ("`default` clips the means at the 90% quantile of the noisy lengths; `lbalmaxW` raises that length, "
     "when longer, to the one minimising the item mass the clip removes, squared, plus W times the means' "
     "relative noise, squared, both read off the noisy length histogram (`model.mean_clip_balance: W`; "
     "`lbalmax` is W = 1). Leave-one-dataset-out prefers a balanced clip at both epsilons; the rules ship "
     "W = 16, which is at or below `default` on every setting. Three seeds per setting.")),
    ("A tree of items where DP-SGD cannot pay", "rules_lodo_seven_tree.json",
     ("`default`: the rules before the balanced clip. `treeXeY` makes each group's model a tree of items (`model.kind: tree`) below N epsilon = X x 10^Y "
     "(`TREE_SCALE`); `_light` halves the tree's shares (5% of rho for the edge selections, 15% for the "
     "pair counts, against 10% and 30%); `_noempty` lets the tree draw the empty records itself instead "
     "of leaving them to a part of their own. The selections then scored a pair by the distance of its count "
     "alone from independence (see below for MST's score). Three seeds per setting.")),
    ("Item totals the means agree with", "rules_lodo_seven_totals.json",
     ("`default`: the shipped rules. `totalsX` releases every item's total over all records with X% of rho "
     "taken from the means' share, and the part means are made consistent with it by least squares "
     "(`model.totals_noise_multiplier`). Three seeds per setting.")),
    ("No DP-SGD below a larger scale", "rules_lodo_seven_indep.json",
     ("`default`: the shipped rules. `indepX` trains no model below N epsilon = X (`MIN_TRAINING_SCALE`, "
     "shipped: 3,000): each group's model is its noisy mean record. Three seeds per setting.")),
    ("No DP-SGD at N epsilon = 4,000", "rules_lodo_seven_indep5e3.json",
     ("`default`: the shipped rules. `indep5e3` trains no model below N epsilon = 5,000 (`MIN_TRAINING_SCALE`), "
      "which on this grid changes only the settings at N = 1,000 and epsilon 4: the 3,000-record samples and "
      "the whole fit halves of foodmart, mushroom and chess. Every other setting runs the same rule under both "
      "names, so only these settings are run. Three seeds per setting.")),
    ("Ten seeds on the smallest whole datasets", "rules_lodo_attribute_seeds10.json",
     ("The whole fit halves of chess, mushroom and foodmart (1,598, 4,062 and 2,070 records), where the "
      "held-out scores swing most between seeds, with ten seeds: the shipped rules (`default`), no DP-SGD "
      "below N epsilon = 5,000 (`indep5e3`) and a tree of items below N epsilon = 10,000 (`tree1e4`).")),
    ("Fewer, larger groups", "rules_lodo_seven_parts.json",
     ("`default`: the rules before the balanced clip. `rppX` forms one group per X records at epsilon 1 (`RECORDS_PER_PART`, shipped: 5,000), on the "
     "datasets and sizes where the rules form more than one group. Three seeds per setting.")),
    ("The tree's selections scored as MST scores them", "rules_lodo_seven_tree_l1.json",
     ("The tree of items again, its edge selections now scoring a pair by the L1 distance between its 2 x 2 "
      "table of counts and independence at the noisy means (MST's score, sensitivity 1; before: the distance "
      "of the pair count alone, a quarter of it). `default`: the shipped rules without the tables' rule (no "
      "dataset declares attributes here). `treeXeY` as above; `_even` gives the selections and the pairs a "
      "quarter of rho each (MST's split). The 3,000-record samples and the whole fit halves of at most 5,000 "
      "records (`--sizes 3000 full --full-max-records 5000 --seeds 3`). The tree now wins on both tables "
      "(mushroom, chess) at both epsilons and loses on the click-streams and baskets, so no single scale "
      "serves all seven: the tables' rule below uses what tells them apart, their declared attributes.")),
    ("The tree's pair counts shrunk toward independence", "rules_lodo_seven_tree_shrink.json",
     ("Why the tree loses on click-streams and baskets: `_shrink` pulled each part's noisy pair counts toward "
      "independence at the noisy means by one positive-part James-Stein weight over its edges (an option "
      "tried at this file's commit and not kept), so that pairs measured no better than their noise add "
      "none. It moves most scores by less than 0.03 and worsens gowalla's by up to 0.09: the noise in "
      "the pairs is not what costs the tree on those data (the likelier cost: the budget the pairs take "
      "from the means). Same settings and seeds as the previous table.")),
    ("A tree at N = 10,000", "rules_lodo_tree3e4.json",
     ("The same trees below N epsilon = 30,000 (`tree3e4`), which adds the settings at N = 10,000 and "
      "epsilon 1 (`--datasets msnbc retail gowalla t10i4d100k --sizes 30000 full --full-max-records 60000 "
      "--epsilons 1 --seeds 3`). Leave-one-dataset-out picks `tree3e4` for three held-out datasets but its "
      "held-out mean is no better than the default's and its worst is worse (t10i4d100k): not adopted.")),
    ("The part means pulled toward their average", "rules_lodo_shrink_means.json",
     ("Where the rules form several groups (N epsilon >= 10,000: `--datasets msnbc retail gowalla t10i4d100k "
      "--sizes 30000 full --full-max-records 60000 --seeds 3`), `shrink_means` pulled the noisy part means "
      "toward their size-weighted average by one positive-part James-Stein weight (an option tried at this "
      "file's commit and not kept), so that groups differing by no more than their noise would not put "
      "correlations into the release. It moves no setting by more than 0.03: the groups' differences are "
      "real, and t10i4d100k's loss to marginals at these sizes has another cause.")),
    ("A declared table (shipped)", "rules_lodo_seven_tables.json",
     ("mushroom and chess declare their attributes (`data.attributes`: 23 and 37, from their READMEs) as "
      "their users would; the other datasets declare nothing, so every candidate runs the same rules on "
      "them. `default`: the shipped rules, a declared table gets a tree of items below N epsilon = 10,000 "
      "(`TABLE_TREE_SCALE`); `tables_off`: the table modelled like any other data (only the clip at "
      "sqrt(attributes) and no length bound or empty count); `tables_even`: the tree with a quarter of rho "
      "each for the selections and the pairs. Three seeds per setting.")),
    ("Ten seeds on the declared tables", "rules_lodo_tables_seeds10.json",
     ("The tables' settings of the last table with ten seeds (`--datasets mushroom chess --sizes 3000 full "
      "--seeds 10 --peers mst`); MST's rows are in the peer table below. With the two tables alone, the "
      "choice for mushroom at epsilon 1 rests on chess, where independent items at the declared clip "
      "(`tables_off`) score best, and held out that choice scores worse on mushroom than the tree; over both "
      "tables the tree has the better mean and the better worst case at epsilon 1, and it is chosen for both "
      "at epsilon 4. The shipped rule is the tree.")),
    ("The tree's shares on the declared tables", "rules_lodo_tables_shares.json",
     ("Ten seeds, the tables declared: `default` gives the selections 10% of rho and the pairs 30%; "
      "`tables_light` 5% and 15%, `tables_sel5` 5% and 30%, `tables_pairs15` 10% and 15% (the means take "
      "the rest). No split is better on both tables at both epsilons: `tables_light` is ahead at epsilon 4 "
      "and behind on chess at epsilon 1, by less than the spread between seeds. Not adopted.")),
    ("Ten seeds on t10i4d100k where the rules form groups", "rules_lodo_t10_seeds10.json",
     ("The shipped rules on t10i4d100k's 30,000-record samples and whole fit half (N = 10,000), where three "
      "seeds left it near or above marginals: ten seeds (`--datasets t10i4d100k --sizes 30000 full "
      "--full-max-records 60000 --seeds 10 --candidates default`, one process per epsilon).")),
    ("DP-SGD's batch and steps", "rules_lodo_dpsgd.json",
     ("At the same budget: `b1024` about 1,024 records of each part per step (the sampling rate capped at "
      "0.1), `b1024_s50` the same for 50 steps, `s50` 50 steps and `s800` 800 steps of the shipped 256 "
      "records (`--datasets msnbc retail gowalla foodmart t10i4d100k --sizes 3000 30000 300000 full "
      "--full-max-records 60000 --seeds 3`). Stopped after the settings below: no candidate moved a setting "
      "by more than 0.06 from the default, within the spread between seeds. Where the rules train no model (epsilon 1 at "
      "3,000 records) every candidate is the default. Not adopted.")),
    ("DP-SGD's gradient clip", "rules_lodo_clip.json",
     ("The shipped fixed clip of 30 against 5, 10 and 15 (`clip5`, `clip10`, `clip15`; same command). "
      "Stopped after the settings below: no candidate moved a setting by more than 0.07 from the default (msnbc at 30,000 "
      "and epsilon 1, one way for clip15 and the other for clip10). Not adopted.")),
    ("A record-length histogram the release follows, on seven datasets", "rules_lodo_lengths_seven.json",
     ("`lengths2`, `lengths5`, `lengths10`: 2%, 5% or 10% of rho (from the means' share) on a noisy histogram "
      "of record lengths, which the release follows (its first bin holds the empty records, so no empty part; "
      "`--datasets t10i4d100k msnbc retail gowalla foodmart mushroom chess --sizes 3000 30000 300000 full "
      "--full-max-records 60000 --seeds 3`). Stopped after the settings below: it helps t10i4d100k at 30,000 "
      "records and epsilon 1 and loses almost everywhere else, by up to 0.85 (msnbc at 30,000 and epsilon 4) "
      "and 0.76 (msnbc at 300,000 and epsilon 1). Not adopted.")),
    ("The means' clip bias and pairs over all records that the release follows (shipped: bpairs20_3e4)",
     "rules_lodo_pairs.json",
     ("`debias` divides the part means by the share of item mass the length bound's clip keeps, `debias_rec` by the "
      "share of records it keeps (`model.mean_debias`, read off the noisy length histogram). `pairs20` grows one "
      "tree of item pairs over all records (10% of rho for the selections, 20% for the pair counts, from the "
      "means' share) and the release picks its records among three times as many draws by the maximum-entropy "
      "weights that give them the measured item and pair frequencies (`model.pairs_noise_multiplier`); "
      "`debias_pairs20` both. `bpairs20_1e4` and `bpairs20_3e4` measure the pairs only from N epsilon = 10,000 "
      "or 30,000 up, clipped at the length that balances the clip's bias against that one release's noise, with "
      "every item's total in the same release (`model.pairs_clip: balanced`). Every setting, three seeds "
      "(`rules_lodo.py --datasets D --sizes S --full-max-records 500000 --epsilons E --seeds 3 --candidates ...`, "
      "one process per setting; the default rows are those of `rules_lodo_sweep_tvd1.json`). `debias_pairs20` ran "
      "before the rules left the tables' trees out of the pairs: on mushroom and chess its rows measure pairs on "
      "top of the trees.")),
    ("Systematic draws in the release (shipped)", "rules_lodo_draws.json",
     ("`default`: the shipped rules, whose plain release draws systematically (`dpgm/models/draws.py`: each record "
      "keeps the law of an independent draw, each item's count over a part's draws in a chunk is its expected count "
      "rounded up or down, and the parts are chosen the same way) and whose release that follows measured pairs "
      "draws its pool independently; `systematic_pool`: that pool drawn systematically too (equal to `default` "
      "wherever no pairs are measured); `iid_draws`: every draw independent (the `bpairs20_3e4` rows of "
      "`rules_lodo_pairs.json`; equal to `default` wherever pairs are measured). Training is seeded and the same in "
      "all three: only the release differs. Every setting, three seeds. The marginals baseline keeps its "
      "independent draws.")),
    ("A declared table's size read off its item sums (shipped)", "rules_lodo_table_sizes.json",
     ("A table written as attribute=value items (`data.attributes`) holds one item per attribute in every record, so "
      "a part's noisy item sums over the attributes estimate its size, with far less noise than the partition's own "
      "noisy count, which every mean and pair frequency of the part is divided by (`part_means.table_parts`; on chess "
      "at epsilon 1 about 8 records of noise against about 29). `default`: the tree reads each part's size and means "
      "off the item sums; `partition_count`: the partition's count, as before (the commit before, renamed). "
      "Post-processing: the ledger is the same. Ten seeds per setting; seeds 0 to 2 of `partition_count` equal the "
      "rows of `rules_lodo_fit_n.json`. The sweep reads `default` for these settings.")),
    ("A tree of items in DP-SGD's place where one group forms (shipped: tree_one)", "rules_lodo_one_group_tree.json",
     ("Where the records form one group and DP-SGD trained (N epsilon from 3,000 to 20,000), each group's model can "
      "be a tree of items instead (`dpgm/stages/item_pairs.py`: private edge selections, the chosen pairs' noisy "
      "counts), with the budget DP-SGD would have had while the means keep theirs. `tree_one`: always "
      "(`TREE_TRAINING_SCALE` 20,000); `tree_keep` and `tree_take`: the items' dependence measured first (2% of "
      "rho, from the means') and never or always a tree (`model.tree_above`, the run charged the costlier branch "
      "at every RDP order); `tree<T>`: a tree where the measurement is at least T, each seed's `tree_take` row "
      "there and its `tree_keep` row elsewhere (`benchmarks/merge_threshold.py --gate tree`). Every such setting, "
      "ten seeds. Leave-one-dataset-out chooses `tree_one` in every fold at both epsilons: held-out mean -0.588 "
      "against -0.511 at epsilon 1 and -0.637 against -0.609 at epsilon 4; the worst held-out dataset is "
      "t10i4d100k, -0.138 against -0.136 and -0.435 against -0.441, a tie. foodmart alone loses (-0.591 against "
      "-0.620). The measured dependence buys nothing: the tree helps retail and t10i4d100k, whose items barely "
      "depend on each other, as well.")),
    ("Eight groups from N epsilon = 10,000 (lost)", "rules_lodo_tparts8.json",
     ("What the exact trees on msnbc ask for (\"What a model family reaches at best\"): `tparts8` forms groups from "
      "N epsilon = 10,000 (`PARTITION_SCALE`), one per 1,250 records at epsilon 1 (`RECORDS_PER_PART`), so eight "
      "at N = 10,000 and epsilon 1 and twenty (the cap) at epsilon 4; ten seeds on every setting where N = 10,000 "
      "but foodmart's (`default` from `rules_lodo_tdebias.json`, the same code and seeds). On msnbc 30,000 it meets every target the shipped rules miss: -1.069 against "
      "-0.610, the 2-way TVD 0.0045 against AIM's 0.0047, the 3-way 0.0072 against AIM's 0.0089 and MST's "
      "0.0135, at or below AIM in 4 of 5 groups. retail and t10i4d100k merge their groups back (their measured "
      "dependence is below 0.025) and do not move; gowalla loses (-0.904 against -1.047, its 2-way TVD 0.0051 "
      "against MST's 0.0049). The measured dependence would separate msnbc (about 0.055) from gowalla (0.028 to "
      "0.043), but msnbc is the only dataset above any threshold that helps, so no fold can choose one: "
      "leave-one-dataset-out keeps `default` at both epsilons. At epsilon 4 twenty groups cost msnbc too (-1.086 "
      "against -1.303 with eight), and gowalla gains from four (`trpp1e4`, -1.360): msnbc asks for about eight "
      "groups at N = 10,000 whatever epsilon, gowalla for fewer, one at epsilon 1.")),
    ("The clip's bias undone under the trees (lost)", "rules_lodo_tdebias.json",
     ("The part means shrink every record longer than the private length bound, so the trees' item frequencies "
      "fall short of the data's (gowalla whole at epsilon 4: the release's item mass 6 to 8% below the fit "
      "sample's on three seeds, most of its single-item TVD, measured by a script not kept here). `tdebias` divides the part means by the share of item mass the "
      "clip keeps (`MEAN_DEBIAS` mass, read off the noisy length histogram). Every setting but the tables', ten "
      "seeds (three on msnbc 300,000 and whole), `default` and `tdebias` in the same runs. It helps "
      "t10i4d100k, whose items grow with a record's length as the rule assumes (-0.277 against -0.125 at "
      "30,000 and epsilon 1, where it would meet MST's and MWEM+PGM's group targets), and loses on every "
      "other dataset: leave-one-dataset-out keeps `default` in every fold at both epsilons. Dividing the trees' "
      "pair counts by the share of pairs kept as well (one share for all pairs) over-corrected the pairs of "
      "short records to full dependence and was reverted. These `default` rows equal the sweep's on every seed "
      "both hold.")),
    ("A longer clip of the means under the trees (lost)", "rules_lodo_longer_clip.json",
     ("The same bias met by clipping less: `tbal4` weighs the means' noise a quarter as much against the clip's "
      "bias (`LENGTH_BALANCE` 4), `tq95` starts from the 95% length quantile (`LENGTH_QUANTILE`). Every setting "
      "but the tables', ten seeds (three on msnbc 300,000 and whole), `default` from `rules_lodo_tdebias.json` "
      "(the same code and seeds). As with the debias, t10i4d100k and retail gain (`tbal4`: -0.300 against "
      "-0.125 at 30,000 and epsilon 1) and msnbc and gowalla lose; leave-one-dataset-out picks `tbal4` at "
      "epsilon 1 in every fold but msnbc's, and msnbc held out then loses more than the others gain (mean "
      "-0.853 against -0.871); at epsilon 4 it keeps `default`. The measured dependence does not split "
      "the two pairs (retail 0.015 and t10i4d100k 0.020 against gowalla 0.028 to 0.043 and msnbc 0.055, but "
      "retail loses at epsilon 4).")),
    ("The tables declare their schemas (the sweep's tables: schema)", "rules_lodo_schema.json",
     ("mushroom and chess declare which items are the values of which attribute (`data.attribute_sizes`, their "
      "items running attribute by attribute), and each group's tree then has its noisy value frequencies of one "
      "attribute add up to one, the least-squares projection over the values whose noisy frequency is above zero "
      "(`dpgm/stages/attributes.py`; post-processing, the same ledger). Ten seeds. The 2-way TVD improves on every "
      "setting (chess at epsilon 1: 0.0370 against 0.0411, under MST's 0.0385) and the counting queries on five of "
      "six; mushroom whole at epsilon 1 loses (-0.272 against -0.289), so with the queries' score the fold that "
      "holds chess out at epsilon 1 keeps `default` (mushroom's mean -0.288 against -0.290), every other fold "
      "chooses `schema`, and with the 2-way TVD's score every fold does. A first version also raised a value "
      "whose noisy frequency was clipped to zero by its share of a frequent value's noise; one rare chess value "
      "(three records in the held-out half) then took an error of about 8 in group 4."
      )),
    ("Groups from the number of items (lost)", "rules_lodo_top17.json",
     ("msnbc, the one dataset that gains from more groups, is also the one with few items (17 against 100), and a "
      "group's tree and means cost less over fewer items. `pitems` counts N epsilon 100 / items times where fewer "
      "than 100 items are modelled (`PARTS_ITEMS` 100: on msnbc about six times, eleven groups at 30,000 and "
      "epsilon 1). To test that on data other than msnbc, the other click-streams and baskets run on their 17 most "
      "frequent items (`rules_lodo.py --top-items 17`; settings `SIZE@17`, held out with their dataset), under the "
      "noise floor, ten seeds. Few items alone do not ask for groups: at epsilon 1 retail@17 30,000 (-0.255 "
      "against -0.513), gowalla@17 whole (-1.007 against -1.169) and t10i4d100k@17 lose; at epsilon 4 gowalla@17 "
      "gains and foodmart@17 loses. Leave-one-dataset-out loses at both epsilons (held-out mean -0.461 against "
      "-0.501, -0.467 against -0.557): msnbc's gain comes from its items' dependence, not their number. foodmart "
      "on its 17 most frequent items, at 2,070 records, is worse than the marginals at epsilon 4 under both "
      "rules (+0.128 shipped, relative errors 0.5 to 0.6 in every group, seeds from -0.77 to +0.62).")),
    ("The noisy Lloyd's noise floor (shipped), and more groups under it (lost)", "rules_lodo_noise_floor.json",
     ("A part whose noisy count falls to sigma sqrt(dim) (`noisy_lloyd.noise_floor`: where the noise in its centre, "
      "of norm sigma B sqrt(dim) / count, reaches the rows' bound B) now keeps its previous centre. Before, its new "
      "centre was noise at the ball's edge whose debiased squared norm was clipped to 0: it looked nearest to every "
      "record it pointed at, swallowed them, drained again, and the parts collapsed. On msnbc 30,000 at epsilon 4 "
      "twenty groups ended with three to five empty parts and two of 8,000 to 12,800 records in four seeds of five "
      "(sixteen groups did not collapse), which is why twenty groups had lost to eight. `default`: the shipped "
      "rules with the floor, ten seeds on every setting where groups form (at epsilon 1 and N = 10,000 one group "
      "forms and the partitioner does not run: those rows are `rules_lodo_tdebias.json`'s). Against the rows "
      "before, same seeds: gowalla whole at epsilon 4 -1.242 against -1.109, msnbc whole at epsilon 1 -2.182 "
      "against -2.062 (2-way TVD 0.0012 against 0.0015), msnbc 300,000 at epsilon 1 -2.008 against -2.020; the "
      "settings that merge their groups (retail, t10i4d100k) and msnbc 30,000 at epsilon 4 (eight groups) do not "
      "move. `tparts8` (eight groups from N epsilon = 10,000, twenty at epsilon 4) and `trpp2500` (sixteen at "
      "epsilon 4) again, under the floor: msnbc gains at both epsilons (-1.075 against -0.610 at 30,000 and "
      "epsilon 1; -1.471 against -1.303 at epsilon 4, where twenty groups had scored -1.086), gowalla loses at both "
      "(-0.947 against -1.047; -1.168 against -1.242), and leave-one-dataset-out keeps `default` in every fold. "
      "On MNIST (`clustering_noise_floor.json`, `clustering_accuracy.py`, five seeds, the code before and after "
      "in one session) DP kernel k-means is unchanged from epsilon 0.5 up (0.402 against 0.405 at 0.1, 0.467 "
      "against 0.458 at 0.2) and DP Lloyd on the pixels gains where its parts are small against the noise: 0.396 "
      "against 0.275 at epsilon 0.2, 0.499 against 0.405 at 0.5, 0.536 against 0.520 at 1.")),
    ("A tree over a table's attributes (shipped: atree)", "rules_lodo_atree.json",
     ("A declared table's tree spans its attributes instead of its items (`TABLE_BY_ATTRIBUTE`, "
      "`model.options.by_attribute`, `dpgm/models/attribute_tree.py`): each attribute one variable whose values are "
      "its modelled items and none, each drawn given another attribute's value, from the noisy tables of the chosen "
      "pairs of attributes (T - 1 selections scored as MST scores them, the tables one Gaussian release of "
      "sensitivity sqrt(T - 1)) raked to the noisy value frequencies. A tree of items cannot say that two values "
      "of one attribute exclude each other and spends its selections on such pairs. The same shares of rho; "
      "`schema`: the rules before, a tree of items. mushroom and chess, their schemas declared, ten seeds. The tree over attributes wins every "
      "setting: mushroom whole -0.453 against -0.272 at epsilon 1 and -0.508 against -0.294 at epsilon 4, "
      "mushroom 3,000 -0.422 against -0.303 and -0.516 against -0.319, chess -0.557 against -0.539 and -0.437 "
      "against -0.412; the 2-way TVD on mushroom whole at epsilon 1 falls from 0.0289 to 0.0232 (MST 0.0302). "
      "Leave-one-dataset-out chooses `atree` in both folds at both epsilons. The `schema` rows equal "
      "`rules_lodo_schema.json`'s on every seed.")),
    ("Around the trees over attributes (left)", "rules_lodo_atree_shares.json",
     ("The tables' trees over attributes with other shares of rho (`atree`: the shipped 10% for the selections "
      "and 30% for the tables, the means the rest): `atsel5` and `atsel15` move 5% between the two, `atlight` "
      "halves the tree's 40% (5% and 15%), `atheavy` raises it to 60% (15% and 45%). mushroom and chess, their "
      "schemas declared, ten seeds. At epsilon 4 `atlight` wins chess (-0.494 against -0.437) and ties mushroom "
      "(-0.513 against -0.512 over its sizes: 3,000 -0.526 against -0.516, whole -0.500 against -0.508); at "
      "epsilon 1 it wins mushroom (-0.485 against -0.453 whole) and loses chess (-0.516 against -0.557). "
      "Leave-one-dataset-out picks it "
      "in every fold at epsilon 4 and in chess's at epsilon 1, where chess held out then loses. Its 2-way TVD is "
      "a little worse at epsilon 4 on every setting. No one share serves both epsilons, and a scale for the "
      "switch would be chosen on two tables of one size: the shares stay. `atheavy` loses everywhere.")),
    ("Independent items instead of the trees where one group forms (lost)", "rules_lodo_indep_trees.json",
     ("`indep3e4`: no model below N epsilon = 30,000 (`MIN_TRAINING_SCALE`), each group's items independent at its "
      "noisy means, which take the trees' budget too. Every click-stream and basket setting where one group forms "
      "and a tree is fitted (N epsilon from 3,000 to 30,000), ten seeds, run before the fallback below. The "
      "items that barely depend on each other gain: t10i4d100k 30,000 at epsilon 1 -0.169 against -0.125, retail "
      "whole -0.573 against -0.543, retail 3,000 at epsilon 4 -0.697 against -0.664, foodmart whole at epsilon 4 "
      "-0.666 against -0.521; msnbc (-0.427 against -0.610 at 30,000 and epsilon 1; -0.469 against -0.612 at "
      "3,000 and epsilon 4) and gowalla lose, and so does t10i4d100k at 3,000 and epsilon 4. Leave-one-dataset-out "
      "keeps `default` in every fold at epsilon 1; at epsilon 4 it picks `indep3e4` where msnbc or gowalla is "
      "held out and its held-out mean is worse (-0.585 against -0.623). The same split as the merge of groups: a "
      "choice between the tree and independent items on the measured dependence would be the rule to try.")),
    ("A tree with no non-empty fixed point (shipped)", "rules_lodo_fallback_seeds10.json",
     ("Where the release drops empty draws, each group's tree is fitted to its noisy means and pairs scaled to the "
      "share c of draws it keeps, a fixed point (`item_pairs.fit_tree`). Where the noisy pairs leave no fixed "
      "point above 1% (on foodmart whole at epsilon 4, seed 3: 0.006), the tree was fitted as if nothing were "
      "dropped, and its kept records' frequencies rose above the measured ones: a score of +0.224, worse than "
      "the marginals. Now independent items at the means are fitted to their own fixed point first (0.41 there): "
      "-0.290. The sweep's foodmart row at epsilon 4 had come from before that case was handled at all (-0.482 "
      "on that seed). The settings whose sweep rows had three seeds at epsilon 1 (the 3,000-record samples and "
      "foodmart whole) now have ten, from this commit.")),
    ("One length histogram for the clip and the release (shipped)", "rules_lodo_lengths_bound.json",
     ("Where the release follows record lengths, a run measured the same histogram twice: the length bound's (2% of "
      "rho, for the means' clip) and the release's (5%). `lbound` (`LENGTHS_FROM_BOUND`, `model.lengths_from_bound`) "
      "releases one, the bound's, at 7%, which both read. Ten seeds everywhere (msnbc 300,000 and whole on the device "
      "machine's cores), beside the shipped `len5_2000` rows as `default`. Leave-one-dataset-out with one rule for both "
      "epsilons picks `lbound` in every fold: held-out mean -0.825 against -0.826 at epsilon 1 (retail and t10i4d100k "
      "lose a little, -0.721 against -0.728 and -0.447 against -0.458; msnbc and gowalla gain) and -0.791 against "
      "-0.785 at epsilon 4 (gowalla -1.232 against -1.217, msnbc -1.732 against -1.716), the worst held-out dataset "
      "unchanged at both (mushroom -0.437, t10i4d100k -0.305). gowalla whole at epsilon 4 now meets MST's 3-way TVD "
      "(0.0054 against 0.0056) and comes closer on the 2-way (0.0035 against 0.0034). Shipped: it is as good, one "
      "release fewer, and the clip reads a histogram whose noise variance is 3.5 times smaller.")),
    ("A larger ridge in the length tilt: faster, a little worse (lost)", "rules_lodo_tilt_ridge.json",
     ("The length-following release's L-BFGS runs to its cap of 500 iterations on every chunk: the histogram's lengths "
      "and the groups' clipped item frequencies cannot all hold on one pool, so the weights' parameters grow until the "
      "ridge (1e-5) stops them. A ridge of 1e-4 (`ridge1e4`, `dpgm.models.tilt.RIDGE`) stops them sooner: about 180 "
      "iterations a chunk, msnbc whole 30 s against 50 s a run on the device machine's cores, retail whole at epsilon 4 "
      "2.3 s against 4.6 s here. The release then follows the histogram less closely and scores a little worse almost "
      "everywhere (msnbc 300,000 -2.113 against -2.156 at epsilon 1 and -2.232 against -2.289 at epsilon 4, gowalla "
      "whole -1.341 against -1.362 at epsilon 4). Leave-one-dataset-out keeps `default` in every fold. A trial with "
      "1e-3 (three seeds on msnbc and retail 30,000, not kept) converged in about 70 iterations and lost more (msnbc "
      "30,000 at epsilon 4 -1.258 against -1.525); capping the iterations at 100 or 30 instead lost more still. Ten "
      "seeds everywhere.")),
    ("Every pair's count instead of a tree's selections (shipped)", "rules_lodo_all_pairs.json",
     ("A tree of items chose its m - 1 edges by private selections and measured only those pairs, so everything the "
      "items share beyond one tree was lost: on msnbc 30,000 at epsilon 1, a tree fitted to the exact counts, with no "
      "noise at all, has a 3-way TVD of 0.013 to the held-out half, worse than AIM's 0.0089 (a scratch check, not "
      "kept). `allp` (`model.options.all_pairs`) releases the counts of all m (m - 1) / 2 pairs in one Gaussian "
      "(each record scaled so that its pair counts have norm at most sqrt(L (L - 1) / 2)), with the selections' "
      "share too; each group's tree is the heaviest at the noisy counts, and the length tilt follows every pair, "
      "paying a pair's gap by `PAIR_RIDGE` times its noise (0.1 for `allp`, 0.03 for `allp_r003`). `allpT` and "
      "`allp003_T` take it from N epsilon per pair = T up (`merge_threshold.py --gate allpairs allpairs003`). Ten "
      "seeds everywhere, beside the shipped `lbound` rows as `default`. Leave-one-dataset-out with one rule for "
      "both epsilons picks `allp003_1` in six folds of seven (`allp003_0` where foodmart is held out): held-out "
      "mean -0.867 against -0.825 at epsilon 1 and -0.819 against -0.791 at epsilon 4, the worst held-out dataset "
      "mushroom -0.437 at epsilon 1 (unchanged) and t10i4d100k -0.400 against -0.305 at epsilon 4. foodmart whole "
      "at epsilon 4 loses (-0.683 against -0.784; N epsilon per pair 0.8). msnbc 30,000 at epsilon 1 reaches a 2-way "
      "TVD of 0.0029 and a 3-way of 0.0049 (AIM 0.0047 and 0.0089); gowalla whole at epsilon 4 0.0033 (MST 0.0034). "
      "Shipped as `ALL_PAIRS_SCALE` 1 and `PAIR_RIDGE` 0.03, with each chunk's tilt starting where the last one "
      "ended (`rules_lodo_all_pairs_shipped.json`).")),
    ("Every pair at a fixed ridge (lost)", "rules_lodo_all_pairs_fixed_ridge.json",
     ("The first version of `allp` (`allp_r0`: every pair's target held at the fixed ridge 1e-5, like the items'). "
      "Where the counts are few for their pairs it follows their noise: retail and t10i4d100k 3,000 at epsilon 4 "
      "score +0.70 and +0.67 against -0.71 and -0.43, worse than the marginals, and gowalla whole at epsilon 1 -0.56 "
      "against -1.22. Leave-one-dataset-out keeps `default` in every fold. A pair's own noise as its ridge "
      "(above) removed those losses. The run was stopped once that was seen: only the settings with all ten seeds "
      "are kept.")),
    ("The shipped length histogram at epsilon 2, off the grid it was chosen on", "rules_lodo_lengths_eps2.json",
     ("The shipped rules (`default`, the histogram from N epsilon = 2,000 up, so on every setting here: the 3,000-record "
      "samples and foodmart whole sit exactly at 2,000) against the same rules without it (`nolengths`), ten seeds, "
      "every setting but msnbc 300,000 and whole. Per dataset (mean over its sizes) the histogram wins on four of "
      "five: msnbc -0.935 against -0.719, gowalla -1.160 against -0.924, foodmart -0.978 against -0.908, t10i4d100k "
      "-0.383 against -0.337; retail loses a little (-0.590 against -0.618), mostly at 3,000 records (-0.859 against "
      "-0.929), where the gate sits. Mean over datasets -0.809 against -0.701, worst t10i4d100k -0.383 against "
      "-0.337.")),
    ("A length-following release with balanced picks, from N epsilon = 2,000 up (shipped)", "rules_lodo_lengths_gate.json",
     ("The length-following release below resampled its pool by the tilt's weights, which adds a sampling error of "
      "about sqrt(n p) to every item's count where a plain release's systematic draws add none: on retail 30,000 at "
      "epsilon 4 that alone made it lose (single-item TVD 0.0009 against 0.0008, every length group worse). The "
      "picks are now balanced (`dpgm/models/balance.py`): swaps of picked for unpicked draws bring each followed "
      "count (the groups' shares, items and tree pairs, the lengths) to what the weights ask, within a record or "
      "two. `rules_lodo_lengths_balanced.json`: ten seeds on every setting, msnbc 300,000 and whole on a 16-core "
      "device machine (its `default` rows equal this machine's on every seed both hold). Retail now gains at 30,000 "
      "and whole (-0.580 and -0.582 against -0.570 and -0.543 at epsilon 1 with `lengths2`; -0.450 against -0.422 at "
      "30,000 and epsilon 4), t10i4d100k 3,000 at epsilon 4 no longer collapses (-0.411, against -0.195 unbalanced "
      "and -0.435 for `default`), t10i4d100k 30,000 at epsilon 1 reaches -0.292 (`default` -0.125). The smallest "
      "scales still lose: retail and t10i4d100k 3,000 at epsilon 1 (-0.689 and -0.574 against -0.998 and -0.846) and "
      "foodmart whole at epsilon 1 (-1.017 against -1.101), where the histogram is noisy against two or three "
      "thousand records. `merge_threshold.py --gate lengths2 lengths5` composes the histogram from N epsilon = T up "
      "(N the declared magnitude) seed by seed, T = 0, 2,000, 5,000, 20,000, 50,000 or 200,000. Leave-one-dataset-out "
      "with one rule for both epsilons picks `len5_2000` in every fold: held-out mean -0.826 against -0.777 at "
      "epsilon 1 and -0.785 against -0.699 at epsilon 4, the worst held-out dataset -0.437 (mushroom, a table: it "
      "follows no histogram) against -0.374 (t10i4d100k) at epsilon 1 and -0.305 against -0.254 (t10i4d100k) at "
      "epsilon 4; no held-out dataset scores worse than under the rules before at either epsilon. Shipped: "
      "`LENGTHS_SHARE` 5% of rho, from the means', and `LENGTHS_SCALE` 2,000; the shipped `default` reproduces "
      "`len5_2000` on every seed checked. Candidates `lengths2`, `lengths5` and `lengths10` now follow the histogram at "
      "every scale, `nolengths` is the rules before. Where the release follows lengths it takes longer: msnbc whole "
      "50 s against 10 s a run on the device machine's cores.")),
    ("A release that follows a noisy length histogram, its models' statistics kept (lost)", "rules_lodo_lengths_tilt.json",
     ("`lengths2` and `lengths5`: 2% or 5% of rho (from the means') on a noisy histogram of record lengths "
      "(`LENGTHS_SHARE`; never for a declared table), which the release now follows by a tilt of three draws per "
      "record that keeps each group's share, its items' and its tree's pairs' frequencies "
      "(`tilt.length_problem`; before, the first draws of each length were kept, which moved the items: in a "
      "trial on msnbc 30,000 at epsilon 1 that gave -0.09 against -0.61). Ten seeds, three on msnbc whole. msnbc "
      "gains everywhere from 30,000 (-0.807 against -0.610 at epsilon 1, -2.450 against -2.089 whole), gowalla and "
      "foodmart at epsilon 4 too; retail loses everywhere (-0.665 against -0.998 at 3,000 and epsilon 1), and so do "
      "the 3,000-record samples of t10i4d100k (-0.521 against -0.846 at epsilon 1, -0.195 against -0.435 at 4), where "
      "the histogram is noisy against the records. Most of what the histogram gives is its mean, which the clip "
      "of the means biases down: a trial that tilted the histogram to the items' mean first lost everywhere. "
      "Leave-one-dataset-out: held-out mean -0.730 against -0.773 at epsilon 1 and -0.672 against -0.701 at "
      "epsilon 4, worst t10i4d100k -0.296 against -0.374 and -0.159 against -0.254. Gated by scale (this file's "
      "`lengths2` rows where N epsilon is at least 10,000, 30,000 or 100,000 and not a table, its `default` rows "
      "elsewhere: exactly what such a rule runs), the histogram from N epsilon = 10,000 wins at epsilon 1 "
      "(leave-one-dataset-out mean -0.801 against -0.773, worst t10i4d100k -0.402 against -0.374) but not at "
      "epsilon 4 (-0.692 against -0.701; the folds pick the gate at 100,000, which moves only msnbc), and its "
      "release takes four to five times as long on msnbc whole (35 to 45 s against 8 s a run here): not shipped, "
      "the lead to take up with a faster tilt.")),
    ("Independent items instead of the tree, chosen on the measured dependence (lost)", "rules_lodo_independent.json",
     ("Where one group's tree takes DP-SGD's place, or groups may merge, the items' dependence is measured (2% of "
      "rho, from the tree's share, as for the merge) and below a threshold the group's items are independent at its "
      "noisy means, which take the tree's budget (`INDEPENDENT_BELOW`, `model.kind: independent` with "
      "`model.tree_above`; the ledger charges the costlier branch at every order, which is the independent items' "
      "by construction). `ind_keep` and `ind_take` measure and never or always take independent items; "
      "`merge_threshold.py --gate independent` composes each threshold from them seed by seed. Every setting, ten "
      "seeds; the `default` rows equal the sweep's. t10i4d100k 30,000 at epsilon 1 gains (-0.174 at 0.02 against "
      "-0.125), but the measurement's share costs the settings whose tree stays (gowalla whole at epsilon 1 -0.999 "
      "against -1.047, msnbc 3,000 at epsilon 4 -0.534 against -0.612), and at epsilon 4 the trees beat independent "
      "items even where the items barely depend on each other (retail 30,000 -0.321 against -0.422, t10i4d100k "
      "30,000 -0.142 against -0.180): what decides is the pairs' noise against N epsilon, not the dependence alone. "
      "Leave-one-dataset-out: held-out mean -0.773 against -0.777 at epsilon 1, -0.699 for both at epsilon 4, the "
      "worst dataset unchanged (t10i4d100k).")),
    ("A tree's pairs shrunk towards independence, edge by edge (lost)", "rules_lodo_tree_shrink.json",
     ("Each edge's noisy joint frequency, d away from what independence at the noisy means predicts, shrunk to "
      "d (1 - (z std / d)^2)+ (a nonnegative garrote; std the noise's in that joint; post-processing): an edge "
      "measured within its noise of independence fitted as independent, where the earlier shrinkage "
      "(`rules_lodo_seven_tree_shrink.json`) took one weight over all of a part's edges. `tshrink1` and "
      "`tshrink2`: z = 1 and 2. Every setting, ten seeds, the tables with their schemas (their trees over "
      "attributes are not shrunk). t10i4d100k gains a little (-0.133 against -0.125 at 30,000 and epsilon 1), "
      "foodmart at epsilon 4 more (-0.609 against -0.572); msnbc's groups lose (-1.946 against -2.008 at 300,000 "
      "and epsilon 1, -1.212 against -1.303 at 30,000 and epsilon 4) and so does gowalla. Leave-one-dataset-out "
      "picks `tshrink1` where msnbc is held out, which then loses: held-out mean -0.772 against -0.777 at "
      "epsilon 1 and -0.697 against -0.699 at epsilon 4, the worst dataset unchanged. The `default` rows equal "
      "the sweep's.")),
    ("More groups over few items, at most N / 1,000 or N / 2,000 of them (lost)", "rules_lodo_parts_floor.json",
     ("`pitems` (N epsilon counted 100 / items times where fewer than 100 items are modelled) gave msnbc 30,000 "
      "eight to eleven groups and its best score, but put groups of a few hundred records on foodmart's 17 top "
      "items at epsilon 4. `pit1k` and `pit2k` add a bound of N / 1,000 or N / 2,000 groups (N the declared "
      "magnitude; `MIN_PART_RECORDS`). The testbed of `rules_lodo_top17.json`, ten seeds, from one commit. The "
      "bound keeps foodmart where `default` is (-0.009 against +0.461 for `pitems` at epsilon 4), and msnbc "
      "30,000 gains (-0.975 and -0.945 against -0.610 at epsilon 1), but more groups lose on the other datasets' "
      "top 17 items at epsilon 1: retail 30,000 -0.274 and -0.503 against -0.513, gowalla whole -1.056 and "
      "-1.096 against -1.169, t10i4d100k 30,000 -0.029 and -0.040 against -0.138. Held-out mean -0.467 against "
      "-0.501 for `default` at epsilon 1 and -0.485 against -0.584 at epsilon 4. What msnbc gains from groups at "
      "30,000 records is its own.")),
    ("A tree of items in DP-SGD's place where groups form (shipped: tree_all)", "rules_lodo_tree_parts.json",
     ("Where groups form (N epsilon from 20,000, every such setting but the tables), each group's model a tree "
      "with DP-SGD's budget (`tree_all`: `TREE_TRAINING_SCALE` infinite, shipped) against the rules before "
      "(`default`: a VAE per group trained by DP-SGD, the release following one tree of pairs over all records). "
      "Ten seeds, three on msnbc 300,000 and whole at epsilon 4. The `default` rows ran on the device machine's 16 "
      "CPU cores (one process per setting, one thread each) and equal the earlier files' rows of the same seeds; "
      "`tree_all` ran here and equals the device's own `tree_all` rows. At epsilon 4 leave-one-dataset-out chooses "
      "`tree_all` in every fold: held-out mean -0.899 against -0.737, worst t10i4d100k -0.163 against -0.107; "
      "gowalla alone loses, -1.109 against -1.127. At epsilon 1 only msnbc forms groups: -2.020 and -2.062 "
      "against -1.613 and -1.579 at 300,000 and whole.")),
    ("Around the trees in DP-SGD's place (lost)", "rules_lodo_tree_shares.json",
     ("Candidates around the shipped trees, every setting where they apply and the tables, ten seeds (three on "
      "msnbc 300,000 and whole): `tm45` the means 45% of rho (the tree the rest), `tsel5` and `tsel15` the "
      "selections 5% or 15% of every 40% the tree takes (a table's own tree too), `ttot10` every item's total "
      "over all records measured once (10% of rho) and the groups' means made to agree with it, `tnomerge` "
      "no measured merge, `trpp1e4` half as many groups. Leave-one-dataset-out picks a different candidate in "
      "most folds and its held-out mean is worse than the shipped rules' at both epsilons (-0.651 against -0.663 "
      "at epsilon 1, -0.625 against -0.645 at epsilon 4). Run at 1d51137, whose tree in DP-SGD's place also "
      "replaced a declared table's own tree at epsilon 4: the tables' rows there are not the shipped rules'.")),
    ("The merge threshold under the trees (shipped: 0.025, kept)", "rules_lodo_tree_merge.json",
     ("`MERGE_BELOW` chosen again once the groups' models are trees, as above: `dep_keep` and `dep_merge` give every "
      "threshold's rows (`merge<T>`). Ten seeds, three on msnbc 300,000 and whole. Leave-one-dataset-out keeps "
      "0.025 (equal to `default`) in every fold: a lower threshold stops t10i4d100k's merge (-0.089 against -0.180 "
      "at 30,000), a higher one merges gowalla's groups, which costs it (-1.028 against -1.109 at 0.045).")),
    ("Trees whose release follows the pairs over all records (lost)", "rules_lodo_tree_pairs.json",
     ("Where groups form, the groups' trees lose the global item measurement the trained models' release had: "
      "`tpairs` (`TREE_FOLLOWS_PAIRS`) measures one tree of pairs over all records as before (30% of rho, from the "
      "means') and reweights the trees' draws to it. It helps gowalla (-1.168 against -1.109 at epsilon 4) and "
      "loses everywhere else, most on t10i4d100k and retail (-0.034 against -0.180 at 30,000): leave-one-dataset-"
      "out keeps the plain trees. Ten seeds, three on msnbc 300,000 and whole.")),
    ("More groups for the trees (lost)", "rules_lodo_tree_groups.json",
     ("Trees measure pairs directly, so groups could pay where they did not for DP-SGD: `tparts1e4` forms groups "
      "from N epsilon = 10,000 (`PARTITION_SCALE`; 2 at epsilon 1 and N = 10,000), `trpp2500` one group per 2,500 "
      "records at epsilon 1 (16 instead of 8 at epsilon 4 and N = 10,000). Ten seeds. msnbc gains (-0.763 against "
      "-0.610 at 30,000 and epsilon 1; -1.380 against -1.303 at epsilon 4), gowalla loses (-0.971 against -1.047; "
      "-1.080 against -1.109), and retail and t10i4d100k mostly merge their groups back into one (their measured "
      "dependence is below 0.025): leave-one-dataset-out keeps the shipped groups.")),
    ("One group where the items barely depend on each other (shipped: merge0.025)", "rules_lodo_merge.json",
     ("Where the rules form k > 1 groups (N epsilon from 20,000), 2% of rho (from the means') measures the items' "
      "dependence, the heaviest tree of the pairs' L1 distances from independence per record and edge "
      "(`dpgm/stages/dependence.py`); below a threshold the records form one group, its means taking the "
      "partition's budget, with the same epsilon either way. `dep_keep`: measured, the groups always kept; "
      "`dep_merge`: measured, always one group; `merge<T>`: threshold T, each seed's `dep_merge` row where its "
      "measurement is below T, else its `dep_keep` row, which is exactly the run at T (the draws before the choice "
      "do not depend on it: `benchmarks/merge_threshold.py`). Every setting where groups form at epsilon 4, ten "
      "seeds at N = 10,000 and three above; at epsilon 1 only msnbc's 300,000 and whole (`--candidates default "
      "dep_keep dep_merge`, one process per dataset; at msnbc's larger sizes `default dep_keep`, where no threshold "
      "tried merges). The measured dependence is about 0.015 on retail, 0.020 on t10i4d100k, 0.028 to 0.043 on "
      "gowalla (after its empty records are set aside) and 0.055 on msnbc. The choice on all four datasets, and "
      "without msnbc, retail or gowalla, is 0.025; without t10i4d100k, the only one that gains from one group, it "
      "is never to merge (`dep_keep`): the worst held-out dataset is then t10i4d100k at -0.028, against -0.050 "
      "under the rules before, while one group at 0.025 gives it -0.109 and meets every group target there. "
      "msnbc's larger sizes at epsilon 1 move by up to 0.5 between seeds either way (one seed of three lands near "
      "-0.6 under either rule): the measurement's 2% is not what moves them.")),
    ("One group below N epsilon = 20,000 (shipped: one2e4)", "rules_lodo_one_group.json",
     ("`default`: the rules before (k = N epsilon / 5,000 groups: 2 at N epsilon = 10,000, 8 at 40,000); `one2e4`: "
      "one group below N epsilon = 20,000 (`PARTITION_SCALE`, shipped); `one5e4`: below 50,000, so one group at "
      "40,000 too. Every setting where N = 10,000 (msnbc and t10i4d100k 30,000; retail 30,000 and whole; gowalla "
      "whole; t10i4d100k whole), ten seeds; elsewhere the three do not differ. The `default` rows at the settings of "
      "`rules_lodo_borderline_seeds10.json` equal its rows; the sweep reads `one2e4` for these settings.")),
    ("Pairs over all records at N epsilon = 10,000, with one group (lost)", "rules_lodo_one_group_pairs.json",
     ("`default`: the shipped rules (the `one2e4` rows of `rules_lodo_one_group.json`); `bpairs20_1e4`: the release "
      "also follows one tree of item pairs over all records from N epsilon = 10,000 (`PAIRS_SCALE`), its 30% of rho "
      "taken from the means'. With one group the pairs' items and the means measure the same frequencies. Every "
      "setting where N = 10,000, at epsilon 1, ten seeds. msnbc gains, every other dataset loses.")),
    ("The means' share of one trained group (lost)", "rules_lodo_single_means.json",
     ("Where the records form one group and DP-SGD trains (N epsilon from 3,000 to 20,000), the means could take "
      "another share than the 58% they take beside k groups: `single_means70` 70%, `single_means45` 45% "
      "(`SINGLE_PART_MEANS_SHARE`; DP-SGD is calibrated to the rest). N epsilon = 10,000: ten seeds; N epsilon = "
      "4,000: three. `default` (58%) is as good or better nearly everywhere.")),
    ("The items' weight in the pairs release (lost)", "rules_lodo_pairs_item_weight.json",
     ("Where the release follows pairs over all records, one Gaussian release holds every item's clipped total and "
      "the tree's pair counts. `pitems2` weighs the items twice (`model.pairs_item_weight`: their noise 0.79 times, "
      "the pairs' 1.58 times, at the same cost), `pitems05` half; `default`: 1. Every setting that measures pairs: "
      "ten seeds where N = 10,000, three on msnbc 300,000 and whole. t10i4d100k and retail want the items, msnbc "
      "the pairs; leave-one-dataset-out is no better than the default.")),
    ("One group at epsilon 2 (a check off the grid)", "rules_lodo_one_group_eps2.json",
     ("Where the shipped threshold (one group below N epsilon = 20,000) sits: at epsilon 2 the settings where N = "
      "10,000 have N epsilon = 20,000, so the rules form 4 groups (`default`); `one5e4` forms one. Ten seeds. "
      "Leave-one-dataset-out prefers one group for three held-out datasets but its held-out mean is worse and its "
      "worst the same: the threshold is a tie here. The rules lose to the marginals on t10i4d100k 30,000 at "
      "this epsilon.")),
    ("The shipped rules at epsilon 2", "rules_lodo_eps2.json",
     ("Off the grid: every other setting at epsilon 2, three seeds (the settings where N = 10,000 are in the "
      "section above). All below the marginals on average; chess loses groups 2 and 3 to them.")),
    ("Fewer groups at N epsilon = 40,000 (lost)", "rules_lodo_parts_eps4.json",
     ("`default`: the shipped k = N epsilon / 5,000 (8 groups at N = 10,000 and epsilon 4); `rpp1e4`: one group per "
      "10,000 (4 groups), `rpp2e4`: per 20,000 (2 groups). Every setting where N = 10,000, at epsilon 4, ten seeds; "
      "the `default` rows are those of `rules_lodo_one_group.json`. gowalla wants fewer groups, msnbc more: "
      "leave-one-dataset-out keeps the default.")),
    ("Each item's two measurements weighed by their noise (lost)", "rules_lodo_pairs_items.json",
     ("Where the release follows measured pairs, each item's frequency is measured twice: beside the pairs (one "
      "release over all records, at the balanced clip) and in the k part means. `default`: the release follows the "
      "pairs release's items (shipped); `precision_weighted`: their inverse-variance combination with the part means' "
      "sum, from the two known noise scales (reverted). Every setting that measures pairs, three seeds; the other "
      "settings do not change. The combination ignores the means' own clip bias (their clip is shorter), which "
      "may be why it bought nothing.")),
    ("Ten seeds on the tables, undeclared", "rules_lodo_tables_seeds10_undeclared.json",
     ("The same settings without the declaration (`--no-attributes`): `default` is then independent items "
      "(epsilon 1) or one VAE (epsilon 4); `tree1e4_noempty` a tree below N epsilon = 10,000 whose "
      "records may be empty (no empty count), clipped at the noisy length quantile.")),
)


def rules_sweep_section() -> str:
    """The shipped rules beside every peer on every setting measured (``rules_sweep.py``)."""
    import rules_sweep  # the benchmark's own table: one rendering, here and on its command line

    found = load_if_there("rules_sweep.json")
    if found is None:
        return ""
    cells, met = found["cells"], found["targets"]
    lines = []
    for eps, t in met.items():
        peers = "; ".join(f"{METHODS.get(p, p)} at or below in 4 of 5 groups on {t[p]['at_or_below_4_of_5']} of "
                          f"{t[p]['settings']}, 2-way TVD at or below on {t[p]['tvd2_at_or_below']}, 3-way on "
                          f"{t[p]['tvd3_at_or_below']} of the {t[p]['tvd3_settings']} where both measured it"
                          + (f", single-item TVD within {rules_sweep.TVD1_RATIO:g}x on {t[p]['tvd1_within']} of the "
                             f"{t[p]['tvd1_settings']} where both measured it" if p == "mst" else "")
                          for p in rules_sweep.PEERS if t[p]["settings"])
        lines.append(f"- Epsilon {eps}: below the marginals in every group on {t['below_marginals_5_of_5']} of "
                     f"{t['settings']} settings; {peers}.")
    return "\n".join([
        "## The sweep: the shipped rules beside every peer", "",
        ("The shipped rules (the `default` rows of `rules_lodo_fit_n.json`: the `bpairs20_3e4` rules of "
         "`rules_lodo_pairs.json` with systematic draws in the release, each run releasing as many records as it "
         "was fitted on, as the peers and the marginals do; every setting, three seeds; in the older files dpgm "
         "released the held-out half's number of records, more than the peers at the subsampled sizes; the declared "
         "tables' settings: the `default` rows of `rules_lodo_table_sizes.json`, ten seeds, each part's size read off "
         "its item sums; msnbc 30,000 at epsilon 1 and t10i4d100k 30,000 at epsilon 4 and whole at both: the `default` "
         "rows of `rules_lodo_borderline_seeds10.json`, ten seeds, beside MST's ten; the settings where N = 10,000: "
         "the `one2e4` rows of `rules_lodo_one_group.json`, ten seeds, one group below N epsilon = 20,000; the "
         "settings where groups form, the `merge0.025` rows of `rules_lodo_merge.json`, ten seeds at N = 10,000 and "
         "three above, one group where the measured dependence is below 0.025; msnbc 300,000 and whole at epsilon 1: "
         "the `default` rows of `rules_lodo_msnbc_seeds10.json`, ten seeds, beside MST's ten; every setting where "
         "DP-SGD trained, a tree of items in its place: the `tree_one` rows of `rules_lodo_one_group_tree.json` where "
         "one group forms and the `tree_all` rows of `rules_lodo_tree_parts.json` where groups form, ten seeds, "
         "three on msnbc 300,000 and whole at epsilon 4; the declared tables declaring their schemas too, the "
         "`schema` rows of `rules_lodo_schema.json`, ten seeds; the settings where groups form, under the noisy "
         "Lloyd's noise floor: the `default` rows of `rules_lodo_noise_floor.json`, ten seeds; the declared tables "
         "with their trees over their attributes: the `atree` rows of `rules_lodo_atree.json`, ten seeds) "
         "beside MST, MWEM+PGM and AIM (40-round cap), each peer compared on the seeds both ran: the "
         "same records, the same 500 held-out counting queries. Seconds are one fit with its sampling and scoring, on one "
         "thread. Plots, one per dataset (per size and epsilon, the error per length group of the rules, each "
         "peer and the marginals): `benchmarks/results/sweep_seven/`."),
        "", *lines, "", "```text", rules_sweep.text(cells), "```", "", source("rules_sweep.json")])


def tried(title: str, name: str, what: str) -> list[str]:
    """One tried rule family: what it changes, the scores and the leave-one-dataset-out summary."""
    import rules_lodo

    if not (RESULTS / name).is_file():
        return []
    summary = rules_lodo.summarize(rules_lodo.read_rows(str(RESULTS / name)), groups=False)
    return ["", f"### {title}", "", what, "", "```text", summary.rstrip(), "```", "", source(name)]


def peers(name: str, title: str, what: str) -> str:
    """The generic rules beside a peer (MST, AIM) on the same records and held-out queries, per length group."""
    import rules_lodo

    if not (RESULTS / name).is_file():
        return ""
    rows = rules_lodo.read_rows(str(RESULTS / name))
    table = rules_lodo.peer_table([r for r in rows if not r.get("peer")], [r for r in rows if r.get("peer")])
    return "\n".join([f"## {title}", "", what, "", "```text", table.rstrip(), "```", "", source(name)])


PEERS_MST = (
    "`benchmarks/rules_lodo.py --candidates default --peers mst`: the shipped rules and MST fitted on the "
    "same records (each dataset's 100 most frequent items, msnbc and chess all of theirs; a sample of "
    "3,000, 30,000 or 300,000 records of the fit half where it holds that many, or the whole fit half "
    "where it holds at most 50,000), scored on 500 counting queries over the held-out half: the mean relative "
    "error per length group (1: shortest queries), the groups where dpgm is at or below MST and below "
    "independent marginals, and the average total variation distance of the 2-way marginals. Means over "
    "three seeds, one thread. One plot per dataset: `benchmarks/results/peers_mst/`.")
PEERS_AIM = (
    "`benchmarks/rules_lodo.py --sizes 3000 --epsilons 1 --seeds 1 --candidates default --peers aim "
    "--peer-options aim.max_rounds=40`: the same protocol with AIM as its authors run it (T = 16 m rounds "
    "annealed until the budget is spent, their 80 MB model cap) and a public cap of 40 rounds whose last round "
    "spends what is left, one seed: on 3,000 records of each dataset's fit half, then (`--sizes 30000 full "
    "--full-max-records 15000 --resume`) on 30,000 and on whole fit halves of at most 15,000 records (the run "
    "was stopped before mushroom's and chess's whole halves). "
    "Where AIM's own schedule ended before the cap, the run is AIM as published; the rounds it made and its "
    "seconds are in the JSON (`rounds`, `seconds`).")


PEERS_MWEM_PGM = (
    "`benchmarks/rules_lodo.py --sizes 3000 30000 full --full-max-records 15000 --seeds 1 --candidates default "
    "--peers mwem_pgm`: the same protocol with MWEM+PGM (T = min(m, 60) rounds, each a 2-way marginal "
    "chosen by the exponential mechanism and measured with Gaussian noise, a graphical model refitted "
    "after each; the authors' alpha = 0.9 and 25 MB model cap; `dpgm/evaluation/mwem_pgm.py`), one seed, on "
    "3,000 and 30,000 records and on whole fit halves of at most 15,000 records. chess ran alone "
    "(`--datasets chess --resume`): after six datasets in one process, MWEM+PGM's JAX compilation ran out "
    "of memory on it.")
PEERS_MST_EPS2 = (
    "Off the grid: `rules_lodo.py --epsilons 2 --seeds 3 --candidates default --peers mst --resume` on every "
    "setting, one process per dataset, each file first holding seeds 0-2 of the shipped rules' rows of "
    "`rules_lodo_eps2.json` and `rules_lodo_one_group_eps2.json`. At or below MST in 4 of 5 groups on 14 of the "
    "16 settings; t10i4d100k's 30,000-record sample and whole fit half (N = 10,000, where N epsilon = 20,000 "
    "gives 4 groups) lose, in 1 and 0 groups. With one group (`one5e4` of `rules_lodo_one_group_eps2.json`) "
    "t10i4d100k would be at or below MST in 5 and 2 groups, and msnbc 30,000 would fall behind MST in 2-way TVD "
    "(0.0087 against 0.0063): the dependence between items decides (\"Item dependence and what groups buy\"). "
    "These rows are the rules before one group below a measured dependence of 0.025: next section.")
PEERS_EPS2_MERGE = (
    "Off the grid, the rules as shipped now (one group where the items' measured dependence is below 0.025): "
    "`rules_lodo.py --epsilons 2 --seeds 3 --candidates default` on every setting where groups form at epsilon 2 "
    "(N epsilon >= 20,000), one process per dataset; the peers' rows are those of `rules_lodo_eps2_mst.json` and "
    "`rules_lodo_eps2_mwem_pgm.json` for the same seeds (the same records, queries and noise). t10i4d100k, whose "
    "groups merge, is at or below MST in 5 of 5 groups at 30,000 (1 before) and 3 at its whole fit half (0 before); "
    "at epsilon 2 the measurement's noise is twice epsilon 4's, and one of gowalla's three seeds measured 0.019 and "
    "formed one group.")
PEERS_MWEM_PGM_EPS2 = (
    "The same at epsilon 2 with MWEM+PGM (`--peers mwem_pgm`), on retail and t10i4d100k only: the run was stopped "
    "after them, when two MWEM+PGM processes held 17 of the machine's 24 GB in JAX compilation; retail's whole "
    "fit half has one seed and t10i4d100k's two. retail is at or below MWEM+PGM in every group; t10i4d100k at "
    "N = 10,000 loses 4 groups of 5, as beside MST.")
PEERS_AIM_EPS4 = (
    "The AIM runs above at epsilon 4 (`--sizes 3000 --epsilons 4`, the public 40-round cap): one seed on "
    "3,000 records of each fit half that holds them.")
PEERS_MWEM_PGM_EPS4 = (
    "The MWEM+PGM runs above at epsilon 4 (`--epsilons 4`): one seed on 3,000 and 30,000 records and "
    "whole fit halves of at most 15,000 records; chess again alone.")


def _cells(summary: list[dict[str, Any]], dataset: str, method: str) -> dict[tuple[int, Any], dict[str, Any]]:
    """One method's settings on one dataset, by (k, epsilon): those run with three seeds or more."""
    return {(t["k"], t["epsilon"]): t for t in summary
            if t["dataset"] == dataset and t["method"] == method and t["seeds"] >= 3}


def _loss(cell: dict[str, Any] | None) -> str:
    """'mean (min-max) x ratio' of one setting's loss, or a dash."""
    if cell is None:
        return "-"
    return (f"{num(cell['loss_mean'])} ({num(cell['loss_min'])}-{num(cell['loss_max'])}), "
            f"{num(cell['loss_ratio_mean'])}x")


def _ratio_acc(cell: dict[str, Any] | None) -> str:
    """'loss ratio, ACC' of one setting, or a dash."""
    return "-" if cell is None else f"{num(cell['loss_ratio_mean'])}x, ACC {cell['acc_mean']:.2f}"


def partitioners() -> str:
    """Every partitioner's k-means loss and accuracy beside non-private k-means++."""
    name = "partitioners.json"
    data = load_if_there(name)
    if data is None:
        return ""
    summary = data["summary"]
    methods = sorted({t["method"] for t in summary} - {"kmeans++"})
    ks = sorted({t["k"] for t in summary if t["dataset"] == "google" and t["epsilon"] in (1.0, None)})
    by_k = [[m, *[_loss(_cells(summary, "google", m).get((k, 1.0 if m != "kmeans++" else None))) for k in ks]]
            for m in [*methods, "kmeans++"]]
    google = data["google_library"]
    by_k.append(["Google's library (its own runs)", *[
        ", ".join(f"{v:g}" for v in google["losses"][str(k)]) if str(k) in google["losses"] else "-" for k in ks]])
    eps = sorted({t["epsilon"] for t in summary if t["dataset"] == "google" and t["k"] == 64 and t["epsilon"]})
    by_eps = [[m, *[_loss(_cells(summary, "google", m).get((64, e))) for e in eps]] for m in methods]
    parts = []
    for dataset in ("mnist50", "mnist"):
        eps_d = sorted({t["epsilon"] for t in summary if t["dataset"] == dataset and t["epsilon"]})
        if not eps_d:
            continue
        rows = [[m, *[_ratio_acc(_cells(summary, dataset, m).get((10, e))) for e in eps_d]] for m in methods]
        base = _cells(summary, dataset, "kmeans++").get((10, None))
        rows.append(["kmeans++", *[f"loss {num(base['loss_mean'])}, ACC {base['acc_mean']:.2f}"] * len(eps_d)])
        parts += ["", f"{dataset}, k = 10 (loss / k-means++'s, clustering accuracy):", "",
                  table(["method", *[f"epsilon {e:g}" for e in eps_d]], rows)]
    return "\n".join([
        "## Partitioners", "",
        ("`benchmarks/partitioners.py --seeds 3`: each partitioner at its defaults with the partition's own "
         "`target_epsilon`, delta 1e-6, one thread; loss = mean squared distance to the nearest released centre "
         "(the parts' means where the centres live in another space), mean over three seeds (min-max), and its "
         "ratio to non-private k-means++ (scikit-learn, one start) on the same data. Google's mixture: 100,000 "
         "points, d = 100, 64 Gaussians, radius 1 (the library's own generator, rebuilt). Google's library was "
         "not rerun here: its figures are the ones measured with it on the same generator."), "",
        "Google's mixture, epsilon 1:", "", table(["method", *[f"k = {k}" for k in ks]], by_k), "",
        "Google's mixture, k = 64:", "", table(["method", *[f"epsilon {e:g}" for e in eps]], by_eps), *parts,
        "", "Plot: `benchmarks/results/partitioners.png`.", "", source(name)])


def _distance_cost(cell: dict[str, Any] | None) -> str:
    """'Wasserstein ± sd / cost' of one setting, or a dash."""
    if cell is None:
        return "-"
    return f"{num(cell['wasserstein_mean'])} ± {num(cell['wasserstein_std'], 2)} / {num(cell['cost_mean'], 2)}"


def subspace() -> str:
    """The subspace clustering solvers on the paper's synthetic settings: Wasserstein distance and cost."""
    name = "subspace_clustering.json"
    data = load_if_there(name)
    if data is None:
        return ""
    eps = data["epsilons"]
    cells = {(t["setting"], t["method"], t["epsilon"]): t for t in data["summary"]}
    blocks = []
    for setting in data["settings"]:
        methods = sorted({m for (st, m, e) in cells if st == setting["name"] and e is not None})
        rows = [[m, *[_distance_cost(cells.get((setting["name"], m, e))) for e in eps]] for m in methods]
        target = [num(data["target_collapsed_minus_truth"][f"{setting['name']} eps={e:g}"]) for e in eps]
        rows.append(["exact target: log p(collapsed) - log p(truth)", *target])
        blocks += ["", (f"n = {setting['n']:,}, d = {setting['d']}, k = {setting['k']}, q = {setting['q']}, "
                        f"sigma = {setting['sigma']:g}: Wasserstein distance to the true subspaces ± sd / k-means "
                        "subspace cost"), "", table(["solver", *[f"epsilon {e:g}" for e in eps]], rows)]
    return "\n".join([
        "## Subspace clustering", "",
        ("`benchmarks/subspace_clustering.py`: the solvers of `partition.method: subspace` on the synthetic "
         f"settings of Wang, Wang and Singh (2015), three seeds, delta {data['delta']:g}, one thread; sulq and "
         f"sulq50: SuLQ k-plane with {data['sulq_iterations']['sulq']} and {data['sulq_iterations']['sulq50']} "
         f"iterations; gibbs: {data['gibbs_sweeps']} sweeps from a random start (gibbs_random) or from the "
         "non-private TSC solution (gibbs_tsc). The last row is the log-probability, under the exact "
         "exponential mechanism the Gibbs chain targets, of all k subspaces collapsed onto the data's top "
         "principal subspace minus that of the true subspaces: above 0, even exact sampling prefers the "
         "collapsed solution."), *blocks, "", source(name)])


def partition_release() -> str:
    """Counting-query scores of the generic rules with each partitioner of the parts."""
    import rules_lodo

    names = [n for n in ("rules_lodo_partitioners.json", "rules_lodo_seven_lsh.json") if (RESULTS / n).is_file()]
    if not names:
        return ""
    text = []
    for name in names:
        summary = rules_lodo.summarize(rules_lodo.read_rows(str(RESULTS / name)), groups=False)
        text += ["", "```text", summary.rstrip(), "```", "", source(name)]
    return "\n".join([
        "## Each partitioner in the release", "",
        ("`benchmarks/rules_lodo.py --candidates default part_lsh part_kernel`: the generic rules with DP Lloyd "
         "(default), the LSH-tree coreset (`part_lsh`) or DP kernel k-means (`part_kernel`) splitting the "
         "records, each at the partition's share of the budget; the score is the mean over the 5 length "
         "groups of log(error / independent marginals' error) on held-out counting queries (below 0: better "
         "than marginals; lower is better)."), *text])


def partition_tos() -> str:
    """MNIST train-on-synthetic accuracy with each partitioner, the label as ten more items."""
    files = sorted((RESULTS / "tos").glob("partitioner_*.json"))
    if not files:
        return ""
    rows, real = [], None
    for path in files:
        data = load(f"tos/{path.name}")
        method = path.stem.removeprefix("partitioner_")
        for r in data["results"]:
            if r["method"] == "real":
                real = r["accuracy"]
            else:
                rows.append((f"`{method}`", f"{r['epsilon']:g}", f"{r['accuracy']:.4f}", seconds(r["dpgm_seconds"])))
    return "\n".join([
        "## Each partitioner on MNIST: train on synthetic, test on real", "",
        ("`benchmarks/train_on_synthetic.py --config mnist --labels-as-items --epsilons 10 --seeds 1 --set "
         "partition.method=M partition.init=random partition.target_epsilon=1`: the paper's MNIST plan (10 parts, "
         "one VAE each, DP-SGD with DPNorm) on the images with their label as ten more items, every partitioner "
         "at the same partition budget (epsilon 1 of 10, its noise calibrated to it; subspace: SuLQ, 5-dimensional "
         "parts); 60,000 synthetic images, each labelled by its one label item (records holding none or several "
         "are drawn again), train the fixed CNN and test it on the real test set; one seed, one thread."
         + ("" if real is None else f" The same CNN trained on the real images: {real:.4f}.")), "",
        table(("partitioner", "epsilon", "accuracy", "dpgm s"), rows), "",
        source(*[f"tos/{p.name}" for p in files])])


def distributed() -> str:
    """A statistics-only run over 1 and 2 torch.distributed ranks: seconds and memory per rank."""
    name = "distributed_statistics.json"
    data = load_if_there(name)
    if data is None:
        return ""
    total = {w: sum(r["records"] for r in data["rows"] if r["world"] == w) for w in {r["world"] for r in data["rows"]}}
    rows = [(r["world"], r["rank"], f"{r['records']:,}", seconds(r["read_s"]), seconds(r["stages_s"]),
             seconds(r["dpsgd_s"]), f"{r['steps'] * data['sampling_rate'] * total[r['world']] / r['dpsgd_s']:,.0f}",
             f"{r['peak_rss_mb']:.0f}", f"{r['epsilon']:.4f}") for r in data["rows"]]
    return "\n".join([
        "## Several ranks", "",
        (f"`benchmarks/distributed_statistics.py`: msnbc ({Path(data['data']).name}, uncompressed) read by byte "
         f"ranges, DP Lloyd into {data['k']} parts and the part means (the statistics stages), then DP-SGD of a "
         f"small VAE per part (all parts stacked, sampling rate {data['sampling_rate']:g}, fixed clipping), on "
         "gloo ranks of this 2-core machine, one thread each; records/s: the records sampled over all ranks per "
         "second of DP-SGD. Every rank draws the whole noise (only rank 0's is kept) and the parts' gradients "
         "cross the ranks once per step: with a model this small those fixed costs outweigh the halved "
         "per-record work. Peak memory is most of all the Python and torch runtime each rank loads."), "",
        table(("ranks", "rank", "records", "read s", "stages s", "DP-SGD s", "records/s", "peak RSS MB", "epsilon"),
              rows),
        "", source(name)])


def large_data() -> str:
    """A generated transaction file partitioned and trained in chunks and in memory: peak memory per rank."""
    name, parts = "large_transactions.json", "large_transactions_parts.json"
    data = load_if_there(name)
    if data is None:
        return ""
    plan = data["plan"]
    held = {"chunks": "in chunks", "memory": "in memory", "parts": "in chunks, {parts} files"}
    rows = [(f"{r['records']:,}", f"{d['file_mib'][str(r['records'])]:,.0f}", r["ranks"],
             held[r["mode"]].format(parts=r.get("parts")), seconds(r["wall_s"]),
             ", ".join(f"{x['peak_rss_mib']:,.0f}" for x in r["per_rank"]))
            for d in filter(None, (data, load_if_there(parts))) for r in d["results"]]
    names = (name, parts) if load_if_there(parts) else (name,)
    return "\n".join([
        "## Data larger than memory", "",
        (f"`benchmarks/large_transactions.py`: a generated file of {data['items']} items (8 profiles, about 4 "
         "items per record) written a chunk at a time, then the whole run: DP Lloyd into "
         f"{plan['partition']['k']} parts ({plan['partition']['iterations']} iterations), the part means, the "
         f"length histogram, one VAE per part by DP-SGD (q = {plan['training']['sampling_rate']:g}, "
         f"{plan['training']['epochs']:g} epoch, {plan['training']['chunk_window']} steps per pass in chunks) and "
         f"a release of synthetic records, at epsilon 1; in chunks of {plan['data']['chunk_mb']:g} MB or loaded "
         "in memory, on gloo ranks of this 2-core machine, one thread each. Peak memory: each rank's peak "
         "resident set (ru_maxrss), of which about 850 MiB is the Python, torch and library runtime. "
         "In the row of several files, the file was cut into that many parts in a folder (`data.path` names "
         "it) and each rank read its whole files; it ran beside another benchmark on one of the two cores."), "",
        table(("records", "file MiB", "ranks", "records held", "wall s", "peak RSS per rank, MiB"), rows),
        "", source(*names)])


def threads_busy(name: str, title: str, what: str) -> str:
    """Threads (and OpenMP wait policies), alone and beside one busy process: median seconds."""
    data = load_if_there(name)
    if data is None:
        return ""
    runs = data["runs"]
    cells: dict[tuple[str, str, str, bool], list[float]] = defaultdict(list)
    for r in runs:
        cells[(r["config"], r["threads"], r["wait_policy"], r["busy"])].append(r["seconds"])
    configs = sorted({r["config"] for r in runs})
    settings = sorted({(r["threads"], r["wait_policy"]) for r in runs})
    rows = []
    for config in configs:
        for busy in (False, True):
            best = min(float(np.median(cells[(config, t, w, busy)])) for t, w in settings)
            rows.append([config, "beside a busy process" if busy else "alone", *[
                f"{np.median(cells[(config, t, w, busy)]):.1f} ({np.median(cells[(config, t, w, busy)]) / best:.2f}x)"
                for t, w in settings]])
    header = ["config", "machine", *[f"threads {t}, wait {w}" for t, w in settings]]
    return "\n".join([f"## {title}", "", what, "", table(header, rows), "", source(name)])


THREADS_WAIT = (
    "`benchmarks/config_timings.py --busy quiet busy --wait-policies unset PASSIVE --repeats 3`, before the "
    "default left out the cores other jobs use: each config alone and beside one CPU-bound process, with the "
    "default threads (then the cores available) or one, and OpenMP's idle threads spinning for a while first "
    "(unset, OpenMP's own: dpgm's default) or sleeping (PASSIVE); median seconds of three interleaved runs, and "
    "the ratio to the best setting of that row.")
THREADS_ALL = (
    "`benchmarks/config_timings.py --threads default 1 --busy quiet busy`: every shipped config alone and beside "
    "one CPU-bound process, with dpgm's default threads (the cores available less the threads other running "
    "processes use when the run starts: 2 alone, 1 beside the busy process on this 2-core machine) and with "
    "one; seconds, and the ratio to the better setting of that row.")

PEERS_TABLES_MST = (
    "mushroom and chess declaring their attributes (`data.attributes`), the shipped rules beside MST on the "
    "same records and queries: ten seeds (`rules_lodo.py --datasets mushroom chess --sizes 3000 full "
    "--seeds 10 --candidates default tables_off tables_even --peers mst`).")
PEERS_TABLES_TVD3 = (
    "The same with the 3-way marginal TVD to the held-out half beside the 2-way (average over the item "
    "triples `dpgm.evaluation.marginal_tvd` scores), three seeds (`--datasets mushroom --sizes 3000 full "
    "--seeds 3 --candidates default --peers mst`, and chess alone in a second process).")
PEERS_TABLES_AIM = (
    "The same, beside AIM with the public 40-round cap, one seed (`--seeds 1 --epsilons 4 1 --peers aim "
    "--peer-options aim.max_rounds=40`); AIM's rounds and seconds are in the JSON (167-581 s a fit, "
    "beside another job). The sweep's process stopped once on a JAX compilation out of memory; the "
    "settings left ran in fresh processes and their rows are appended (the file's `note`).")
PEERS_TABLES_MWEM_PGM = (
    "The same, beside MWEM+PGM (as above: T = min(m, 60) rounds, alpha = 0.9, 25 MB cap), one seed.")


def page() -> str:
    intro = (
        "# Results\n\n"
        "Every figure on this page is read from a JSON file in `benchmarks/results/` by "
        "`benchmarks/results_page.py`, and each table names its file (with the commit and date "
        "of its provenance where it has one). The command behind every file, and the outputs "
        "not shown here (clustering accuracy, compressive k-means, the searches that chose the "
        "tuned configs and the generic rules), are listed in `benchmarks/results/README.md`. "
        "Unless a table says otherwise, the machine had 2 cores.")
    busy = [threads_busy("config_timings_busy.json", "Threads beside another job: every shipped config", THREADS_ALL),
            threads_busy("threads_busy.json", "Threads and wait policies (before)", THREADS_WAIT)]
    sections = (timings(), *filter(None, busy), generic_time(), generic_rules(), dependence_section(), *filter(None, [capacity_section()]), *filter(None, [rules_sweep_section(), peers("rules_lodo_seven_mst.json", "The generic rules beside MST on the seven datasets",
                                   PEERS_MST),
                             peers("rules_lodo_seven_aim.json", "The generic rules beside AIM on the seven datasets",
                                   PEERS_AIM),
                             peers("rules_lodo_seven_mwem_pgm.json",
                                   "The generic rules beside MWEM+PGM on the seven datasets", PEERS_MWEM_PGM),
                             peers("rules_lodo_seven_aim_eps4.json", "The generic rules beside AIM at epsilon 4",
                                   PEERS_AIM_EPS4),
                             peers("rules_lodo_seven_mwem_pgm_eps4.json",
                                   "The generic rules beside MWEM+PGM at epsilon 4", PEERS_MWEM_PGM_EPS4),
                             peers("rules_lodo_eps2_mst.json", "The generic rules beside MST at epsilon 2",
                                   PEERS_MST_EPS2),
                             peers("rules_lodo_eps2_mwem_pgm.json", "The generic rules beside MWEM+PGM at epsilon 2",
                                   PEERS_MWEM_PGM_EPS2),
                             peers("rules_lodo_eps2_merge.json", "The rules with one group below a measured "
                                   "dependence, at epsilon 2", PEERS_EPS2_MERGE),
                             peers("rules_lodo_tables_seeds10.json", "The declared tables beside MST", PEERS_TABLES_MST),
                             peers("rules_lodo_tables_tvd3.json", "The declared tables beside MST: 3-way marginals",
                                   PEERS_TABLES_TVD3),
                             peers("rules_lodo_tables_aim.json", "The declared tables beside AIM", PEERS_TABLES_AIM),
                             peers("rules_lodo_tables_mwem_pgm.json", "The declared tables beside MWEM+PGM",
                                   PEERS_TABLES_MWEM_PGM)]),
                counting(), train_on_synthetic(),
                *filter(None, [partitioners(), partition_release(), partition_tos(), subspace(), distributed(),
                                large_data()]), accounting(),
                throughput(), throughput_gpu(), mnist_gpu(), audit())
    return "\n\n".join((intro, *sections)) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {PAGE.relative_to(ROOT)} differs from the generated page")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python benchmarks/results_page.py")
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
