"""A deep DP peer for tables_lodo.py: smartnoise-synth's DP-CTGAN or PATE-CTGAN on a coded table.

Run by the Python of an environment that has smartnoise-synth (its pins, opacus < 0.15 and mbi < 2,
do not install beside dpgm's); it imports neither dpgm nor anything of this checkout. It reads the
fit sample as each column's value index (``--codes``: an .npz of ``codes`` [n, k] and ``sizes`` [k],
the schema's public column sizes), fits the synthesizer with every column categorical under a
transformer fitted on the columns' declared domains (0 .. size - 1: public, no budget spent on
preprocessing), draws ``--records`` rows and writes their codes (``--out``, an .npz) and a JSON report
beside them (``--out`` with .json: the synthesizer, epsilon, delta, seconds).

    /path/to/snsynth-venv/bin/python benchmarks/peers/snsynth_table.py --synth dpctgan \\
        --codes fit.npz --out synthetic.npz --epsilon 1 --delta 1e-6 --records 3000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

SYNTHS = ("dpctgan", "patectgan")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--synth", choices=SYNTHS, required=True)
    p.add_argument("--codes", type=Path, required=True, help="the fit sample: .npz with codes [n, k] and sizes [k]")
    p.add_argument("--out", type=Path, required=True, help="the draws' codes (.npz) and, with .json, the report")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--records", type=int, required=True, help="rows to draw")
    p.add_argument("--seed", type=int, default=0, help="torch's and numpy's global seeds (the synthesizers use them)")
    p.add_argument("--threads", type=int, default=1, help="torch's threads")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.epsilon > 0 or not 0 < args.delta < 1 or args.records < 1:
        print("error: snsynth_table: epsilon > 0, 0 < delta < 1 and records >= 1 are needed", file=sys.stderr)
        return 2
    import pandas as pd
    import torch
    from snsynth import Synthesizer
    from snsynth.transform.table import TableTransformer

    data = np.load(args.codes)
    codes, sizes = np.asarray(data["codes"], dtype=np.int64), [int(s) for s in data["sizes"]]
    names = [f"c{j}" for j in range(len(sizes))]
    domain = pd.DataFrame({name: np.arange(max(sizes)) % size for name, size in zip(names, sizes)})
    transformer = TableTransformer.create(domain, style="gan", categorical_columns=names)
    transformer.fit(domain)  # the declared domains only: public
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    start = time.perf_counter()
    batch = min(500, len(codes) // 4 * 2)  # their default, below the records (an even count: pac pairs)
    synth = Synthesizer.create(args.synth, epsilon=args.epsilon, delta=args.delta, verbose=False, batch_size=batch,
                               **({"cuda": False} if args.synth == "dpctgan" else {}))
    synth.fit(pd.DataFrame(codes, columns=names), transformer=transformer, preprocessor_eps=0.0)
    out = synth.sample(args.records)
    drawn = np.asarray(out[names], dtype=np.int64)
    np.savez(args.out, codes=drawn)
    report = {"synth": args.synth, "epsilon": args.epsilon, "delta": args.delta, "seconds": time.perf_counter() - start}
    args.out.with_suffix(".json").write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
