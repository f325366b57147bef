"""``python -m dpgm``: the same as the console script ``dpgm`` (dpgm/commands/main.py)."""

import sys

from dpgm.commands.main import main

if __name__ == "__main__":
    sys.exit(main())
