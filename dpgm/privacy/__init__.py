"""Privacy: what was released and what it cost (docs/privacy.md).

events.py (frozen descriptions of releases), ledger.py (the list a run spent), rdp.py (the
math), accountant.py (the one accountant: spend, can_afford, report), mechanisms.py (the one
place noise is added), discrete.py (exact discrete samplers), clipping.py (per-record clipping
with a rounding margin), calibrate.py (the one calibration), verdict.py (what every output's first
line says: not private and why, or a weak guarantee), and the CLI in __main__.py; the
empirical lower bound of a one-run audit is dpgm/audit/.
This package imports nothing from the rest of dpgm but errors and io.
"""
