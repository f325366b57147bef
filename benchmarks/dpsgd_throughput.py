"""DP-SGD throughput (records/s) on the paper's VAE: plain, Opacus, dpgm fixed and adaptive.

Same model (784 -> 200 -> 2-d latent VAE, Adam), same data (binary MNIST train split, or
random binary records of that shape when MNIST is absent) and the same Poisson batches for
every variant:
  plain          non-private Adam on the mean loss of each batch;
  opacus         Opacus 1.6 GradSampleModule (hooks mode) + DPOptimizer, fixed clipping;
  dpgm_fixed     dpgm.training.dpsgd.DPSGD with k = 1, fixed clipping (ghost norms, no per-record grads);
  dpgm_adaptive  the same with DPNorm (Alg. 3) choosing C_s per batch.
With ``--mixture-parts K`` it also times whole MixtureTrainer steps (parallel schedule, Alg. 1)
of K models (VAE and RBM, 784-200) over K equal parts: the batched path (one stack, one pass)
against the per-model path (batched=False), records/s per process CPU-second.
Variants run interleaved in ``--rounds`` rounds, each round ``--epochs / rounds`` epochs
(one epoch = n records, i.e. 1/q steps) so that load changes on a shared machine hit all
variants alike; records_per_s is the median over rounds (best round and records per process
CPU-second, which a busy shared machine disturbs less, are also given). dpgm draws its gradient
noise on a worker thread beside the step's passes (dpgm/training/background.py), so its records per
process CPU-second count that thread too; on a machine whose cores are all busy the overlap is lost.

    nice python benchmarks/dpsgd_throughput.py --epochs 0.3 --json benchmarks/results/dpsgd_throughput.json
    python benchmarks/dpsgd_throughput.py --threads 2 --json benchmarks/results/dpsgd_throughput_cpu2.json
    python benchmarks/dpsgd_throughput.py --variants plain --batch-sizes 102 --mixture-parts 10
    python benchmarks/dpsgd_throughput.py --device cuda --json benchmarks/results/dpsgd_throughput_cuda.json

With ``--device cuda`` the records and the models live on the GPU (Opacus then draws its noise from a
generator there, and so does dpgm, from a generator its CPU stream reseeds each step: ``dpgm.streams``)
and each round's clock stops after the GPU has finished.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from provenance import write_json

# OpenMP threads that spin while waiting collapse throughput on a busy shared machine (measured
# ~5x); passive waiting is set before torch loads and applies to every variant alike.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from dpgm.config import TrainingConfig
from dpgm.errors import DataError
from dpgm.models import RBM, VAE
from dpgm.privacy.accountant import Accountant
from dpgm.training.dpsgd import DPSGD, Mechanism, poisson_sample
from dpgm.training.mixture import MixtureTrainer, RecordStore

VARIANTS = ("plain", "opacus", "dpgm_fixed", "dpgm_adaptive")
PAPER_Q = 0.0017


def load_records(data_dir: str | None, limit: int) -> tuple[torch.Tensor, str]:
    """Binary MNIST train images [n, 784] as float32, or random binary records when MNIST is absent."""
    from dpgm.data.mnist import load_mnist

    try:
        ds = load_mnist("train", directory=None if data_dir is None else Path(data_dir) / "mnist", limit=limit)
        return torch.from_numpy(np.asarray(ds.records, dtype=np.float32)), "mnist-train (binarised at 0.5)"
    except DataError as exc:
        print(f"MNIST not available ({exc}); using random binary records", file=sys.stderr)
        gen = torch.Generator().manual_seed(0)
        return (torch.rand(limit, 784, generator=gen) < 0.13).float(), "random binary (p=0.13)"


def make_stepper(variant: str, model: VAE, q: float, expected: float, gen: torch.Generator) -> Callable[[torch.Tensor], None]:
    """A function doing one training step of ``variant`` on a batch (``model`` on the device of the batches)."""
    device = next(model.parameters()).device
    if variant == "plain":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def plain(batch: torch.Tensor) -> None:
            opt.zero_grad(set_to_none=True)
            model.loss_per_record(batch, gen).mean().backward()
            opt.step()

        return plain
    if variant == "opacus":
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer

        gsm = GradSampleModule(model, loss_reduction="mean")  # hooks mode (default)
        dp_opt = DPOptimizer(torch.optim.Adam(gsm.parameters(), lr=1e-3), noise_multiplier=1.0, max_grad_norm=1.0,
                             expected_batch_size=round(expected), loss_reduction="mean",
                             generator=gen if device.type == "cpu" else torch.Generator(device).manual_seed(2))

        def opacus(batch: torch.Tensor) -> None:
            dp_opt.zero_grad(set_to_none=True)
            model.loss_per_record(batch, gen).mean().backward()
            dp_opt.step()

        return opacus
    clipping = "fixed" if variant == "dpgm_fixed" else "adaptive"
    mechanism = Mechanism(sampling_rate=q, noise_multiplier=1.0, clipping=clipping, clip_norm=1.0)
    dp = DPSGD([model], mechanism, expected_batch_sizes=[expected], optimizers=[torch.optim.Adam(model.parameters(), lr=1e-3)],
               generator=gen)
    return lambda batch: dp.step(batch) and None


def run_round(step: Callable[[torch.Tensor], None], data: torch.Tensor, q: float, steps: int, seed: int) -> tuple[int, float, float]:
    """(records, wall seconds, process CPU seconds) for ``steps`` Poisson-sampled steps (batches drawn untimed)."""
    gen = torch.Generator().manual_seed(seed)
    batches = [data[poisson_sample(data.shape[0], q, gen)] for _ in range(steps)]
    start, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        step(batch)
    if data.is_cuda:
        torch.cuda.synchronize()
    return sum(b.shape[0] for b in batches), time.perf_counter() - start, time.process_time() - cpu


def measure(data: torch.Tensor, batch_size: float, epochs: float, rounds: int, variants: list[str]) -> list[dict]:
    """Throughput of each variant at expected batch size ``batch_size`` (q = batch_size / n)."""
    n = data.shape[0]
    q = batch_size / n
    steps = max(1, round(epochs / q / rounds))
    steppers = {}
    for v in variants:
        model = VAE(784, hidden=[200], latent=2, generator=torch.Generator().manual_seed(1)).to(data.device)
        steppers[v] = make_stepper(v, model, q, batch_size, torch.Generator().manual_seed(2))
        run_round(steppers[v], data, q, 2, seed=99)  # warm-up
    rates: dict[str, list[float]] = {v: [] for v in variants}
    totals = {v: [0, 0.0, 0.0] for v in variants}
    for r in range(rounds):
        for v in variants:
            records, seconds, cpu = run_round(steppers[v], data, q, steps, seed=r)
            rates[v].append(records / seconds)
            for i, x in enumerate((records, seconds, cpu)):
                totals[v][i] += x
    return [
        {
            "variant": v,
            "records_per_s": statistics.median(rates[v]),
            "best_records_per_s": max(rates[v]),
            "expected_batch_size": batch_size,
            "sampling_rate": q,
            "steps": steps * rounds,
            "records": totals[v][0],
            "seconds": totals[v][1],
            "records_per_cpu_s": totals[v][0] / totals[v][2],
        }
        for v in variants
    ]


def mixture_trainer(data: torch.Tensor, kind: str, k: int, q: float, batched: bool) -> MixtureTrainer:
    """K models of ``kind`` (784-200 VAE or RBM with 100 chains) over K equal parts, adaptive clipping."""
    gen = torch.Generator().manual_seed(1)
    models = [VAE(784, hidden=[200], latent=2, generator=gen) if kind == "vae" else
              RBM(784, n_hidden=200, chains=100, generator=gen) for _ in range(k)]
    assignments = np.arange(data.shape[0]) % k
    cfg = TrainingConfig(sampling_rate=q, noise_multiplier=1.0, clipping="adaptive", optimizer="adam",
                         learning_rate=1e-3)
    return MixtureTrainer(models, RecordStore(data.numpy()), assignments, np.bincount(assignments).astype(float),
                          cfg, generator=torch.Generator().manual_seed(2), batched=batched)


def measure_mixture(data: torch.Tensor, k: int, batch_size: float, steps: int, rounds: int) -> list[dict]:
    """Records per CPU-second of whole mixture steps, batched vs per-model path, per model kind."""
    q = batch_size / data.shape[0]
    out = []
    for kind in ("vae", "rbm"):
        trainers = {batched: mixture_trainer(data, kind, k, q, batched) for batched in (True, False)}
        totals = {batched: [0, 0.0] for batched in trainers}
        for _ in range(rounds):
            for batched, trainer in trainers.items():
                accountant = Accountant(delta=1e-5)
                cpu = time.process_time()
                totals[batched][0] += sum(sum(trainer.step(accountant).batch_sizes) for _ in range(steps))
                totals[batched][1] += time.process_time() - cpu
        out += [{"model": kind, "parts": k, "path": "batched" if batched else "per-model",
                 "expected_batch_size": batch_size, "steps": steps * rounds,
                 "records_per_cpu_s": records / seconds} for batched, (records, seconds) in totals.items()]
    return out


def noise_draw(model: torch.nn.Module, device: str, repeats: int = 20) -> dict[str, float]:
    """Seconds of one model's gradient noise per step (N(0, 1) per trainable parameter, drawn as DP-SGD draws it:
    ``mechanisms.standard_normal_`` from a torch generator, one thread) and per million draws: with K parts a
    step draws K times this, so the noise bounds a plan's time from below."""
    from dpgm.privacy.mechanisms import standard_normal_

    size = sum(p.numel() for p in model.parameters() if p.requires_grad)
    buffer, gen = torch.empty(size, device=device), torch.Generator(device=device).manual_seed(0)
    standard_normal_(buffer, gen)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        standard_normal_(buffer, gen)
    if buffer.is_cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / repeats
    return {"parameters": size, "seconds_per_model_step": seconds, "seconds_per_million": seconds * 1e6 / size}


def print_table(results: list[dict]) -> None:
    """Records/s per variant, and dpgm's ratios to Opacus and to non-private training."""
    by = {r["variant"]: r["records_per_s"] for r in results}
    print(f"expected batch size {results[0]['expected_batch_size']:.0f} (q = {results[0]['sampling_rate']:.5f})")
    for r in results:
        print(f"  {r['variant']:14s} {r['records_per_s']:10.0f} records/s  (best round {r['best_records_per_s']:.0f};"
              f" {r['records_per_cpu_s']:.0f} records per CPU-second)")
    for ours in ("dpgm_fixed", "dpgm_adaptive"):
        if ours in by:
            parts = [f"{by[ours] / by[ref]:.2f}x {ref}" for ref in ("opacus", "plain") if ref in by]
            print(f"  {ours}: " + ", ".join(parts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=float, default=0.3, help="epochs per variant and batch size (fractional ok)")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (median reported)")
    ap.add_argument("--batch-sizes", type=float, nargs="+", default=[PAPER_Q * 60000, 1024],
                    help="expected batch sizes; the first is the headline (paper: q=0.0017 on 60k ~ 102)")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads (this machine: 2 cores)")
    ap.add_argument("--records", type=int, default=60000, help="use the first N training records")
    ap.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $DPGM_DATA_DIR or ./data)")
    ap.add_argument("--mixture-parts", type=int, default=0, help="also time mixture steps of K models (0: no)")
    ap.add_argument("--mixture-steps", type=int, default=20, help="mixture steps per path and round")
    ap.add_argument("--device", default="cpu", help="torch device of the records and models, e.g. cuda")
    ap.add_argument("--json", type=Path, default=None, help="write results here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message=".*Full backward hook.*")
    data, source = load_records(args.data_dir, args.records)
    if args.device != "cpu" and args.mixture_parts:
        ap.error("--mixture-parts times CPU seconds: leave it out with --device")
    data = data.to(args.device)
    device = torch.cuda.get_device_name(data.device) if data.is_cuda else "cpu"
    print(f"data: {source}, {data.shape[0]} x {data.shape[1]}; threads {args.threads}"
          f" (OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}); device {device}; epochs {args.epochs};"
          f" rounds {args.rounds}")
    with torch.enable_grad():
        noise = noise_draw(VAE(784, hidden=[200], latent=2, generator=torch.Generator().manual_seed(1)).to(args.device),
                           args.device)
    print(f"gradient noise: {noise['seconds_per_model_step'] * 1e3:.2f} ms per model and step "
          f"({noise['parameters']:,} parameters, {noise['seconds_per_million'] * 1e3:.2f} ms per million draws)")
    all_results = [measure(data, b, args.epochs, args.rounds, args.variants) for b in args.batch_sizes]
    for results in all_results:
        print_table(results)
    mixture = (measure_mixture(data, args.mixture_parts, args.batch_sizes[0], args.mixture_steps, args.rounds)
               if args.mixture_parts else [])
    for r in mixture:
        print(f"  mixture {r['model']} k={r['parts']} {r['path']:9s} {r['records_per_cpu_s']:8.0f} records per CPU-second")
    if args.json is not None:
        write_json(args.json, {
            "model": "VAE 784-200-2 (Adam, lr 1e-3)", "data": source, "n": int(data.shape[0]),
            "threads": args.threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "epochs": args.epochs, "rounds": args.rounds,
            "torch": torch.__version__, "device": device, "results": all_results[0], "extra_results": [r for res in all_results[1:] for r in res],
            "mixture_results": mixture, "noise_draw": noise,
        })
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
