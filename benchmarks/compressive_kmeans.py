"""SPARS 2019 Fig. 1: privacy-utility of DP compressive k-means (CKM) vs DP Lloyd (and pycle).

Data: a mixture of k Gaussians in d dimensions, identity covariances, centres drawn from
N(0, (2.5 k^(1/d))^2 I). Utility: relative SSE = SSE(centroids) / SSE(k-means, sklearn, 3
inits), median over trials. CKM: our sketch (dpgm.clustering.sketch), released with add/remove
neighbours and a noisy record count, decoded by CL-OMPR (best of --decodes by residual);
Laplace is pure epsilon-DP (the paper's Theorem 1), Gaussian (epsilon, delta)-DP by RDP with
delta = 1/(10 n). DP Lloyd (SuLQ, dpgm.clustering.noisy_lloyd) is (epsilon, delta)-DP with the
same delta. Public knowledge used by both: the box [-R, R]^d with R = 3 * 2.5 k^(1/d) + 3
(centroid bounds; Lloyd's L2 bound is the half-diagonal sqrt(d) R / 2) and the frequency
scale sigma2 (--sigma2, fixed in advance, never fitted to the private data).

pycle (the authors' toolbox) runs through --pycle-python, the interpreter of a separate venv
that has pycle and matplotlib (never installed into dpgm's venv): its Laplace DP sketch
(add/remove, noisy count) decoded by its CLOMP_CKM, best of --decodes, and its sketch time.

    python benchmarks/compressive_kmeans.py --n 100000 --epsilons 0.01 0.1 1 10 --trials 5 \
        --json ckm.json --png ckm.png [--pycle-python /tmp/pycle-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from provenance import write_json

from dpgm.clustering.sketch import SketchOperator, plan_noise, release_sketch
from dpgm.clustering.sketch.cl_ompr import decode
from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import clip_rows

SIGNATURE = {"e": "exp", "q": "quantised"}

PYCLE_WORKER = r"""
import json, sys, time
import numpy as np
import pycle.sketching as sk, pycle.compressive_learning as cl
args = json.loads(sys.argv[1])
np.random.seed(args["seed"])
X = np.load(args["data"])
d, m, k = X.shape[1], args["m"], args["k"]
Omega = sk.drawFrequencies("AdaptedRadius", d, m, args["sigma2"] * np.eye(d))
Phi = sk.SimpleFeatureMap("ComplexExponential", Omega)
out = {"time_sketch": None, "runs": []}
t = time.perf_counter(); sk.computeSketch(X, Phi); out["time_sketch"] = time.perf_counter() - t
bounds = np.array([-args["R"] * np.ones(d), args["R"] * np.ones(d)])
for eps in args["epsilons"]:
    z = sk.computeSketch_DP(X, Phi, eps, DPdef="UDP")
    solver = cl.CLOMP_CKM(Phi, k, bounds, z)
    solver.fit_several_times(args["decodes"])
    out["runs"].append({"epsilon": eps, "centroids": solver.get_centroids().tolist()})
print(json.dumps(out))
"""


def gmm(n: int, k: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """The SPARS Fig. 1 mixture: centres ~ N(0, (2.5 k^(1/d))^2 I), identity covariances."""
    centres = rng.normal(0.0, 2.5 * k ** (1.0 / d), size=(k, d))
    return (centres[rng.integers(k, size=n)] + rng.normal(size=(n, d))).astype(np.float32)


def sse(x: np.ndarray, centres: np.ndarray, chunk: int = 100_000) -> float:
    """Sum over records of the squared distance to the nearest centre."""
    c = np.asarray(centres, dtype=np.float64)
    total = 0.0
    for s in range(0, len(x), chunk):
        b = x[s : s + chunk].astype(np.float64)
        d2 = (b**2).sum(1)[:, None] - 2 * b @ c.T + (c**2).sum(1)[None]
        total += float(np.maximum(d2.min(1), 0).sum())
    return total


def kmeans_sse(x: np.ndarray, k: int, seed: int) -> float:
    from sklearn.cluster import KMeans

    return sse(x, KMeans(k, n_init=3, random_state=seed).fit(x).cluster_centers_)


@dataclass
class Setup:
    k: int
    d: int
    n: int
    box: float
    sigma2: float
    decodes: int
    delta: float


def ckm_trial(x, base, setup, m, f, r, mechanisms, epsilons, rng, records):
    """One dataset, one sketch operator: the exact sum once, then one release + decode per epsilon."""
    op = SketchOperator.draw(
        setup.d, m, sigma2=setup.sigma2, rng=rng, signature=SIGNATURE[f], measurements=r
    )
    t = time.perf_counter()
    total = op.sum(x, rng)
    seconds = time.perf_counter() - t
    for mech in mechanisms:
        for eps in epsilons:
            acc = Accountant(delta=setup.delta)
            try:
                noise = plan_noise(mech, target_epsilon=eps, noise_multiplier=1.0, delta=acc.delta)
            except PrivacyBudgetError:  # below the RDP conversion's floor at this delta
                continue
            released = release_sketch(total, op, noise, accountant=acc, rng=rng)
            res = decode(
                released.normalised(),
                op,
                setup.k,
                -setup.box,
                setup.box,
                rng,
                restarts=setup.decodes,
            )
            key = ("ckm", mech, m, f, "m" if r == m else str(r), eps)
            records.setdefault(key, {"rel": [], "sec": []})
            records[key]["rel"].append(sse(x, res.centres) / base)
            records[key]["sec"].append(seconds)


def lloyd_trial(x, base, setup, epsilons, iterations, rng, records):
    """DP Lloyd (SuLQ) with sigma calibrated so that its T iterations cost epsilon at delta."""
    from dpgm.clustering.noisy_lloyd import (
        lloyd_event,
        lloyd_releases,
        noisy_lloyd,
        random_unit_centres,
        resolve_sigma,
    )

    bound = math.sqrt(setup.d) * setup.box / 2
    rows = clip_rows(x, bound, dtype=np.float64)
    for eps in epsilons:
        try:
            sigma = resolve_sigma(
                1.0, eps, lloyd_event, lloyd_releases(iterations), setup.delta
            )
        except PrivacyBudgetError:  # below the RDP conversion's floor at this delta
            continue
        init = random_unit_centres(setup.k, setup.d, 0.5 * bound, rng)
        out = noisy_lloyd(
            rows,
            init,
            iterations=iterations,
            sigma=sigma,
            bound=bound,
            accountant=Accountant(delta=setup.delta),
            rng=rng,
        )
        key = ("dp_lloyd", "gaussian", None, None, None, eps)
        records.setdefault(key, {"rel": [], "sec": []})
        records[key]["rel"].append(sse(x, out.centres) / base)


def pycle_trial(x, base, setup, m, epsilons, python, seed, records):
    """pycle's Laplace DP sketch (add/remove) + CLOMP_CKM, run in its own interpreter."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npy"
        np.save(path, x)
        args = {
            "data": str(path),
            "m": m,
            "k": setup.k,
            "sigma2": setup.sigma2,
            "R": setup.box,
            "epsilons": list(epsilons),
            "decodes": setup.decodes,
            "seed": seed,
        }
        out = subprocess.run(
            [python, "-c", PYCLE_WORKER, json.dumps(args)],
            capture_output=True,
            text=True,
            check=True,
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for run in result["runs"]:
        key = ("pycle", "laplace", m, "e", "m", run["epsilon"])
        records.setdefault(key, {"rel": [], "sec": []})
        records[key]["rel"].append(sse(x, np.array(run["centroids"])) / base)
        records[key]["sec"].append(result["time_sketch"])


def speed(n: int, d: int, m: int, repeats: int, python: str | None, seed: int) -> dict:
    """Seconds to sketch n x d records with m frequencies: ours (best of repeats) and pycle's."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    out = {"n": n, "d": d, "m": m}
    for f in ("e", "q"):
        op = SketchOperator.draw(d, m, sigma2=1.0, rng=rng, signature=SIGNATURE[f])
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            op.sum(x, rng)
            times.append(time.perf_counter() - t)
        out[f"ours_{f}_seconds"] = min(times)
        out[f"ours_{f}_all"] = times
    if python:
        code = (
            "import sys, time, numpy as np, pycle.sketching as sk\n"
            f"x = np.load(sys.argv[1]); Om = sk.drawFrequencies('AdaptedRadius', {d}, {m})\n"
            "Phi = sk.SimpleFeatureMap('ComplexExponential', Om); ts = []\n"
            f"for _ in range({max(1, repeats - 1)}):\n"
            "    t = time.perf_counter(); sk.computeSketch(x, Phi); ts.append(time.perf_counter() - t)\n"
            "print(min(ts), ts)"
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.npy"
            np.save(path, x.astype(np.float64))
            res = subprocess.run(
                [python, "-c", code, str(path)], capture_output=True, text=True, check=True
            )
        best = float(res.stdout.split()[0])
        out.update(pycle_e_seconds=best, speedup_vs_pycle=best / out["ours_e_seconds"])
    return out


def summarise(records: dict) -> list[dict]:
    rows = []
    for (method, mech, m, f, r, eps), v in sorted(
        records.items(), key=lambda kv: [str(p) for p in kv[0]]
    ):
        rel = np.array(v["rel"])
        rows.append(
            {
                "method": method,
                "mechanism": mech,
                "m": m,
                "f": f,
                "r": r,
                "epsilon": eps,
                "rel_sse_median": float(np.median(rel)),
                "rel_sse_q25": float(np.quantile(rel, 0.25)),
                "rel_sse_q75": float(np.quantile(rel, 0.75)),
                "trials": len(rel),
                "sketch_seconds": float(np.median(v["sec"])) if v["sec"] else None,
            }
        )
    return rows


def plot(rows: list[dict], path: Path, kd: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = sorted({r["m"] for r in rows if r["m"] is not None})
    fig, axes = plt.subplots(1, len(ms), figsize=(6 * len(ms), 4.5), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], ms):
        groups: dict[str, list[dict]] = {}
        for r in rows:
            if r["m"] in (m, None):
                label = (
                    r["method"]
                    if r["m"] is None
                    else f"{r['method']} {r['mechanism']} f_{r['f']} r={r['r']}"
                )
                groups.setdefault(label, []).append(r)
        for label, g in sorted(groups.items()):
            g = sorted(g, key=lambda r: r["epsilon"])
            ax.plot(
                [r["epsilon"] for r in g], [r["rel_sse_median"] for r in g], marker="o", label=label
            )
        ax.set(xscale="log", yscale="log", xlabel="epsilon", title=f"m = {m // kd} kd = {m}")
        ax.axhline(1.1, color="grey", ls=":", lw=1)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("relative SSE (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--d", type=int, default=10)
    p.add_argument(
        "--epsilons", type=float, nargs="+", default=[1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0]
    )
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--m-factors", type=int, nargs="+", default=[10, 100], help="m = factor * k * d")
    p.add_argument("--signatures", nargs="+", choices=["e", "q"], default=["e", "q"])
    p.add_argument("--rs", nargs="+", default=["1", "m"], help="measurements per record (m: all)")
    p.add_argument(
        "--mechanisms", nargs="+", choices=["laplace", "gaussian"], default=["laplace", "gaussian"]
    )
    p.add_argument("--sigma2", type=float, default=3.0, help="public frequency scale")
    p.add_argument("--decodes", type=int, default=1, help="CL-OMPR runs per sketch (best residual)")
    p.add_argument("--lloyd-iterations", type=int, default=5)
    p.add_argument("--no-lloyd", action="store_true")
    p.add_argument(
        "--pycle-python", help="python of a venv with pycle (+ matplotlib): compare in the same run"
    )
    p.add_argument(
        "--pycle-epsilons", type=float, nargs="+", help="epsilons for pycle (default: --epsilons)"
    )
    p.add_argument(
        "--pycle-trials",
        type=int,
        default=1,
        help="trials that also run pycle (its decode is slow)",
    )
    p.add_argument(
        "--speed-n",
        type=int,
        default=1_000_000,
        help="records for the sketching speed test (0: skip)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    p.add_argument("--png", type=Path)
    args = p.parse_args(argv)

    setup = Setup(
        k=args.k,
        d=args.d,
        n=args.n,
        box=3 * 2.5 * args.k ** (1 / args.d) + 3,
        sigma2=args.sigma2,
        decodes=args.decodes,
        delta=1.0 / (10 * args.n),
    )
    kd = args.k * args.d
    rng = np.random.default_rng(args.seed)
    records: dict = {}
    notes = []
    try:
        import dpgm.clustering.noisy_lloyd  # noqa: F401
    except ImportError:
        args.no_lloyd = True
        notes.append("dp_lloyd skipped: dpgm.clustering.noisy_lloyd not importable")
    started = time.time()
    for trial in range(args.trials):
        x = gmm(args.n, args.k, args.d, rng)
        base = kmeans_sse(x, args.k, seed=trial)
        for factor in args.m_factors:
            m = factor * kd
            for f in args.signatures:
                for r_name in args.rs:
                    r = m if r_name == "m" else int(r_name)
                    ckm_trial(x, base, setup, m, f, r, args.mechanisms, args.epsilons, rng, records)
        if not args.no_lloyd:
            lloyd_trial(x, base, setup, args.epsilons, args.lloyd_iterations, rng, records)
        if args.pycle_python and trial < args.pycle_trials:
            pycle_trial(
                x,
                base,
                setup,
                min(args.m_factors) * kd,
                args.pycle_epsilons or args.epsilons,
                args.pycle_python,
                args.seed * 1000 + trial,
                records,
            )
        print(f"trial {trial + 1}/{args.trials} done ({time.time() - started:.0f} s)", flush=True)
    rows = summarise(records)
    print(
        f"{'method':9} {'mech':8} {'m':>6} {'f':1} {'r':>4} {'epsilon':>8} {'relSSE':>7} {'q25':>6} {'q75':>6} {'sketch_s':>8}"
    )
    for r in rows:
        sec = "" if r["sketch_seconds"] is None else f"{r['sketch_seconds']:.2f}"
        print(
            f"{r['method']:9} {r['mechanism']:8} {r['m']!s:>6} {r['f']!s:1} {r['r']!s:>4} "
            f"{r['epsilon']:8.3g} {r['rel_sse_median']:7.3f} {r['rel_sse_q25']:6.3f} {r['rel_sse_q75']:6.3f} {sec:>8}"
        )
    speed_result = None
    if args.speed_n:
        speed_result = speed(args.speed_n, args.d, 10 * kd, 3, args.pycle_python, args.seed)
        print("speed:", json.dumps(speed_result))
    if args.json:
        write_json(
            args.json,
            {
                "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "setup": vars(setup),
                "results": rows,
                "speed": speed_result,
                "notes": notes,
            },
        )
    if args.png:
        plot(rows, args.png, kd)
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
