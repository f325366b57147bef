"""Noisy per-part means: one charged Gaussian release, right noise scale, clipping, model init, calibration."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.errors import ConfigError, PrivacyBudgetError
from dpgm.models import RBM, VAE
from dpgm.models.calibration import FLOOR, accepted_frequencies, bias_shift, total_shift
from dpgm.pipeline import run as run_mod
from dpgm.pipeline.run import TrainingRun
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.mechanisms import SNAP_SHARE, grid_sensitivity, snap_grid
from dpgm.release import load_release
from dpgm.stages.part_means import (
    STAGE,
    calibrate_to_means,
    noisy_part_means,
    part_total_kept,
    shrunk_to_items,
    start_at_means,
    table_parts,
)
from dpgm.training.mixture import STAGE as TRAINING_STAGE

from .test_run import killed_run, tiny_config


def _data(n=4000, m=6, seed=0):
    rng = np.random.default_rng(seed)
    records = (rng.random((n, m)) < np.linspace(0.1, 0.6, m)).astype(np.uint8)
    assignments = rng.integers(0, 2, size=n)
    return records, assignments


def test_one_gaussian_release_is_charged():
    records, assignments = _data()
    acc = Accountant(delta=1e-5)
    noisy_part_means(records, assignments, np.bincount(assignments).astype(float), clip=1.0,
                     noise_multiplier=3.0, accountant=acc, rng=np.random.default_rng(1))
    [entry] = acc.ledger.entries
    event = entry.event
    assert (entry.stage, entry.count) == (STAGE, 1) and isinstance(event, DiscreteGaussianEvent)
    # the [2 parts, 6 items] clipped sums (L2 sensitivity clip = 1), snapped to a power-of-two grid
    assert event.noise_multiplier == 3.0 and event.dim == 12 and event.grid == snap_grid(1.0, 12)
    assert event.sensitivity == pytest.approx(grid_sensitivity(1.0, 12, event.grid), rel=1e-12)
    assert 1.0 <= event.sensitivity * event.grid <= (1.0 + SNAP_SHARE) * (1 + 1e-12)
    # the exact release costs what the continuous Gaussian at the same multiplier would
    continuous = GaussianEvent(noise_multiplier=3.0)
    assert acc.spent().epsilon == Accountant(delta=1e-5).epsilon_if(continuous)


def test_refused_over_budget_before_release():
    records, assignments = _data()
    acc = Accountant(delta=1e-5, budget_epsilon=0.01)
    with pytest.raises(PrivacyBudgetError):
        noisy_part_means(records, assignments, np.array([2000.0, 2000.0]), clip=1.0, noise_multiplier=1.0,
                         accountant=acc, rng=np.random.default_rng(1))
    assert acc.ledger.entries == []


@pytest.mark.parametrize("sparse", [False, True])
def test_means_noise_scale_and_clip(sparse):
    records, assignments = _data(m=4)
    sizes = np.bincount(assignments).astype(float)
    clip, sigma = 1.5, 50.0
    rows = sp.csr_matrix(records) if sparse else records
    draws = np.stack([
        noisy_part_means(rows, assignments, sizes, clip=clip, noise_multiplier=sigma,
                         accountant=Accountant(delta=1e-5), rng=np.random.default_rng(s))
        for s in range(300)
    ])
    # exact clipped means: each record scaled to norm <= clip
    norms = np.sqrt(records.sum(1))
    scaled = records * np.minimum(1.0, clip / np.maximum(norms, 1e-12))[:, None]
    exact = np.stack([scaled[assignments == j].sum(0) / sizes[j] for j in range(2)])
    assert np.abs(draws.mean(0) - exact).max() < 0.01
    expected_std = sigma * clip / sizes
    assert draws.std(0) == pytest.approx(np.repeat(expected_std[:, None], 4, axis=1), rel=0.15)


def test_means_stay_inside_the_floor():
    records, assignments = _data(n=50)
    means = noisy_part_means(records, assignments, np.array([25.0, 25.0]), clip=None, noise_multiplier=100.0,
                             accountant=Accountant(delta=1e-5), rng=np.random.default_rng(0))
    assert means.min() >= FLOOR and means.max() <= 1 - FLOOR


def test_a_parts_means_keep_its_noisy_total_where_clipping_each_would_add_the_noises_positive_half():
    """Records of 3 items of 100 at a noise std of 0.3 per mean: clipping each noisy mean at 0 alone adds about
    0.4 x 0.3 to each of the 97 absent items (a release of about 14.6 items a record); shifted together to the
    part's noisy total (unbiased: 3 on average), the three held items stay the largest."""
    n, m = 2_000, 100
    records = np.zeros((n, m), dtype=np.uint8)
    records[:, :3] = 1
    draws = np.stack([noisy_part_means(records, np.zeros(n, dtype=int), np.array([float(n)]), clip=2.0,
                                       noise_multiplier=300.0, accountant=Accountant(delta=1e-5), keep_total=True,
                                       rng=np.random.default_rng(s))[0] for s in range(30)])
    assert abs(draws.sum(axis=1).mean() - 3.0) < 1.5
    assert draws[:, :3].mean() > 5 * draws[:, 3:].mean()
    assert draws.min() >= FLOOR and draws.max() <= 1 - FLOOR
    fewest = noisy_part_means(records, np.zeros(n, dtype=int), np.array([float(n)]), clip=2.0, noise_multiplier=300.0,
                              accountant=Accountant(delta=1e-5), rng=np.random.default_rng(0), keep_total=True,
                              least=40.0)
    assert fewest.sum() == pytest.approx(40.0, rel=1e-6)  # no part's records fewer than the declared fewest items


def test_keeping_the_total_shifts_every_item_of_a_part_alike_within_zero_and_one():
    means = np.array([[-0.4, 0.3, 0.9, 1.3], [0.2, 0.1, 0.3, 0.4]])
    kept = part_total_kept(means, np.array([1.5, 1.0]))
    assert kept.sum(axis=1) == pytest.approx([1.5, 1.0])
    assert kept.min() >= 0.0 and kept.max() <= 1.0
    np.testing.assert_allclose(kept[1], means[1])  # nothing clipped: unchanged
    shift = 0.9 - kept[0, 2]
    np.testing.assert_allclose(kept[0], np.clip(means[0] - shift, 0.0, 1.0))


def test_an_item_rare_in_every_part_reads_rare_where_a_small_parts_noise_alone_made_it_frequent():
    """Six parts (one of 150 records) at a sum noise std of 20: item 0 is never held, item 1 is held by 80% of
    three parts' records and 10% of the others'. Read against the others, the small part's mean of item 0 moves
    to the item's mean over all parts, while item 1 keeps what tells the parts apart."""
    sizes = np.array([150.0, 2_000.0, 3_000.0, 2_500.0, 1_800.0, 2_200.0])
    truth = np.stack([np.zeros(6), np.array([0.8, 0.1, 0.8, 0.1, 0.8, 0.1])], axis=1)  # [k, 2] means
    raw, read = [], []
    for seed in range(200):
        sums = truth * sizes[:, None] + np.random.default_rng(seed).normal(0.0, 20.0, truth.shape)
        raw.append(sums / sizes[:, None])
        read.append(shrunk_to_items(sums, sizes, 20.0) / sizes[:, None])
    raw, read = np.array(raw), np.array(read)
    small_rare = lambda means: np.sqrt((means[:, 0, 0] ** 2).mean())
    assert small_rare(read) < 0.3 * small_rare(raw)  # the noise std of that mean: 20 / 150, 0.13
    assert np.abs(read[:, :, 1] - truth[:, 1]).mean() <= np.abs(raw[:, :, 1] - truth[:, 1]).mean() + 1e-3
    bias = np.abs(read[:, :, 1].mean(axis=0) - truth[:, 1])
    assert bias[1:].max() < 0.01 and bias[0] < 0.5 * 20.0 / 150  # the large parts unbiased, the small one within its noise
    one = np.array([[3.0, -2.0, 40.0]])
    np.testing.assert_array_equal(shrunk_to_items(one, np.array([50.0]), 20.0), one)  # one part: nothing to read
    two = np.array([[3.0, 0.0], [40.0, 1.0]])
    np.testing.assert_array_equal(shrunk_to_items(two, np.array([50.0, 60.0]), 0.0), two)  # no noise: kept whole


def test_a_small_parts_released_means_of_items_no_record_holds_stay_near_zero():
    """Five parts, one of 100 records, over 60 items of which the records hold only the last 10: the small part's
    mean of an absent item has a noise std of 0.3, of which clipping at 0 (or shifting the items to the part's raw
    noisy total) would keep a share; read against the other parts it stays far below."""
    n_parts, m = 5, 60
    sizes = np.array([100, 3_000, 3_000, 3_000, 3_000])
    assignments = np.repeat(np.arange(n_parts), sizes)
    rng = np.random.default_rng(0)
    records = np.zeros((sizes.sum(), m), dtype=np.uint8)
    records[:, 50:] = rng.random((sizes.sum(), 10)) < np.where(assignments[:, None] % 2 == 0, 0.7, 0.2)
    absent = [noisy_part_means(records, assignments, sizes.astype(float), clip=2.0, noise_multiplier=15.0,
                               accountant=Accountant(delta=1e-5), keep_total=True,
                               rng=np.random.default_rng(s))[0, :50].mean() for s in range(20)]
    assert np.mean(absent) < 0.02  # the noise std of each: 15 x 2 / 100 = 0.3


@pytest.mark.parametrize("model", [VAE(5, hidden=[4], latent=2), RBM(5, n_hidden=3)])
def test_models_start_at_the_given_frequencies(model):
    probs = torch.tensor([0.01, 0.2, 0.5, 0.7, 0.99])
    start_at_means(model, probs)
    if isinstance(model, VAE):
        with torch.no_grad():
            model.decoder[-1].weight.zero_()  # the output is then the bias alone
        assert torch.allclose(model.sample_probs(3, None), probs.expand(3, 5), atol=1e-6)
    else:
        assert torch.allclose(torch.sigmoid(model.visible_bias.weight[0]), probs, atol=1e-6)


def test_run_charges_part_means_only_when_asked(tmp_path):
    for choice, expected in (("noisy_mean", 1), ("default", 0)):
        cfg = tiny_config(tmp_path / choice, **{"model.output_bias": choice})
        run = TrainingRun(cfg, tmp_path / choice, progress=False)
        run.start()
        assert run.accountant.ledger.count(STAGE) == expected


def test_bias_shift_solves_the_mean_frequency_equation():
    logits = torch.tensor([[0.0, -3.0, 2.0], [0.0, 1.0, 2.0], [0.0, 4.0, -6.0]])
    target = torch.tensor([0.3, 0.5, 0.01])
    shift = bias_shift(logits, target)
    assert shift[0] == pytest.approx(float(torch.logit(torch.tensor(0.3))), abs=1e-5)  # equal logits: logit(p)
    assert torch.allclose(torch.sigmoid(logits + shift).mean(0), target, atol=1e-6)


def _frequencies(model, seed=99, n=40_000):
    g = torch.Generator()
    g.manual_seed(seed)
    return model.sample(n, g).mean(0)


@pytest.mark.parametrize("model", [VAE(6, hidden=[8], latent=2, generator=torch.Generator().manual_seed(1)),
                                   RBM(6, n_hidden=4, sample_steps=20, generator=torch.Generator().manual_seed(1))])
def test_calibrated_models_draw_the_target_frequencies(model):
    with torch.no_grad():  # a model far from the target, with correlated items
        model.output_bias().fill_(2.0)
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(30.0)
    target = torch.tensor([0.02, 0.1, 0.3, 0.5, 0.7, 0.95])
    assert (_frequencies(model) - target).abs().max() > 0.1
    last_shift = calibrate_to_means(model, target)
    assert last_shift < 1e-2
    # fresh samples from another seed: only Monte Carlo error is left (std <= 0.0025 at n = 40,000)
    assert torch.allclose(_frequencies(model), target, atol=0.015)


def test_total_shift_solves_the_expected_count_equation():
    logits = torch.tensor([[0.0, -3.0, 2.0], [0.0, 1.0, 2.0], [0.0, 4.0, -6.0]])
    shift = total_shift(logits, 1.7)
    assert float(torch.sigmoid(logits + shift).sum(1).mean()) == pytest.approx(1.7, abs=1e-6)
    assert total_shift(torch.zeros(4, 5), 2.5) == pytest.approx(0.0, abs=1e-6)  # p = 1/2 already: no shift


@pytest.mark.parametrize("model", [VAE(6, hidden=[8], latent=2, generator=torch.Generator().manual_seed(1)),
                                   RBM(6, n_hidden=4, sample_steps=20, generator=torch.Generator().manual_seed(1))])
def test_total_calibration_matches_the_expected_count_by_one_shift_for_every_item(model):
    target = torch.tensor([0.02, 0.1, 0.3, 0.5, 0.7, 0.95])  # sums to 2.57
    before = model.output_bias().detach().clone()
    last_shift = calibrate_to_means(model, target, total=True)
    assert last_shift < 1e-2
    moved = model.output_bias().detach() - before
    torch.testing.assert_close(moved, moved[0].expand(6))  # one shift, all items
    assert float(_frequencies(model).sum()) == pytest.approx(2.57, abs=0.05)


def test_calibration_only_shifts_the_output_bias():
    model = VAE(6, hidden=[8], latent=2, generator=torch.Generator().manual_seed(2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calibrate_to_means(model, torch.full((6,), 0.2))
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed == [f"decoder.{len(model.decoder) - 1}.bias"]  # the output layer's bias, nothing else


def test_run_releases_models_calibrated_to_its_noisy_means(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path, **{"model.calibrate": "true"})
    run_dir = killed_run(cfg, monkeypatch, at_step=6)  # the means must survive a resume
    checkpoint = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)
    means = checkpoint["stages"]["part_means"]["output"]
    before = run_mod.PrivacyLedger.from_json(checkpoint["ledger"])
    run_mod.resume(run_dir, progress=False)
    release = load_release(run_dir)
    assert release.report["plan"]["calibrated_to_noisy_means"] is True
    for model, target in zip(release.models, means):
        assert torch.allclose(_frequencies(model), target.float(), atol=0.015)
    ledger = run_mod.PrivacyLedger.load(run_dir / "release" / "ledger.json")
    # the calibration charged nothing: only the training steps after the checkpoint were added
    assert [(e.stage, e.count) for e in ledger.entries if e.stage != TRAINING_STAGE] == \
        [(e.stage, e.count) for e in before.entries if e.stage != TRAINING_STAGE]
    assert ledger.count(TRAINING_STAGE) == 10 and ledger.count(STAGE) == 1


def test_calibration_needs_the_noisy_means():
    with pytest.raises(ConfigError, match="model.calibrate"):
        tiny_config(Path("."), **{"model.calibrate": "true", "model.output_bias": "default"})


@pytest.mark.parametrize("min_items", [0, 1, 2, 3])
def test_accepted_frequencies_match_brute_force_enumeration(min_items):
    logits = torch.randn(7, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 2
    p = torch.sigmoid(logits)
    joint, accept = torch.zeros(5, dtype=torch.float64), 0.0
    for bits in itertools.product([0, 1], repeat=5):
        x = torch.tensor(bits, dtype=torch.float64)
        prob = torch.prod(p * x + (1 - p) * (1 - x), dim=1).mean()  # mixture over the 7 rows
        if x.sum() >= min_items:
            joint += prob * x
            accept += float(prob)
    assert torch.allclose(accepted_frequencies(logits, min_items), joint / accept, atol=1e-12)


@pytest.mark.parametrize("min_items", [1, 2])
def test_calibration_with_min_items_matches_the_kept_records(min_items):
    model = VAE(6, hidden=[8], latent=2, generator=torch.Generator().manual_seed(4))
    target = torch.tensor([0.05, 0.1, 0.2, 0.3, 0.5, 0.9])
    calibrate_to_means(model, target, min_items=min_items)

    def kept(m: VAE) -> torch.Tensor:
        """The kept records' exact item frequencies given fresh latent draws (other than calibration's)."""
        return accepted_frequencies(m.sample_logits(80_000, torch.Generator().manual_seed(98)), min_items)

    error = (kept(model) - target).abs().max()
    assert error < 0.004  # the latent draws' Monte Carlo error only
    plain = VAE(6, hidden=[8], latent=2, generator=torch.Generator().manual_seed(4))
    calibrate_to_means(plain, target)  # matched before the redraw: biased after it
    assert (kept(plain) - target).abs().max() > max(0.015, 2 * error)


def test_a_run_with_calibrate_total_releases_models_drawing_the_noisy_means_total(tmp_path):
    cfg = tiny_config(tmp_path, **{"model.kind": "conv_vae", "model.options": "{channels: [2, 3]}", "model.calibrate": "total"})
    run = TrainingRun(cfg, tmp_path / "run", progress=False)
    run.start()  # no training steps: the models are at their start, the noisy means as fixed biases
    trained, released = run.training.trainer.released_models(), run.released_models()
    for before, after, probs in zip(trained, released, run.output("part_means")):
        moved = (after.output_bias() - before.output_bias()).detach()
        torch.testing.assert_close(moved, moved[0].expand_as(moved))  # one shift for every pixel
        assert abs(float(moved[0])) > 0.05  # an untrained decoder's total is not the means' total
        total = torch.sigmoid(after.sample_logits(20_000, torch.Generator().manual_seed(5))).sum(1).mean()
        assert float(total) == pytest.approx(float(np.sum(probs)), rel=0.01)


def test_a_tables_size_is_read_off_its_item_sums():
    """Every record of a declared table holds one item per attribute, so the item sums over the attributes give
    the size: a part's means divided by a wrong noisy count come back exact, and then sum to the attributes."""
    rng = np.random.default_rng(0)
    values = [2, 2, 3]  # three attributes, seven items
    x = np.concatenate([np.eye(v)[rng.integers(0, v, 500)] for v in values], axis=1)
    sums = x.sum(axis=0)
    sizes, means = table_parts(np.array([530.0]), (sums / 530.0)[None], attributes=3)
    np.testing.assert_allclose(sizes, [500.0])
    np.testing.assert_allclose(means[0], sums / 500.0)
    assert means.sum() == pytest.approx(3.0)
    given = (np.array([530.0]), (sums / 530.0)[None])
    out = table_parts(*given, attributes=None)  # not a declared table: as they came
    assert out[0] is given[0] and out[1] is given[1]
