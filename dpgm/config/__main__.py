"""``python -m dpgm.config``: every config option, its default and its meaning (as ``dpgm config``)."""

import sys

from dpgm.commands.main import main

if __name__ == "__main__":
    sys.exit(main(["config"]))
