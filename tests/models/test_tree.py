"""The tree of items: parents first, ancestral sampling at its conditionals, its exact likelihood."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from dpgm.config import ModelConfig
from dpgm.models import MODELS, build_model
from dpgm.models.tree import Tree, order_of


def _chain(m: int = 4) -> Tree:
    tree = Tree(m)
    parent = torch.tensor([-1, 0, 1, 1])[:m]
    cond = torch.tensor([[0.3, 0.3], [0.1, 0.8], [0.6, 0.2], [0.05, 0.9]])[:m]
    tree.set_tree(parent, torch.logit(cond))
    return tree


def _joint(tree: Tree) -> dict[tuple[int, ...], float]:
    """P(x) of every record, multiplied out by hand from the conditionals."""
    cond = torch.sigmoid(tree.logits).detach().numpy()
    out = {}
    for x in itertools.product((0, 1), repeat=tree.n_items):
        p = 1.0
        for j, k in enumerate(tree.parent.tolist()):
            q = cond[j, x[k] if k >= 0 else 0]
            p *= q if x[j] else 1 - q
        out[x] = p
    return out


def test_parents_come_first_and_a_cycle_is_refused():
    order = order_of(torch.tensor([2, -1, 1, 0])).tolist()
    assert order.index(1) < order.index(2) < order.index(0) < order.index(3)
    with pytest.raises(ValueError, match="cycle"):
        order_of(torch.tensor([1, 2, 0]))
    with pytest.raises(ValueError, match="cycle"):
        Tree(3).set_tree(torch.tensor([-1, 2, 1]), torch.zeros(3, 2))


def test_samples_follow_the_joint_distribution():
    tree = _chain()
    g = torch.Generator().manual_seed(0)
    n = 200_000
    x = tree.sample(n, g).numpy().astype(int)
    codes = x @ (1 << np.arange(4))[::-1]
    seen = np.bincount(codes, minlength=16) / n
    for record, p in _joint(tree).items():
        code = int("".join(map(str, record)), 2)
        assert abs(seen[code] - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-4
    assert np.allclose(x.mean(0), tree.marginals().detach().numpy(), atol=5 * np.sqrt(0.25 / n))


def test_record_losses_are_the_exact_negative_log_likelihood():
    tree = _chain()
    joint = _joint(tree)
    records = torch.tensor(list(joint), dtype=torch.float32)
    losses = tree.record_losses(records, tree.step_noise(len(records), None))
    assert torch.allclose(losses, -torch.log(torch.tensor(list(joint.values()))), atol=1e-5)
    assert pytest.approx(sum(joint.values()), abs=1e-9) == 1.0


def test_registered_with_its_options():
    model = build_model(ModelConfig(kind="tree", output_bias="noisy_mean"), 5)
    assert isinstance(model, Tree) and model.parent.tolist() == [-1] * 5
    options = MODELS.options("tree", {"select_epsilon": 0.5})
    assert options.select_epsilon == 0.5
    with pytest.raises(Exception, match="select_epsilon"):
        MODELS.options("tree", {"select_epsilon": -1.0})
    with pytest.raises(Exception, match="all_pairs"):
        MODELS.options("tree", {"all_pairs": True, "by_attribute": True})


def test_measured_pairs_are_what_a_release_follows_and_survive_a_saved_state():
    """Without measured pairs a release follows the tree's edges at their exact joints; with them, every measured
    pair at its measured joint. A saved state resizes the pairs' buffers before it loads."""
    tree = _chain()
    edges, joints = tree.edge_joints()
    assert edges.tolist() == [[0, 1], [1, 2], [1, 3]]
    joint = _joint(tree)
    assert joints[0] == pytest.approx(sum(p for x, p in joint.items() if x[0] and x[1]))
    pairs, measured = np.array([[0, 1], [0, 2], [2, 3]]), np.array([0.2, 0.1, 0.05])
    tree.set_tree(tree.parent, tree.logits.detach(), pairs, measured)
    edges, joints = tree.edge_joints()
    assert edges.tolist() == pairs.tolist() and joints.tolist() == measured.tolist()
    again = Tree(4)
    again.load_state_dict(tree.state_dict())
    assert again.edge_joints()[0].tolist() == pairs.tolist() and again.parent.tolist() == tree.parent.tolist()
