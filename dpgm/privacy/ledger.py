"""The privacy ledger: the list of every noisy release a run made, serialisable to JSON.

The ledger is a plain record; the accountant (accountant.py) does the math and enforces
budgets. Entries are only ever appended, never edited (a budget is never mutated in place).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpgm.io import atomic_write_text
from dpgm.privacy.events import DpEvent, Neighbouring, event_from_dict


@dataclass(frozen=True)
class LedgerEntry:
    """``count`` repetitions of ``event`` made by pipeline stage ``stage``."""

    stage: str
    event: DpEvent
    count: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"ledger entry count must be an integer >= 1, got {self.count!r}")
        if not self.stage:
            raise ValueError("ledger entry needs a stage name")

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "count": self.count, "event": self.event.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        return cls(stage=str(data["stage"]), event=event_from_dict(data["event"]), count=int(data["count"]))


@dataclass
class PrivacyLedger:
    """Append-only list of ledger entries plus the neighbouring relation they assume."""

    entries: list[LedgerEntry] = field(default_factory=list)
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE

    def append(self, entry: LedgerEntry) -> None:
        """Add ``entry``; one equal to the last (same stage and event) only raises its count, so a
        ledger's entries depend on what was released, not on how often it was saved and reloaded."""
        last = self.entries[-1] if self.entries else None
        if last is not None and last.stage == entry.stage and last.event == entry.event:
            self.entries[-1] = LedgerEntry(entry.stage, entry.event, last.count + entry.count)
        else:
            self.entries.append(entry)

    def stages(self) -> list[str]:
        """Stage names in order of first appearance."""
        return list(dict.fromkeys(e.stage for e in self.entries))

    def count(self, stage: str | None = None) -> int:
        """Total repetitions recorded (for one stage, or all)."""
        return sum(e.count for e in self.entries if stage is None or e.stage == stage)

    def compacted(self) -> PrivacyLedger:
        """Same ledger with consecutive identical (stage, event) entries merged into counts."""
        out: list[LedgerEntry] = []
        for e in self.entries:
            if out and out[-1].stage == e.stage and out[-1].event == e.event:
                out[-1] = LedgerEntry(e.stage, e.event, out[-1].count + e.count)
            else:
                out.append(e)
        return PrivacyLedger(out, self.neighbouring)

    def to_dict(self) -> dict[str, Any]:
        return {
            "neighbouring": self.neighbouring.value,
            "entries": [e.to_dict() for e in self.compacted().entries],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        return cls(
            entries=[LedgerEntry.from_dict(e) for e in data.get("entries", [])],
            neighbouring=Neighbouring(data.get("neighbouring", Neighbouring.ADD_REMOVE.value)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically (temporary file in the same folder, then rename)."""
        atomic_write_text(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrivacyLedger:
        return cls.from_json(Path(path).read_text())

