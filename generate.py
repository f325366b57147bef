#!/usr/bin/env python
"""``python generate.py ...``: the same as ``dpgm generate ...`` (the logic: dpgm/commands/generate.py).

    python generate.py --run runs/digits --n 1000 --out synthetic.csv
    python generate.py --run runs/mnist --n 64 --out grid.png --format png
    python generate.py --run runs/digits_labels --per-label 10 --labels 0,3,7 --out grid.png
"""

import sys

from dpgm.cli import run_cli
from dpgm.commands.generate import main, parse_args  # noqa: F401 (imported by the tests)

if __name__ == "__main__":
    sys.exit(run_cli(main))
