"""``python evaluate.py ...``: the same as ``dpgm evaluate ...`` (the logic: dpgm/commands/evaluate.py).

    python evaluate.py counting --real msnbc/msnbc.txt.gz --synthetic synthetic.csv --json eval.json
    python evaluate.py marginals --real msnbc/msnbc.txt.gz --synthetic synthetic.csv
    python evaluate.py tables --real bank.csv.gz --synthetic synthetic.csv --schema bank.schema.json \
        --target y --out metrics.json
    python evaluate.py report --real msnbc/msnbc.txt.gz --synthetic synthetic.csv --out report.html
    python evaluate.py report --real bank.csv.gz --synthetic synthetic.csv --schema bank.schema.json \
        --out report.html
"""

import sys

from dpgm.cli import run_cli
from dpgm.commands.evaluate import main, parse_args  # noqa: F401 (imported by the tests)

if __name__ == "__main__":
    sys.exit(run_cli(main))
