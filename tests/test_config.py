"""Configuration: typed loading, unknown keys, range checks, overrides."""

from pathlib import Path

import pytest

from dpgm.config import Config, config_from_dict, load_config
from dpgm.errors import ConfigError


def test_defaults_validate():
    cfg = config_from_dict({})
    assert isinstance(cfg, Config)
    assert cfg.privacy.neighbouring == "add_remove"


def test_override_sets_nested_value_with_yaml_typing():
    cfg = config_from_dict({}, ["training.epochs=5", "partition.k=3", "model.options={hidden: [64, 32]}"])
    assert cfg.training.epochs == 5.0 and isinstance(cfg.training.epochs, float)
    assert cfg.partition.k == 3
    assert cfg.model.options == {"hidden": [64, 32]}



def test_overrides_leave_the_callers_mapping_alone():
    """A benchmark builds many configs from one mapping: one run's overrides (e.g. the nonprivate
    run's tiny noise multipliers) must not leak into the next run's config."""
    data = {"partition": {"noise_multiplier": 5.0}, "training": {"epochs": 2}}
    noisy = config_from_dict(data, ["partition.noise_multiplier=1e-6", "model.options.latent=3"])
    assert noisy.partition.noise_multiplier == 1e-6
    assert data == {"partition": {"noise_multiplier": 5.0}, "training": {"epochs": 2}}
    assert config_from_dict(data).partition.noise_multiplier == 5.0

@pytest.mark.parametrize(
    "data, message",
    [
        ({"partition": {"kk": 3}}, "unknown key 'kk' in section 'partition'"),
        ({"bogus": 1}, "unknown key 'bogus' in section 'config'"),
        ({"training": {"sampling_rate": 0}}, "training.sampling_rate"),
        ({"training": {"sampling_rate": 1.5}}, "training.sampling_rate"),
        ({"privacy": {"delta": 1.0}}, "privacy.delta"),
        ({"privacy": {"target_epsilon": -1}}, "privacy.target_epsilon"),
        ({"partition": {"k": 0}}, "partition.k"),
        ({"partition": {"k": 2.5}}, "partition.k"),
        ({"training": {"epochs": "ten"}}, "training.epochs"),
        ({"data": {"attributes": 0}}, "data.attributes"),
    ],
)
def test_bad_values_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(data)


def test_load_config_names_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("training:\n  epochz: 3\n")
    with pytest.raises(ConfigError, match="bad.yaml: unknown key 'epochz'"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="section.key=value"):
        config_from_dict({}, ["training.epochs"])


def test_yaml_exponent_without_dot_is_a_number():
    cfg = config_from_dict({"privacy": {"delta": "1e-5"}}, ["training.learning_rate=1e-3"])
    assert cfg.privacy.delta == 1e-5 and cfg.training.learning_rate == 1e-3


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_configs_load_and_validate(path):
    cfg = load_config(path)
    assert cfg.name == path.stem


def test_calibrate_takes_true_false_or_total_and_total_refuses_redrawn_records():
    assert config_from_dict({}, ["model.calibrate=total"]).model.calibrate == "total"
    assert config_from_dict({}, ["model.calibrate=true"]).model.calibrate is True
    with pytest.raises(ConfigError, match="model.calibrate"):
        config_from_dict({}, ["model.calibrate=sum"])
    with pytest.raises(ConfigError, match="total does not go with data.min_items"):
        config_from_dict({}, ["model.calibrate=total", "data.min_items=1"])


def test_a_model_config_built_in_code_refuses_an_unknown_calibrate_value():
    from dpgm.config import ModelConfig

    with pytest.raises(ConfigError, match="must be true, false or total"):
        ModelConfig(calibrate="sum").validate()  # type: ignore[arg-type]
    ModelConfig(calibrate="total").validate()
