"""Each model kind and each baseline reads its own typed options: checked when the config or the options load,
kept through saving and loading, and the older flat model keys still load as the options of their kind."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import yaml

from dpgm.artifact import MODELS_FILE, load_release, save_models
from dpgm.config import ModelConfig, config_from_dict, load_config
from dpgm.errors import ConfigError
from dpgm.evaluation.baselines import BASELINES, baseline_options, options_among
from dpgm.models import MODELS, RBM, VAE, ConvVaeOptions, RbmOptions, TreeOptions, VaeOptions, build_model
from dpgm.pipeline.plan import check_components

#: Every flat model key an older run's saved config states, at its old default.
OLD_DUMP = {"hidden": [200], "latent": 2, "norm": False, "draws": 1, "channels": [16, 32], "rbm_hidden": 200,
            "gibbs_steps": 1, "chains": 100}


def test_each_trained_kind_reads_its_own_options() -> None:
    assert {name: MODELS.entries[name].options for name in ("vae", "conv_vae", "rbm", "tree")} == {
        "vae": VaeOptions, "conv_vae": ConvVaeOptions, "rbm": RbmOptions, "tree": TreeOptions}
    vae = build_model(config_from_dict({"model": {"options": {"hidden": [7, 5], "draws": 2}}}).model, 6)
    assert isinstance(vae, VAE) and vae.hidden == [7, 5] and vae.latent == 2 and vae.draws == 2
    rbm = build_model(config_from_dict({}, ["model.kind=rbm", "model.options.hidden=9"]).model, 6)
    assert isinstance(rbm, RBM) and rbm.n_hidden == 9 and rbm.chains.shape == (100, 6)


@pytest.mark.parametrize(("kind", "options", "problem"), [
    ("vae", {"hiden": [8]}, "unknown option 'hiden' (known: draws, hidden, latent)"),
    ("vae", {"hidden": 8}, "option hidden: expected a list, got 8"),
    ("conv_vae", {"channel": [2]}, "unknown option 'channel'"),
    ("conv_vae", {"channels": []}, "channels must be one or more counts >= 1"),
    ("rbm", {"rbm_hidden": 8}, "unknown option 'rbm_hidden' (known: chains, gibbs_steps, hidden)"),
    ("rbm", {"chains": 0}, "must be >= 1"),
    ("tree", {"select_epsilon": "x"}, "option select_epsilon: expected a number"),
    ("independent", {"hidden": [8]}, "'independent' takes no options"),
])
def test_a_misspelt_or_mistyped_option_of_each_kind_is_a_one_line_error(kind, options, problem) -> None:
    cfg = config_from_dict({"model": {"kind": kind, "options": options}})  # checked before any data are read
    with pytest.raises(ConfigError, match=re.escape(problem)) as caught:
        check_components(cfg)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("model", "options"), [
    ({"hidden": [16], "latent": 3}, {"hidden": [16], "latent": 3}),
    ({"kind": "conv_vae", "channels": [2, 3], "norm": True}, {"channels": [2, 3], "norm": True}),
    ({"kind": "rbm", "rbm_hidden": 8, "gibbs_steps": 2, "chains": 5}, {"hidden": 8, "gibbs_steps": 2, "chains": 5}),
    ({"kind": "rbm", **OLD_DUMP, "rbm_hidden": 16}, {"hidden": 16, "gibbs_steps": 1, "chains": 100}),  # a dump
    ({"kind": "tree", **OLD_DUMP, "options": {"all_pairs": False}}, {"all_pairs": False}),
])
def test_the_older_flat_keys_load_as_the_options_of_their_kind(tmp_path, model, options) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump({"model": model}))
    cfg = load_config(path)
    assert cfg.model.options == options and "model.options" in cfg.stated
    check_components(cfg)


def test_an_older_key_the_kind_does_not_read_or_stated_twice_names_its_new_place() -> None:
    with pytest.raises(ConfigError, match="model.rbm_hidden moved: use model.options.hidden with model.kind: rbm"):
        config_from_dict({}, ["model.rbm_hidden=64"])  # the default kind is vae
    with pytest.raises(ConfigError, match="model.hidden moved to model.options.hidden: state it there only"):
        config_from_dict({"model": {"options": {"hidden": [8]}}}, ["model.hidden=[16]"])
    assert config_from_dict({"model": {"options": {"hidden": [8]}}}, ["model.hidden=[8]"]).model.options == {
        "hidden": [8]}


@pytest.mark.parametrize(("kind", "options"), [("vae", {"hidden": [5], "latent": 3, "draws": 2}),
                                               ("rbm", {"hidden": 4, "gibbs_steps": 2, "chains": 3})])
def test_a_model_keeps_its_options_through_save_and_load(tmp_path, kind, options) -> None:
    cfg = ModelConfig(kind=kind, options=options)
    models = [build_model(cfg, 6, generator=torch.Generator().manual_seed(0))]
    (tmp_path / "privacy_report.json").write_text('{"epsilon": 1.0, "delta": 1e-5}')
    save_models(tmp_path, models, [10.0], cfg, [f"i{j}" for j in range(6)], None)
    assert torch.load(tmp_path / MODELS_FILE, weights_only=True)["model"] == {"kind": kind, "options": options}
    [loaded] = load_release(tmp_path).models
    assert type(loaded) is type(models[0])
    assert all(torch.equal(a, b) for a, b in zip(models[0].state_dict().values(), loaded.state_dict().values()))


def test_an_older_release_with_flat_keys_loads(tmp_path) -> None:
    model = VAE(6, hidden=[5], latent=3, generator=torch.Generator().manual_seed(0))
    (tmp_path / "privacy_report.json").write_text('{"epsilon": 1.0, "delta": 1e-5}')
    save_models(tmp_path, [model], [10.0], ModelConfig(options={"hidden": [5], "latent": 3}),
                [f"i{j}" for j in range(6)], None)
    payload = torch.load(tmp_path / MODELS_FILE, weights_only=True)
    payload["model"] = {"kind": "vae", **OLD_DUMP, "hidden": [5], "latent": 3, "options": {}}  # as older runs saved it
    torch.save(payload, tmp_path / MODELS_FILE)
    [loaded] = load_release(tmp_path).models
    assert loaded.hidden == [5] and loaded.latent == 3
    torch.testing.assert_close(loaded.state_dict()["decoder.0.weight"], model.state_dict()["decoder.0.weight"])


@pytest.mark.parametrize(("method", "misspelt"), [("mwem", "round"), ("marginals", "rounds"), ("aim", "max_round"),
                                                  ("mst", "rounds"), ("mwem_pgm", "mechanism")])
def test_each_baseline_refuses_an_option_it_does_not_read(method, misspelt) -> None:
    with pytest.raises(ConfigError, match=f"baseline '{method}': unknown option '{misspelt}'") as caught:
        baseline_options(method, {misspelt: 1})
    assert "\n" not in str(caught.value)


def test_baseline_options_are_typed_and_a_flag_goes_where_it_is_read() -> None:
    assert baseline_options("aim", {"aim.max_rounds": 3}).max_rounds == 3  # the method's own prefix
    assert baseline_options("aim", {"aim": {"rounds": 4}}).rounds == 4
    with pytest.raises(ConfigError, match="option accounting: 'pure' is not one of"):
        baseline_options("mst", {"accounting": "pure"})
    with pytest.raises(ConfigError, match="option rounds: expected an integer"):
        baseline_options("mwem", {"rounds": "many"})
    flags = {"accounting": "pure", "mwem.rounds": 7, "marginals.mechanism": "laplace"}
    assert options_among("mwem", flags) == BASELINES.entries["mwem"].options(accounting="pure", rounds=7)
    assert options_among("marginals", flags).mechanism == "laplace"


def test_a_baseline_synthesizer_keeps_its_options_through_save_and_load(tmp_path) -> None:
    import dpgm

    x = (np.random.default_rng(0).random((200, 4)) < 0.3).astype(np.uint8)
    synth = dpgm.Synthesizer(method="marginals", epsilon=1.0, options={"mechanism": "laplace"}).fit(x)
    loaded = dpgm.load(synth.save(tmp_path / "s"))
    assert loaded.options == {"mechanism": "laplace"} and loaded.privacy_report["mechanism"] == "laplace"
    assert baseline_options("marginals", loaded.options) == baseline_options("marginals", synth.options)
