"""Privacy accounting: events (what was released), the ledger (what a run spent), and the
RDP accountant that turns a ledger into (epsilon, delta). See DESIGN.md section 2."""

from dpgm.privacy.events import (
    DpEvent,
    GaussianEvent,
    LaplaceEvent,
    Neighbouring,
    PureDpEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
    event_from_dict,
)
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger

__all__ = [
    "DpEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "Neighbouring",
    "PrivacyLedger",
    "PureDpEvent",
    "SampledGaussianEvent",
    "SampledJointGaussianEvent",
    "event_from_dict",
]
