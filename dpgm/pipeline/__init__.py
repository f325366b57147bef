"""Running a plan: its public decisions (plan.py) and the run that executes its stages (run.py)."""
