"""The batched path (k models as one stack) equals the per-model path, for VAEs and RBMs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from dpgm.config import TrainingConfig
from dpgm.models import RBM, VAE
from dpgm.privacy.accountant import Accountant
from dpgm.training.mixture import MixtureTrainer, RecordStore
from dpgm.training.stacked import StackedLinear, stack_groups, stack_models

N_ITEMS, N_RECORDS = 20, 90


def make_models(k: int = 3, kind: str = "vae") -> list[nn.Module]:
    gen = torch.Generator().manual_seed(11)
    if kind == "rbm":
        models = [RBM(N_ITEMS, n_hidden=16, chains=7, generator=gen) for _ in range(k)]
        with torch.no_grad():  # part 0's gradients are much larger: its C_s differs from part 1's
            models[0].hidden.weight.normal_(0.0, 2.0, generator=gen)
        return models
    models = [VAE(N_ITEMS, hidden=[24], latent=2, generator=gen) for _ in range(k)]
    with torch.no_grad():  # part 0's gradients are much larger: its C_s differs from part 1's
        models[0].decoder[-1].weight.mul_(6.0)
    return models


def make_trainer(models: list[nn.Module], stack: bool, **cfg) -> MixtureTrainer:
    rng = np.random.default_rng(0)
    records = (rng.random((N_RECORDS, N_ITEMS)) < 0.3).astype(np.uint8)
    assignments = np.where(np.arange(N_RECORDS) < 50, 0, 1)  # part 2 holds no record: always an empty batch
    noisy_sizes = np.array([48.7, 43.2, -2.0])  # E_j = q * max(size_j, 1): three different divisors
    settings = {"sampling_rate": 0.2, "noise_multiplier": 1.0, "hist_noise_multiplier": 0.05, "hist_max": 40.0,
                "hist_bins": 40, "optimizer": "adam", "learning_rate": 0.01}
    settings.update(cfg)
    gen = torch.Generator().manual_seed(5)
    return MixtureTrainer(models, RecordStore(records), assignments, noisy_sizes, TrainingConfig(**settings),
                          generator=gen, batched=stack)


def flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@pytest.mark.parametrize(("kind", "clipping", "sigma", "optimizer", "share"), [
    (kind, *settings) for kind in ("vae", "rbm")
    for settings in (("adaptive", 1.0, "adam", None), ("adaptive", 1e-9, "sgd", None), ("fixed", 1.0, "sgd", None))
] + [("vae", "fixed", 1e-9, "sgd", 0.3)])  # per-group clipping: VAEs only (a decoder)
def test_stacked_steps_equal_the_loop_over_dpsgd(kind: str, clipping: str, sigma: float, optimizer: str,
                                                 share: float | None) -> None:
    """Same seed, same batches, same draws: same clip thresholds and the same parameters and optimizer state
    (and, for the RBM, the same persistent chains: its negative phase draws in the same place).

    With sigma ~ 0 and SGD the update is the clipped sum over E_j itself (no noise to hide a wrong sum).
    """
    models = make_models(kind=kind)
    start = [flat(m) for m in models]
    cfg = {"clipping": clipping, "noise_multiplier": sigma, "optimizer": optimizer, "clip_norm": 3.0,
           "decoder_clip_share": share}
    stacked = make_trainer(models, stack=True, **cfg)
    loop = make_trainer(copy.deepcopy(models), stack=False, **cfg)
    assert len(stacked.engine.stacks) == 1 and len(loop.engine.stacks) == 3  # one stack of 3; 3 of one
    for _ in range(4):
        got = stacked.step(Accountant(delta=1e-5))
        want = loop.step(Accountant(delta=1e-5))
        assert got.clip_norms == want.clip_norms and got.batch_sizes == want.batch_sizes
        assert got.batch_sizes[2] == 0 and got.batch_sizes[0] > 0 and got.batch_sizes[1] > 0
        assert got.loss == pytest.approx(want.loss, rel=1e-5)
    if clipping == "adaptive":
        assert got.clip_norms[0] != got.clip_norms[1]  # each part has its own threshold
    for j, (a, b) in enumerate(zip(stacked.models, loop.models)):
        if j < 2 or sigma == 1.0:  # every part stepped, the empty one too (by noise alone)
            assert not torch.allclose(flat(a), start[j])
        torch.testing.assert_close(flat(a), flat(b), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(list(a.buffers()), list(b.buffers()))
    mine, theirs = stacked.state_dict(), loop.state_dict()
    for a, b in zip(mine["optimizers"], theirs["optimizers"]):
        assert a["param_groups"] == b["param_groups"]
        for i in a["state"]:
            for key in a["state"][i]:
                # Adam's second moments square the gradients: twice the relative rounding of the parameters
                torch.testing.assert_close(a["state"][i][key], b["state"][i][key], rtol=3e-5, atol=1e-5)


def test_state_dict_moves_between_paths() -> None:
    """A loop trainer's checkpoint resumes on the stacked path (and the trainer's models are the state)."""
    loop = make_trainer(make_models(), stack=False)
    loop.step(Accountant(delta=1e-5))
    state = copy.deepcopy(loop.state_dict())  # as a checkpoint file would: no tensor shared with the loop
    stacked = make_trainer(make_models(), stack=True)
    stacked.load_state_dict(state)
    stacked.generator.set_state(loop.generator.get_state())
    stacked.step(Accountant(delta=1e-5))
    loop.step(Accountant(delta=1e-5))
    for a, b in zip(stacked.models, loop.models):
        torch.testing.assert_close(flat(a), flat(b), rtol=1e-5, atol=1e-6)
    assert stacked.state_dict().keys() == state.keys()


def test_stacked_linear_applies_each_layer_to_its_own_batch() -> None:
    gen = torch.Generator().manual_seed(2)
    layers = [nn.Linear(5, 3) for _ in range(4)]
    stack = StackedLinear(layers)
    x = torch.randn(4, 6, 5, generator=gen)
    torch.testing.assert_close(stack(x), torch.stack([layer(x[j]) for j, layer in enumerate(layers)]))
    with torch.no_grad():
        layers[2].weight.add_(1.0)
    stack.refresh()
    torch.testing.assert_close(stack(x)[2], layers[2](x[2]))


def test_a_stacked_models_parameters_are_views_of_its_row_and_a_replaced_one_is_bound_again() -> None:
    """An optimizer step on a model moves the stack with no copy; a parameter replaced after stacking (a new
    tensor, not a view of the stack) is copied in at the next refresh; a copy of a model holds its own values."""
    models = make_models()
    before = [flat(m) for m in models]
    stack = stack_models(models)
    for m, values in zip(models, before):  # stacking keeps every model's values
        torch.testing.assert_close(flat(m), values)
    layer, stacked = models[1].decoder[-1], stack.decoder[-1]
    assert stacked.weight.untyped_storage().data_ptr() == layer.weight.untyped_storage().data_ptr()
    with torch.no_grad():
        layer.weight.add_(1.0)  # in place, as an optimizer steps
    torch.testing.assert_close(stacked.weight[1], layer.weight)
    with torch.no_grad():
        layer.bias.data = torch.full_like(layer.bias, 3.0)  # replaced: no longer the stack's row
    assert not torch.equal(stacked.bias[1], layer.bias)
    stacked.refresh()
    torch.testing.assert_close(stacked.bias[1], torch.full_like(layer.bias, 3.0))
    with torch.no_grad():
        layer.bias.sub_(1.0)  # bound again: in place moves the stack
    torch.testing.assert_close(stacked.bias[1], torch.full_like(layer.bias, 2.0))
    own = copy.deepcopy(models[2])
    assert all(p.untyped_storage().nbytes() == p.numel() * p.element_size() for p in own.parameters())
    torch.testing.assert_close(flat(own), flat(models[2]))


def test_the_release_file_holds_each_stacked_model_once(tmp_path) -> None:
    """Saved beside each other, stacked models' tensors are their own values, not the stack they are views of."""
    from dpgm.artifact import save_models
    from dpgm.config import ModelConfig

    models = make_models()
    stack_models(models)
    save_models(tmp_path, models, np.array([30.0, 30.0, 30.0]), ModelConfig(kind="vae", options={"hidden": [24]}),
                [f"i{j}" for j in range(N_ITEMS)], None)
    saved = torch.load(tmp_path / "models.pt", weights_only=False)["state_dicts"]
    for state, model in zip(saved, models):
        assert all(v.untyped_storage().nbytes() == v.numel() * v.element_size() for v in state.values())
        torch.testing.assert_close(torch.cat([v.reshape(-1) for v in state.values()]), flat(model))


def test_models_of_one_type_and_shape_stack() -> None:
    assert stack_groups(make_models()) == [[0, 1, 2]]
    assert stack_groups(make_models(kind="rbm")) == [[0, 1, 2]]
    assert stack_groups([VAE(N_ITEMS, hidden=[24]), VAE(N_ITEMS, hidden=[16]), VAE(N_ITEMS, hidden=[24])]) == [[0, 2], [1]]
    assert stack_groups([RBM(N_ITEMS, n_hidden=4), VAE(N_ITEMS, hidden=[4])]) == [[0], [1]]
    trainer = make_trainer([VAE(N_ITEMS, hidden=[24]), VAE(N_ITEMS, hidden=[16]), VAE(N_ITEMS, hidden=[24])], stack=True)
    assert [s.parts for s in trainer.engine.stacks] == [[0, 2], [1]]  # two stacks, one batched pass each
    with pytest.raises(ValueError):
        stack_models([VAE(N_ITEMS, hidden=[24]), VAE(N_ITEMS, hidden=[16])])


def test_parts_of_very_different_expected_batch_sizes_stack_apart() -> None:
    """A stack pads every batch to its largest: parts within a factor 2 of each other stack together
    (all batches under 64 rows in one stack)."""
    models = make_models() + make_models()
    assert stack_groups(models, [10.0, 900.0, 12.0, 1000.0, 0.3, 300.0]) == [[0, 2, 4], [1, 3], [5]]


def test_mixed_shapes_equal_the_per_model_path() -> None:
    """Stacks of unequal size in one step give what one model at a time gives."""
    gen = torch.Generator().manual_seed(3)
    models = [VAE(N_ITEMS, hidden=[24], generator=gen), VAE(N_ITEMS, hidden=[16], generator=gen),
              VAE(N_ITEMS, hidden=[24], generator=gen)]
    stacked = make_trainer(models, stack=True)
    loop = make_trainer(copy.deepcopy(models), stack=False)
    for _ in range(3):
        got, want = stacked.step(Accountant(delta=1e-5)), loop.step(Accountant(delta=1e-5))
        assert got.clip_norms == want.clip_norms and got.batch_sizes == want.batch_sizes
    for a, b in zip(stacked.models, loop.models):
        torch.testing.assert_close(flat(a), flat(b), rtol=1e-5, atol=1e-6)


def test_stacked_vaes_with_several_draws_equal_the_loop() -> None:
    """K draws per record on the stacked path (noise padded [g, B_max, K, latent]) equal the per-model path."""
    gen = torch.Generator().manual_seed(12)
    models = [VAE(N_ITEMS, hidden=[24], latent=2, draws=3, generator=gen) for _ in range(3)]
    stacked = make_trainer(models, stack=True, clipping="fixed", clip_norm=0.5)
    loop = make_trainer(copy.deepcopy(models), stack=False, clipping="fixed", clip_norm=0.5)
    for _ in range(3):
        assert stacked.step(Accountant(delta=1e-5)).loss == pytest.approx(loop.step(Accountant(delta=1e-5)).loss, rel=1e-5)
    for a, b in zip(stacked.models, loop.models):
        torch.testing.assert_close(flat(a), flat(b), rtol=1e-5, atol=1e-6)
