"""The search for the generic rules: leave-one-dataset-out over seven datasets, every family tried, and the leads."""

from __future__ import annotations

from pages.common import METHODS, RESULTS, load, load_if_there, lodo_rows, num, source, table
from pages.tried_first import FIRST
from pages.tried_later import LATER

#: Rule families tried after the length bound: (heading, file, what the candidates change). In each
#: file ``default`` is the rules of its commit (the provenance): before the balanced clip.
TRIED = FIRST + LATER


def generic_rules() -> str:
    """The generic rules chosen by leave-one-dataset-out over the seven transaction datasets."""
    import rules_lodo  # the benchmark's own summary: one computation of the choice, here and on its command line

    name = "rules_lodo_seven_bound.json"
    summary = rules_lodo.summarize(lodo_rows(name))
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


def tried(title: str, name: str, what: str) -> list[str]:
    """One tried rule family: what it changes, the scores and the leave-one-dataset-out summary."""
    import rules_lodo

    if not (RESULTS / name).is_file():
        return []
    summary = rules_lodo.summarize(lodo_rows(name), groups=False)
    return ["", f"### {title}", "", what, "", "```text", summary.rstrip(), "```", "", source(name)]


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


def rules_sweep_section() -> str:
    """How the sweep on the results page gathers its rows: the files of the shipped rules, in order."""
    found = load_if_there("rules_sweep.json")
    if found is None:
        return ""
    shipped = [f"- `{entry}`" for entry in found["shipped"]]
    return "\n".join([
        "## How the sweep gathers the shipped rules' rows", "",
        ("The comparison that opens the results page (`benchmarks/rules_sweep.py`) reads the shipped rules' rows "
         "from these files, in order: of each file its `default` rows, or, for `FILE:CANDIDATE`, the rows of the "
         "candidate that became the shipped rules; a later file's settings replace an earlier one's, so each entry "
         "is the rules as shipped from its commit on, and the last file that holds a setting gives its rows. Each "
         "peer's rows (MST, MWEM+PGM, AIM with its 40-round cap) come from any file that ran it, every seed once, "
         "and a peer is compared with the rules on the seeds both ran: the same records, the same 500 held-out "
         "counting queries. The runs' own plots, one per dataset: `benchmarks/results/sweep_seven/`."),
        "", *shipped, "", source("rules_sweep.json")])
