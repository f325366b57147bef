"""A run on a GPU (``device: cuda``) keeps the CPU run's ledger, and a release that samples where no GPU is.
With ``training.device_noise: false`` it is the CPU run: the same draws from the run's CPU streams
(dpgm.streams), the same releases up to float rounding. By default its gradient noise is drawn on the GPU
from a generator reseeded every step by one draw of the stream: other numbers, which replay and resume.
The GPU tests are skipped where torch sees no CUDA device."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.pipeline.run import resume, train
from dpgm.privacy.mechanisms import standard_normal_
from dpgm.release import sample_dataset
from dpgm.streams import SEED_BOUND, draw_device, reseed
from dpgm.training.dpsgd import DPSGD
from tests.training.test_dpsgd import ZeroGradient, flat, make_dpsgd
from tests.training.test_run import killed_run, tiny_config

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: a GPU machine runs these")


def ledger(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "release" / "ledger.json").read_text())["entries"]


def trained(tmp_path: Path, device: str, over: dict[str, str], name: str) -> tuple[Path, dict]:
    run_dir, report = train(tiny_config(tmp_path, device=device, name=name, **over), progress=False)
    return Path(run_dir), report


def parameters(run_dir: Path) -> list[tuple[str, torch.Tensor]]:
    """The released models' parameters, loaded on the CPU."""
    return [(f"{j}.{name}", x) for j, m in enumerate(load_release(run_dir).models) for name, x in m.state_dict().items()]


def farthest(a: Path, b: Path) -> float:
    """The largest difference between two releases' parameters."""
    return max(float((x - y).abs().max()) for (_, x), (_, y) in zip(parameters(a), parameters(b), strict=True))


def assert_same_privacy(dev_dir: Path, dev: dict, cpu_dir: Path, cpu: dict) -> None:
    """The same ledger, epsilon and noisy part sizes: what the partition released and what was charged."""
    assert ledger(dev_dir) == ledger(cpu_dir)
    assert dev["epsilon"] == cpu["epsilon"]
    np.testing.assert_allclose(dev["noisy_part_sizes"], cpu["noisy_part_sizes"], rtol=1e-6)


def assert_same_run(tmp_path: Path, device: str, over: dict[str, str]) -> None:
    """``device``'s run of the tiny config against the CPU's: ledger, noisy sizes, models, samples."""
    cpu_dir, cpu = trained(tmp_path, "cpu", over, "on_cpu")
    dev_dir, dev = trained(tmp_path, device, over, "on_device")
    assert_same_privacy(dev_dir, dev, cpu_dir, cpu)
    for (name, x), (_, y) in zip(parameters(dev_dir), parameters(cpu_dir), strict=True):
        assert x.device.type == "cpu", name  # a GPU run's release loads on a machine without one
        torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-3, msg=name)
    ours, theirs = sample_dataset(dev_dir, 400, seed=1), sample_dataset(cpu_dir, 400, seed=1)
    differ = abs(ours.records.astype(np.int8) - theirs.records.astype(np.int8)).sum()
    assert differ <= 0.01 * ours.records.shape[0] * ours.records.shape[1]


def assert_reseeded_run(tmp_path: Path, device: str, monkeypatch) -> None:
    """``device``'s run with gradient noise from a generator reseeded every step: the CPU run's ledger and
    partition, other models (other noise), item frequencies near the CPU run's, and a resume after a kill
    that gives the uninterrupted run's models (to float rounding)."""
    cpu_dir, cpu = trained(tmp_path, "cpu", {"training.device_noise": "false"}, "on_cpu")
    dev_dir, dev = trained(tmp_path, device, {}, "reseeded")
    assert_same_privacy(dev_dir, dev, cpu_dir, cpu)
    assert farthest(dev_dir, cpu_dir) > 5e-3  # the same noise agrees to 1e-3 (above)
    ours, theirs = sample_dataset(dev_dir, 2000, seed=1), sample_dataset(cpu_dir, 2000, seed=1)
    assert float(abs(ours.records.mean(0) - theirs.records.mean(0)).mean()) < 0.02
    cut = killed_run(tiny_config(tmp_path, device=device, name="cut"), monkeypatch, at_step=7)
    resume(cut, progress=False)
    assert farthest(cut, dev_dir) < 1e-5


def test_reseed_takes_one_draw_of_the_stream_and_replays():
    stream, twin = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    first = torch.randn(5, generator=reseed(torch.Generator(), stream))
    torch.randint(SEED_BOUND, (1,), generator=twin)
    assert torch.equal(stream.get_state(), twin.get_state())  # one draw, whatever the draws made from its seed
    assert torch.equal(torch.randn(5, generator=reseed(torch.Generator(), torch.Generator().manual_seed(7))), first)
    assert not torch.equal(torch.randn(5, generator=reseed(torch.Generator(), stream)), first)  # the next step's


def test_device_noise_leaves_a_cpu_run_on_the_streams_draws():
    """A stack on the generator's device keeps the generator: the flag changes nothing on the CPU."""
    runs = [make_dpsgd(ZeroGradient(), seed=4, device_noise=flag) for flag in (True, False)]
    runs[1].models[0].load_state_dict(runs[0].models[0].state_dict())
    for dp in runs:
        dp.step(torch.ones(6, 40))
    assert torch.equal(flat(runs[0].models[0]), flat(runs[1].models[0]))
    assert torch.equal(runs[0].generator.get_state(), runs[1].generator.get_state())


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
@pytest.mark.parametrize("over", [{}, {"model.kind": "rbm", "model.options": "{hidden: 16}"},
                                  {"privacy.secure_mode": "true"}],
                         ids=["vae", "rbm", "secure"])
def test_a_gpu_run_with_the_streams_noise_is_the_cpu_run(tmp_path, over):
    assert_same_run(tmp_path, "cuda", {**over, "training.device_noise": "false"})


@cuda
def test_a_gpu_run_draws_its_gradient_noise_on_the_gpu_and_resumes(tmp_path, monkeypatch):
    assert_reseeded_run(tmp_path, "cuda", monkeypatch)


def test_the_reseeded_runs_check_holds_on_the_cpu(tmp_path, monkeypatch):
    """The GPU check, with the CPU standing in for the GPU: a CPU generator reseeded every step."""

    def reseeded(self):
        if not self.device_noise:
            return [self.generator] * len(self.stacks)
        on = self._on_device.setdefault(torch.device("cpu"), torch.Generator())
        return [reseed(on, self.generator)] * len(self.stacks)

    monkeypatch.setattr(DPSGD, "_gradient_noise_generators", reseeded)
    assert_reseeded_run(tmp_path, "cpu", monkeypatch)


@cuda
@pytest.mark.parametrize("secure", [False, True])
def test_gpu_gradient_noise_is_one_seed_a_step_and_has_the_charged_scale(secure):
    """A model with zero gradient moves by its noise alone: std sigma C / E (lr 1); the CPU stream gives up
    exactly one draw per step, and the same seed replays the same noise."""
    moved = []
    for _ in range(2):
        model = ZeroGradient().cuda()
        torch.manual_seed(0)
        model.lin.reset_parameters()
        start = flat(model)
        dp = make_dpsgd(model, seed=5, lr=1.0, secure_mode=secure)
        dp.step(torch.ones(6, 40, device="cuda"))
        moved.append(flat(model) - start)
        twin = torch.Generator().manual_seed(5)
        torch.randint(SEED_BOUND, (1,), generator=twin)
        assert torch.equal(dp.generator.get_state(), twin.get_state())
    assert moved[0].device.type == "cuda" and torch.equal(moved[0], moved[1])
    assert abs(float(moved[0].std()) / (1.0 * 1.0 / 10.0) - 1) < 0.1  # 1,025 coordinates: sampling error ~2%


def test_the_comparison_itself_holds_for_two_cpu_runs(tmp_path):
    """The check the GPU tests make passes for the CPU against itself (it can fail: see the GPU tests)."""
    assert_same_run(tmp_path, "cpu", {})
