"""The table VAE: one softmax per attribute (its loss, draws and calibration), ghost clipping, stacking, a release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from dpgm.config import ModelConfig
from dpgm.errors import ConfigError
from dpgm.models import GenerativeModel, TableVAE, build_model
from dpgm.models.table_vae import Attributes
from dpgm.stages.part_means import calibrate_to_means, start_at_means
from dpgm.training.per_sample import GhostClipper

SIZES = [3, 1, 4, 2]


def one_hot(codes: np.ndarray, sizes: list[int] = SIZES) -> torch.Tensor:
    """Records of one value per attribute (codes [n, T]) as items."""
    starts = np.cumsum([0, *sizes[:-1]])
    x = torch.zeros(len(codes), sum(sizes), dtype=torch.float64)
    x[np.arange(len(codes))[:, None], codes + starts] = 1.0
    return x


def test_the_loss_is_each_attributes_categorical_likelihood_plus_the_kl() -> None:
    gen = torch.Generator().manual_seed(0)
    model = TableVAE(10, SIZES, hidden=[6], latent=2, generator=gen).double()
    assert isinstance(model, GenerativeModel)
    x = one_hot(np.array([[0, 0, 3, 1], [2, 0, 0, 0]]))
    eps = torch.randn(2, 2, generator=gen, dtype=torch.float64)
    stats = model.encoder(x)
    mu, logvar = stats[:, :2], stats[:, 2:]
    logits = model.decoder(mu + torch.exp(0.5 * logvar) * eps)
    starts = np.cumsum([0, *SIZES[:-1]])
    nll = -sum(torch.log_softmax(logits[:, s:s + n], dim=1)[x[:, s:s + n].bool()] for s, n in zip(starts, SIZES))
    kl = 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(1)
    torch.testing.assert_close(model(x, eps), nll + kl)
    # a one-value attribute costs nothing; the loss differs from the Bernoulli VAE's
    assert torch.allclose(model.attributes.log_softmax(logits)[:, 3], torch.zeros(2, dtype=torch.float64))


def test_each_attributes_log_softmax_is_its_own_where_the_logits_are_huge() -> None:
    attributes = Attributes([2, 3])
    logits = torch.tensor([[1000.0, 999.0, -1000.0, -1001.0, -1002.0]], dtype=torch.float64)
    got = attributes.log_softmax(logits).exp()
    want = torch.cat([torch.softmax(logits[:, :2], 1), torch.softmax(logits[:, 2:], 1)], 1)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("systematic", [True, False])
def test_a_record_holds_one_value_of_each_attribute_at_the_models_probabilities(systematic: bool) -> None:
    attributes = Attributes(SIZES)
    probs = torch.tensor([0.2, 0.5, 0.3, 1.0, 0.1, 0.0, 0.6, 0.3, 0.25, 0.75], dtype=torch.float64)
    n = 40_000
    uniforms = torch.rand(n, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    draws = attributes.draw(probs.expand(n, -1), uniforms)
    assert torch.equal(attributes.sums(draws), torch.ones(n, 4, dtype=torch.float64))
    torch.testing.assert_close(draws.mean(0), probs, atol=0.01, rtol=0)
    assert draws[:, 5].sum() == 0  # a value of probability 0 is never drawn
    model = TableVAE(10, SIZES, hidden=[5], latent=2, generator=torch.Generator().manual_seed(2))
    records = model.sample(500, torch.Generator().manual_seed(3), systematic=systematic)
    assert torch.equal(model.attributes.sums(records), torch.ones(500, 4))


def test_systematic_draws_keep_each_values_count_closer_to_its_expectation() -> None:
    model = TableVAE(10, SIZES, hidden=[5], latent=2, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model.decoder[-1].weight.zero_()  # every record the same probabilities: the bias's softmax
    expected = 1000 * model.sample_probs(1, None)[0]
    spread = {s: torch.stack([model.sample(1000, torch.Generator().manual_seed(i), systematic=s).sum(0) - expected
                              for i in range(20)]).abs().max() for s in (True, False)}
    assert spread[True] <= 1.0 < spread[False]


def test_ghost_clipping_gives_the_per_record_gradients_of_the_table_loss() -> None:
    gen = torch.Generator().manual_seed(4)
    model = TableVAE(10, SIZES, hidden=[7], latent=3, generator=gen).double()
    x = one_hot(np.stack([np.random.default_rng(0).integers(0, n, 6) for n in SIZES], 1))
    eps = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    ghost = GhostClipper(model).compute(lambda: model(x, eps))
    params = [p for p in model.parameters() if p.requires_grad]
    for i in range(6):
        g = torch.autograd.grad(model(x[i:i + 1], eps[i:i + 1]).sum(), params)
        torch.testing.assert_close(ghost.norms[i], torch.sqrt(sum(t.pow(2).sum() for t in g)))


def test_start_and_calibration_meet_each_attributes_frequencies() -> None:
    model = TableVAE(10, SIZES, hidden=[6], latent=2, generator=torch.Generator().manual_seed(5))
    target = torch.tensor([0.6, 0.3, 0.1, 1.0, 0.05, 0.15, 0.3, 0.5, 0.9, 0.1])
    with torch.no_grad():
        model.decoder[-1].weight.zero_()
    start_at_means(model, target)
    torch.testing.assert_close(model.sample_probs(3, None)[0], target)  # log p: the softmax gives p back
    with torch.no_grad():
        model.decoder[-1].weight.normal_(0.0, 2.0, generator=torch.Generator().manual_seed(6))
    calibrate_to_means(model, target)
    mean = model.sample_probs(20_000, torch.Generator().manual_seed(0)).mean(0)  # the calibration's own stream
    torch.testing.assert_close(mean, target, atol=2e-3, rtol=0)


def test_build_model_needs_the_attribute_sizes_and_they_must_add_up() -> None:
    cfg = ModelConfig(kind="table_vae", options={"hidden": [4], "latent": 2, "attribute_sizes": [3, 2]})
    model = build_model(cfg, 5)
    assert isinstance(model, nn.Module) and model.attributes.sizes.tolist() == [3, 2]
    with pytest.raises(ConfigError, match="attribute_sizes"):
        build_model(ModelConfig(kind="table_vae"), 5)
    with pytest.raises(ConfigError, match="add up to 5"):
        build_model(cfg, 6)


def test_a_declared_table_trained_by_dpsgd_keeps_a_link_and_one_value_per_column() -> None:
    """Through dpgm.Synthesizer: the stated kind is kept, its DP-SGD is on the ledger within epsilon, and the
    release keeps b's dependence on a."""
    import dpgm

    rng = np.random.default_rng(0)
    n = 6000
    a = rng.choice(["x", "y"], n, p=[0.6, 0.4])
    b = np.where(a == "x", rng.choice(["p", "q"], n, p=[0.9, 0.1]), rng.choice(["p", "q"], n, p=[0.15, 0.85]))
    frame = pd.DataFrame({"a": a, "b": b, "c": rng.integers(0, 5, n)})
    schema = {"columns": [{"name": "a", "kind": "categorical", "categories": ["x", "y"]},
                          {"name": "b", "kind": "categorical", "categories": ["p", "q"]},
                          {"name": "c", "kind": "integer", "lower": 0, "upper": 4}]}
    synth = dpgm.Synthesizer(epsilon=4, schema=schema, seed=0,
                             options={"model.kind": "table_vae", "threads": 1}).fit(frame)
    report = synth.privacy_report
    assert report["epsilon"] <= 4.0 + 1e-9 and "training" in report["stage_epsilons"]
    out = synth.sample(4000, seed=1)
    assert out["a"].notna().all() and out["b"].notna().all() and out["c"].between(0, 4).all()
    given_x, given_y = (out["b"][out["a"] == v].eq("p").mean() for v in ("x", "y"))
    assert given_x > 0.75 and given_y < 0.35


def test_a_table_vae_needs_a_schema_and_its_values_calibrated_per_column() -> None:
    from dpgm.config import config_from_dict

    base = {"data": {"source": "transactions", "path": "x.txt", "n_items": 5},
            "model": {"kind": "table_vae"}, "runs_dir": "runs"}
    with pytest.raises(ConfigError, match="table_vae needs data.attribute_sizes"):
        config_from_dict(base)
    declared = {**base, "data": {**base["data"], "attribute_sizes": [3, 2]}}
    assert config_from_dict(declared).model.options["attribute_sizes"] == [3, 2]
    with pytest.raises(ConfigError, match="model.calibrate"):
        config_from_dict({**declared, "model": {"kind": "table_vae", "calibrate": "total"}})
