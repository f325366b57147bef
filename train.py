#!/usr/bin/env python
"""``python train.py ...``: the same as ``dpgm train ...`` (the logic: dpgm/commands/train.py).

    python train.py --config configs/digits.yaml
    python train.py --config configs/mnist.yaml --set training.epochs=5 --set name=mnist5
    python train.py --resume runs/mnist
"""

import sys

from dpgm.cli import run_cli
from dpgm.commands.train import main, parse_args  # noqa: F401 (imported by the tests)

if __name__ == "__main__":
    sys.exit(run_cli(main))
