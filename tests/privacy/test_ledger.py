"""The privacy ledger: JSON round trip, compaction, and epsilon recomputed from a saved ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import (
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    Neighbouring,
    PureDpEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
    event_from_dict,
)
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger

EVENTS = [
    GaussianEvent(noise_multiplier=40.0),
    SampledGaussianEvent(sampling_rate=0.0017, noise_multiplier=1.0),
    SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, 1.0)),
    SampledJointGaussianEvent(sampling_rate=0.01, noise_multipliers=(4.0, 1.0, 2.0)),
    LaplaceEvent(epsilon=0.1),
    ExponentialEvent(epsilon=0.2),
    PureDpEvent(epsilon=0.3),
]


def _pipeline_ledger() -> PrivacyLedger:
    ledger = PrivacyLedger()
    for _ in range(3):
        ledger.append(LedgerEntry("kmeans", GaussianEvent(noise_multiplier=40.0), 2))
    ledger.append(LedgerEntry("sgd", SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, 1.0)), 500))
    ledger.append(LedgerEntry("sgd", SampledGaussianEvent(sampling_rate=0.0017, noise_multiplier=1.2), 7))
    ledger.append(LedgerEntry("eval", LaplaceEvent(epsilon=0.05)))
    return ledger


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.kind)
def test_every_event_kind_round_trips(event) -> None:
    data = json.loads(json.dumps(event.to_dict()))
    assert data["kind"] == event.kind
    assert event_from_dict(data) == event


def test_ledger_json_round_trip_and_same_epsilon(tmp_path: Path) -> None:
    ledger = _pipeline_ledger()
    path = tmp_path / "sub" / "ledger.json"
    ledger.save(path)
    loaded = PrivacyLedger.load(path)
    assert loaded.entries == ledger.compacted().entries
    assert loaded.neighbouring is Neighbouring.ADD_REMOVE
    assert [e.stage for e in loaded.entries] == ["kmeans", "sgd", "sgd", "eval"]
    assert loaded.count("kmeans") == 6 and loaded.count() == ledger.count()
    before = Accountant(ledger, delta=1e-5).report()
    after = Accountant(loaded, delta=1e-5).report()
    assert after["epsilon"] == before["epsilon"]
    assert after["stage_epsilons"] == before["stage_epsilons"]
    assert not list(path.parent.glob(".*tmp"))  # atomic write leaves no temporary file


def test_compaction_merges_only_consecutive_identical_entries() -> None:
    ledger = _pipeline_ledger()
    ledger.append(LedgerEntry("kmeans", GaussianEvent(noise_multiplier=40.0), 1))
    compact = ledger.compacted()
    assert [(e.stage, e.count) for e in compact.entries] == [("kmeans", 6), ("sgd", 500), ("sgd", 7), ("eval", 1), ("kmeans", 1)]
    assert ledger.stages() == ["kmeans", "sgd", "eval"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "warp_drive", "epsilon": 1.0}, "unknown privacy event kind"),
        ({"kind": "gaussian", "noise_multiplier": 1.0, "colour": "red"}, "unknown keys"),
        ({"kind": "gaussian", "noise_multiplier": -1.0}, "noise_multiplier"),
        ({"kind": "sampled_gaussian", "sampling_rate": 1.5, "noise_multiplier": 1.0}, "sampling_rate"),
        ({"kind": "sampled_joint_gaussian", "sampling_rate": 0.1, "noise_multipliers": [1.0], "bound": "x"}, "bound"),
    ],
)
def test_bad_events_are_rejected(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        event_from_dict(data)


def test_bad_entries_are_rejected() -> None:
    with pytest.raises(ValueError, match="count"):
        LedgerEntry("sgd", GaussianEvent(noise_multiplier=1.0), 0)
    with pytest.raises(ValueError, match="stage"):
        LedgerEntry("", GaussianEvent(noise_multiplier=1.0))
