"""Files of the multi-holder workflow (``python -m dpgm.sketch``): spec, sums, releases.

A spec file holds the public ``SketchSpec``. A sum file holds one holder's EXACT sketch sum
and record count: private, written owner-only (0600) and atomically, never to be published.
A release file holds the noisy sketch and count and how they were made: public, its verdict
first (``dpgm.privacy.verdict``: a weak guarantee says so in its first key). Sum and
release files carry their spec; reading one against another spec is an ``OperatorMismatch``.
Error messages name files, fields and fingerprints, never a data value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from dpgm.clustering.sketch.cl_ompr import DecodeResult
from dpgm.clustering.sketch.operator import OperatorMismatch, SketchSum
from dpgm.clustering.sketch.private import PrivateSketch
from dpgm.clustering.sketch.spec import Sketcher, SketchSpec
from dpgm.errors import ConfigError, DataError
from dpgm.io import atomic_write_json
from dpgm.privacy.verdict import stamped

SPEC_FORMAT = "dpgm-sketch-spec/1"
SUM_FORMAT = "dpgm-sketch-sum/1"
RELEASE_FORMAT = "dpgm-sketch-release/1"
CENTRES_FORMAT = "dpgm-sketch-centres/1"

PathLike = str | os.PathLike[str]


def _read(path: PathLike, fmt: str) -> dict[str, Any]:
    """The JSON object of ``path``, checked to be of format ``fmt``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DataError(f"{path}: not a JSON file") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise DataError(f"{path}: not a {fmt} file")
    return data


def _spec(path: PathLike, data: dict[str, Any]) -> SketchSpec:
    try:
        return SketchSpec.from_dict(data["spec"])
    except (KeyError, TypeError, ConfigError) as exc:
        raise DataError(f"{path}: invalid sketch spec ({type(exc).__name__})") from None


def check_spec(path: PathLike, got: SketchSpec, expected: SketchSpec) -> None:
    """One-line ``OperatorMismatch`` naming the parameters that differ (public values only)."""
    if got.fingerprint() == expected.fingerprint():
        return
    want, have = expected.to_dict(), got.to_dict()
    diff = ", ".join(f"{k} {have[k]!r} != {want[k]!r}" for k in want if have[k] != want[k])
    raise OperatorMismatch(
        f"{path}: made with a different sketch operator (spec fingerprint {got.fingerprint()}, "
        f"expected {expected.fingerprint()}: {diff}); every holder must use the same spec file"
    )


def _vectors(path: PathLike, data: dict[str, Any], m: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        re, im = (np.asarray(data[key], dtype=np.float64) for key in ("re", "im"))
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{path}: missing or non-numeric sketch vectors") from None
    if re.shape != (m,) or im.shape != (m,) or not (np.isfinite(re).all() and np.isfinite(im).all()):
        raise DataError(f"{path}: sketch vectors must be {m} finite numbers each")
    return re, im


def write_spec(path: PathLike, spec: SketchSpec) -> None:
    atomic_write_json(path, {"format": SPEC_FORMAT, "spec": spec.to_dict()})


def read_spec(path: PathLike) -> SketchSpec:
    """The spec of a spec, sum or release file."""
    path = Path(path)
    try:
        fmt = json.loads(path.read_text()).get("format")
    except (FileNotFoundError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        fmt = SPEC_FORMAT  # _read names the problem
    known = (SPEC_FORMAT, SUM_FORMAT, RELEASE_FORMAT)
    return _spec(path, _read(path, fmt if fmt in known else SPEC_FORMAT))


def write_sum(path: PathLike, total: SketchSum, spec: SketchSpec) -> None:
    """Owner-only (0600), atomic: the exact sum is as private as the records."""
    data = {"format": SUM_FORMAT, "spec": spec.to_dict(), "n": int(total.n),
            "re": total.re.tolist(), "im": total.im.tolist()}
    atomic_write_json(path, data, private=True)


def read_sum(path: PathLike, spec: SketchSpec, fingerprint: str) -> SketchSum:
    """A holder's sum, checked against ``spec``; ``fingerprint``: the local operator's."""
    data = _read(path, SUM_FORMAT)
    check_spec(path, _spec(path, data), spec)
    re, im = _vectors(path, data, spec.size)
    n = data.get("n")
    if not isinstance(n, int) or n < 0:
        raise DataError(f"{path}: the record count must be an integer >= 0")
    return SketchSum(re, im, n, fingerprint)


def _leaves(privacy: dict[str, Any]) -> list[dict[str, Any]]:
    """The privacy of each single release in ``privacy`` (a combined release lists its parts as shards)."""
    if "shards" not in privacy:
        return [privacy]
    return [leaf for shard in privacy["shards"] for leaf in _leaves(shard)]


def _guarantee(privacy: dict[str, Any]) -> dict[str, Any]:
    """The epsilon and not-private reasons a release's verdict reads: the largest epsilon of its parts
    (holders' records are disjoint) and every part's reasons."""
    leaves = _leaves(privacy)
    epsilons = [leaf["epsilon"] for leaf in leaves if isinstance(leaf.get("epsilon"), (int, float))]
    out: dict[str, Any] = {"not_private": sorted({key for leaf in leaves for key in leaf.get("not_private", [])})}
    return {**out, "epsilon": max(epsilons)} if epsilons else out


def write_release(path: PathLike, released: PrivateSketch, spec: SketchSpec) -> None:
    """A public release file, its verdict first (a weak guarantee, or not private and why)."""
    data = {"format": RELEASE_FORMAT, **_guarantee(released.privacy), "spec": spec.to_dict(),
            "count": released.count, "alpha": released.alpha, "holders": released.holders,
            "privacy": released.privacy, "re": released.re.tolist(), "im": released.im.tolist()}
    atomic_write_json(path, stamped(data))


def read_release(path: PathLike) -> tuple[SketchSpec, Sketcher, PrivateSketch]:
    """(spec, the operators it builds, the released sketch made by them)."""
    data = _read(path, RELEASE_FORMAT)
    spec = _spec(path, data)
    re, im = _vectors(path, data, spec.size)
    try:
        count, alpha, holders = float(data["count"]), float(data["alpha"]), int(data["holders"])
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{path}: missing or non-numeric count, alpha or holders") from None
    privacy = data.get("privacy") if isinstance(data.get("privacy"), dict) else {}
    sketcher = spec.build()
    fingerprint = sketcher.raw.fingerprint()
    return spec, sketcher, PrivateSketch(re, im, count, alpha, fingerprint, privacy, holders)


def write_centres(path: PathLike, spec: SketchSpec, sketcher: Sketcher, result: DecodeResult,
                  sizes: np.ndarray, privacy: dict[str, Any]) -> dict[str, Any]:
    """Decoded centres (item space, clipped, and the projected ones that assign records), weights,
    noisy part sizes: public, post-processing of a release, whose verdict (``privacy``) comes first.
    Returns what was written."""
    data = stamped({
        "format": CENTRES_FORMAT, **_guarantee(privacy), "spec": spec.to_dict(), "k": len(result.centres),
        "centres": sketcher.projection.lift(result.centres).tolist(),
        "projected_centres": result.centres.tolist(), "weights": result.weights.tolist(),
        "noisy_sizes": sizes.tolist(), "relative_residual": result.residual,
    })
    atomic_write_json(path, data)
    return data


def read_centres(path: PathLike) -> tuple[SketchSpec, np.ndarray]:
    """(spec, projected centres k x d) of a centres file."""
    data = _read(path, CENTRES_FORMAT)
    spec = _spec(path, data)
    try:
        centres = np.asarray(data["projected_centres"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{path}: missing or non-numeric projected centres") from None
    dims = spec.build().operator.dim
    if centres.ndim != 2 or centres.shape[1] != dims or len(centres) < 1:
        raise DataError(f"{path}: projected centres must be a k x {dims} array")
    return spec, centres
