"""The Python API: ``dpgm.Synthesizer`` (scikit-learn style), ``dpgm.fit`` and ``dpgm.load``.

    synth = dpgm.Synthesizer(epsilon=1.0).fit(frame)   # a DataFrame of 0/1 columns
    synthetic = synth.sample(1000)                      # a DataFrame with the same columns
    synth.save("my_release"); dpgm.load("my_release")

``Synthesizer`` keeps its parameters as given (``get_params``/``set_params``, so
``sklearn.base.clone`` works); ``fit`` trains one run (partition, part means, DP-SGD, all charged
to one ledger) or a DP baseline (``method="marginals"``, ``"mwem"``, ``"aim"``, ``"mst"``,
``"mwem_pgm"``, from ``dpgm.evaluation.baselines.BASELINES``) and holds its release in memory:
the only thing a user may share. A run needs a folder, a temporary one removed before ``fit``
returns unless ``run_dir`` keeps it. ``sample`` returns the kind of data ``fit`` was given: a
pandas DataFrame (same columns and dtypes), a scipy CSR matrix, a numpy array or a BinaryDataset.

``train``, ``resume`` and ``write_release`` below are the Python forms of the train and generate
commands (run directories with checkpoints); the commands themselves call the pipeline and the release
directly, so that they never import scikit-learn (the Synthesizer's base class).
"""

from __future__ import annotations

from dpgm.api.kinds import InputKind, NotFittedError, as_dataset
from dpgm.api.release import Release
from dpgm.api.synthesizer import (
           SYNTHESIZER_FILE,
           Synthesizer,
           fit,
           load,
           resume,
           train,
           write_release,
)
from dpgm.config import DEFAULT_CONFIG

__all__ = ["DEFAULT_CONFIG", "SYNTHESIZER_FILE", "InputKind", "NotFittedError", "Release", "Synthesizer", "as_dataset",
           "fit", "load", "resume", "train", "write_release"]
