"""The rounds of AIM and MWEM+PGM: each round's zCDP split between selection and measurement,
and a rule on public inputs only for how many rounds run."""

from __future__ import annotations

import math
from collections.abc import Iterator

from dpgm.errors import ConfigError

#: Share of each AIM and MWEM+PGM round's zCDP for the measurement (the authors' alpha).
ALPHA = 0.9


def split_round(rho_round: float, alpha: float) -> tuple[float, float]:
    """(epsilon, sigma) of one select-then-measure round costing ``rho_round`` in zCDP: a share
    ``alpha`` for the Gaussian (1 / (2 sigma^2)), the rest for the selection (epsilon^2 / 8)."""
    return math.sqrt(8 * (1 - alpha) * rho_round), math.sqrt(1 / (2 * alpha * rho_round))


def cap_reached(max_rounds: int | None, rounds_done: int) -> bool:
    """Whether the next round must be the last: the caller's public cap ``max_rounds`` is
    reached. A function of counts only, never of the data or of the clock."""
    return max_rounds is not None and rounds_done + 1 >= max_rounds


class RoundSchedule:
    """The rounds rule of AIM and MWEM+PGM: each round's (epsilon_t, sigma_t, last) from public
    inputs (rho, T, the cap ``max_rounds``) and, for AIM, earlier releases (annealing). It never
    sees the data or the clock, so neither can change how many rounds run or their noise; the
    last round spends all the budget left."""

    def __init__(self, rho: float, max_rounds: int | None, what: str) -> None:
        if not rho > 0:
            raise ConfigError(f"{what}: need rho > 0, got {rho}")
        if max_rounds is not None and max_rounds < 1:
            raise ConfigError(f"{what}: max_rounds must be >= 1 or None, got {max_rounds}")
        self.rho, self.max_rounds = float(rho), max_rounds
        self.used, self.done = 0.0, 0

    def regular(self) -> tuple[float, float]:
        """(epsilon_t, sigma_t) of a round that is not the last."""
        raise NotImplementedError

    def budget_last(self) -> bool:
        """Whether the mechanism's own rule makes the next round the last one."""
        raise NotImplementedError

    def next_round(self) -> tuple[float, float, bool]:
        """(epsilon_t, sigma_t, last), its zCDP added to ``used``."""
        last = cap_reached(self.max_rounds, self.done) or self.budget_last()
        epsilon, sigma = split_round(self.rho - self.used, ALPHA) if last else self.regular()
        self.used += epsilon**2 / 8 + 0.5 / sigma**2
        self.done += 1
        return epsilon, sigma, last

    def rounds(self) -> Iterator[tuple[float, float, bool]]:
        """``next_round`` until the last one (lazily: an anneal between rounds takes effect)."""
        last = False
        while not last:
            epsilon, sigma, last = self.next_round()
            yield epsilon, sigma, last
