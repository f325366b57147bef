"""A run over two torch.distributed ranks (gloo, CPU) releases what one process releases: the same
ledger and epsilon, and, with the noise switched off (a test-only patch), the same statistics."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests._forked import queue, run_script, spawn
from tests.data.test_shards import transaction_file

WORLD = 2


def config(path: Path, runs: Path) -> dict[str, Any]:
    """A statistics-only run (no DP-SGD): item choice, the items' dependence, LSH-tree partition, empty records, part
    means, a tree of items per part."""
    return {"name": "d", "seed": 0, "runs_dir": str(runs), "threads": 1,
            "data": {"source": "transactions", "path": str(path), "n_items": 40, "top_items": 30},
            "privacy": {"target_epsilon": 2.0, "delta": 1e-5},
            "partition": {"method": "lsh_tree", "k": 3, "target_epsilon": 0.5, "options": {"max_depth": 8},
                          "empty_part_noise_multiplier": 5.0, "dependence_noise_multiplier": 5.0},
            "model": {"kind": "tree", "output_bias": "noisy_mean", "mean_noise_multiplier": 5.0,
                      "mean_clip": 3.0, "options": {"select_epsilon": 0.05, "pair_noise_multiplier": 5.0}}}


def zeros(shape: Any, scale: float, rng: Any = None) -> np.ndarray:
    """The noise of the test-only mode without noise: every release is the exact sum over all ranks."""
    return np.zeros(shape, dtype=np.int64)


def silence(setattr: Any) -> None:
    from dpgm.privacy import mechanisms

    setattr(mechanisms, "discrete_gaussian", zeros)
    setattr(mechanisms, "discrete_laplace", zeros)


def released(path: Path, runs: Path) -> dict[str, Any]:
    """The run's stages on this rank's records: its ledger and its released statistics; and the trees of a run
    that declares the items a table of ten attributes of four values, its trees over the attributes."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import TrainingRun
    from dpgm.stages import attribute_triples

    run = TrainingRun(config_from_dict(config(path, runs)), runs / "d", progress=False)
    run.start()
    partition = run.output("partition")
    table = config(path, runs)
    table["name"], table["data"]["attribute_sizes"] = "t", [4] * 10
    table["model"]["options"].update(by_attribute=True, triple_noise_multiplier=5.0)  # second parents' triples too
    table["privacy"]["target_epsilon"] = 4.0
    by_attribute = TrainingRun(config_from_dict(table), runs / "t", progress=False)
    triples = []  # what the second parents' release returns: the sum over all ranks, once
    release = attribute_triples.gaussian_release
    attribute_triples.gaussian_release = lambda values, **kw: triples.append(release(values, **kw)) or triples[-1]
    try:
        by_attribute.start()
    finally:
        attribute_triples.gaussian_release = release
    return {"ledger": run.accountant.ledger.to_dict(), "epsilon": run.accountant.spent().epsilon,
            "n": run.data.n_records, "items": run.context.data.meta.get("item_ids"), "sizes": partition.noisy_sizes,
            "centres": partition.centres, "means": run.output("part_means"), "dependence": run.output("dependence"),
            "trees": run.output("item_pairs"), "table_ledger": by_attribute.accountant.ledger.to_dict(),
            "table_trees": by_attribute.output("item_pairs"), "triples": triples}


def trained(path: Path, runs: Path) -> dict[str, Any]:
    """A run that trains a VAE per part with DP-SGD: its privacy report."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train

    cfg = config(path, runs)
    cfg["model"] = {"kind": "vae", "options": {"hidden": [8], "latent": 2}}
    cfg["training"] = {"sampling_rate": 0.1, "epochs": 1.0, "noise_multiplier": 1.0, "clipping": "fixed",
                       "clip_norm": 1.0, "checkpoint_every": 1000}
    cfg["privacy"] = {"delta": 1e-5}
    _, report = train(config_from_dict(cfg), progress=False)
    return {key: report[key] for key in ("epsilon", "stage_epsilons", "plan", "noisy_part_sizes")}


def leave(dist: Any) -> None:
    """A rank's normal end: wait for every rank, leave the group, and exit at once. Gloo's worker
    threads can abort a process while the interpreter shuts down (SIGABRT, "terminate called without
    an active exception"), after everything the test checks is delivered."""
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


def rank_main(rank: int, init: str, path: Path, runs: Path, out: Any) -> None:
    """One rank: join the gloo group, run with noise, then without, hand both results back."""
    import torch.distributed as dist

    os.environ["OMP_NUM_THREADS"] = "1"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    try:
        noisy, report = released(path, runs / "noisy"), trained(path, runs / "trained")
        silence(setattr)
        out.put((rank, noisy, released(path, runs / "exact"), report))
        leave(dist)
    finally:
        dist.destroy_process_group()


def test_two_ranks_release_what_one_process_releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = transaction_file(tmp_path, n=600)
    out = queue()
    spawn(rank_main, (f"file://{tmp_path / 'init'}", path, tmp_path / "ranks", out), WORLD)
    results = {rank: rest for rank, *rest in (out.get() for _ in range(WORLD))}
    report_alone = trained(path, tmp_path / "trained")
    for rank in range(WORLD):  # DP-SGD over ranks: the one-process plan and epsilon, rank 0's release
        assert results[rank][2] == {**report_alone, "noisy_part_sizes": results[0][2]["noisy_part_sizes"]}
    assert (tmp_path / "ranks" / "trained" / "d" / "release" / "models.pt").is_file()
    noisy_alone = released(path, tmp_path / "noisy")
    silence(monkeypatch.setattr)
    exact_alone = released(path, tmp_path / "exact")
    for alone, ranks in ((noisy_alone, [results[r][0] for r in range(WORLD)]),
                         (exact_alone, [results[r][1] for r in range(WORLD)])):
        assert sum(r["n"] for r in ranks) == alone["n"] and min(r["n"] for r in ranks) > 0
        for r in ranks:
            assert r["ledger"] == alone["ledger"]
            assert r["epsilon"] == pytest.approx(alone["epsilon"], rel=1e-12)
            assert np.array_equal(r["sizes"], ranks[0]["sizes"])  # every rank holds rank 0's release
            assert np.array_equal(r["means"], ranks[0]["means"]) and r["dependence"] == ranks[0]["dependence"]
            assert all(np.array_equal(r["trees"][key], ranks[0]["trees"][key]) for key in ("parent", "logits"))
            assert r["table_ledger"] == alone["table_ledger"]
            assert all(np.array_equal(r["table_trees"][key], ranks[0]["table_trees"][key])
                       for key in ("attribute", "parent", "groups", "within", "tables", "shapes"))
    exact = results[0][1]  # without noise: the statistics of all the records, as one process has them
    assert np.array_equal(exact["items"], exact_alone["items"])
    assert np.allclose(exact["sizes"], exact_alone["sizes"])
    assert np.allclose(exact["centres"], exact_alone["centres"], atol=1e-9)
    assert np.allclose(exact["means"], exact_alone["means"], atol=1e-9)
    assert exact["dependence"] == pytest.approx(exact_alone["dependence"], rel=1e-12)  # pair counts over all ranks
    assert np.array_equal(exact["trees"]["parent"], exact_alone["trees"]["parent"])  # edges scored on all records
    assert np.allclose(exact["trees"]["logits"], exact_alone["trees"]["logits"], atol=1e-9)
    assert np.array_equal(exact["table_trees"]["parent"], exact_alone["table_trees"]["parent"])  # tables of all ranks
    assert np.array_equal(exact["table_trees"]["shapes"], exact_alone["table_trees"]["shapes"])
    assert np.allclose(exact["table_trees"]["tables"], exact_alone["table_trees"]["tables"], atol=1e-9)
    assert len(exact["triples"]) == 1 and exact["triples"][0].size  # the triples' counts of all ranks, once
    assert np.array_equal(exact["triples"][0], exact_alone["triples"][0])


def resumed_main(rank: int, init: str, path: Path, runs: Path) -> None:
    """One rank: train a VAE per part uninterrupted, then again killed at step 7 and resumed."""
    import torch.distributed as dist

    from dpgm.config import config_from_dict
    from dpgm.pipeline import run as run_mod
    from dpgm.training.mixture import MixtureTrainer

    os.environ["OMP_NUM_THREADS"] = "1"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    try:
        for name in ("whole", "cut"):
            cfg = config(path, runs)
            cfg.update(name=name, privacy={"delta": 1e-5}, model={"kind": "vae", "options": {"hidden": [8], "latent": 2}})
            cfg["training"] = {"sampling_rate": 0.1, "epochs": 1.0, "noise_multiplier": 1.0, "clipping": "adaptive",
                               "checkpoint_every": 2}
            real_step, calls = MixtureTrainer.step, {"n": 0}

            def dying_step(self: Any, accountant: Any, real: Any = real_step, calls: dict = calls) -> Any:
                calls["n"] += 1
                if calls["n"] == 7:  # every rank at the same step, before its collectives
                    raise KeyboardInterrupt
                return real(self, accountant)

            if name == "cut":
                MixtureTrainer.step = dying_step
                try:
                    run_mod.train(config_from_dict(cfg), progress=False)
                except KeyboardInterrupt:
                    pass
                finally:
                    MixtureTrainer.step = real_step
                dist.barrier()  # rank 0 has written its last checkpoint: a new launch would find it
                run_mod.resume(runs / name, progress=False)
            else:
                run_mod.train(config_from_dict(cfg), progress=False)
        leave(dist)
    finally:
        dist.destroy_process_group()


def test_a_run_on_two_ranks_resumes_bit_identically(tmp_path: Path) -> None:
    """Each rank's records are sampled from a stream of (a saved seed, the rank, the step): a run resumed
    with the same world size takes the uninterrupted run's batches and noise, bit for bit."""
    from tests.training.test_run_privacy import assert_same_release

    path = transaction_file(tmp_path, n=600)
    spawn(resumed_main, (f"file://{tmp_path / 'init'}", path, tmp_path / "runs"), WORLD)
    assert_same_release(tmp_path / "runs" / "whole", tmp_path / "runs" / "cut")


def test_torchrun_runs_train_py_on_two_ranks(tmp_path: Path) -> None:
    """No new flag: torchrun starts two ranks of train.py on a folder of three files (each rank reads its
    whole files); rank 0 writes the release and prints."""
    import torch.distributed.run
    import yaml

    lines = transaction_file(tmp_path, n=400).read_text().splitlines(keepends=True)
    (tmp_path / "parts").mkdir()
    for i, part in enumerate((lines[:100], lines[100:150], lines[150:])):
        (tmp_path / "parts" / f"part-{i}.txt").write_text("".join(part))
    cfg = config(tmp_path / "parts", tmp_path / "runs")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launcher = Path(torch.distributed.run.__file__)  # what ``torchrun`` runs, forked: its ranks are new processes
    done = run_script(launcher, ["--standalone", "--nproc-per-node", "2", str(root / "train.py"), "--config",
                                 str(tmp_path / "run.yaml"), "--no-progress"], cwd=tmp_path, env=env, timeout=300,
                      folder=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("privacy: epsilon") == 1  # rank 0 speaks
    assert (tmp_path / "runs" / "d" / "release" / "privacy_report.json").is_file()


def test_a_resume_on_another_number_of_ranks_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rank's own state (its records' parts) was saved by that rank: a resume needs as many ranks."""
    import torch

    from dpgm.errors import ConfigError
    from dpgm.pipeline import run as run_mod
    from tests.training.test_run import killed_run
    from tests.training.test_run_privacy import tiny_config

    cut = killed_run(tiny_config(tmp_path, **{"training.epochs": 2}), monkeypatch, at_step=5)
    checkpoint = torch.load(cut / "private" / "checkpoint.pt", weights_only=True)
    assert checkpoint["world"] == 1
    torch.save({**checkpoint, "world": 2}, cut / "private" / "checkpoint.pt")
    with pytest.raises(ConfigError, match="ran on 2 rank\\(s\\); resume it on as many"):
        run_mod.resume(cut, progress=False)
