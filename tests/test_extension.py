"""The extension points: a stage, a partitioner and a model kind registered from outside the package run
through the same ledger, checkpoint, release and report as the built-in ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from dpgm.clustering import PARTITIONERS, Partition
from dpgm.errors import ConfigError
from dpgm.pipeline import run as run_mod
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages import STAGES, Stage, StageContext, register_stage, unregister_stage
from tests.training.test_run import killed_run, tiny_config


class NoisyRecordCount(Stage):
    """A toy stage: the number of records plus Gaussian noise (sensitivity 1)."""

    name = "toy_count"
    line = "count the records (a toy stage)"
    payload_keys = ("toy_count",)

    @classmethod
    def enabled(cls, cfg: Any) -> bool:
        return True

    def run(self, ctx: StageContext) -> float:
        count = np.array([float(ctx.data.n_records)])
        return float(gaussian_release(count, sensitivity=1.0, noise_multiplier=7.0, accountant=ctx.accountant,
                                      stage=self.name, rng=ctx.rng)[0])

    def payload(self) -> dict[str, Any]:
        return {"toy_count": self.output}

    def report(self) -> dict[str, Any]:
        return {"noisy_toy_count": self.output}


@dataclass
class HalvesOptions:
    noise_multiplier: float = 9.0


@dataclass
class Halves:
    """A toy partitioner: records with an even number of items in part 0, the others in part 1."""

    options: HalvesOptions

    def fit(self, data: Any, accountant: Any, rng: np.random.Generator) -> Partition:
        parts = data.record_lengths() % 2
        sizes = gaussian_release(np.bincount(parts, minlength=2).astype(float), sensitivity=1.0,
                                 noise_multiplier=self.options.noise_multiplier, accountant=accountant,
                                 stage="partition", rng=rng)
        return Partition(assignments=parts, noisy_sizes=np.maximum(sizes, 1.0))


@pytest.fixture
def extended():
    register_stage(NoisyRecordCount)  # the default place: before training, which stays last
    PARTITIONERS.register("halves", options=HalvesOptions, doc="a toy")(lambda cfg, options, public: Halves(options))
    yield
    unregister_stage(NoisyRecordCount.name)
    PARTITIONERS.unregister("halves")


def test_a_registered_stage_and_partitioner_train_through_the_ledger(tmp_path, extended):
    assert list(STAGES)[-2:] == ["toy_count", "training"]
    cfg = tiny_config(tmp_path, **{"partition.method": "halves", "partition.options": "{noise_multiplier: 3.0}",
                                   "keep_private": "true"})
    run_dir, report = run_mod.train(cfg, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    stages = [e.stage for e in ledger.entries]
    assert stages.index("partition") < stages.index("toy_count") < stages.index("training")
    [toy] = [e for e in ledger.entries if e.stage == "toy_count"]
    assert toy.event.noise_multiplier == 7.0  # the discrete Gaussian of the mechanism module, its multiplier kept
    [part] = [e for e in ledger.entries if e.stage == "partition"]
    assert part.event.noise_multiplier == 3.0  # the partitioner's own options reached it
    assert report["plan"]["partition"] == "halves" and report["plan"]["k"] == 2
    assert report["stage_lines"]["toy_count"] == "count the records (a toy stage)"
    assert "| toy_count | count the records (a toy stage) |" in (run_dir / "release" / "privacy_report.md").read_text()
    assert report["epsilon"] > report["stage_epsilons"]["toy_count"] > 0
    payload = torch.load(run_dir / "release" / "models.pt", weights_only=True)
    assert payload["toy_count"] == report["noisy_toy_count"]  # the noisy count, in the release and the report
    assert payload["empty_size"] is None and payload["part_labels"] is None  # the built-in stages' keys stay


def test_a_stage_goes_before_training_unless_placed(extended):
    class Early(NoisyRecordCount):
        name = "early"

    register_stage(Early, before="partition")
    try:
        names = list(STAGES)
        assert names.index("early") + 1 == names.index("partition") and names[-1] == "training"
    finally:
        unregister_stage("early")
    with pytest.raises(ConfigError, match="no registered stage 'trainin' to go before"):
        register_stage(Early, before="trainin")
    assert "early" not in STAGES


def test_a_resumed_run_keeps_the_stage_output_without_drawing_again(tmp_path, extended, monkeypatch):
    cfg = tiny_config(tmp_path, **{"partition.method": "halves"})
    run_dir = killed_run(cfg, monkeypatch, at_step=3)
    _, report = run_mod.resume(run_dir, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    assert ledger.count("toy_count") == 1  # charged once, not again on resume
    assert report["plan"]["steps_taken"] == report["plan"]["steps_planned"]


def test_an_unknown_partitioner_or_option_is_a_one_line_error_before_the_data_load(tmp_path, extended):
    with pytest.raises(ConfigError, match=r"partition.method: unknown 'halve' \(registered: .*halves"):
        run_mod.train(tiny_config(tmp_path, **{"partition.method": "halve"}), progress=False)
    with pytest.raises(ConfigError, match="unknown option 'sigma'"):
        run_mod.train(tiny_config(tmp_path, **{"partition.method": "halves", "partition.options": "{sigma: 1}"}),
                      progress=False)
    with pytest.raises(ConfigError, match="'lloyd' takes no options"):
        run_mod.train(tiny_config(tmp_path, **{"partition.method": "lloyd", "partition.options": "{x: 1}"}),
                      progress=False)
    with pytest.raises(ConfigError, match=r"model.kind: unknown 'gan' \(registered: conv_vae, independent, rbm, table_vae, tree, vae\)"):
        run_mod.train(tiny_config(tmp_path, **{"model.kind": "gan"}), progress=False)
    assert not (tmp_path / "runs").exists()


@dataclass
class NarrowOptions:
    width: int = 4

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"width must be >= 1, got {self.width}")


@pytest.fixture
def narrow_model():
    from dpgm.models import MODELS
    from dpgm.models.vae import VAE

    MODELS.register("narrow_vae", options=NarrowOptions, doc="a toy: a VAE of one hidden layer of its own width")(
        lambda cfg, options, n_items, generator: VAE(n_items, hidden=[options.width], latent=2, generator=generator))
    yield
    MODELS.unregister("narrow_vae")


def test_a_model_kind_with_its_own_options_trains_and_its_release_loads(tmp_path, narrow_model):
    from dpgm.artifact import load_release

    cfg = tiny_config(tmp_path, **{"model.kind": "narrow_vae", "model.options": "{width: 3}"})
    run_dir, report = run_mod.train(cfg, progress=False)
    assert report["plan"]["model"] == "narrow_vae" and report["stage_epsilons"]["training"] > 0
    released = load_release(run_dir)
    assert released.models[0].encoder[0].out_features == 3  # its own option built it, saved and loaded
    for options, problem in (("{depth: 2}", "unknown option 'depth'"), ("{width: 0}", "width must be >= 1")):
        with pytest.raises(ConfigError, match=problem):  # checked as the run starts, before any data is read
            run_mod.train(tiny_config(tmp_path / "bad", **{"model.kind": "narrow_vae", "model.options": options}),
                          progress=False)
