"""What the auditor chooses before training (``AuditPlan``): guesses, canaries, score and the
``noise_scale`` test switch; the guesses follow the claim so that their cap clears it (bounds.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from dpgm.audit.bounds import AuditSize, audit_size, canaries_for_guesses, epsilon_cap
from dpgm.errors import ConfigError

#: Models the audit can train (the mark items must be plain extra inputs) and their "auto" score: the
#: RBM's negative phase reaches every mark column, so only its likelihood tells its canaries apart.
AUTO_SCORE = {"vae": "gradients", "rbm": "likelihood"}
SCORES = ("auto", "gradients", "weights", "likelihood")


@dataclass(frozen=True)
class AuditPlan:
    """What the auditor chooses before training: guesses, canaries, score and the test switch.

    ``guesses`` None (default): the fewest whose cap (the bound if every guess is right) is at
    least the claim + ``margin``, and at least ``min_guesses`` (audit_size); half are "in",
    half "out". ``canaries`` None: enough that both halves can be right (canaries_for_guesses).
    ``score``: "gradients" (white-box gradient canaries read off every step's released gradient,
    ``GradientCanaries``), "weights" (white-box record canaries: how far their weights moved) or
    "likelihood" (black-box), see canaries.py; "auto": gradients for a VAE, likelihood for an RBM.
    ``noise_scale``: a TEST SWITCH: every noise of the run is multiplied by it while the claim stays
    the plan's (``noise_scale.scaled_noise``); below 1 the audit should refute the claim.
    """

    canaries: int | None = None
    guesses: int | None = None
    confidence: float = 0.95
    margin: float = 1.0
    min_guesses: int = 200
    score: Literal["auto", "gradients", "weights", "likelihood"] = "auto"
    score_draws: int = 16
    noise_scale: float = 1.0

    def validate(self) -> None:
        if self.canaries is not None and self.canaries < 1:
            raise ConfigError(f"audit: canaries must be >= 1, got {self.canaries}")
        if self.guesses is not None and not (
            2 <= self.guesses
            and self.guesses % 2 == 0
            and (self.canaries is None or self.guesses <= self.canaries)
        ):
            raise ConfigError(
                f"audit: guesses must be even, >= 2 and <= canaries, got {self.guesses}"
            )
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit: confidence must be in (0, 1), got {self.confidence}")
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ConfigError(f"audit: margin must be >= 0, got {self.margin}")
        if self.min_guesses < 2:
            raise ConfigError(f"audit: min_guesses must be >= 2, got {self.min_guesses}")
        if self.score not in SCORES:
            raise ConfigError(f"audit: score must be one of {', '.join(SCORES)}, got {self.score!r}")
        if not (math.isfinite(self.noise_scale) and self.noise_scale >= 0):
            raise ConfigError(f"audit: noise_scale must be finite and >= 0, got {self.noise_scale}")
        if self.score_draws < 1:
            raise ConfigError(f"audit: score_draws must be >= 1, got {self.score_draws}")

    def size(self, claim: float, delta: float) -> AuditSize:
        """Guesses, canaries and cap for this claim (audit_size, unless the plan fixes them)."""
        r = self.guesses
        if r is None:
            try:
                r = audit_size(claim, delta, self.confidence, self.margin, self.min_guesses).guesses
            except ValueError as exc:
                raise ConfigError(f"audit: claim {claim:.4g} cannot be refuted: {exc}") from exc
        m = self.canaries if self.canaries is not None else canaries_for_guesses(r)
        if r > m:
            raise ConfigError(f"audit: {r} guesses need at least as many canaries, got {m}")
        return AuditSize(guesses=r, canaries=m, cap=epsilon_cap(m, r, delta, self.confidence))


def weakened(noise_scale: float, true_epsilon: float) -> dict[str, Any]:
    """The report's verdict keys: the noise scale and, for a run whose noise was scaled, the reason it is not
    private (``verdict.REASONS``) and its true epsilon (inf: no noise); ``verdict.stamped`` puts them first."""
    if noise_scale == 1:
        return {"noise_scale": noise_scale}
    return {"not_private": ["weakened"], "noise_scale": noise_scale, "true_epsilon": true_epsilon}
