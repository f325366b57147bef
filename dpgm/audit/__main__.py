"""``python -m dpgm.audit``: the one-run privacy audit (dpgm/audit/cli.py)."""

import sys

from dpgm.audit.cli import main
from dpgm.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
