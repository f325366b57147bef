"""The generic rules of earlier commits beside a peer (MST, AIM, MWEM+PGM) on the same records and queries."""

from __future__ import annotations

from pages.common import RESULTS, lodo_rows, source


def peers(name: str, title: str, what: str, level: str = "##") -> str:
    """The generic rules beside a peer (MST, AIM) on the same records and held-out queries, per length group."""
    import rules_lodo

    if not (RESULTS / name).is_file():
        return ""
    rows = lodo_rows(name)
    table = rules_lodo.peer_table([r for r in rows if not r.get("peer")], [r for r in rows if r.get("peer")])
    return "\n".join([f"{level} {title}", "", what, "", "```text", table.rstrip(), "```", "", source(name)])


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
    "(0.0087 against 0.0063): the dependence between items decides (\"Item dependence and what groups buy\" in the appendix). "
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


def earlier() -> str:
    """The rules of earlier commits beside each peer on the seven datasets and the declared tables (appendix)."""
    return "\n\n".join([
        "## Earlier versions of the rules beside the peers",
        ("Each file's `default` is the generic rules of its commit, before the rules the results page compares; the "
         "mean relative error per query length group (1: shortest; lower is better) of the rules and of the peer, "
         "the groups at or below the peer and below the marginals, and the marginal TVDs (lower is better)."),
        *filter(None, [
            peers("rules_lodo_seven_mst.json", "The generic rules beside MST on the seven datasets", PEERS_MST, "###"),
            peers("rules_lodo_seven_aim.json", "The generic rules beside AIM on the seven datasets", PEERS_AIM, "###"),
            peers("rules_lodo_seven_mwem_pgm.json", "The generic rules beside MWEM+PGM on the seven datasets",
                  PEERS_MWEM_PGM, "###"),
            peers("rules_lodo_seven_aim_eps4.json", "The generic rules beside AIM at epsilon 4", PEERS_AIM_EPS4, "###"),
            peers("rules_lodo_seven_mwem_pgm_eps4.json", "The generic rules beside MWEM+PGM at epsilon 4",
                  PEERS_MWEM_PGM_EPS4, "###"),
            peers("rules_lodo_tables_seeds10.json", "The declared tables beside MST", PEERS_TABLES_MST, "###"),
            peers("rules_lodo_tables_tvd3.json", "The declared tables beside MST: 3-way marginals", PEERS_TABLES_TVD3, "###"),
            peers("rules_lodo_tables_aim.json", "The declared tables beside AIM", PEERS_TABLES_AIM, "###"),
            peers("rules_lodo_tables_mwem_pgm.json", "The declared tables beside MWEM+PGM", PEERS_TABLES_MWEM_PGM, "###")])])


def epsilon_two() -> str:
    """Epsilon 2, off the grid the rules were chosen on: an earlier version of the rules beside MST and MWEM+PGM."""
    return "\n\n".join([
        "## At epsilon 2: an earlier version of the rules beside MST and MWEM+PGM",
        ("Not rerun with the shipped rules: these are the rules of the commits each file names, before the trees of "
         "items took DP-SGD's place. Mean relative error per query length group (1: shortest; lower is better), the "
         "groups at or below the peer and below the marginals, and the 2- and 3-way marginal TVDs (lower is "
         "better), means over the seeds."),
        *filter(None, [
            peers("rules_lodo_eps2_mst.json", "Beside MST", PEERS_MST_EPS2, "###"),
            peers("rules_lodo_eps2_mwem_pgm.json", "Beside MWEM+PGM", PEERS_MWEM_PGM_EPS2, "###"),
            peers("rules_lodo_eps2_merge.json", "With one group below a measured dependence", PEERS_EPS2_MERGE,
                  "###")])])
