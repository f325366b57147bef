"""The release's own privacy, for the top of the quality report: the verdict of its privacy report and its
epsilon and delta, read from the run's ``release/privacy_report.json`` or the ``OUT.privacy.json`` that
``generate.py`` writes beside a release (found there when no path is given)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgm.data.paths import resolve_data_path
from dpgm.errors import ConfigError
from dpgm.privacy.verdict import judge


@dataclass(frozen=True)
class ReleasePrivacy:
    """What the privacy report of a release says (``source`` None: no report was found)."""

    source: str | None
    label: str = "unknown: no privacy report"
    headline: str | None = None
    private: bool = False
    epsilon: float | None = None
    delta: float | None = None
    neighbouring: str | None = None
    accountant: str | None = None

    @property
    def safe(self) -> bool:
        """Whether the release is safe to share: private, at a guarantee that is not weak."""
        return self.private and self.headline is None

    def guarantee(self) -> str:
        """The guarantee in one line: epsilon and delta, the neighbouring relation and the accountant."""
        if self.epsilon is None:
            return "no epsilon reported"
        delta = "" if self.delta is None else f", delta = {self.delta:.3g}"
        how = ", ".join(f"{k}: {v}" for k, v in (("neighbouring", self.neighbouring), ("accountant", self.accountant))
                        if v)
        return f"epsilon = {self.epsilon:.4g}{delta}" + (f" ({how})" if how else "")


def report_path(privacy: str | None, synthetic: str | Path) -> Path | None:
    """The privacy report to read: ``privacy`` when given, else the release's ``.privacy.json`` if present."""
    if privacy is not None:
        return resolve_data_path(privacy)
    beside = Path(f"{resolve_data_path(synthetic)}.privacy.json")
    return beside if beside.is_file() else None


def read_report(path: Path) -> dict[str, Any]:
    """A privacy report's JSON; a file that is missing or not a JSON object is a one-line error."""
    try:
        report = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"--privacy {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except ValueError:
        raise ConfigError(f"--privacy {path}: not a JSON privacy report") from None
    if not isinstance(report, dict):
        raise ConfigError(f"--privacy {path}: not a JSON privacy report")
    return report


def release_privacy(privacy: str | None, synthetic: str | Path) -> ReleasePrivacy:
    """The release's privacy as its report states it (see ``report_path``)."""
    path = report_path(privacy, synthetic)
    if path is None:
        return ReleasePrivacy(source=None)
    report = read_report(path)
    verdict = judge(report)
    delta = report.get("delta")
    return ReleasePrivacy(source=str(path), label=verdict.label, headline=verdict.headline, private=verdict.private,
                          epsilon=verdict.epsilon, delta=float(delta) if isinstance(delta, (int, float)) else None,
                          neighbouring=report.get("neighbouring"), accountant=report.get("accountant"))
