"""A sparse 0/1 batch by its ones computes what its dense copy does (up to float rounding)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from dpgm.models.binary_rows import BinaryRows, RowsLinear


def records(n: int = 9, m: int = 13, seed: int = 0) -> sp.csr_matrix:
    """Random 0/1 CSR records with an empty row, a stored zero and a full row."""
    rng = np.random.default_rng(seed)
    dense = (rng.random((n, m)) < 0.3).astype(np.uint8)
    dense[2] = 0
    dense[4] = 1
    csr = sp.csr_matrix(dense)
    csr.data[0] = 0  # a stored zero is not a one
    return csr


def test_the_ones_are_the_records() -> None:
    csr = records()
    x = BinaryRows.from_csr(csr)
    assert torch.equal(x.dense(), torch.as_tensor(csr.toarray(), dtype=torch.float32))
    assert torch.equal(x.lengths(), torch.as_tensor(csr.toarray().sum(1), dtype=torch.float32))
    assert len(x) == 9 and x.dim() == 2 and x.n_rows == 9


def test_rows_picked_placed_and_emptied_as_the_dense_rows() -> None:
    x = BinaryRows.from_csr(records())
    d = x.dense()
    order = torch.tensor([3, 0, 8, 2, 5])
    assert torch.equal(x[order].dense(), d[order])
    mask = torch.tensor([True, False] * 4 + [True])
    assert torch.equal(x[mask].dense(), d[mask])
    part, rank = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2]), torch.tensor([0, 1, 2, 0, 1, 2, 3, 0, 1])
    padded = torch.zeros(3, 4, 13)
    padded[part, rank] = d
    placed = x.placed((part, rank), (3, 4))
    assert torch.equal(placed.dense(), padded) and placed.n_rows == 12
    bad = torch.zeros(3, 4, dtype=torch.bool)
    bad[1, 2] = True
    assert torch.equal(placed.without(bad).dense(), padded.masked_fill(bad.unsqueeze(-1), 0.0))


def test_linear_and_clipped_sum_equal_the_dense_products() -> None:
    gen = torch.Generator().manual_seed(1)
    x = BinaryRows.from_csr(records())
    d = x.dense(torch.float64)
    layer = RowsLinear(13, 5).double()
    torch.testing.assert_close(layer(x), layer(d))
    scaled = torch.randn(9, 5, generator=gen, dtype=torch.float64)
    total = torch.randn(5, 13, generator=gen, dtype=torch.float64)
    expected = total + scaled.T @ d
    x.add_outer_(total, scaled)
    torch.testing.assert_close(total, expected)
    # k = 3 weights on a [3, 4, m] batch (a stack)
    part, rank = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2]), torch.tensor([0, 1, 2, 0, 1, 2, 3, 0, 1])
    placed = x.placed((part, rank), (3, 4))
    dp = placed.dense(torch.float64)
    w, b = torch.randn(3, 5, 13, generator=gen, dtype=torch.float64), torch.randn(3, 5, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(placed.linear(w, b), torch.baddbmm(b.unsqueeze(-2), dp, w.transpose(-1, -2)))
    scaled = torch.randn(3, 4, 5, generator=gen, dtype=torch.float64)
    total = torch.zeros(3, 5, 13, dtype=torch.float64)
    placed.add_outer_(total, scaled)
    torch.testing.assert_close(total, scaled.transpose(-1, -2) @ dp)


def test_bernoulli_loss_and_its_gradient_equal_the_dense_cross_entropy() -> None:
    gen = torch.Generator().manual_seed(2)
    x = BinaryRows.from_csr(records())
    d = x.dense(torch.float64)
    for shape, target in (((9, 13), d), ((9, 3, 13), d.unsqueeze(1).expand(9, 3, 13))):  # one logit, or K = 3
        logits = (4 * torch.randn(*shape, generator=gen, dtype=torch.float64)).requires_grad_()
        logits.data[0, ..., 0] = 60.0  # above the linear threshold of softplus
        weights = torch.rand(shape[:-1], generator=gen, dtype=torch.float64)
        sparse = x.bernoulli_nll(logits)
        (g_sparse,) = torch.autograd.grad((sparse * weights).sum(), logits)
        dense = F.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(-1)
        (g_dense,) = torch.autograd.grad((dense * weights).sum(), logits)
        torch.testing.assert_close(sparse, dense)
        torch.testing.assert_close(g_sparse, g_dense)


def test_an_empty_batch_is_empty() -> None:
    x = BinaryRows.from_csr(sp.csr_matrix((0, 6), dtype=np.uint8))
    assert x.dense().shape == (0, 6)
    assert RowsLinear(6, 2)(x).shape == (0, 2)
    assert x.bernoulli_nll(torch.zeros(0, 6)).shape == (0,)
