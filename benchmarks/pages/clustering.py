"""Clustering: every partitioner's k-means loss and accuracy, each in the release, and subspace clustering."""

from __future__ import annotations

from typing import Any

from pages.common import RESULTS, load_if_there, lodo_rows, num, source, table


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
    if (data := load_if_there(name)) is None:
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
        summary = rules_lodo.summarize(lodo_rows(name), groups=False)
        text += ["", "```text", summary.rstrip(), "```", "", source(name)]
    return "\n".join([
        "## Each partitioner in the release", "",
        ("`benchmarks/rules_lodo.py --candidates default part_lsh part_kernel`: the generic rules with DP Lloyd "
         "(default), the LSH-tree coreset (`part_lsh`) or DP kernel k-means (`part_kernel`) splitting the "
         "records, each at the partition's share of the budget; the score is the mean over the 5 length "
         "groups of log(error / independent marginals' error) on held-out counting queries (below 0: better "
         "than marginals; lower is better)."), *text])
