"""The rule families tried first: from the balanced clip to the declared tables' sizes (their words)."""


#: Rule families tried after the length bound: (heading, file, what the candidates change). In each
#: file ``default`` is the rules of its commit (the provenance): before the balanced clip.
FIRST = (
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
)
