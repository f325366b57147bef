"""dpgm: differentially private synthetic data from a mixture of deep generative models.

Pipeline (DESIGN.md section 1):
    dpgm.data -> dpgm.clustering (DP partition) -> dpgm.training (DP-SGD per part)
    -> dpgm.release (sampling, pure post-processing) -> dpgm.evaluation
A privacy ledger (dpgm.privacy) travels through every stage.
"""

__version__ = "0.1.0"
