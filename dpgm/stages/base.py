"""The stage protocol: one step of a run that reads the records and releases statistics.

A run is a list of stages (``dpgm.stages.planned_stages``). Each stage charges the accountant
before every noisy draw (``dpgm.privacy.mechanisms``), keeps only public outputs (what it
released and its post-processing), may narrow the records by a per-record rule that later stages
see, and saves what a resume needs in ``state_dict``. The run's checkpoint, resume, privacy
report and plan are loops over that list (docs/development.md, "Stages"), and so are what the release
carries (``payload``) and what the privacy report says of each stage (``report``): a new stage
touches only its own module and its registration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from dpgm.config import Config
from dpgm.data.chunks import Records
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant


@dataclass
class StageContext:
    """What the stages of one run share: the config, the records (narrowed stage by stage), the
    accountant, the two generators, and the earlier stages by name."""

    cfg: Config
    data: Records  # in memory, or read in chunks (``data.chunk_mb``)
    accountant: Accountant
    rng: np.random.Generator
    generator: torch.Generator
    stages: dict[str, Stage] = field(default_factory=dict)
    #: The run's progress scope (a context manager factory): stages show their bars inside it.
    shown: Callable[[], Any] = field(default=lambda: _NoScope())

    def output(self, name: str) -> Any:
        """The public output of the earlier stage ``name`` (None when the plan has no such stage)."""
        stage = self.stages.get(name)
        return None if stage is None else stage.output


class _NoScope:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Stage:
    """One stage of a run. Subclasses set ``name`` (the ledger's stage name) and ``line`` (what the
    stage did, in words, for the privacy report), and implement ``enabled`` and ``run``."""

    name: ClassVar[str]
    #: The report's line; ``{k}``, ``{groups}``, ``{steps}`` and ``{method}`` come from the report's plan.
    line: ClassVar[str]

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.output: Any = None

    #: Whether the stage reads records in chunks (``dpgm.data.chunks``, ``data.chunk_mb``): its statistics
    #: are sums over records, so one pass of chunks gives the same release as the records in memory.
    streams: ClassVar[bool] = False

    #: The dotted config key that turns the stage on when it is not null, or (key, value): on when the
    #: option has that value (or override ``enabled``).
    switch: ClassVar[str | tuple[str, Any] | None] = None

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        """Whether a run with ``cfg`` has this stage: by default, what its ``switch`` says."""
        if cls.switch is None:
            raise NotImplementedError(f"stage {cls.name!r}: set switch or override enabled")
        key, value = (cls.switch, None) if isinstance(cls.switch, str) else cls.switch
        section, option = key.split(".")
        setting = getattr(getattr(cfg, section), option)
        return setting is not None if isinstance(cls.switch, str) else setting == value

    #: The keys this stage adds to the released model payload (``models.pt``, ``payload``): every
    #: registered stage's keys are in every payload, None where the plan has no such stage.
    payload_keys: ClassVar[tuple[str, ...]] = ()

    #: Whether this stage trains the models from what the others released: one per run, registered last.
    trains: ClassVar[bool] = False

    def run(self, ctx: StageContext) -> Any:
        """Release this stage's statistics from ``ctx.data`` (charging ``ctx.accountant`` first);
        return the public output, which the run keeps as ``self.output``."""
        raise NotImplementedError

    def narrow(self, data: BinaryDataset) -> BinaryDataset:
        """The stage's per-record rule on the records later stages see (after ``run`` and again
        on resume, from the saved output); by default every record stays."""
        return data

    def payload(self) -> dict[str, Any]:
        """What the release carries of this stage (public: released values and their post-processing),
        by ``payload_keys``, as tensors and built-ins (``models.pt`` loads with weights_only); by default nothing."""
        return {}

    def report(self) -> dict[str, Any]:
        """What the privacy report says of this stage's released values, beside its ``line``; by default nothing."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """What a resume needs (saved in the private checkpoint): by default the output."""
        return {"output": self.output}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.output = state["output"]

    def rank_state_dict(self) -> dict[str, Any] | None:
        """What only this rank holds (with several ranks, about its own records) and its resume needs
        beyond rank 0's checkpoint, saved by each rank beside it; by default nothing."""
        return None

    def load_rank_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def resume(self, ctx: StageContext, state: dict[str, Any]) -> None:
        """Come back from a checkpoint without drawing anything: by default ``load_state_dict``
        (a stage that holds more than its output, such as the trainer, rebuilds it from ``ctx``)."""
        self.load_state_dict(state)


class ArrayStage(Stage):
    """A stage whose output is one array (item ids, means, shares): saved as a tensor, loaded back as numpy."""

    def state_dict(self) -> dict[str, Any]:
        return {"output": torch.as_tensor(self.output)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.output = state["output"].numpy()


class DictStage(Stage):
    """A stage whose output is a dict of arrays (a tree's parents and logits, edges and targets): saved as tensors."""

    def state_dict(self) -> dict[str, Any]:
        output = None if self.output is None else {key: torch.as_tensor(value) for key, value in self.output.items()}
        return {"output": output}  # None: the stage released nothing (a choice went the other way)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        output = state["output"]
        self.output = None if output is None else {key: value.numpy() for key, value in output.items()}


#: Registered stage classes in pipeline order (``register_stage``).
STAGES: dict[str, type[Stage]] = {}


def register_stage(cls: type[Stage], *, before: str | None = None) -> type[Stage]:
    """Add a stage class to every run whose config enables it; ``before``: the name of the stage
    it precedes (default: the training stage, ``Stage.trains``, which stays last; with none, last).
    Usable as a decorator; a name may be registered once."""
    if cls.name in STAGES:
        raise ConfigError(f"a stage named {cls.name!r} is already registered")
    order = list(STAGES.items())
    names = [n for n, _ in order]
    if before is not None and before not in names:
        raise ConfigError(f"stage {cls.name!r}: no registered stage {before!r} to go before "
                          f"(registered: {', '.join(names)})")
    trainers = [n for n, registered in order if registered.trains and not cls.trains]
    at = names.index(before) if before is not None else names.index(trainers[0]) if trainers else len(order)
    order.insert(at, (cls.name, cls))
    STAGES.clear()
    STAGES.update(order)
    return cls


def unregister_stage(name: str) -> None:
    """Remove a registered stage (for extensions and tests that add one for a while)."""
    STAGES.pop(name, None)


def planned_stages(cfg: Config) -> list[Stage]:
    """The stages a run with ``cfg`` runs, in order, each built from the config."""
    return [cls(cfg) for cls in STAGES.values() if cls.enabled(cfg)]


def released_payload(stages: list[Stage]) -> dict[str, Any]:
    """What ``stages`` add to the released model payload, in key order: every registered stage's
    ``payload_keys`` (None where the plan has no such stage), so the file does not follow the plan's order."""
    entries: dict[str, Any] = {key: None for cls in STAGES.values() for key in cls.payload_keys}
    for stage in stages:
        entries.update(stage.payload())
    return dict(sorted(entries.items()))
