"""Write examples/table.csv and examples/table.schema.json: a made-up table of 2,000 patients.

Entirely synthetic (numpy, seed 0), so it can ship with dpgm as the example of a declared table of
categories and numbers: an integer (age), a number (weight, sometimes missing), a category (region),
a yes/no column (smoker) and a date (visit); older patients smoke less and weigh more, so the columns
depend on each other. The schema is what its owner declares: bounds and categories known in advance.

    python examples/make_table.py
"""

import csv
import json
from pathlib import Path

import numpy as np

REGIONS = ["north", "south", "east", "west"]
SCHEMA = {"columns": [
    {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "missing": False},
    {"name": "weight", "kind": "float", "lower": 40.0, "upper": 160.0, "bins": 12, "missing": True},
    {"name": "region", "kind": "categorical", "categories": REGIONS, "missing": False},
    {"name": "smoker", "kind": "binary", "categories": ["no", "yes"], "missing": False},
    {"name": "visit", "kind": "datetime", "lower": "2024-01-01", "upper": "2024-12-31T23:59:59", "bins": 12,
     "missing": False},
]}


def main() -> None:
    rng = np.random.default_rng(0)
    n = 2_000
    age = rng.integers(18, 91, n)
    weight = np.round(np.clip(rng.normal(60 + 0.3 * age, 12), 40, 160), 1)
    smoker = rng.random(n) < np.where(age < 45, 0.35, 0.12)
    region = rng.choice(REGIONS, n, p=[0.4, 0.3, 0.2, 0.1])
    start = np.datetime64("2024-01-01T00:00:00")
    visit = start + rng.integers(0, 366 * 86400, n).astype("timedelta64[s]")
    missing = rng.random(n) < 0.05
    folder = Path(__file__).parent
    with open(folder / "table.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([c["name"] for c in SCHEMA["columns"]])
        for row in zip(age, weight, missing, region, smoker, visit):
            a, w, gone, r, s, v = row
            writer.writerow([a, "" if gone else w, r, "yes" if s else "no", str(v)])
    (folder / "table.schema.json").write_text(json.dumps(SCHEMA, indent=2) + "\n")


if __name__ == "__main__":
    main()
