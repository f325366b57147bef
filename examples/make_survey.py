"""Write examples/survey.csv: a made-up survey of 20,000 people, 10 yes/no answers (0/1).

Entirely synthetic (numpy, seed 0), so it can ship with dpgm as the example of a CSV of 0/1
columns: two latent groups of respondents answer with different probabilities, so the answers
are correlated, as real survey answers are.

    python examples/make_survey.py
"""

from pathlib import Path

import numpy as np

QUESTIONS = ["owns_car", "cycles_to_work", "has_children", "rents_home", "works_remotely",
             "uses_public_transport", "has_pet", "lives_in_city", "over_50", "volunteers"]


def main() -> None:
    rng = np.random.default_rng(0)
    group = rng.random(20_000) < 0.4
    p = np.where(group[:, None],
                 [0.8, 0.1, 0.7, 0.2, 0.2, 0.2, 0.6, 0.3, 0.6, 0.3],
                 [0.3, 0.4, 0.3, 0.7, 0.5, 0.7, 0.3, 0.8, 0.2, 0.15])
    answers = (rng.random(p.shape) < p).astype(int)
    rows = "\n".join(",".join(map(str, row)) for row in answers)
    Path(__file__).with_name("survey.csv").write_text(",".join(QUESTIONS) + "\n" + rows + "\n")


if __name__ == "__main__":
    main()
