"""Data: the BinaryDataset type and loaders (MNIST IDX, scikit-learn digits, transactions, CSV)."""

from dpgm.data.dataset import BinaryDataset

__all__ = ["BinaryDataset"]
