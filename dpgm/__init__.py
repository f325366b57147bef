"""dpgm: differentially private synthetic data from a mixture of deep generative models.

Pipeline (docs/index.md):
    dpgm.data -> dpgm.clustering (DP partition) -> dpgm.training (DP-SGD per part)
    -> dpgm.release (sampling, pure post-processing) -> dpgm.evaluation
A privacy ledger (dpgm.privacy) travels through every stage.

    import dpgm
    synth = dpgm.Synthesizer(epsilon=1.0).fit(records)  # a DataFrame of 0/1 columns, sparse matrix or array
    synthetic = synth.sample(1000, seed=0)              # the same kind of data, same columns
    synth.save("my_release"); dpgm.load("my_release").privacy_report["epsilon"]
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["NotFittedError", "Synthesizer", "fit", "load"]


def __getattr__(name: str) -> Any:
    """``dpgm.Synthesizer``, ``dpgm.fit`` and ``dpgm.load`` load the API (and, when fitting or
    loading, torch) on first use: ``import dpgm`` stays light."""
    if name in __all__:
        from dpgm import api

        return getattr(api, name)
    raise AttributeError(f"module 'dpgm' has no attribute {name!r}")
