"""The private length bound: a quantile of a noisy length histogram sets the clip of the means."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.pipeline.run import TrainingRun
from dpgm.privacy.events import DiscreteGaussianEvent
from dpgm.privacy.postprocess import project_to_total
from dpgm.stages.length_bound import STAGE, balanced_length, cut_shares, kept_share, quantile_length, tail_cut


def test_quantile_length_is_the_smallest_length_reaching_the_share() -> None:
    shares = np.array([0.0, 0.5, 0.3, 0.15, 0.05])
    assert [quantile_length(shares, q) for q in (0.4, 0.5, 0.8, 0.9, 0.95, 1.0)] == [1, 1, 2, 3, 3, 4]
    assert quantile_length(np.array([1.0, 0.0, 0.0]), 0.9) == 1  # at least one item: a bound of 0 clips all


def one_item_per_attribute(n: int, attributes: int, values: int, seed: int = 0) -> BinaryDataset:
    """A categorical table as attribute=value items: every record holds exactly ``attributes`` items."""
    rng = np.random.default_rng(seed)
    cols = np.arange(attributes) * values + rng.integers(0, values, (n, attributes))
    records = sp.csr_matrix((np.ones(n * attributes, dtype=np.uint8), cols.ravel(),
                             np.arange(0, n * attributes + 1, attributes)), shape=(n, attributes * values))
    return BinaryDataset(records=records, item_names=[str(i) for i in range(attributes * values)])


def independent_run(folder, data: BinaryDataset, **model) -> TrainingRun:
    """The stages of one run of independent items in one part with these model options (no DP-SGD)."""
    over = {"model": {"kind": "independent", **model}, "partition": {"method": "none", "noise_multiplier": 5.0}}
    cfg = config_from_dict({"runs_dir": str(folder.parent), "privacy": {"delta": 1e-6}, "seed": 1, **over})
    run = TrainingRun(cfg, folder, data=data, progress=False)
    run.start()
    return run


@pytest.mark.parametrize("quantile", [None, 0.9])
def test_long_records_keep_unbiased_means_with_the_private_bound(tmp_path, quantile) -> None:
    data = one_item_per_attribute(4_000, attributes=20, values=2)
    run = independent_run(tmp_path / "r", data, mean_clip=3.0, mean_noise_multiplier=1.0, mean_clip_quantile=quantile,
                          length_bound_noise_multiplier=2.0)
    means = run.output("part_means")[0]
    if quantile is None:  # a clip of 3 for records of norm sqrt(20): every mean shrinks to 3 / sqrt(20) of it
        assert means.mean() == pytest.approx(0.5 * 3 / np.sqrt(20), abs=0.02)
        assert STAGE not in {e.stage for e in run.accountant.ledger.entries}
        return
    assert run.output(STAGE) == 20  # every record holds 20 items
    assert means.mean() == pytest.approx(0.5, abs=0.02)
    [entry] = [e for e in run.accountant.ledger.entries if e.stage == STAGE]
    assert isinstance(entry.event, DiscreteGaussianEvent) and entry.event.noise_multiplier == 2.0


def _objective(shares: np.ndarray, L: int, records: float, sigma: float, parts: int, m: int) -> float:
    """The balanced rule's loss at L, written out record length by record length."""
    mass = sum(h * l for l, h in enumerate(shares))
    lost = sum(h * l * (1 - np.sqrt(L / l)) for l, h in enumerate(shares) if l > L) / mass
    return lost**2 + (sigma * np.sqrt(parts * L) * m / (records * mass)) ** 2


@pytest.mark.parametrize("sigma, parts", [(0.5, 1), (5.0, 2), (50.0, 8)])
def test_the_balanced_length_minimises_lost_mass_and_noise(sigma, parts) -> None:
    lengths = np.arange(18)
    shares = np.where(lengths > 0, 0.6 ** lengths, 0.0)
    shares /= shares.sum()
    args = {"records": 30_000.0, "noise_multiplier": sigma, "parts": parts, "n_items": 17}
    chosen = balanced_length(shares, **args)
    losses = [_objective(shares, L, 30_000.0, sigma, parts, 17) for L in range(1, 18)]
    assert chosen == 1 + int(np.argmin(losses))


def test_the_balanced_length_keeps_whole_tables_and_shrinks_under_heavy_noise() -> None:
    table = np.zeros(76)
    table[37] = 1.0  # every record holds 37 items
    assert balanced_length(table, records=1_600, noise_multiplier=6.0, parts=1, n_items=75) == 37
    lengths = np.arange(18)
    shares = np.where(lengths > 0, 0.6 ** lengths, 0.0) / np.where(lengths > 0, 0.6 ** lengths, 0.0).sum()
    quiet = balanced_length(shares, records=1e6, noise_multiplier=1.0, parts=1, n_items=17)
    loud = balanced_length(shares, records=1e3, noise_multiplier=50.0, parts=1, n_items=17)
    assert loud < quiet


def test_the_balance_raises_the_quantile_where_the_noise_is_small(tmp_path) -> None:
    """Records of 1 to 12 items, most short: the 50% quantile clips the long ones; with little noise
    the balanced length is longer and the bound follows it, with much noise the quantile stays."""
    rng = np.random.default_rng(4)
    n, m = 20_000, 12
    lengths = np.minimum(rng.geometric(0.35, n), m)
    rows = [rng.choice(m, size=k, replace=False) for k in lengths]
    records = sp.csr_matrix((np.ones(lengths.sum(), dtype=np.uint8), np.concatenate(rows),
                             np.r_[0, np.cumsum(lengths)]), shape=(n, m))
    data = BinaryDataset(records=records, item_names=[str(i) for i in range(m)])
    bounds = {}
    for balance, sigma in ((None, 1.0), (1.0, 1.0), (1.0, 2000.0)):
        run = independent_run(tmp_path / f"r{balance}{sigma}", data, mean_noise_multiplier=sigma,
                              mean_clip_quantile=0.5, mean_clip_balance=balance, length_bound_noise_multiplier=1.0)
        bounds[balance, sigma] = run.output(STAGE)
    assert bounds[None, 1.0] == 2  # the median length
    assert bounds[1.0, 1.0] > bounds[None, 1.0]
    assert bounds[1.0, 2000.0] == bounds[None, 1.0]


def test_the_balanced_length_ignores_a_tail_below_the_histogram_noise() -> None:
    lengths = np.arange(31)
    shares = np.where((lengths > 0) & (lengths <= 4), 0.25, 0.0)
    shares[30] = 0.004  # 12 of 3,000 records: within the noise of a histogram with std 10
    args = {"records": 3_000.0, "noise_multiplier": 1.0, "parts": 1, "n_items": 30}
    assert balanced_length(shares, **args) > 4  # read as real, the long records call for a longer clip
    assert balanced_length(shares, **args, count_noise=10.0) == 4
    heavier = balanced_length(shares, **args, weight=400.0)
    assert heavier < balanced_length(shares, **args)  # weighing the noise more keeps a shorter clip


def test_the_kept_share_is_the_clipped_share_of_item_mass_or_of_records() -> None:
    """Half the records of 1 item, half of 4; the clip sqrt(1) keeps 1 of 1 and 4 x sqrt(1/4) = 2 of 4:
    of the item mass (1 + 2) / 5, of the records (1 + 1/2) / 2."""
    shares = np.array([0.0, 0.5, 0.0, 0.0, 0.5])
    assert kept_share(shares, 1, records=1_000, count_noise=1.0) == pytest.approx((0.5 + 1.0) / 2.5)
    assert kept_share(shares, 1, records=1_000, count_noise=1.0, by="records") == pytest.approx(0.75)
    assert kept_share(shares, 4, records=1_000, count_noise=1.0) == 1.0
    assert kept_share(np.array([1.0, 0.0]), 1, records=1_000, count_noise=1.0) == 1.0  # no mass: nothing to undo


@pytest.mark.parametrize("debias, mean", [("off", 0.3), ("mass", 0.5), ("records", 0.4)])
def test_debiased_means_undo_the_clip_on_average(tmp_path, debias, mean) -> None:
    """Half the records hold 4 of 20 items, half 16: the bound sqrt(4) (40% quantile) halves the long ones and
    the means fall to 0.3 of the true 0.5; divided by the kept mass 0.6 they come back to 0.5, by the kept
    share of records 0.75 to 0.4 (items here are four times likelier in a record four times longer)."""
    rng = np.random.default_rng(5)
    n, m = 8_000, 20
    lengths = np.where(np.arange(n) % 2 == 0, 4, 16)
    rows = [rng.choice(m, size=k, replace=False) for k in lengths]
    records = sp.csr_matrix((np.ones(lengths.sum(), dtype=np.uint8), np.concatenate(rows),
                             np.r_[0, np.cumsum(lengths)]), shape=(n, m))
    data = BinaryDataset(records=records, item_names=[str(i) for i in range(m)])
    run = independent_run(tmp_path / "r", data, mean_noise_multiplier=1.0, mean_clip_quantile=0.4,
                          mean_debias=debias, length_bound_noise_multiplier=1.0)
    assert run.output(STAGE) == 4
    assert run.output("part_means")[0].mean() == pytest.approx(mean, abs=0.01)


def test_the_release_can_follow_the_bounds_histogram_without_a_second_release(tmp_path) -> None:
    """``model.lengths_from_bound``: the record-length stage outputs the length bound's noisy shares and charges
    nothing; without the bound's histogram the option is refused."""
    from dpgm.errors import ConfigError
    from dpgm.stages.record_lengths import STAGE as LENGTHS

    data = one_item_per_attribute(2_000, attributes=6, values=2)
    run = independent_run(tmp_path / "r", data, mean_clip=3.0, mean_noise_multiplier=1.0, mean_clip_quantile=0.9,
                          length_bound_noise_multiplier=2.0, lengths_from_bound=True)
    assert run.output(LENGTHS) is run.context.stages[STAGE].shares
    assert run.output(LENGTHS)[6] > 0.9  # every record holds six items
    assert [e.stage for e in run.accountant.ledger.entries].count(STAGE) == 1
    assert LENGTHS not in {e.stage for e in run.accountant.ledger.entries}
    with pytest.raises(ConfigError, match="lengths_from_bound"):
        config_from_dict({"model": {"lengths_from_bound": True, "mean_clip_quantile": None}})
    with pytest.raises(ConfigError, match="lengths_from_bound"):
        config_from_dict({"model": {"lengths_from_bound": True, "mean_clip_quantile": 0.9,
                                    "length_noise_multiplier": 5.0}})


def test_the_quantile_reads_the_lengths_the_records_hold_not_the_noise_of_empty_lengths() -> None:
    """1,000 records of at most 8 items over 101 possible lengths, each count with noise std 35, projected onto the
    simplex as the release does: the noise the projection leaves on ninety empty lengths puts the 90% quantile near
    50; read after the tail cut, it stays at the lengths the records hold (6; the projection and the cut shave the
    real tail too, and the balanced rule raises the clip where that costs)."""
    rng = np.random.default_rng(0)
    true = np.zeros(101)
    true[1:9] = [300, 250, 150, 100, 80, 60, 40, 20]
    raw, cut = [], []
    for _ in range(50):
        noisy = true + rng.normal(0, 35, true.size)
        total = max(float(noisy.sum()), 1.0)
        shares = project_to_total(noisy, total) / total
        raw.append(quantile_length(shares, 0.9))
        cut.append(quantile_length(cut_shares(shares, records=total, count_noise=35.0), 0.9))
    assert np.median(raw) > 20 and 2 <= np.median(cut) <= 6 and np.mean(np.array(cut) <= 8) >= 0.9


@pytest.mark.parametrize(("true", "lengths", "noise", "held", "share"),
                         [({1: 260, 2: 70, 3: 25, 4: 5}, 101, 80.0, 4, 0.6), ({37: 1_000}, 76, 240.0, 37, 0.9)])
def test_where_no_length_survives_the_cut_the_quantile_reads_the_largest_share(true, lengths, noise, held, share) -> None:
    """A few hundred baskets of 1-4 items, or 1,000 records of 37 items, under noise that often leaves no length
    above the cut (the noisy total is the sum of every length's noise): the largest share alone gives a clip at the
    records' lengths in most draws, where the raw shares' quantile lands among the noise of the empty lengths."""
    rng = np.random.default_rng(0)
    counts = np.zeros(lengths)
    counts[list(true)] = list(true.values())
    raw, cut = [], []
    for _ in range(100):
        noisy = counts + rng.normal(0, noise, lengths)
        total = max(float(noisy.sum()), 1.0)
        shares = project_to_total(noisy, total) / total
        if not tail_cut(shares, records=total, count_noise=noise).any():  # no length above the cut
            raw.append(quantile_length(shares, 0.9))
            cut.append(quantile_length(cut_shares(shares, records=total, count_noise=noise), 0.9))
    assert len(cut) >= 30 and np.quantile(raw, 0.9) > held + 15
    assert np.mean(np.array(cut) <= held) >= share and np.mean(np.array(cut) <= held) > np.mean(np.array(raw) <= held)


def test_the_cut_grows_with_the_lengths_to_about_their_largest_noise(monkeypatch) -> None:
    """The cut is sqrt(2 ln K) noise stds among K lengths (785 pixel counts: 3.65), never below TAIL_NOISE."""
    from dpgm.stages import length_bound

    assert length_bound.TAIL_BY_LENGTHS == 1.0
    assert length_bound.tail_noise(785) == pytest.approx(np.sqrt(2 * np.log(785)))
    assert length_bound.tail_noise(3) == length_bound.TAIL_NOISE < length_bound.tail_noise(18) < 3.65


def test_a_broad_histogram_over_many_lengths_is_read_in_bins_its_noise_does_not_swamp(monkeypatch) -> None:
    """3,000 records of 40 to 250 items (a hundred lengths of a few dozen records each, 90% quantile 148) over 785
    possible lengths, each count with noise std 28.6: at 2 stds a dozen empty lengths pass and the quantile often
    lands on one (hundreds of items); with the cut at the largest noise of 785 lengths, read in wider bins where no
    single length passes (``coarse_shares``; shipped), it stays near the records' lengths."""
    from dpgm.stages import length_bound
    from dpgm.stages.length_bound import coarse_shares

    shipped = length_bound.TAIL_BY_LENGTHS
    assert shipped > 0
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.normal(105, 33, 3_000).round().astype(int), 40, 250)
    counts = np.bincount(lengths, minlength=785).astype(np.float64)
    before, after = [], []
    for _ in range(40):
        noisy = counts + rng.normal(0, 28.6, counts.size)
        total = max(float(noisy.sum()), 1.0)
        shares = project_to_total(noisy, total) / total
        monkeypatch.setattr(length_bound, "TAIL_BY_LENGTHS", 0.0)
        before.append(quantile_length(cut_shares(shares, records=total, count_noise=28.6), 0.9))
        monkeypatch.setattr(length_bound, "TAIL_BY_LENGTHS", shipped)
        coarse = coarse_shares(noisy, shares, count_noise=28.6)
        after.append(quantile_length(cut_shares(shares, records=total, count_noise=28.6) if coarse is None else coarse,
                                     0.9))
    truth = np.quantile(lengths, 0.9)
    assert np.quantile(before, 0.75) > truth + 100  # a quarter of the draws clip at hundreds of items
    assert np.median(np.abs(np.array(after) - truth)) < 40 and np.quantile(after, 0.75) < truth + 60


def test_coarse_shares_spread_each_passing_bin_as_the_shares_within_it(monkeypatch) -> None:
    """Noise-free counts over 16 lengths: a single length that passes is kept alone; counts of 3 at lengths 8-11
    under noise std 1.5 pass neither alone (cut sqrt(2 ln 16) x 1.5 = 3.53) but in bins of two (6 against
    2.04 x 1.5 x sqrt(2) = 4.33), each bin's sum spread as the projected shares within it (evenly where they hold
    none: 8 and 9 below); nothing at any width: None."""
    from dpgm.stages import length_bound
    from dpgm.stages.length_bound import coarse_shares

    monkeypatch.setattr(length_bound, "TAIL_BY_LENGTHS", 1.0)
    sharp = np.zeros(16)
    sharp[5] = 100.0
    assert np.array_equal(coarse_shares(sharp, sharp / 100.0, count_noise=1.0), sharp / 100.0)
    flat = np.zeros(16)
    flat[8:12] = 3.0
    projected = np.zeros(16)
    projected[[10, 11]] = [0.75, 0.25]  # what the projection left: nothing at 8 and 9, more at 10 than at 11
    expected = np.zeros(16)
    expected[[8, 9, 10, 11]] = [3.0, 3.0, 4.5, 1.5]
    assert np.allclose(coarse_shares(flat, projected, count_noise=1.5), expected / 12.0)
    assert coarse_shares(np.zeros(16), np.zeros(16), count_noise=1.0) is None


def test_dense_reads_need_a_passing_bin_and_no_record_in_the_first_two_bins() -> None:
    from dpgm.stages.length_bound import coarse_width, reads_dense

    read = np.zeros(40)
    read[37] = 1.0  # chess: every record holds 37 items
    assert reads_dense(read, 1) and reads_dense(read, 16)
    assert not reads_dense(read, None)  # no bin passed: the read is the noisy argmax, not evidence
    short = np.zeros(40)
    short[[2, 3]] = 0.5  # records of two and three items, read in bins of 2: the second bin holds them
    assert reads_dense(short, 1) and not reads_dense(short, 2)
    counts = np.zeros(16)
    counts[5] = 10.0
    assert coarse_width(counts, count_noise=1.0) == 1 and coarse_width(counts, count_noise=100.0) is None
    counts[4:8] = 2.0  # four lengths of 2 records: none passes 2.35 (16 lengths), a bin of two (4) passes 2.88
    assert coarse_width(counts, count_noise=1.0) == 2
