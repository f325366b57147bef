"""The command-line fronts: ``dpgm train|generate|evaluate|audit|sketch|config`` (``main.py``).

One module per command, each with ``parse_args(argv)`` and ``main(argv) -> exit code``; the
repository's ``train.py``, ``generate.py`` and ``evaluate.py`` call the same ``main``. Nothing
is imported here: ``dpgm generate`` with a bad path fails before torch loads.
"""
