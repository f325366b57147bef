"""The shipped rules' choices, pinned: every option ``rules: public`` sets for the public facts of the seven shared
transaction datasets and of synthetic settings (few and many records and items, epsilon 0.1 to 10, tables with
``data.attributes`` or a schema, ``data.min_items``, stated options), compared with tests/rules_pinned.json.

The file holds what the rules chose when it was written; a change of any choice fails here. Regenerate it only for
a change of the rules meant to change a choice: ``python -m tests.test_rules_pinned`` from the repository root.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from dpgm.config import load_config
from dpgm.plan import apply_public_rules
from dpgm.privacy.calibrate import default_delta
from dpgm.rules import PublicFacts, public_defaults

ROOT = Path(__file__).resolve().parents[1]
PINNED = Path(__file__).with_name("rules_pinned.json")
#: The seven shared transaction datasets' public facts (their READMEs): records, items, declared attributes.
DATASETS = {"chess": (3_196, 75, 37), "foodmart": (4_141, 1_559, None), "gowalla": (29_858, 40_981, None),
            "msnbc": (989_818, 17, None), "mushroom": (8_124, 119, 23), "retail": (88_162, 16_470, None),
            "t10i4d100k": (100_000, 870, None)}
#: Synthetic settings: (records magnitude, items, epsilon, config sections beyond transactions.yaml's).
SYNTHETIC = [
    (100, 5, 1.0, {}), (1_000, 2, 0.1, {}), (1_000, 17, 10.0, {}), (10_000, 17, 0.2, {}), (10_000, 17, 2.0, {}),
    (10_000, 300, 1.0, {}), (100_000, 100, 1.0, {}), (100_000, 100, 0.1, {}), (100_000, 5_000, 1.0, {}),
    (100_000, 5_000, 1.0, {"data": {"top_items": 200}}), (1_000_000, 1_000, 10.0, {}),
    (1_000_000, 1_001, 1.0, {}), (10_000, 50, 1.0, {"data": {"min_items": 1}}),
    (100_000, 50, 4.0, {"data": {"min_items": 2}}), (1_000, 50, 1.0, {"data": {"min_items": 1}}),
    (1_000, 12, 1.0, {"data": {"attributes": 4}}), (100_000, 12, 1.0, {"data": {"attributes": 4}}),
    (1_000, 12, 4.0, {"data": {"attribute_sizes": [2, 3, 3, 4]}}),
    (100_000, 12, 0.5, {"data": {"attributes": 4, "attribute_sizes": [2, 3, 3, 4]}}),
    (100_000, 100, 1.0, {"model": {"kind": "vae"}}), (10_000, 100, 1.0, {"model": {"kind": "independent"}}),
    (100_000, 100, 1.0, {"model": {"kind": "tree"}}), (100_000, 100, 1.0, {"partition": {"k": 3}}),
    (100_000, 100, 1.0, {"partition": {"method": "lsh_tree"}}),
    (100_000, 100, 1.0, {"partition": {"method": "kernel_kmeans"}}),
    (100_000, 100, 1.0, {"partition": {"method": "label", "k": 3}}),
    (100_000, 100, 1.0, {"model": {"length_noise_multiplier": None}}),
    (100_000, 100, 1.0, {"model": {"length_noise_multiplier": 40.0}}),
    (100_000, 100, 1.0, {"model": {"mean_clip_quantile": None}}),
    (100_000, 100, 1.0, {"model": {"lengths_from_bound": False}}),
    (100_000, 100, 1.0, {"model": {"kind": "vae", "pairs_noise_multiplier": None}}),
    (100_000, 100, 1.0, {"model": {"kind": "vae", "length_noise_multiplier": None}}),
    (1_000, 100, 4.0, {"model": {"kind": "vae"}}), (10_000, 100, 1.0, {"model": {"tree_above": 0}}),
    (100_000, 2_000, 1.0, {"model": {"kind": "tree"}, "data": {"top_items": 100}}),
]


def _config(magnitude: int, epsilon: float, n_items: int, sections: dict[str, Any]) -> Any:
    """transactions.yaml at ``epsilon`` over ``n_items`` items, with ``sections`` stated."""
    sets = [f"privacy.target_epsilon={epsilon}", f"data.n_items={n_items}"]
    sets += [f"{section}.{key}={json.dumps(value)}" for section, values in sections.items()
             for key, value in values.items()]
    return load_config(ROOT / "configs" / "transactions.yaml", sets)


def _facts(cfg: Any, magnitude: int, n_items: int) -> PublicFacts:
    """What a run over ``cfg`` reads (dpgm.pipeline.plan.public_facts) at N = ``magnitude``."""
    from dpgm.pipeline.plan import public_facts

    data = type("Universe", (), {"n_items": n_items})()
    return public_facts(cfg, data, magnitude, default_delta(magnitude))


def settings() -> dict[str, tuple[int, int, float, dict[str, Any]]]:
    """Every pinned setting by name: (N, items, epsilon, stated sections)."""
    out = {}
    for name, (n, items, attributes) in DATASETS.items():
        data = {"attributes": attributes} if attributes else {}
        for magnitude in (m for m in (1_000, 10_000, 100_000) if m <= n):
            for epsilon in (1.0, 4.0):
                for top in (None, 100):
                    stated = {"data": {**data, **({"top_items": top} if top and top < items else {})}}
                    out[f"{name} N={magnitude} eps={epsilon:g} top={top}"] = (magnitude, items, epsilon, stated)
    for magnitude, items, epsilon, stated in SYNTHETIC:
        out[f"N={magnitude} m={items} eps={epsilon:g} {json.dumps(stated, sort_keys=True)}"] = (
            magnitude, items, epsilon, stated)
    return out


def choices(magnitude: int, items: int, epsilon: float, stated: dict[str, Any]) -> dict[str, Any]:
    """``public_defaults`` for the facts and ``apply_public_rules``' settings for the config of one setting."""
    cfg = _config(magnitude, epsilon, items, stated)
    facts = _facts(cfg, magnitude, items)
    defaults = public_defaults(facts, top_items=cfg.data.top_items)
    return {"public_defaults": defaults, "applied": apply_public_rules(cfg, facts, cfg.stated)}


def _same(got: Any, pinned: Any, where: str) -> None:
    """``got`` equals ``pinned``: floats to 1e-12 relative, everything else exactly, types too."""
    if isinstance(pinned, float) and not isinstance(got, bool) and isinstance(got, (int, float)):
        assert math.isclose(got, pinned, rel_tol=1e-12, abs_tol=0.0), f"{where}: {got!r} != {pinned!r}"
    elif isinstance(pinned, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(pinned), f"{where}: keys {sorted(got)}"
        for key in pinned:
            _same(got[key], pinned[key], f"{where}.{key}")
    elif isinstance(pinned, list):
        assert isinstance(got, (list, tuple)) and len(got) == len(pinned), f"{where}: {got!r} != {pinned!r}"
        for i, (a, b) in enumerate(zip(got, pinned)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert type(got) is type(pinned) and got == pinned, f"{where}: {got!r} != {pinned!r}"


@pytest.mark.parametrize("name", sorted(settings()))
def test_the_rules_choose_what_they_were_pinned_to(name: str) -> None:
    pinned = json.loads(PINNED.read_text())
    assert sorted(pinned) == sorted(settings())  # every setting pinned, none left over
    _same(choices(*settings()[name]), pinned[name], name)


def main() -> int:
    """Write tests/rules_pinned.json from the rules as they are."""
    PINNED.write_text(json.dumps({name: choices(*s) for name, s in settings().items()}, indent=1,
                                 sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
