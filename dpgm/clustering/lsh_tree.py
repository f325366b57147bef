"""Private LSH-tree coresets, then k-means on the coreset (the design of Google's
differential-privacy library, ``learning/clustering``; docs/guide/partitioners.md).

Rows are clipped to a public radius and hashed by random hyperplanes (SimHash: one hyperplane
per depth, drawn from the seed, data-independent). The hash prefixes form a binary tree. Level by
level, the children of every node whose noisy count reached the branching threshold release
their counts, ONE Gaussian release per level (the children of a level hold disjoint records:
L2 sensitivity 1); a child is kept when its noisy count reaches the node threshold. A kept node
without kept children is a leaf; the leaves hold disjoint records, so their sums are ONE
Gaussian release of L2 sensitivity radius. A leaf is a coreset point (noisy sum / noisy count,
clipped to the radius) weighted by its noisy count; weighted k-means++ / Lloyd on the coreset
(post-processing) gives k centres, and the sizes of the parts they define are released once more.

Both children of a branching node are released, empty or not: which prefixes hold records is
never revealed by which counts exist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from dpgm.clustering.base import STAGE, Partition
from dpgm.clustering.noisy_lloyd import ASSIGN_CHUNK, NearestCentre, Rows, centred_rows, nearest_centre, part_sums
from dpgm.data.chunks import ChunkedRecords, Records, chunks_of
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate, releases_epsilon
from dpgm.privacy.clipping import clip_rows
from dpgm.privacy.events import DpEvent, GaussianEvent
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.progress import stage_bar

#: The node threshold makes the sum noise about this share of the radius per coreset point:
#: a node needs ``NOISE_POINTS x sqrt(dim) x sum multiplier`` records (Google's default tree).
NOISE_POINTS = 10.0
#: A node branches when its noisy count reaches this multiple of the node threshold.
BRANCH_FACTOR = 3.0


@dataclass
class LshTreeOptions:
    """Options of ``partition.method: lsh_tree`` (the section ``partition.options``)."""

    radius: float | None = None
    """Public bound on a row's L2 norm after centring (null: sqrt(items))."""
    max_depth: int = 20
    """Hash bits, the deepest level of the tree."""
    min_node: float | None = None
    """Noisy count a node needs to be kept (null: max(1, min(10 sqrt(d) s, n / 2k)), s the sums' noise
    multiplier, n the root's noisy count, d the dimension)."""
    min_branch: float | None = None
    """Noisy count a node needs to branch (null: 3 x min_node)."""
    count_share: float = 0.2
    """Share of the stage's RDP spent on the counts (tree levels, final sizes)."""
    centre: Literal["none", "public"] = "none"
    """Hash rows minus the public sample's mean ("public")."""
    kmeans_inits: int = 10
    """k-means++ restarts on the coreset (post-processing)."""

    def __post_init__(self) -> None:
        if self.radius is not None and not self.radius > 0:
            raise ValueError(f"radius must be > 0, got {self.radius}")
        if not 1 <= self.max_depth <= 62:
            raise ValueError(f"max_depth must be in 1..62, got {self.max_depth}")
        if not 0 < self.count_share < 1:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share}")
        if self.min_node is not None and not self.min_node >= 1:
            raise ValueError(f"min_node must be >= 1, got {self.min_node}")
        if self.min_branch is not None and not self.min_branch >= (self.min_node or 1):
            raise ValueError("min_branch must be >= min_node")
        if self.centre not in ("none", "public"):
            raise ValueError(f"centre must be 'none' or 'public', got {self.centre!r}")
        if self.kmeans_inits < 1:
            raise ValueError(f"kmeans_inits must be >= 1, got {self.kmeans_inits}")


@dataclass(frozen=True)
class TreeNoise:
    """Noise multipliers of the counts and of the leaf sums, and the count releases planned."""

    sum_multiplier: float
    count_multiplier: float
    count_releases: int

    def plan(self) -> list[tuple[DpEvent, int]]:
        """Every release the stage may make: all levels and the final sizes, and the leaf sums."""
        return [(GaussianEvent(noise_multiplier=self.count_multiplier), self.count_releases),
                (GaussianEvent(noise_multiplier=self.sum_multiplier), 1)]


def count_releases(max_depth: int) -> int:
    """Count releases at most: the root, one per level below it, and the final part sizes."""
    return max_depth + 2


def tree_noise(sum_multiplier: float, count_share: float, releases: int) -> TreeNoise:
    """Counts get ``count_share`` of the RDP: releases / (2 c^2) = share / (1 - share) / (2 s^2)."""
    count = sum_multiplier * math.sqrt(releases * (1.0 - count_share) / count_share)
    return TreeNoise(sum_multiplier, count, releases)


def resolve_noise(
    noise_multiplier: float, target_epsilon: float | None, options: LshTreeOptions, delta: float
) -> TreeNoise:
    """The stage's noise: the sums' multiplier given, or the smallest whose whole plan costs the target."""
    releases = count_releases(options.max_depth)
    if target_epsilon is None:
        return tree_noise(noise_multiplier, options.count_share, releases)
    s = calibrate(lambda m: tree_noise(m, options.count_share, releases).plan(),
                  target_epsilon=target_epsilon, delta=delta)
    return tree_noise(s, options.count_share, releases)


def thresholds(root_count: float, k: int, dim: int, noise: TreeNoise, options: LshTreeOptions) -> tuple[float, float]:
    """(node, branch) thresholds: a node needs enough records to drown its sum's noise, but the
    tree must afford k nodes: max(1, min(10 sqrt(d) s, root / 2k)); branching needs 3x that."""
    node = options.min_node
    if node is None:
        node = max(1.0, min(NOISE_POINTS * math.sqrt(dim) * noise.sum_multiplier, root_count / (2 * k)))
    branch = options.min_branch if options.min_branch is not None else BRANCH_FACTOR * node
    return float(node), float(max(branch, node))


def hash_bits(rows: Rows, planes: np.ndarray) -> np.ndarray:
    """SimHash bits (n x depth, bool): the side of each public hyperplane every row lies on."""
    out = np.empty((rows.shape[0], planes.shape[0]), dtype=bool)
    for start in range(0, rows.shape[0], ASSIGN_CHUNK):
        out[start : start + ASSIGN_CHUNK] = np.asarray(rows[start : start + ASSIGN_CHUNK] @ planes.T) < 0
    return out


@dataclass
class Coreset:
    """The released coreset: points (leaves' noisy means), weights (noisy counts), and the tree's shape."""

    points: np.ndarray
    weights: np.ndarray
    level_sizes: list[int] = field(default_factory=list)
    root_count: float = 0.0
    min_node: float = 1.0
    min_branch: float = 1.0


#: One pass over the records: (rows clipped to the radius, their hash bits) a chunk at a time.
HashedPasses = Callable[[], Iterator[tuple[Rows, np.ndarray]]]


def prefix_codes(bits: np.ndarray) -> np.ndarray:
    """n x (depth + 1): column L holds each row's first L hash bits as an integer (its node at level L)."""
    codes = np.zeros((bits.shape[0], bits.shape[1] + 1), dtype=np.int64)
    for level in range(bits.shape[1]):
        codes[:, level + 1] = 2 * codes[:, level] + bits[:, level]
    return codes


def _find(sorted_codes: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position of each code in ``sorted_codes``, whether it is there)."""
    pos = np.minimum(np.searchsorted(sorted_codes, codes), max(len(sorted_codes) - 1, 0))
    return pos, (sorted_codes[pos] == codes) if len(sorted_codes) else np.zeros(len(codes), dtype=bool)


@dataclass
class Tree:
    """The released tree: per level, the kept nodes' codes (sorted) and each one's leaf index (-1: it branched)."""

    active: list[np.ndarray] = field(default_factory=lambda: [np.zeros(1, dtype=np.int64)])
    leaf_at: list[np.ndarray] = field(default_factory=list)

    def leaves_of(self, bits: np.ndarray) -> np.ndarray:
        """Each row's leaf (-1: none): its deepest kept node, when that node is a leaf (post-processing)."""
        codes, out = prefix_codes(bits), np.full(bits.shape[0], -1, dtype=np.int64)
        for level, (active, leaf) in enumerate(zip(self.active, self.leaf_at)):
            pos, hit = _find(active, codes[:, level])
            out[hit] = leaf[pos[hit]]
        return out


def _children(bits: np.ndarray, level: int, branching: np.ndarray) -> np.ndarray:
    """Counts of the two children of every ``branching`` node of ``level`` (sorted codes) among the rows."""
    pos, hit = _find(branching, prefix_codes(bits[:, :level])[:, -1])
    return np.bincount(2 * pos[hit] + bits[hit, level], minlength=2 * len(branching))


def _grow(passes: HashedPasses, noise: TreeNoise, k: int, dim: int, options: LshTreeOptions,
          accountant: Accountant, rng: np.random.Generator) -> tuple[Tree, list[float], Coreset]:
    """The tree, level by level (each level's counts one release, one pass over the records): the
    tree, the leaves' noisy counts, and the coreset's shape."""
    release = {"sensitivity": 1.0, "noise_multiplier": noise.count_multiplier, "accountant": accountant,
               "stage": STAGE, "rng": rng}
    n = sum(bits.shape[0] for _, bits in passes())
    root = float(max(1.0, gaussian_release(np.array([n]), **release)[0]))
    node_t, branch_t = thresholds(root, k, dim, noise, options)
    tree, counts, leaf_counts, sizes = Tree(), np.array([root]), [], [1]
    bar = stage_bar("partition: LSH tree", options.max_depth, unit="level")
    for level in range(options.max_depth):
        branches = counts >= branch_t
        branching = tree.active[level][branches]
        noisy = (gaussian_release(sum(_children(bits, level, branching) for _, bits in passes()), **release)
                 if branches.any() else np.zeros(0))
        kept = noisy >= node_t
        has_kept_child = kept.reshape(-1, 2).any(axis=1) if branches.any() else np.zeros(0, bool)
        leaves = ~branches  # active nodes that did not branch, or branched into nothing kept
        leaves[np.flatnonzero(branches)[~has_kept_child]] = True
        tree.leaf_at.append(np.where(leaves, len(leaf_counts) + np.cumsum(leaves) - 1, -1))
        leaf_counts.extend(counts[leaves].tolist())
        counts = noisy[kept]
        bar.advance()
        if counts.size == 0:
            break
        tree.active.append((2 * branching[:, None] + np.arange(2)).ravel()[kept])  # in (parent, bit) order
        sizes.append(int(counts.size))
    bar.close()
    if counts.size:  # the deepest level's nodes are leaves
        tree.leaf_at.append(len(leaf_counts) + np.arange(counts.size))
        leaf_counts.extend(counts.tolist())
    shape = Coreset(np.zeros((0, dim)), np.zeros(0), sizes, root, node_t, branch_t)
    return tree, leaf_counts, shape


def private_coreset(passes: HashedPasses, dim: int, *, k: int, radius: float, noise: TreeNoise, options: LshTreeOptions,
                    accountant: Accountant, rng: np.random.Generator) -> Coreset:
    """The released coreset of the rows ``passes`` gives (norms <= radius) with their hash bits."""
    tree, leaf_counts, coreset = _grow(passes, noise, k, dim, options, accountant, rng)

    def leaf_sums(rows: Rows, bits: np.ndarray) -> np.ndarray:
        leaf_of = tree.leaves_of(bits)
        inside = np.flatnonzero(leaf_of >= 0)
        return part_sums(rows[inside], leaf_of[inside], len(leaf_counts))[1]

    sums = sum(leaf_sums(rows, bits) for rows, bits in passes())
    noisy_sums = gaussian_release(sums, sensitivity=radius, noise_multiplier=noise.sum_multiplier,
                                  accountant=accountant, stage=STAGE, rng=rng)
    weights = np.maximum(np.asarray(leaf_counts, dtype=np.float64), 1.0)
    coreset.points = clip_rows(noisy_sums / weights[:, None], radius, dtype=np.float64)  # into the ball
    coreset.weights = weights
    return coreset


def coreset_centres(coreset: Coreset, k: int, inits: int, rng: np.random.Generator) -> np.ndarray:
    """k centres by weighted k-means++ and Lloyd on the coreset (post-processing). With fewer
    coreset points than k, every point is a centre and the first is repeated (its copies stay empty)."""
    from sklearn.cluster import KMeans  # lazy: scikit-learn is only needed once a coreset exists

    points = coreset.points
    if len(points) <= k:
        pad = np.repeat(points[:1], k - len(points), axis=0)
        return np.vstack([points, pad])
    seed = int(rng.integers(2**31 - 1))
    km = KMeans(n_clusters=k, init="k-means++", n_init=inits, random_state=seed)
    return km.fit(points, sample_weight=coreset.weights).cluster_centers_


@dataclass
class LshTreePartitioner:
    """``partition.method: lsh_tree``: a private LSH-tree coreset, k-means on it, nearest centre.

    ``noise_multiplier`` is the leaf sums' (the counts' follows from ``options.count_share``);
    ``target_epsilon`` (this stage alone, at the accountant's delta) overrides it.
    """

    k: int = 10
    noise_multiplier: float = 10.0
    target_epsilon: float | None = None
    options: LshTreeOptions = field(default_factory=LshTreeOptions)
    public: BinaryDataset | None = None
    centres_: np.ndarray | None = field(default=None, init=False, repr=False)
    offset_: np.ndarray | None = field(default=None, init=False, repr=False)
    radius_: float | None = field(default=None, init=False, repr=False)

    method: ClassVar[str] = "lsh_tree"
    #: Records in chunks: every release is a sum over records (a pass per level); the rule is ``NearestCentre``.
    streams: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"partition: need k >= 1, got k={self.k}")
        if self.options.centre == "public" and self.public is None:
            raise ConfigError("partition.options.centre: 'public' needs a public sample (e.g. the MNIST test split)")

    def _rows(self, records: Any) -> Rows:
        """Records as float rows, minus the public centre if any, clipped to the radius."""
        return centred_rows(records, self.offset_, self.radius_)

    def _setup(self, n_items: int) -> None:
        """Public choices: the radius, and the centre (the public sample's mean, or none)."""
        self.radius_ = float(self.options.radius) if self.options.radius is not None else math.sqrt(n_items)
        if self.options.centre == "public":
            if self.public.n_items != n_items:
                raise DataError(f"{self.public.where}: public sample has {self.public.n_items} items, "
                                f"data has {n_items}")
            self.offset_ = np.asarray(self.public.records.mean(axis=0), dtype=np.float64).ravel()

    def fit(self, data: Records, accountant: Accountant, rng: np.random.Generator) -> Partition:
        """Coreset, centres, then the parts' sizes: every release charged before it is drawn. Records in
        chunks are read once per tree level, once for the leaf sums and once for the sizes."""
        noise = resolve_noise(self.noise_multiplier, self.target_epsilon, self.options, accountant.delta)
        plan = [event for event, count in noise.plan() for _ in range(count)]
        accountant.refuse_unless_affordable(STAGE, *plan)  # before touching the data
        self._setup(data.n_items)
        planes = rng.normal(size=(self.options.max_depth, data.n_items))
        if isinstance(data, ChunkedRecords):
            passes: HashedPasses = lambda: ((rows, hash_bits(rows, planes)) for rows in map(self._rows, (
                c.records for c in chunks_of(data))))
        else:
            rows = self._rows(data.records)
            held = [(rows, hash_bits(rows, planes))]
            passes = lambda: iter(held)
        coreset = private_coreset(passes, data.n_items, k=self.k, radius=self.radius_, noise=noise,
                                  options=self.options, accountant=accountant, rng=rng)
        self.centres_ = coreset_centres(coreset, self.k, self.options.kmeans_inits, rng)
        rule = NearestCentre(self.centres_, None, self.radius_, offset=self.offset_)
        if isinstance(data, ChunkedRecords):  # the parts are the rule's, wherever a chunk is read
            assignments = None
            counts = sum(np.bincount(nearest_centre(rows, self.centres_), minlength=self.k) for rows, _ in passes())
        else:
            assignments = nearest_centre(held[0][0], self.centres_)
            counts = np.bincount(assignments, minlength=self.k)
        sizes = gaussian_release(counts, sensitivity=1.0, noise_multiplier=noise.count_multiplier,
                                 accountant=accountant, stage=STAGE, rng=rng)
        info = {
            "method": self.method, "noise_multiplier": noise.sum_multiplier,
            "count_noise_multiplier": noise.count_multiplier, "target_epsilon": self.target_epsilon,
            "stage_epsilon": releases_epsilon(noise.plan(), accountant.delta), "delta": accountant.delta,
            "radius": self.radius_, "centre": self.options.centre, "max_depth": self.options.max_depth,
            "root_count": coreset.root_count, "min_node": coreset.min_node, "min_branch": coreset.min_branch,
            "nodes_per_level": coreset.level_sizes, "coreset_points": len(coreset.weights),
            "released_counts": sizes.tolist(),
        }
        centres = self.centres_ if self.offset_ is None else self.centres_ + self.offset_  # in the records' space
        return Partition(assignments=assignments, noisy_sizes=np.maximum(sizes, 0.0), centres=centres, info=info,
                         rule=rule)

    def assign(self, records: Any) -> np.ndarray:
        """Nearest released centre for each record (post-processing)."""
        if self.centres_ is None:
            raise RuntimeError("assign() needs a fitted partitioner")
        return nearest_centre(self._rows(records), self.centres_)
