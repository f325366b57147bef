"""Speed and scale: DP-SGD's throughput on CPU and GPU, the MNIST plan on a GPU, several ranks, data larger than memory."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the results page's folder is the import root (``pages.*``)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from typing import Any

from pages.common import load, load_if_there, print_sections, seconds, source, table

THROUGHPUT = {"plain": "non-private (no clipping, no noise)", "opacus": "Opacus",
              "dpgm_fixed": "dpgm, fixed clipping", "dpgm_adaptive": "dpgm, DPNorm clipping"}


def throughput_rates(data: dict[str, Any]) -> dict[tuple[float, str], float]:
    """Median records per second of one run of dpsgd_throughput.py, by (expected batch, variant)."""
    return {(r["expected_batch_size"], r["variant"]): r["records_per_s"]
            for r in data["results"] + data.get("extra_results", [])}


def throughput() -> str:
    """DP-SGD records per second against Opacus and non-private training, with dpgm's ratios to both."""
    data = load("dpsgd_throughput.json")
    runs = data["results"] + data.get("extra_results", [])
    rate = throughput_rates(data)
    rows = []
    for run in runs:
        b = run["expected_batch_size"]
        ratios = [f"{run['records_per_s'] / rate[(b, ref)]:.2f}x" if (b, ref) in rate else "-"
                  for ref in ("plain", "opacus")]
        rows.append((f"{b:g}", THROUGHPUT.get(run["variant"], run["variant"]), f"{run['records_per_s']:,.0f}",
                     f"{run['best_records_per_s']:,.0f}", *ratios))
    return "\n\n".join([
        "## DP-SGD throughput",
        (f"{data['model']}; data: {data['data']}, n = {data['n']:,}; {data['threads']} thread(s), "
         f"torch {data['torch']}, {data['rounds']} interleaved rounds of {data['epochs'] / data['rounds']:g} epoch "
         "per variant; the median round's records per second, the best round's, and the ratios to non-private "
         "training and to Opacus in the same run (`benchmarks/dpsgd_throughput.py`). At the paper's batch size "
         "the Gaussian noise for every parameter, drawn each step whatever the batch, is most of the gap to "
         "non-private training (about 1.1 ms of a 7 ms step for this model's 316,000 parameters)."),
        table(("expected batch", "training", "records/s", "best round, records/s", "x non-private", "x Opacus"),
              rows),
        source("dpsgd_throughput.json")])


#: The MNIST plan's parts and DP-SGD steps (configs/mnist.yaml: k = 10, 20 epochs at q = 0.0017).
MNIST_PARTS, MNIST_STEPS = 10, round(20 / 0.0017)


def noise_bound() -> str:
    """The gradient noise's share of a K-part plan on this CPU: K models' noise every step, whatever the batch."""
    data = load("dpsgd_throughput_cpu2_noise.json")
    noise, rate = data["noise_draw"], throughput_rates(data)
    mixture = {(r["model"], r["path"]): r["records_per_cpu_s"] for r in data["mixture_results"]}
    core_s = noise["seconds_per_model_step"] * MNIST_PARTS * MNIST_STEPS
    rows = [(f"{b:g}", THROUGHPUT.get(v, v), f"{r:,.0f}", f"{r / rate[(b, 'plain')]:.2f}x")
            for (b, v), r in rate.items()]
    return "\n\n".join([
        "## The gradient noise bounds the MNIST plan on this CPU",
        (f"`benchmarks/dpsgd_throughput.py --threads 2 --variants plain dpgm_fixed dpgm_adaptive --mixture-parts "
         f"{MNIST_PARTS}`: one model's gradient noise ({noise['parameters']:,} N(0, 1) draws from torch's CPU "
         f"generator) takes {noise['seconds_per_model_step'] * 1e3:.2f} ms, "
         f"{noise['seconds_per_million'] * 1e3:.2f} ms per million draws. The MNIST plan steps {MNIST_PARTS} such "
         f"models {MNIST_STEPS:,} times: {core_s:.0f} s of one core for the noise alone, drawn on a worker thread "
         f"beside the passes, so {core_s / 2:.0f} s on two cores even if the passes cost nothing. A whole "
         f"{MNIST_PARTS}-part step runs at {mixture.get(('vae', 'batched'), float('nan')):,.0f} records per CPU "
         "second here. The plan cannot run in two minutes on two cores without a faster Gaussian source (or fewer "
         "parameters to noise)."),
        table(("expected batch", "training", "records/s", "x non-private"), rows),
        source("dpsgd_throughput_cpu2_noise.json")])


def second_machine() -> str:
    """DP-SGD's ratio to non-private training, the gradient noise's cost and the MNIST plan's wall time on a second
    2-core machine, where torch's CPU normal draw is several times faster than on the machine of the sections above."""
    data, plan = load("dpsgd_throughput_cpu2_epyc.json"), load("config_timings_mnist_epyc.json")
    rate, noise = throughput_rates(data), data["noise_draw"]
    rows = [(f"{b:g}", THROUGHPUT.get(v, v), f"{r:,.0f}", f"{r / rate[(b, 'plain')]:.2f}x")
            for (b, v), r in rate.items()]
    core_s = noise["seconds_per_model_step"] * MNIST_PARTS * MNIST_STEPS
    [run] = plan["runs"]
    return "\n\n".join([
        "## DP-SGD and the MNIST plan on a second 2-core machine",
        (f"`benchmarks/dpsgd_throughput.py --threads 2 --rounds {data['rounds']} --batch-sizes 102 1024 --variants "
         f"plain dpgm_fixed dpgm_adaptive` and `benchmarks/config_timings.py --configs mnist --threads default` on "
         f"another machine of 2 cores ({data['provenance']['machine']['platform']}, torch {data['torch']}), nothing "
         "else running, the shipped code: one "
         f"model's gradient noise takes {noise['seconds_per_model_step'] * 1e3:.2f} ms here "
         f"({noise['seconds_per_million'] * 1e3:.2f} ms per million draws), so the MNIST plan's noise is "
         f"{core_s:.0f} s of one core, and the whole plan (`train.py --config mnist.yaml`) takes "
         f"{run['seconds']:.0f} s: its DP-SGD passes, not its noise, bound it on this machine."),
        table(("expected batch", "training", "records/s", "x non-private"), rows),
        source("dpsgd_throughput_cpu2_epyc.json", "config_timings_mnist_epyc.json")])


#: Runs of dpsgd_throughput.py on two threads, alternated: the code before the passes left a core to the noise
#: worker (NOISE_CORE_BELOW) and after.
NOISE_CORE = (("before", "dpsgd_throughput_cpu2_split_before_1.json", "dpsgd_throughput_cpu2_split_before_2.json"),
              ("after", "dpsgd_throughput_cpu2_split_after_1.json", "dpsgd_throughput_cpu2_split_after_2.json"))


def noise_core() -> str:
    """DP-SGD's ratio to non-private training on two threads, before and after small steps' passes left a core to the
    worker drawing the gradient noise."""
    runs = {(code, i): throughput_rates(load(name)) for code, *names in NOISE_CORE for i, name in enumerate(names)}
    settings = sorted({key for rates in runs.values() for key in rates if key[1] != "plain"})
    rows = [(f"{b:g}", THROUGHPUT.get(v, v), *(", ".join(
        f"{runs[code, i][b, v] / runs[code, i][b, 'plain']:.2f}x" for i in range(len(names)))
        for code, *names in NOISE_CORE)) for b, v in settings]
    return "\n\n".join([
        "## DP-SGD on two cores: a core left to the noise worker",
        ("`benchmarks/dpsgd_throughput.py --threads 2 --variants plain dpgm_fixed dpgm_adaptive --batch-sizes 102 256 "
         "1024 --rounds 6 --epochs 0.2`, run twice on the code before and twice after, alternated, on the quiet "
         "2-core machine: dpgm's records per second over non-private training's in the same run, one ratio per run. "
         "`before`: the passes on both threads while a worker thread draws the gradient noise, three busy threads "
         "on two cores; `after`: below `NOISE_CORE_BELOW` (360) expected records per model and step the passes and "
         "clipped sums run on one thread and the worker on the other core (`dpgm/training/dpsgd.py`). At batch 1,024 "
         "the code is the same before and after; its ratios show the runs' spread."),
        table(("expected batch", "training", "before", "after"), rows),
        source(*(name for _, *names in NOISE_CORE for name in names))])


def mixture_views() -> str:
    """A K-part step before and after the stacked models' parameters became views of the stack (no per-step copy)."""
    data = load_if_there("dpsgd_mixture_views.json")
    if data is None:
        return ""
    rows = []
    for code in ("before", "after"):
        runs = [r for r in data["runs"] if r["code"] == code]
        rate = {(m["model"], m["path"]): [] for r in runs for m in r["mixture_results"]}
        for r in runs:
            for m in r["mixture_results"]:
                rate[(m["model"], m["path"])].append(m["records_per_cpu_s"])
        prof = [p for p in data["profile"]["runs"] if p["code"] == code]
        rows.append((code, *(f"{sum(v) / len(v):,.0f}" for v in rate.values()),
                     ", ".join(f"{p['main_thread_cpu_ms_per_step']:.0f} ({p['cat_ms_per_step']:.1f})" for p in prof)))
    heads = [f"{model} {path}, records / CPU s" for (model, path) in rate]
    return "\n\n".join([
        f"## A {MNIST_PARTS}-part step: the stack holds the models' parameters",
        (f"{data['what']}; mean over {len(runs)} runs each. The profile: {data['profile']['what']}, per run in ms "
         "(the copy's in brackets). The per-model path's code did not change: its rise is this machine's drift and "
         "the batched path's lighter memory in the same process, so the profile's missing copy is the measure."),
        table(("code", *heads, "main thread CPU ms per step (copy)"), rows),
        source("dpsgd_mixture_views.json")])


def throughput_gpu() -> str:
    """The same benchmark on a GPU (``--device cuda``) beside the same machine's CPU cores."""
    gpu, cpu = load("dpsgd_throughput_cuda.json"), load("dpsgd_throughput_gpu_host_cpu.json")
    on_gpu, on_cpu = throughput_rates(gpu), throughput_rates(cpu)
    rows = [(f"{b:g}", THROUGHPUT.get(v, v), f"{r:,.0f}", f"{r / on_gpu[(b, 'opacus')]:.2f}x",
             f"{on_cpu[(b, v)]:,.0f}", f"{on_cpu[(b, v)] / on_cpu[(b, 'opacus')]:.2f}x", f"{r / on_cpu[(b, v)]:.2f}x")
            for (b, v), r in on_gpu.items()]
    return "\n\n".join([
        "## DP-SGD throughput on a GPU",
        (f"The benchmark above with `--device cuda` on one {gpu['device']} (torch {gpu['torch']}) and, on the same "
         f"machine, with `--device cpu` on {cpu['threads']} threads; data: {gpu['data']}, n = {gpu['n']:,}. "
         "Measured before the gradient noise was drawn on the GPU: dpgm drew it from its CPU stream and moved it "
         "there (today's `training.device_noise: false`), Opacus from a generator on the GPU. On the GPU, dpgm and "
         "Opacus run at about the same speed for this model; on the CPU, dpgm runs several times faster than "
         "Opacus."),
        table(("expected batch", "training", "GPU records/s", "x Opacus (GPU)", "CPU records/s", "x Opacus (CPU)",
               "GPU / CPU"), rows),
        source("dpsgd_throughput_cuda.json", "dpsgd_throughput_gpu_host_cpu.json")])


GPU_NOISE = (("gpu_noise_mnist_e2_stream.json", "2", "GPU", "CPU stream, moved to the GPU (`device_noise: false`)"),
             ("gpu_noise_mnist_e2_device.json", "2", "GPU", "on the GPU, reseeded each step (default)"),
             ("gpu_noise_mnist_e2_host_cpu.json", "2", "the same machine's CPU", "CPU stream"),
             ("gpu_noise_mnist_stream.json", "20 (the plan)", "GPU", "CPU stream, moved to the GPU (`device_noise: false`)"),
             ("gpu_noise_mnist_device.json", "20 (the plan)", "GPU", "on the GPU, reseeded each step (default)"))


def mnist_gpu() -> str:
    """The paper's MNIST plan on one GPU, its gradient noise drawn on the CPU or on the GPU."""
    runs = {name: load(name) for name, *_ in GPU_NOISE}
    first = runs[GPU_NOISE[0][0]]["provenance"]
    rows = [(epochs, where, noise, f"{runs[name]['runs'][0]['seconds']:.1f}", f"`{name}`")
            for name, epochs, where, noise in GPU_NOISE]
    return "\n\n".join([
        "## The MNIST plan on a GPU: where the gradient noise is drawn",
        ("`benchmarks/config_timings.py --configs mnist --threads 16 --set device=cuda --set seed=0` on one NVIDIA "
         f"H100 80GB HBM3 machine with {first['machine']['cpus']} cores (torch {first['versions']['torch']}), with "
         "`--set training.device_noise=false` or not, and with `--set training.epochs=2` for the shorter runs; the "
         "host CPU run leaves out `device=cuda`. Each run is one fresh `train.py` process (data loading, the "
         "kernel k-means partition, ten VAEs of 316,000 parameters trained together, the release files). With "
         "the noise on the CPU stream, each step's 3.2 million normals are drawn on one CPU thread and copied to "
         "the GPU, and that bounds the run; drawn on the GPU from a generator that one draw of the stream reseeds "
         "each step (docs/guide/distributed.md, \"On a GPU\"), the whole plan takes about a third of the time. "
         "The same plan on the 2-core machine that runs the other benchmarks takes about 250 s "
         "(`config_timings_mnist.json`, another machine). The runs' local changes are the commit that adds these "
         "files."),
        table(("epochs", "trained on", "gradient noise", "seconds", "file"), rows),
        source(*runs)])


def distributed() -> str:
    """A statistics-only run over 1 and 2 torch.distributed ranks: seconds and memory per rank."""
    name = "distributed_statistics.json"
    data = load_if_there(name)
    if data is None:
        return ""
    total = {w: sum(r["records"] for r in data["rows"] if r["world"] == w) for w in {r["world"] for r in data["rows"]}}
    rows = [(r["world"], r["rank"], f"{r['records']:,}", seconds(r["read_s"]), seconds(r["stages_s"]),
             seconds(r["dpsgd_s"]), f"{r['steps'] * data['sampling_rate'] * total[r['world']] / r['dpsgd_s']:,.0f}",
             f"{r['peak_rss_mb']:.0f}", f"{r['epsilon']:.4f}") for r in data["rows"]]
    return "\n".join([
        "## Several ranks", "",
        (f"`benchmarks/distributed_statistics.py`: msnbc ({Path(data['data']).name}, uncompressed) read by byte "
         f"ranges, DP Lloyd into {data['k']} parts and the part means (the statistics stages), then DP-SGD of a "
         f"small VAE per part (all parts stacked, sampling rate {data['sampling_rate']:g}, fixed clipping), on "
         "gloo ranks of this 2-core machine, one thread each; records/s: the records sampled over all ranks per "
         "second of DP-SGD. Every rank draws the whole noise (only rank 0's is kept) and the parts' gradients "
         "cross the ranks once per step: with a model this small those fixed costs outweigh the halved "
         "per-record work. Peak memory is most of all the Python and torch runtime each rank loads."), "",
        table(("ranks", "rank", "records", "read s", "stages s", "DP-SGD s", "records/s", "peak RSS MB", "epsilon"),
              rows),
        "", source(name)])


def large_data() -> str:
    """A generated transaction file partitioned and trained in chunks and in memory: peak memory per rank."""
    name, parts = "large_transactions.json", "large_transactions_parts.json"
    data = load_if_there(name)
    if data is None:
        return ""
    plan = data["plan"]
    held = {"chunks": "in chunks", "memory": "in memory", "parts": "in chunks, {parts} files"}
    rows = [(f"{r['records']:,}", f"{d['file_mib'][str(r['records'])]:,.0f}", r["ranks"],
             held[r["mode"]].format(parts=r.get("parts")), seconds(r["wall_s"]),
             ", ".join(f"{x['peak_rss_mib']:,.0f}" for x in r["per_rank"]))
            for d in filter(None, (data, load_if_there(parts))) for r in d["results"]]
    names = (name, parts) if load_if_there(parts) else (name,)
    return "\n".join([
        "## Data larger than memory", "",
        (f"`benchmarks/large_transactions.py`: a generated file of {data['items']} items (8 profiles, about 4 "
         "items per record) written a chunk at a time, then the whole run: DP Lloyd into "
         f"{plan['partition']['k']} parts ({plan['partition']['iterations']} iterations), the part means, the "
         f"length histogram, one VAE per part by DP-SGD (q = {plan['training']['sampling_rate']:g}, "
         f"{plan['training']['epochs']:g} epoch, {plan['training']['chunk_window']} steps per pass in chunks) and "
         f"a release of synthetic records, at epsilon 1; in chunks of {plan['data']['chunk_mb']:g} MB or loaded "
         "in memory, on gloo ranks of this 2-core machine, one thread each. Peak memory: each rank's peak "
         "resident set (ru_maxrss), of which about 850 MiB is the Python, torch and library runtime. "
         "In the row of several files, the file was cut into that many parts in a folder (`data.path` names "
         "it) and each rank read its whole files; it ran beside another benchmark on one of the two cores."), "",
        table(("records", "file MiB", "ranks", "records held", "wall s", "peak RSS per rank, MiB"), rows),
        "", source(*names)])


#: The wide runs timed end to end on both cores (wall seconds): (file, what it is).
#: The stages timed apart on both cores (the release's writing overlaps its drawing and tilt: left out).
WALL_STAGES = ("partition", "training", "calibration", "drawing", "tilt")
WIDE_WALL = (("wide_speed_500k_2threads.json", "500,000 x 2,000", 300.0),
             ("wide_speed_1m_2threads.json", "1,000,000 x 2,000", 600.0))


def wide_wall() -> str:
    """The generic config on generated wide records on both cores, quiet: wall seconds of the run and the release."""
    rows = []
    for name, size, target in WIDE_WALL:
        data = load_if_there(name)
        if data is None:
            continue
        run, wall = data["this"], data["this"]["seconds"]
        total = run["run_s"] + run["release_s"]
        rows.append((size, data["settings"]["threads"], *(seconds(wall.get(s, 0.0)) for s in WALL_STAGES),
                     seconds(run["run_s"]), seconds(run["release_s"]), seconds(total),
                     f"{total / target:.2f} of {target / 60:.0f} min", f"{run.get('peak_rss_mib_end', float('nan')):,.0f}"))
    if not rows:
        return ""
    return "\n".join([
        "### End to end on two cores", "",
        ("`benchmarks/wide_speed.py --records N --threads 2` on the quiet 2-core machine: wall seconds. The "
         "release draws each chunk's pool while a worker thread fits the previous chunk's tilt, so the `drawing` and "
         "`tilt` seconds overlap (each is the wall time inside that stage, summed over chunks) and the release's wall "
         "time is less than their sum. `run` is the training command's wall time (the data handed over in memory), "
         "`release` the release of as many records as were read; the targets are five minutes at 500,000 records and ten at 1,000,000."), "",
        table(("records x items", "threads", *WALL_STAGES, "run", "release", "run + release", "of the target",
               "peak RSS MiB"), rows),
        "", source(*(n for n, _, _ in WIDE_WALL if load_if_there(n) is not None))])


#: The wide runs: (file, what it is); each holds the stages' seconds and CPU seconds of one generic run.
WIDE = (("wide_speed_50k_vs_main.json", "50,000 x 2,000"), ("wide_speed_1m.json", "1,000,000 x 2,000"))
#: The stages of a wide run in the order they run.
WIDE_STAGES = ("partition", "training", "calibration", "drawing", "tilt", "writing")


def wide() -> str:
    """The generic config on generated wide records: each stage's CPU seconds and the peak memory."""
    rows = []
    for name, size in WIDE:
        data = load_if_there(name)
        if data is None:
            continue
        runs = [("after", data["this"])] + ([("before", data["baseline"])] if "baseline" in data else [])
        for label, run in runs:
            cpu = run["cpu_seconds"]
            rows.append((size, label, *(seconds(cpu[s]) for s in WIDE_STAGES), seconds(sum(cpu.values())),
                         f"{run.get('peak_rss_mib_end', float('nan')):,.0f}"))
    if not rows:
        return ""
    return "\n".join([
        "## The paper's scale: 2,000 items", "",
        ("`benchmarks/wide_speed.py --records N`: records generated from 20 sparse profiles over 2,000 items (about 10 "
         "items each, a public generator), the generic config end to end at epsilon 1 (DP Lloyd, one VAE per part by "
         "DP-SGD on the sparse path, the release of N records calibrated to the noisy means and tilted to the noisy "
         "length histogram), one thread. CPU seconds per stage, measured on a machine that ran other jobs (the wall "
         "seconds, in the files, were 2 to 5 times these); `before`: `--baseline`, the commit before the release's "
         "speed-ups (the length tilt's search over the features some draw holds, the calibration's moments summed in "
         "blocks, the transactions written in one pass), run the same way; the 1,000,000-record run predates the "
         "calibration's blocks. At 1,000,000 records the plan is k = 20 parts and 201 steps at q = 0.00512 (an "
         "expected batch of 5,120, as at 200,000): DP-SGD's cost does not grow with n, the release's does. "
         "`wide_speed_1m_2ranks.json` ran it on two ranks: training halves, the release stays on rank 0."), "",
        table(("records x items", "code", *WIDE_STAGES, "total", "peak RSS MiB"), rows),
        "", source(*(n for n, _ in WIDE if load_if_there(n) is not None), "wide_speed_1m_2ranks.json")])


if __name__ == "__main__":
    raise SystemExit(print_sections(__doc__, lambda: [throughput(), noise_bound(), second_machine(), noise_core(), mixture_views(), throughput_gpu(), mnist_gpu(), distributed(), large_data(), wide(), wide_wall()]))
