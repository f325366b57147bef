"""Model keys that moved into ``model.options``: the vae, conv_vae and rbm kinds' settings, once flat.

Older configs, ``--set`` overrides, saved runs and releases state them flat (``model.hidden``); they
load as the options of the config's kind. A full dump of an older run states every flat key, so a
key the kind does not read is dropped where it holds its old default; any other value of such a key
is a one-line error naming where it moved. Stating a key both ways with two values is an error too.
"""

from __future__ import annotations

from typing import Any

from dpgm.config_sections import ModelConfig
from dpgm.errors import ConfigError

#: old flat key -> {kind that reads it: its name in that kind's model.options} (a fixed table: new kinds
#: register their options and never had flat keys).
MOVED: dict[str, dict[str, str]] = {
    "hidden": {"vae": "hidden"}, "latent": {"vae": "latent", "conv_vae": "latent"}, "norm": {"conv_vae": "norm"},
    "draws": {"vae": "draws", "conv_vae": "draws"}, "channels": {"conv_vae": "channels"},
    "rbm_hidden": {"rbm": "hidden"}, "gibbs_steps": {"rbm": "gibbs_steps"}, "chains": {"rbm": "chains"},
}
#: Each flat key's default before it moved: what an older run's saved config states when it left the key alone.
OLD_DEFAULTS: dict[str, Any] = {"hidden": [200], "latent": 2, "norm": False, "draws": 1, "channels": [16, 32],
                                "rbm_hidden": 200, "gibbs_steps": 1, "chains": 100}


def moved_model_keys(model: Any) -> Any:
    """The model section with its flat keys moved into ``options`` (a new mapping; anything else as it was)."""
    options = model.get("options") or {} if isinstance(model, dict) else None
    if not isinstance(options, dict) or not MOVED.keys() & model.keys():
        return model  # nothing moved, or a section the type checks refuse
    model, options = dict(model), dict(options)
    kind = model.get("kind", ModelConfig.kind)
    for key in [key for key in MOVED if key in model]:
        value, readers = model.pop(key), MOVED[key]
        if not isinstance(kind, str) or kind not in readers:
            if value != OLD_DEFAULTS[key]:
                raise ConfigError(f"model.{key} moved: use model.options.{next(iter(readers.values()))} with "
                                  f"model.kind: {' or '.join(readers)} (model.kind {kind} does not read it)")
            continue
        name = readers[kind]
        if options.get(name, value) != value:
            raise ConfigError(f"model.{key} moved to model.options.{name}: state it there only")
        options[name] = value
    model["options"] = options
    return model
