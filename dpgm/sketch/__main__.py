"""``python -m dpgm.sketch``: compressive k-means over data held by several parties.

    python -m dpgm.sketch spec --items 64 --seed 7 --size 500 -o spec.json        # coordinator
    python -m dpgm.sketch sum --spec spec.json holder1.csv -o holder1.sum.json     # each holder
    python -m dpgm.sketch release holder*.sum.json --epsilon 1 -o released/        # aggregator
    python -m dpgm.sketch combine a/sketch.json b/sketch.json -o merged.json      # or: each released alone
    python -m dpgm.sketch decode released/sketch.json --k 4 -o centres.json       # anyone
    python -m dpgm.sketch assign centres.json holder1.csv -o holder1.parts         # each holder
"""

import sys

from dpgm.cli import run_cli
from dpgm.commands.sketch import main, parser  # noqa: F401 (the command's logic: dpgm/commands/sketch.py)

if __name__ == "__main__":
    sys.exit(run_cli(main))
