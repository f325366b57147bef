"""A tree of items: each item depends on at most one other (a Chow-Liu forest, Chow and Liu 1968).

The graphical model MST fits (McKenna et al. 2021) reduced to what binary items need: a forest
over the items, each root drawn at its frequency and each other item given its parent's value.
Its parameters are released statistics, not trained (dpgm.stages.item_pairs fits them from the
part's noisy mean and noisy pair counts), so dpgm's rules pick it where DP-SGD costs more than the
correlations it learns. Sampling is ancestral: items in an order where parents come first.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.config_fields import opt
from dpgm.models.draws import bernoulli_draws
from dpgm.models.protocol import BernoulliSampling, NoPostProcessing


@dataclass(frozen=True)
class TreeOptions:
    """``model.options`` of ``model.kind: tree`` (spent by dpgm.stages.item_pairs)."""

    select_epsilon: float = opt(0.1, "epsilon of each of the n_items - 1 edge selections (exponential mechanism), "
                                     "and of each second parent's")
    pair_noise_multiplier: float = opt(20.0, "noise std / L2 sensitivity of the chosen pairs' counts")
    by_attribute: bool = opt(False, "a tree over a declared table's attributes (dpgm.models.attribute_tree; needs "
                                    "data.attribute_sizes)")
    all_pairs: bool = opt(False, "release every pair's count (no selections) and let the release follow them all "
                                 "(needs length_noise_multiplier or lengths_from_bound)")
    triple_noise_multiplier: float | None = opt(None, "by_attribute: give attributes a second parent (each chosen "
                                                      "by a select_epsilon exponential mechanism) and release the "
                                                      "triples' tables at this noise std / L2 sensitivity (None: none)")
    target_parent: bool = opt(False, "by_attribute: root the tree at data.schema's target and draw every attribute "
                                     "given the target as well as its parent (tree-augmented naive Bayes), the "
                                     "table of the three released where its cells hold a noise std of records: in "
                                     "place of the pair's, or beside it at triple_noise_multiplier where that is set")

    def __post_init__(self) -> None:
        if not (self.select_epsilon > 0 and self.pair_noise_multiplier > 0):
            raise ValueError("select_epsilon and pair_noise_multiplier must be > 0")
        if self.all_pairs and self.by_attribute:
            raise ValueError("all_pairs is for a tree of items, not by_attribute")
        if self.triple_noise_multiplier is not None and not (self.by_attribute and self.triple_noise_multiplier > 0):
            raise ValueError("triple_noise_multiplier must be > 0, and is for a tree by_attribute")
        if self.target_parent and not self.by_attribute:
            raise ValueError("target_parent is for a tree by_attribute")


class ResizedBuffers:
    """A module whose buffers named in ``resized`` take their shapes from ``set_tree``: a saved state resizes them
    before it loads."""

    resized: tuple[str, ...] = ()

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        for name in self.resized:
            if prefix + name in state_dict:
                setattr(self, name, torch.empty_like(state_dict[prefix + name]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)  # type: ignore[misc]


class Tree(ResizedBuffers, NoPostProcessing, BernoulliSampling, nn.Module):
    """``parent[j]`` (-1: a root) and ``logits[j, v]`` = logit P(item j | its parent = v) (a root: both equal);
    ``pairs`` [P, 2], ``pair_joints`` [P] and ``pair_noise`` [P]: measured pairs beyond the tree that a release
    follows, and their noise (none: P = 0)."""

    resized = ("pairs", "pair_joints", "pair_noise")

    def __init__(self, n_items: int) -> None:
        super().__init__()
        self.n_items = int(n_items)
        self.register_buffer("parent", torch.full((self.n_items,), -1, dtype=torch.long))
        self.register_buffer("pairs", torch.zeros(0, 2, dtype=torch.long))
        self.register_buffer("pair_joints", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("pair_noise", torch.zeros(0, dtype=torch.float64))
        with warnings.catch_warnings():  # "Initializing zero-element tensors is a no-op": the weight is empty
            warnings.simplefilter("ignore", UserWarning)
            self.out = nn.Linear(0, 2 * self.n_items)  # its bias holds the logits (DP-SGD's layer type; never trained)
        nn.init.zeros_(self.out.bias)

    @property
    def logits(self) -> Tensor:
        """[n_items, 2]: logit P(item j | its parent = v), a view of the layer's bias."""
        return self.out.bias.view(self.n_items, 2)

    @torch.no_grad()
    def set_tree(self, parent: Tensor, logits: Tensor, pairs: Tensor | None = None,
                 pair_joints: Tensor | None = None, pair_noise: Tensor | None = None) -> None:
        """The forest (``parent``, checked acyclic), its conditional logits [n_items, 2] and, where every pair
        was measured, the pairs [P, 2], their joint frequencies [P] the release follows and their noise [P]
        (dpgm.stages.item_pairs.pair_noise; default 0)."""
        parent = torch.as_tensor(parent, dtype=torch.long)
        order_of(parent)  # refuses a cycle
        self.parent.copy_(parent)
        self.logits.copy_(torch.as_tensor(logits, dtype=self.logits.dtype))
        if pairs is not None and pair_joints is not None:
            self.pairs = torch.as_tensor(pairs, dtype=torch.long).reshape(-1, 2).clone()
            self.pair_joints = torch.as_tensor(pair_joints, dtype=torch.float64).reshape(-1).clone()
            self.pair_noise = (torch.zeros_like(self.pair_joints) if pair_noise is None
                               else torch.as_tensor(pair_noise, dtype=torch.float64).reshape(-1).clone())

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """No per-record randomness: [n, 0]."""
        return torch.zeros(n, 0, dtype=self.logits.dtype, device=self.logits.device)

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Negative log-likelihood of each row of ``x`` [..., B, m] under the tree -> [..., B]."""
        given = torch.where(self.parent >= 0, x[..., self.parent.clamp_min(0)], torch.zeros_like(x)).long()
        logits = torch.gather(self.logits.expand(*x.shape, 2), -1, given.unsqueeze(-1)).squeeze(-1)
        return F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(dim=-1)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        return self.record_losses(x.to(self.logits.dtype), self.step_noise(x.shape[0], generator))

    def output_bias(self) -> Tensor:
        """The roots' logits (column 0); the part means' starting point, replaced by ``set_tree``."""
        return self.logits[:, 0]

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float), drawn item by item, parents first (systematic: dpgm.models.draws)."""
        x = torch.zeros(n, self.n_items, dtype=self.logits.dtype, device=self.logits.device)
        for j in order_of(self.parent).tolist():
            p = int(self.parent[j])
            given = x[:, p].long() if p >= 0 else torch.zeros(n, dtype=torch.long, device=x.device)
            x[:, j] = bernoulli_draws(torch.sigmoid(self.logits[j, given])[:, None], generator,
                                      systematic=systematic)[:, 0]
        return x

    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Each item's logit given its parent's drawn value, for n fresh records [n, n_items]."""
        x = self.sample(n, generator)
        given = torch.where(self.parent >= 0, x[:, self.parent.clamp_min(0)], torch.zeros_like(x)).long()
        return torch.gather(self.logits.expand(n, -1, -1), 2, given.unsqueeze(-1)).squeeze(-1)

    def marginals(self) -> Tensor:
        """Each item's exact frequency under the model [n_items] (parents first)."""
        p = torch.zeros(self.n_items, dtype=self.logits.dtype, device=self.logits.device)
        cond = torch.sigmoid(self.logits)
        for j in order_of(self.parent).tolist():
            k = int(self.parent[j])
            p[j] = cond[j, 0] if k < 0 else (1 - p[k]) * cond[j, 0] + p[k] * cond[j, 1]
        return p


    def edge_joints(self) -> tuple[np.ndarray, np.ndarray]:
        """(edges [e, 2], P(both items) [e]) a release follows: the measured pairs where there are any, else each
        tree edge (parent, child) at its exact joint frequency."""
        if self.pairs.numel():
            return self.pairs.cpu().numpy().astype(np.int64), self.pair_joints.cpu().numpy().astype(np.float64)
        child = torch.nonzero(self.parent >= 0).flatten()
        parent = self.parent[child]
        joints = self.marginals()[parent] * torch.sigmoid(self.logits[child, 1])
        return (torch.stack([parent, child], dim=1).cpu().numpy().astype(np.int64),
                joints.detach().cpu().numpy().astype(np.float64))


def order_of(parent: Tensor) -> Tensor:
    """The items in an order where every parent comes before its children; a cycle is refused."""
    parent = parent.tolist()
    depth: dict[int, int] = {}
    for j in range(len(parent)):
        path = []
        while j not in depth and j >= 0:
            if j in path:
                raise ValueError("tree: the parents form a cycle")
            path.append(j)
            j = parent[j]
        d = depth.get(j, -1)
        for i in reversed(path):
            d += 1
            depth[i] = d
    return torch.tensor(sorted(range(len(parent)), key=lambda i: (depth[i], i)), dtype=torch.long)


def orient(edges: list[tuple[int, int]], nodes: int, start: int = 0) -> list[tuple[int, int]]:
    """(parent, child) for every edge of a forest over ``nodes``, directed away from ``start`` in its component
    and from each other component's lowest node, in an order where a parent is reached before its children."""
    neighbours: list[list[int]] = [[] for _ in range(nodes)]
    for u, v in edges:
        neighbours[u].append(v)
        neighbours[v].append(u)
    seen, out = [False] * nodes, []
    for root in [start, *range(nodes)]:
        if seen[root]:
            continue
        seen[root], stack = True, [root]
        while stack:
            u = stack.pop()
            for v in neighbours[u]:
                if not seen[v]:
                    seen[v] = True
                    out.append((u, v))
                    stack.append(v)
    return out
