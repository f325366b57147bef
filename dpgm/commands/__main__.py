"""``python -m dpgm.commands``: the same as the console script ``dpgm`` (main.py)."""

import sys

from dpgm.commands.main import main

if __name__ == "__main__":
    sys.exit(main())
