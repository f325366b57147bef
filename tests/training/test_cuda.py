"""A run on a GPU (``device: cuda``) is the CPU run: the same ledger, the same draws from the run's CPU
streams (dpgm.streams), the same releases up to float rounding, and a release that samples where no
GPU is. The GPU tests are skipped where torch sees no CUDA device."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.pipeline.run import train
from dpgm.privacy.mechanisms import standard_normal_
from dpgm.release import sample_dataset
from dpgm.streams import draw_device
from tests.training.test_run import tiny_config

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: a GPU machine runs these")


def ledger(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "release" / "ledger.json").read_text())["entries"]


def trained(tmp_path: Path, device: str, over: dict[str, str], name: str) -> tuple[Path, dict]:
    run_dir, report = train(tiny_config(tmp_path, device=device, name=name, **over), progress=False)
    return Path(run_dir), report


def assert_same_run(tmp_path: Path, device: str, over: dict[str, str]) -> None:
    """``device``'s run of the tiny config against the CPU's: ledger, noisy sizes, models, samples."""
    cpu_dir, cpu = trained(tmp_path, "cpu", over, "on_cpu")
    dev_dir, dev = trained(tmp_path, device, over, "on_device")
    assert ledger(dev_dir) == ledger(cpu_dir)
    assert dev["epsilon"] == cpu["epsilon"]
    np.testing.assert_allclose(dev["noisy_part_sizes"], cpu["noisy_part_sizes"], rtol=1e-6)
    for a, b in zip(load_release(dev_dir).models, load_release(cpu_dir).models):
        for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
            assert x.device.type == "cpu", name  # a GPU run's release loads on a machine without one
            torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-3, msg=name)
    ours, theirs = sample_dataset(dev_dir, 400, seed=1), sample_dataset(cpu_dir, 400, seed=1)
    differ = abs(ours.records.astype(np.int8) - theirs.records.astype(np.int8)).sum()
    assert differ <= 0.01 * ours.records.shape[0] * ours.records.shape[1]


def test_a_cpu_generator_draws_on_the_cpu_for_any_device():
    assert draw_device(torch.Generator(), "cuda") == torch.device("cpu")
    assert draw_device(None, "cuda") == torch.device("cuda")


def test_a_buffer_on_another_device_gets_the_generators_draws():
    """The mismatch branch of ``standard_normal_`` (a meta buffer stands for a GPU's): it draws the same numbers
    from the stream as a buffer on the generator's device, in plain and in secure mode."""
    for secure in (False, True):
        direct, via = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        expected = standard_normal_(torch.empty(3, 4), direct, secure=secure)
        standard_normal_(torch.empty(3, 4, device="meta"), via, secure=secure)
        torch.testing.assert_close(torch.randn(2, generator=via), torch.randn(2, generator=direct))
        assert expected.abs().sum() > 0


@cuda
@pytest.mark.parametrize("over", [{}, {"model.kind": "rbm", "model.rbm_hidden": "16"}, {"privacy.secure_mode": "true"}],
                         ids=["vae", "rbm", "secure"])
def test_a_gpu_run_is_the_cpu_run(tmp_path, over):
    assert_same_run(tmp_path, "cuda", over)


def test_the_comparison_itself_holds_for_two_cpu_runs(tmp_path):
    """The check the GPU tests make passes for the CPU against itself (it can fail: see the GPU tests)."""
    assert_same_run(tmp_path, "cpu", {})
