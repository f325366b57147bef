"""Sparse records train as BinaryRows (their ones) and give what their dense copies give."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

from dpgm.config import TrainingConfig
from dpgm.models import VAE
from dpgm.models.binary_rows import BinaryRows
from dpgm.privacy.accountant import Accountant
from dpgm.training.mixture import MixtureTrainer, RecordStore
from dpgm.training.stacked import ModelStack
from tests.training.test_stacked import N_ITEMS, N_RECORDS, flat, make_models


def trainer(models: list[nn.Module], records: np.ndarray | sp.csr_matrix, stack: bool) -> MixtureTrainer:
    assignments = np.where(np.arange(N_RECORDS) < 50, 0, 1)  # part 2 holds no record
    cfg = TrainingConfig(sampling_rate=0.2, noise_multiplier=1.0, clipping="fixed", clip_norm=3.0,
                         optimizer="adam", learning_rate=0.01)
    return MixtureTrainer(models, RecordStore(records), assignments, np.array([48.7, 43.2, -2.0]), cfg,
                          generator=torch.Generator().manual_seed(5), batched=stack)


def dense_records() -> np.ndarray:
    return (np.random.default_rng(0).random((N_RECORDS, N_ITEMS)) < 0.3).astype(np.uint8)


def test_the_store_hands_over_the_ones_of_sparse_records() -> None:
    dense = dense_records()
    index = np.array([7, 3, 50, 88])
    rows = RecordStore(sp.csr_matrix(dense)).rows(index)
    assert isinstance(rows, BinaryRows)
    assert torch.equal(rows.dense(), RecordStore(dense).rows(index))


@pytest.mark.parametrize(("kind", "stack"), [("vae", True), ("vae", False), ("rbm", True)])
def test_sparse_records_train_as_their_dense_copy(kind: str, stack: bool) -> None:
    """Same seed and draws: a VAE reads the ones (equal up to float rounding); an RBM reads them dense (equal)."""
    models = make_models(kind=kind)
    sparse = trainer(models, sp.csr_matrix(dense_records()), stack)
    dense = trainer(copy.deepcopy(models), dense_records(), stack)
    for _ in range(4):
        got, want = sparse.step(Accountant(delta=1e-5)), dense.step(Accountant(delta=1e-5))
        assert got.batch_sizes == want.batch_sizes and got.loss == pytest.approx(want.loss, rel=1e-5)
    for a, b in zip(sparse.models, dense.models):
        if kind == "rbm":
            assert torch.equal(flat(a), flat(b))
        else:
            torch.testing.assert_close(flat(a), flat(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("draws", [1, 3])
def test_a_stack_gives_the_dense_norms_and_clipped_sums(draws: int) -> None:
    """Ghost norms and clipped sums of three stacked VAEs on a padded sparse batch: those of the dense batch."""
    gen = torch.Generator().manual_seed(3)
    models = [VAE(N_ITEMS, hidden=[6], latent=2, draws=draws, generator=gen).double() for _ in range(3)]
    stack = ModelStack([0, 1, 2], models, ("decoder",))
    stack.refresh()
    x = BinaryRows.from_csr(sp.csr_matrix(dense_records()[:30]))
    local = torch.tensor([0] * 12 + [1] * 3 + [2] * 15)
    noise = models[0].step_noise(30, gen)
    sparse, dense = stack.ghost_pass(x, local, noise), stack.ghost_pass(x.dense(torch.float64), local, noise)
    torch.testing.assert_close(sparse.norms, dense.norms)
    torch.testing.assert_close(sparse.group_norms, dense.group_norms)
    torch.testing.assert_close(sparse.losses, dense.losses)
    weights = torch.rand(2, 30, generator=gen, dtype=torch.float64)  # one per clipping group and record
    sums = []
    for done in (sparse, dense):
        for g in stack.grads:
            g.zero_()
        stack.add_clipped_sum(done, weights)
        sums.append([g.clone() for g in stack.grads])
        for g in stack.grads:  # written over: the same sums whatever the buffers held
            g.fill_(float("nan"))
        stack.add_clipped_sum(done, weights, overwrite=True)
        torch.testing.assert_close(stack.grads, sums[-1])
    for a, b in zip(*sums):
        torch.testing.assert_close(a, b)
