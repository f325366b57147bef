"""Train-on-synthetic: a gradient-boosted classifier trained on the release and tested on real records held
out, beside the same classifier trained on real records; how much of the table's predictive signal survives.

The classifier is scikit-learn's HistGradientBoostingClassifier, seeded. Features: a numeric column's numbers
(clipped to its bounds; NaN where missing), any other column's value index as a categorical feature (as an
ordinal one past the classifier's 255 categories). The target's classes are its value indices (a number's
bins). Scores: accuracy and the AUC (one-vs-rest, averaged over the classes the test records hold). Not
private: it reads the real data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation.table_data import Table
from dpgm.tables.codecs import Numeric

#: HistGradientBoostingClassifier takes categorical features of at most this many values.
MAX_CATEGORIES = 255


@dataclass(frozen=True)
class Score:
    """A classifier's accuracy and AUC on the test records (AUC None when they hold a single class)."""

    accuracy: float
    auc: float | None


@dataclass(frozen=True)
class TrainOnSynthetic:
    """The classifier trained on the release and on real records, scored on the same real test records."""

    target: str
    holdout: str  # where the test records came from, in words
    n_train_real: int
    n_train_synthetic: int
    n_test: int
    synthetic: Score
    real: Score

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_index(table: Table, target: str) -> int:
    """The target column's position; an unknown name is a one-line error listing the columns."""
    if target not in table.schema.names:
        raise ConfigError(f"--target {target!r}: not a column of the schema ({', '.join(table.schema.names)})")
    return table.schema.names.index(target)


def features(table: Table, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The feature matrix (float64) of every column but ``target``, and which features are categorical."""
    columns, categorical = [], []
    for j, codec in enumerate(table.schema.codecs):
        if j == target:
            continue
        if isinstance(codec, Numeric):
            values = np.full(table.n, np.nan)
            values[~table.cells[j][1]] = table.numbers(j)
            columns.append(values)
        else:
            columns.append(table.codes[:, j].astype(np.float64))
        categorical.append(not isinstance(codec, Numeric) and table.schema.attribute_sizes[j] <= MAX_CATEGORIES)
    return np.column_stack(columns) if columns else np.zeros((table.n, 0)), np.array(categorical, dtype=bool)


def macro_auc(labels: np.ndarray, proba: np.ndarray) -> float | None:
    """One-vs-rest AUC averaged over the classes ``labels`` hold (``proba`` [n, classes]); None for one class."""
    from sklearn.metrics import roc_auc_score

    present = np.unique(labels)
    if len(present) < 2:
        return None
    return float(np.mean([roc_auc_score(labels == c, proba[:, c]) for c in present]))


def class_proba(train: Table, test: Table, target: int, seed: int) -> np.ndarray:
    """Each test record's probability of every value of the target, from a classifier fit on ``train``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    labels = train.codes[:, target]
    seen = np.unique(labels)
    proba = np.zeros((test.n, train.schema.attribute_sizes[target]))
    if len(seen) == 1:  # a single class to learn: the classifier would refuse; predict it
        proba[:, seen[0]] = 1.0
        return proba
    x, categorical = features(train, target)
    # above 10,000 records scikit-learn stops early on a stratified split, which refuses a class of one record
    lonely = bool((np.bincount(labels)[seen] < 2).any())
    model = HistGradientBoostingClassifier(categorical_features=categorical if categorical.any() else None,
                                           early_stopping=False if lonely else "auto", random_state=seed)
    model.fit(x, labels)
    proba[:, model.classes_] = model.predict_proba(features(test, target)[0])
    return proba


def score(train: Table, test: Table, target: int, seed: int) -> Score:
    """The classifier trained on ``train``, scored on ``test``."""
    proba = class_proba(train, test, target, seed)
    labels = test.codes[:, target]
    return Score(accuracy=float(np.mean(proba.argmax(axis=1) == labels)), auc=macro_auc(labels, proba))


def split_rows(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, test rows): a random ``fraction`` of ``n`` rows held out for testing."""
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"--split must be in (0, 1), got {fraction!r}")
    order = rng.permutation(n)
    held = round(fraction * n)
    if held < 1 or held >= n:
        raise ConfigError(f"--split {fraction}: leaves no records to train or to test on")
    return np.sort(order[held:]), np.sort(order[:held])


def train_on_synthetic(real: Table, synthetic: Table, target: str, *, holdout: Table | None = None,
                       split: float = 0.2, seed: int = 0) -> TrainOnSynthetic:
    """Scores of the classifier trained on ``synthetic`` and on real records, tested on ``holdout`` (real
    records kept out of training), else on a seeded ``split`` of ``real`` (the real classifier trains on
    the rest; the release was likely trained on the held-out records too, which flatters it)."""
    j = target_index(real, target)
    if holdout is None:
        train_rows, test_rows = split_rows(real.n, split, np.random.default_rng(seed))
        real_train, test = real.rows(train_rows), real.rows(test_rows)
        where = f"a random {split:g} of the real records (seed {seed}), not in the real classifier's training"
    else:
        real_train, test, where = real, holdout, f"the hold-out file {holdout.name}"
    return TrainOnSynthetic(target=target, holdout=where, n_train_real=real_train.n, n_train_synthetic=synthetic.n,
                            n_test=test.n, synthetic=score(synthetic, test, j, seed),
                            real=score(real_train, test, j, seed))
