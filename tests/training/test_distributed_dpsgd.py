"""DP-SGD over two gloo ranks: each rank clips and sums its records' gradients, one all-reduce, the
noise added once. Without noise (a test-only patch) the gradients are the one-process ones; with
noise every rank steps with the same gradient; each rank Poisson-samples on its own stream."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests._forked import queue, spawn

WORLD = 2


def no_step_noise(setattr: Any) -> None:
    """Test-only: no per-record model noise (the VAE's reparameterisation), so gradients are exact."""
    from dpgm.models import VAE

    setattr(VAE, "step_noise", lambda self, n, generator: torch.zeros(n, self.latent))


def no_gradient_noise(setattr: Any) -> None:
    """Test-only: no DP-SGD gradient noise."""
    from dpgm.training import dpsgd

    setattr(dpsgd, "standard_normal_", lambda buffer, generator, secure=False: buffer.zero_())


def gradients(rows: torch.Tensor, clipping: str) -> list[torch.Tensor]:
    """One step's privatised gradients of a small VAE on ``rows``, from seed 0."""
    from dpgm.models import VAE
    from dpgm.training.dpsgd import DPSGD, Mechanism

    model = VAE(12, hidden=[8], latent=2, generator=torch.Generator().manual_seed(0))
    engine = DPSGD([model], Mechanism(sampling_rate=0.1, noise_multiplier=1.0, clipping=clipping, clip_norm=0.5,
                                      hist_bins=20, hist_max=5.0),
                   expected_batch_sizes=[8.0], optimizers=[torch.optim.SGD(model.parameters(), lr=0.1)],
                   generator=torch.Generator().manual_seed(1))
    grads, _ = engine.privatised_gradients(rows)
    return [g.clone() for g in grads[0]]


def batch() -> torch.Tensor:
    return (torch.rand(40, 12, generator=torch.Generator().manual_seed(5)) < 0.3).double().float()


def rank_main(rank: int, init: str, out: Any) -> None:
    import torch.distributed as dist

    from dpgm.training.mixture import rank_seed, step_generator
    from tests.test_distributed import leave

    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    try:
        mine = batch()[rank::WORLD]
        no_step_noise(setattr)
        noisy = {c: gradients(mine, c) for c in ("fixed", "adaptive")}
        seed = rank_seed(torch.Generator().manual_seed(2))
        draws = torch.rand(8, generator=step_generator(torch.Generator(), seed, 3))
        no_gradient_noise(setattr)
        exact = {c: gradients(mine, c) for c in ("fixed", "adaptive")}
        plain = lambda grads: {c: [g.numpy() for g in v] for c, v in grads.items()}  # arrays: no shared memory
        out.put((rank, plain(noisy), plain(exact), draws.numpy()))
        leave(dist)
    finally:
        dist.destroy_process_group()


def test_two_ranks_sum_their_clipped_gradients_and_add_the_noise_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = queue()
    spawn(rank_main, (f"file://{tmp_path / 'init'}", out), WORLD)
    results = {rank: rest for rank, *rest in (out.get() for _ in range(WORLD))}
    (noisy0, exact0, draws0), (noisy1, _, draws1) = results[0], results[1]
    for clipping in ("fixed", "adaptive"):
        for a, b in zip(noisy0[clipping], noisy1[clipping]):
            assert np.array_equal(a, b)  # every rank steps with the same gradient
    assert not np.array_equal(draws0, draws1)  # each rank samples its records on its own stream
    noise = np.concatenate([(a - b).ravel() for a, b in zip(noisy0["fixed"], exact0["fixed"])])
    assert 0.9 < noise.std() / (1.0 * 0.5 / 8.0) < 1.1  # sigma C / E: one rank's noise, not two ranks'
    no_step_noise(monkeypatch.setattr)
    no_gradient_noise(monkeypatch.setattr)
    for clipping in ("fixed", "adaptive"):
        alone = gradients(batch(), clipping)
        for a, b in zip(exact0[clipping], alone):
            assert np.allclose(a, b.numpy(), atol=1e-6)  # the clipped sums over every rank's records
        assert any(not np.allclose(a, b.numpy()) for a, b in zip(noisy0[clipping], alone))  # noise: not the sum
