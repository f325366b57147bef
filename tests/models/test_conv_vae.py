"""The convolutional VAE: shapes, a fixed per-pixel output bias, config and release round trip."""

from __future__ import annotations

import pytest
import torch

from dpgm.artifact import load_release, save_models
from dpgm.config import ModelConfig
from dpgm.errors import ConfigError
from dpgm.models import ConvVAE, GenerativeModel, build_model
from dpgm.stages.part_means import start_at_means
from dpgm.training.stacked import stack_groups


def test_shapes_and_protocol() -> None:
    model = ConvVAE(784, channels=[4, 8], latent=5, generator=torch.Generator().manual_seed(0))
    assert isinstance(model, GenerativeModel)
    x = (torch.rand(6, 784) < 0.3).float()
    assert model.loss_per_record(x, torch.Generator().manual_seed(1)).shape == (6,)
    assert model.sample_logits(3, None).shape == (3, 784) and model.sample(2, None).shape == (2, 784)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels) for c in convs] == [(1, 4), (4, 8), (8, 4), (4, 1)]


def test_output_bias_is_a_fixed_per_pixel_offset_set_from_the_means() -> None:
    model = ConvVAE(64, channels=[2, 3], latent=2, generator=torch.Generator().manual_seed(0))
    probs = torch.linspace(0.05, 0.95, 64)
    before = model.sample_logits(4, torch.Generator().manual_seed(3))
    start_at_means(model, probs)
    assert not model.output_bias().requires_grad and model.output_bias().shape == (64,)
    after = model.sample_logits(4, torch.Generator().manual_seed(3))
    torch.testing.assert_close(after - before, torch.logit(probs).expand(4, 64))
    assert all(p is not model.output_bias() for p in model.parameters() if p.requires_grad)


def test_generator_makes_initialisation_reproducible() -> None:
    a, b = (ConvVAE(64, channels=[2, 3], latent=2, generator=torch.Generator().manual_seed(4)) for _ in range(2))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("n_items", [63, 99, 9])  # not square, or smaller than 4 x 4
def test_images_that_are_not_square_or_too_small_are_refused(n_items) -> None:
    with pytest.raises(ConfigError, match="conv_vae"):
        ConvVAE(n_items)


@pytest.mark.parametrize(("side", "channels", "sides"), [(28, [8, 16], [28, 14, 7]), (28, [8, 16, 16], [28, 14, 7, 4]),
                                                          (10, [2, 3], [10, 5, 3]), (6, [2], [6, 3])])
def test_each_convolution_halves_the_side_and_the_decoder_mirrors_it(side, channels, sides) -> None:
    model = ConvVAE(side * side, channels=channels, latent=3, generator=torch.Generator().manual_seed(0))
    x = torch.zeros(2, 1, side, side)
    seen = [side]
    for layer in model.encoder[1:-2]:  # the convolutions and their ReLUs, before Flatten and Linear
        x = layer(x)
        if isinstance(layer, torch.nn.Conv2d):
            seen.append(x.shape[-1])
    assert seen == sides
    ups = [m.size for m in model.decoder if isinstance(m, torch.nn.Upsample)]
    assert ups == sides[-2::-1]
    assert model.sample_logits(2, None).shape == (2, side * side)


def test_config_builds_it_and_the_release_round_trips(tmp_path) -> None:
    cfg = ModelConfig(kind="conv_vae", options={"channels": [3, 5], "latent": 4})
    models = [build_model(cfg, 64, generator=torch.Generator().manual_seed(j)) for j in range(2)]
    (tmp_path / "privacy_report.json").write_text('{"epsilon": 1.0, "delta": 1e-5}')
    save_models(tmp_path, models, [10.0, 20.0], cfg, [f"px{j}" for j in range(64)], (8, 8))
    loaded = load_release(tmp_path).models
    for a, b in zip(models, loaded):
        assert isinstance(b, ConvVAE) and b.channels == [3, 5]
        assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    with pytest.raises(ConfigError, match="channels"):
        build_model(ModelConfig(kind="conv_vae", options={"channels": []}), 64)
    with pytest.raises(ConfigError, match="channels"):
        build_model(ModelConfig(kind="conv_vae", options={"channels": [3, 0]}), 64)


def test_models_with_convolutions_step_alone() -> None:
    """Only nn.Linear layers stack: each conv model is a stack of one (which runs the model itself)."""
    models = [ConvVAE(64, channels=[2, 3], latent=2) for _ in range(3)]
    assert stack_groups(models, [10.0, 10.0, 10.0]) == [[0], [1], [2]]


def test_a_digits_run_trains_and_releases_conv_vaes(tmp_path) -> None:
    """The whole pipeline with conv_vae on 8x8 digits: the release loads and draws images, and its
    parts started at their noisy mean images."""
    from dpgm.pipeline import run as run_mod
    from dpgm.release import sample_chunks
    from tests.training.test_run import tiny_config

    cfg = tiny_config(tmp_path, **{"model.kind": "conv_vae", "model.options": "{channels: [2, 3]}", "model.output_bias": "noisy_mean",
                                   "training.epochs": 2})
    run_dir, report = run_mod.train(cfg, progress=False)
    mixture = load_release(run_dir)
    assert report["plan"]["model"] == "conv_vae" and report["plan"]["steps_taken"] == report["plan"]["steps_planned"] > 0
    assert all(isinstance(m, ConvVAE) for m in mixture.models)
    assert all(bool((m.output_bias() != 0).any()) for m in mixture.models)  # the noisy mean logits
    records, _ = next(sample_chunks(mixture, 50, torch.Generator().manual_seed(1)))
    assert records.shape == (50, 64) and set(records.ravel().tolist()) <= {0, 1}


def test_a_dp_sgd_step_moves_every_trainable_layer() -> None:
    import numpy as np

    from dpgm.config import TrainingConfig
    from dpgm.privacy.accountant import Accountant
    from dpgm.training.mixture import MixtureTrainer, RecordStore

    models = [ConvVAE(64, channels=[2, 3], latent=2, generator=torch.Generator().manual_seed(j)) for j in range(2)]
    before = [[p.detach().clone() for p in m.parameters()] for m in models]
    records = (np.random.default_rng(0).random((40, 64)) < 0.3).astype(np.uint8)
    cfg = TrainingConfig(sampling_rate=0.5, noise_multiplier=0.5, clipping="fixed", learning_rate=0.01)
    trainer = MixtureTrainer(models, RecordStore(records), np.arange(40) % 2, np.array([20.0, 20.0]), cfg,
                             generator=torch.Generator().manual_seed(1))
    trainer.step(Accountant(delta=1e-5))
    for model, old in zip(models, before):
        for p, o in zip(model.parameters(), old):
            assert torch.equal(p, o) != p.requires_grad  # trained layers moved, the fixed pixel bias did not


def test_norm_adds_a_group_norm_without_parameters_after_each_hidden_convolution(tmp_path) -> None:
    model = ConvVAE(64, channels=[4, 6], latent=3, norm=True, generator=torch.Generator().manual_seed(0))
    norms = [m for m in model.modules() if isinstance(m, torch.nn.GroupNorm)]
    assert [(n.num_groups, n.num_channels) for n in norms] == [(1, 4), (3, 6), (1, 4)]  # groups of up to 4 channels
    assert all(not n.affine and not list(n.parameters()) for n in norms)
    assert not isinstance(model.decoder[-3], torch.nn.GroupNorm)  # the logits are not normalised
    plain = ConvVAE(64, channels=[4, 6], latent=3, generator=torch.Generator().manual_seed(0))
    assert plain.state_dict().keys() != model.state_dict().keys()  # layers shift, the weights are the same draws
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), model.parameters()))
    cfg = ModelConfig(kind="conv_vae", options={"channels": [4, 6], "latent": 3, "norm": True})
    (tmp_path / "privacy_report.json").write_text('{"epsilon": 1.0, "delta": 1e-5}')
    save_models(tmp_path, [model], [10.0], cfg, [f"px{j}" for j in range(64)], (8, 8))
    loaded = load_release(tmp_path).models[0]
    torch.testing.assert_close(loaded.sample_logits(3, torch.Generator().manual_seed(1)),
                               model.sample_logits(3, torch.Generator().manual_seed(1)))


def test_a_digits_run_with_a_decoder_clip_share_trains_and_an_rbm_config_is_refused(tmp_path) -> None:
    """training.decoder_clip_share through the pipeline: conv VAEs train with the same ledger as one clip; a
    model without a decoder is a one-line ConfigError when the config loads."""
    from dpgm.errors import ConfigError
    from dpgm.pipeline import run as run_mod
    from tests.training.test_run import tiny_config

    base = {"model.kind": "conv_vae", "model.options": "{channels: [2, 3]}", "training.clipping": "fixed",
            "training.epochs": 1}
    _, grouped = run_mod.train(tiny_config(tmp_path / "a", **base, **{"training.decoder_clip_share": 0.6}), progress=False)
    _, flat = run_mod.train(tiny_config(tmp_path / "b", **base), progress=False)
    assert grouped["epsilon"] == flat["epsilon"] and grouped["plan"]["steps_taken"] == flat["plan"]["steps_taken"] > 0
    assert grouped["plan"]["decoder_clip_share"] == 0.6 and "decoder_clip_share" not in flat["plan"]
    with pytest.raises(ConfigError, match="decoder_clip_share: needs a model with a decoder"):  # on load
        tiny_config(tmp_path / "c", **{"model.kind": "rbm", "training.clipping": "fixed", "training.decoder_clip_share": 0.6})
