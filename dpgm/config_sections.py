"""The run configuration's sections: typed dataclasses, each option documented once in its ``doc``.

``dpgm.config`` loads them from YAML (unknown keys are errors naming the key and its section);
each section's ``validate`` range-checks its values; ``python -m dpgm.config`` prints them all.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from dpgm.config_data import DataConfig
from dpgm.config_fields import MAX_EPSILON, check_epsilon, opt, released, require


@dataclass
class PrivacyConfig:
    delta: float | None = opt(None, "target delta, at most 1/N; null means 1/(100 N) for the order of magnitude N of "
                                    "the number of records (the power of ten with N <= n < 10 N: declared as "
                                    "data.records_magnitude, else read off the data and listed in the privacy report's "
                                    "public_inputs)")
    target_epsilon: float | None = opt(None, "whole-pipeline budget, at most MAX_EPSILON = "
                                             f"{MAX_EPSILON:g}: calibrate training.noise_multiplier so epsilon "
                                             "stays within it (null: fixed noise, report the epsilon spent)")
    neighbouring: Literal["add_remove", "replace_one"] = opt("add_remove", "neighbouring relation of the guarantee")
    dependent_bound: Literal["joint", "holder"] = opt("joint", "analysis of the DPNorm histogram + gradient released "
                                                               "from one batch (docs/paper.md, note 6)")
    secure_mode: bool = opt(False, "DP-SGD noise (gradients and DPNorm histograms) with Opacus's secure_mode defence "
                                   "against floating-point attacks (Holohan and Braghin 2021): every N(0, 1) is the "
                                   "sum of 4 draws over 2, after one draw thrown away, from the run's generator "
                                   "(seeded from the OS CSPRNG unless seed is set; on a GPU, training.device_noise). "
                                   "Off by default: it takes five draws per noise value, which slows DP-SGD, and the "
                                   "noisy gradients it protects are never released, only the model after all steps; "
                                   "turn it on when single steps' outputs can be seen. Released statistics always get "
                                   "exact discrete noise, from the OS CSPRNG without seed (dpgm/privacy/discrete.py)")

    def validate(self) -> None:
        require(self.delta is None or 0 < self.delta < 1, "privacy", "delta", f"must be in (0, 1), got {self.delta}")
        if self.target_epsilon is not None:
            check_epsilon(self.target_epsilon, "privacy.target_epsilon")
        require(self.neighbouring == "add_remove", "privacy", "neighbouring", "only add_remove is implemented")


@dataclass
class PartitionConfig:
    method: str = opt("kernel_kmeans", "DP partitioner, by its registered name (dpgm.clustering.PARTITIONERS, "
                                       "where an extension registers its own)")
    options: dict[str, Any] = opt({}, "options of a registered partitioner that declares its own "  # noqa: RUF009
                                      "(checked against its options dataclass)")
    k: int = opt(10, "number of parts")
    iterations: int = opt(20, "noisy Lloyd iterations T_K (kernel_kmeans, lloyd)")
    noise_multiplier: float = opt(40.0, "sigma_K: noise std / sensitivity of the counts and sums of each iteration")
    target_epsilon: float | None = opt(None, "calibrate sigma_K so this stage alone costs this epsilon (overrides "
                                             "noise_multiplier)")
    features: int = opt(200, "random Fourier feature frequencies D (kernel_kmeans)")
    feature_map: Literal["paired", "cosine"] = opt("paired", "paired cos/sin map (norm exactly 1) or the paper's "
                                                             "sqrt(2/D) cos(Wx+b) map (clipped to norm 1)")
    gamma: float = opt(0.01, "RBF kernel exp(-gamma ||x - y||^2); frequencies ~ N(0, 2 gamma I)")
    init: Literal["public", "random"] = opt("random", "initial centres: from a public sample (mnist: the test split) "
                                                      "or data-independent random")
    clip_norm: float | None = opt(None, "lloyd: L2 bound on each record (null: sqrt(m))")
    empty_part_noise_multiplier: float | None = opt(None, "records holding no item form a part of their own, released "
                                                          f"as a noisy count {released('1', 'empty_records')}; the "
                                                          "partition and the models see the other records only and the "
                                                          "release conditions them on holding at least one item "
                                                          "(dpgm/stages/empty_records.py); null: off")
    dependence_noise_multiplier: float | None = opt(None, "measure how much the items depend on each other, before the "
                                                          f"partition {released('4 (m - 1) sqrt(2)', 'dependence')}; "
                                                          "dpgm/stages/dependence.py; null: off")
    merge_below: float = opt(0.0, "with dependence_noise_multiplier: below this dependence one group, whose means take "
                                  "the partitioner's budget (0: never)")

    def validate(self) -> None:
        require(self.k >= 1, "partition", "k", f"must be >= 1, got {self.k}")
        require(self.iterations >= 1, "partition", "iterations", "must be >= 1")
        require(self.noise_multiplier > 0, "partition", "noise_multiplier", "must be > 0")
        require(self.target_epsilon is None or self.target_epsilon > 0, "partition", "target_epsilon", "must be > 0")
        require(self.features >= 1, "partition", "features", "must be >= 1")
        require(self.gamma > 0, "partition", "gamma", "must be > 0")
        require(self.clip_norm is None or self.clip_norm > 0, "partition", "clip_norm", "must be > 0")
        for key in ("empty_part_noise_multiplier", "dependence_noise_multiplier"):
            require(getattr(self, key) is None or getattr(self, key) > 0, "partition", key, "must be > 0")
        require(self.empty_part_noise_multiplier is None or self.method != "label", "partition",
                 "empty_part_noise_multiplier", "does not go with method: label (an empty part has no label)")
        require(self.merge_below == 0 or (self.dependence_noise_multiplier is not None and self.target_epsilon is None
                                           and self.method in ("lloyd", "kernel_kmeans")), "partition", "merge_below",
                 "needs dependence_noise_multiplier, no target_epsilon and method lloyd or kernel_kmeans (one "
                 "group's means take their releases)")


#: Model kinds whose parameters are released statistics (the part means, the item pairs): no DP-SGD steps.
STATISTICS_ONLY = frozenset({"independent", "tree"})


@dataclass
class ModelConfig:
    kind: str = opt("vae", "generative model of each part, by its registered name (dpgm.models.MODELS, where an "
                           "extension registers its own); independent = the "
                           "part's noisy mean record as independent items (no DP-SGD: the training stage is skipped; "
                           "needs output_bias: noisy_mean); tree = a tree of items per part fitted to its noisy mean "
                           "and noisy pair counts (no DP-SGD; ledger stage item_pairs; dpgm/stages/item_pairs.py)")
    options: dict[str, Any] = opt({}, "the options of model.kind, checked against the options dataclass it "  # noqa: RUF009
                                      "registers (model.options.NAME below; a name another kind reads is an error)")
    output_bias: Literal["noisy_mean", "default"] = opt(
        "noisy_mean",
        "initial output bias of each part's model (VAE decoder, RBM visible units): noisy_mean = logit of the part's "
        "noisy mean record (one Gaussian release, ledger stage part_means; Hinton 2010 sec. 8.1); default = the "
        "layer's usual initialisation, no privacy cost")
    mean_noise_multiplier: float = opt(20.0, "noisy_mean: noise std / L2 sensitivity of the per-part record sums")
    mean_clip: float | None = opt(None, "noisy_mean: L2 bound on each record in the sums (a public bound, e.g. 12 for "
                                        "MNIST digits; null: sqrt(number of items), never clips)")
    mean_clip_quantile: float | None = opt(None, "noisy_mean: clip the part sums (and item totals) at sqrt(L), L the "
                                                 "length this share of records does not exceed, read off a noisy "
                                                 "histogram of record lengths "
                                                 f"{released('1', 'length_bound', 'length_bound_noise_multiplier')}; "
                                                 "replaces mean_clip; null: off")
    mean_clip_balance: float | None = opt(None, "with mean_clip_quantile: raise L, when that is longer, to the length "
                                                "minimising the item mass the clip removes, squared, plus this weight "
                                                "times the means' noise squared (stages/length_bound.py); null: off")
    mean_debias: Literal["off", "mass", "records"] = opt(
        "off", "with mean_clip_quantile: divide the part means by the share the clip keeps, read off the same noisy "
               "length histogram (post-processing; dpgm/stages/length_bound.py): of item mass (mass: exact when an "
               "item is as much likelier in a longer record as the record is longer) or of records (records: exact "
               "when its presence does not depend on the length); the clip shrinks every long record, and at large n "
               "that bias outweighs the noise; off: no division")
    length_bound_noise_multiplier: float = opt(20.0, "noisy_mean with mean_clip_quantile: multiplier of the noisy "
                                                     "length histogram that bounds the record lengths")
    totals_noise_multiplier: float | None = opt(None, "noisy_mean: also release every item's total over all records "
                                                      f"{released('mean_clip', 'item_totals')} and make the part "
                                                      "means agree with it by least squares (post-processing; "
                                                      "dpgm/stages/item_totals.py); null: off")
    length_noise_multiplier: float | None = opt(None, "release a noisy histogram of record lengths "
                                                      f"{released('1', 'record_lengths')} and draw synthetic records "
                                                      "so that their lengths follow it (post-processing); null: off")
    lengths_from_bound: bool = opt(False, "draw synthetic records whose lengths follow the noisy histogram that "
                                          "bounds the record lengths (mean_clip_quantile) instead of a second one "
                                          "(length_noise_multiplier null): one release serves the clip and the "
                                          "release (post-processing)")
    pairs_noise_multiplier: float | None = opt(None, "noisy_mean: also grow one tree of item pairs over all records "
                                                     "(n_items - 1 exponential-mechanism selections of epsilon "
                                                     "pairs_select_epsilon) and release its pairs' counts "
                                                     f"{released('mean_clip', 'release_pairs')}; the release then "
                                                     "reweights the models' draws so that its item and pair "
                                                     "frequencies equal the measured ones (post-processing; "
                                                     "dpgm/stages/release_pairs.py); null: off")
    pairs_select_epsilon: float = opt(0.1, "with pairs_noise_multiplier: epsilon of each edge selection")
    pairs_clip: Literal["means", "balanced"] = opt(
        "means", "with pairs_noise_multiplier: the clip of the records in the pair counts: the part means' (means; "
                 "the items from the part means), or the length that balances the clip's bias against this one "
                 "release's noise, read off the noisy length histogram with mean_clip_balance (balanced; every "
                 "item's clipped total is then released beside the pairs, L2 sensitivity sqrt(2) x that clip at "
                 "pairs_item_weight 1, and is the release's item frequency; needs mean_clip_quantile and "
                 "mean_clip_balance)")
    pairs_item_weight: float = opt(1.0, "with pairs_clip: balanced: the items' weight a against the pairs' in that "
                                        "release (L2 sensitivity sqrt(a^2 + 1) x the clip): above 1 the items get "
                                        "less noise and the pairs more")
    pairs_pool: int = opt(3, "with pairs_noise_multiplier: models' draws per released record, among which the "
                             "release picks by weight (more: closer to the measured frequencies, slower)")
    tree_above: float = opt(0.0, "with partition.dependence_noise_multiplier: at or above this measured dependence "
                                 "each part's model is a tree of items (options tree_options, as kind tree's) "
                                 "instead of this model trained by DP-SGD, or instead of kind independent, whose "
                                 "means below it take the tree's budget; the ledger holds the costlier branch at "
                                 "every order (dpgm/stages/model_choice.py); 0: never")
    tree_options: dict[str, Any] = opt({}, "with tree_above: the tree's options (select_epsilon, "  # noqa: RUF009
                                           "pair_noise_multiplier)")
    calibrate: bool | Literal["total"] = opt(False, "noisy_mean: after training, shift each part's output bias so that "
                                                    "its model's expected item frequencies equal the part's noisy mean "
                                                    "(true; post-processing, no privacy cost; good for sparse records, "
                                                    "where DP-SGD noise makes item frequencies drift; not for images, "
                                                    "where zero-mean pixels have noisy means), or shift every item's "
                                                    "logit by one amount so that the expected number of items per "
                                                    "record equals the sum of the noisy mean (total: for images, whose "
                                                    "DP-trained models may draw thin digits; not with data.min_items "
                                                    "or empty records set aside); false: off")

    @property
    def follows_lengths(self) -> bool:
        """Whether the release follows a noisy record-length histogram: its own or the length bound's."""
        return self.length_noise_multiplier is not None or self.lengths_from_bound

    def validate(self) -> None:
        require(self.mean_noise_multiplier > 0, "model", "mean_noise_multiplier", "must be > 0")
        require(self.mean_clip is None or self.mean_clip > 0, "model", "mean_clip", "must be > 0")
        require(self.mean_clip_quantile is None or 0 < self.mean_clip_quantile <= 1, "model", "mean_clip_quantile",
                 "must be in (0, 1]")
        require(self.mean_clip_balance is None or (self.mean_clip_balance > 0 and self.mean_clip_quantile is not None),
                 "model", "mean_clip_balance", "must be > 0, with mean_clip_quantile (it raises the quantile's length)")
        require(self.length_bound_noise_multiplier > 0, "model", "length_bound_noise_multiplier", "must be > 0")
        require(self.mean_clip_quantile is None or self.output_bias == "noisy_mean", "model", "mean_clip_quantile",
                 "needs output_bias: noisy_mean (it bounds the records in the noisy means)")
        require(self.totals_noise_multiplier is None or self.totals_noise_multiplier > 0, "model",
                 "totals_noise_multiplier", "must be > 0")
        require(self.length_noise_multiplier is None or self.length_noise_multiplier > 0, "model",
                 "length_noise_multiplier", "must be > 0")
        require(self.pairs_noise_multiplier is None or self.pairs_noise_multiplier > 0, "model",
                 "pairs_noise_multiplier", "must be > 0")
        require(self.pairs_noise_multiplier is None or self.output_bias == "noisy_mean", "model",
                 "pairs_noise_multiplier", "needs output_bias: noisy_mean (the item frequencies are the noisy means')")
        require(not self.lengths_from_bound or (self.length_noise_multiplier is None
                                                 and self.mean_clip_quantile is not None), "model",
                "lengths_from_bound", "needs mean_clip_quantile (its histogram) and no length_noise_multiplier")
        require(self.pairs_noise_multiplier is None or not self.follows_lengths, "model",
                 "pairs_noise_multiplier", "does not go with length_noise_multiplier (the release follows one or the "
                 "other)")
        require(not (self.kind == "tree" and self.options.get("all_pairs")) or self.follows_lengths, "model", "options",
                "all_pairs needs length_noise_multiplier or lengths_from_bound (the release follows every pair as it "
                "follows the lengths)")
        require(self.pairs_select_epsilon > 0, "model", "pairs_select_epsilon", "must be > 0")
        require(self.pairs_clip == "means" or self.mean_clip_balance is not None, "model", "pairs_clip",
                 "balanced needs mean_clip_quantile and mean_clip_balance (it reads the noisy length histogram)")
        require(self.pairs_pool >= 1, "model", "pairs_pool", "must be >= 1")
        require(self.pairs_item_weight > 0, "model", "pairs_item_weight", "must be > 0")
        require(self.kind != "independent" or self.output_bias == "noisy_mean", "model", "kind",
                 "independent needs output_bias: noisy_mean (its items follow the noisy part means)")
        require(self.kind != "tree" or (self.output_bias == "noisy_mean" and not self.calibrate), "model", "kind",
                 "tree needs output_bias: noisy_mean and calibrate: false (its items keep the noisy part means)")
        require(self.tree_above >= 0, "model", "tree_above", "must be >= 0")
        require(self.tree_above == 0 or (self.kind not in STATISTICS_ONLY or self.kind == "independent")
                and self.output_bias == "noisy_mean" and self.pairs_noise_multiplier is None
                and not self.follows_lengths, "model", "tree_above", "needs a model trained by DP-SGD or "
                "kind independent, with output_bias: noisy_mean, and no pairs_noise_multiplier or "
                "length_noise_multiplier")
        require(self.calibrate in (True, False, "total"), "model", "calibrate", "must be true, false or total")
        require(not self.calibrate or self.output_bias == "noisy_mean", "model", "calibrate",
                 "needs output_bias: noisy_mean (the calibration targets are the noisy part means)")


@dataclass
class TrainingConfig:
    epochs: float = opt(20.0, "training length in epochs; one epoch is ceil(1/q) steps (paper)")
    sampling_rate: float = opt(0.0017, "q: Poisson sampling rate of each step")
    noise_multiplier: float = opt(1.0, "sigma_G: gradient noise std / clipping threshold")
    clipping: Literal["adaptive", "fixed"] = opt("adaptive", "adaptive: DPNorm's C_s (Alg. 3); fixed: clip_norm")
    clip_norm: float = opt(1.0, "fixed clipping threshold C")
    hist_noise_multiplier: float = opt(4.0, "sigma_C: noise on each DPNorm histogram count")
    hist_max: float = opt(10.0, "C_max: upper end of the DPNorm histogram (0, C_max]")
    hist_bins: int = opt(100, "w: number of DPNorm histogram bins")
    decoder_clip_share: float | None = opt(None, "VAE models with fixed clipping: clip each record's decoder gradient "
                                                 "to C sqrt(s), the rest (encoder) to C sqrt(1 - s): the whole has "
                                                 "norm <= C (per-group clipping: same noise, same ledger); one clip "
                                                 "over the whole can leave the decoder a small share. null: one clip")
    schedule: Literal["parallel", "alternate"] = opt("parallel", "parallel: every step updates every part's model "
                                                                 "(docs/paper.md, note 5); alternate: Alg. 1")
    optimizer: Literal["adam", "sgd"] = opt("adam", "update rule applied after privatisation")
    learning_rate: float = opt(1e-3, "learning rate")
    lr_schedule: Literal["constant", "linear", "cosine"] = opt("constant", "learning rate over the planned steps: "
                                                               "constant, linear or cosine decay to 0 (post-processing "
                                                               "of the noisy gradients: no privacy cost)")
    ema_decay: float | None = opt(None, "release an exponential moving average of each model's weights with this decay "
                                        "(post-processing of the noisy iterates; null: the last iterate)")
    chunk_window: int = opt(1000, "records read in chunks (data.chunk_mb): the steps whose Poisson batches one pass "
                                  "over the file draws (memory: this many batches)")
    checkpoint_every: int = opt(2000, "steps between checkpoints")
    checkpoint_seconds: float = opt(120.0, "also checkpoint this many seconds after the last one (a kill loses at most "
                                           "this much work)")
    log_every: int = opt(50, "steps between TensorBoard scalars")
    device_noise: bool = opt(True, "with device: cuda, draw the gradient noise on the GPU from a generator that one "
                                   "draw of the run's stream seeds each step (replays and resumes, but is not the CPU "
                                   "run's noise); false: from the CPU stream, the CPU run's draws, slow for big models")

    def validate(self) -> None:
        require(self.epochs > 0, "training", "epochs", f"must be > 0, got {self.epochs}")
        require(0 < self.sampling_rate <= 1, "training", "sampling_rate", f"must be in (0, 1]: {self.sampling_rate}")
        require(self.noise_multiplier > 0, "training", "noise_multiplier", "must be > 0")
        require(self.clip_norm > 0, "training", "clip_norm", "must be > 0")
        require(self.hist_noise_multiplier > 0, "training", "hist_noise_multiplier", "must be > 0")
        require(self.hist_max > 0, "training", "hist_max", "must be > 0")
        require(self.hist_bins >= 1, "training", "hist_bins", "must be >= 1")
        require(self.decoder_clip_share is None or 0 < self.decoder_clip_share < 1, "training",
                 "decoder_clip_share", "must be in (0, 1)")
        require(self.decoder_clip_share is None or self.clipping == "fixed", "training", "decoder_clip_share",
                 "needs clipping: fixed (DPNorm picks one threshold from the whole gradient's norms)")
        require(self.learning_rate > 0, "training", "learning_rate", "must be > 0")
        require(self.ema_decay is None or 0 < self.ema_decay < 1, "training", "ema_decay", "must be in (0, 1)")
        for key in ("checkpoint_every", "chunk_window", "log_every"):
            require(getattr(self, key) >= 1, "training", key, "must be >= 1")
        require(self.checkpoint_seconds > 0, "training", "checkpoint_seconds", "must be > 0")


@dataclass
class Config:
    name: str = opt("run", "run name: output goes to <runs_dir>/<name>")
    rules: Literal["off", "public"] = opt("off", "public: every option this config does not state follows dpgm's rules "
                                                 "from public quantities (dpgm/rules.py: items, epsilon, delta, n's "
                                                 "order of magnitude); needs privacy.target_epsilon")
    seed: int | None = opt(None, "fixed seed for tests and benchmarks only: its noise can be replayed, so every "
                           "output of a seeded run says NOT DIFFERENTIALLY PRIVATE (null: fresh OS entropy; "
                           "a run resumes bit-identically without a seed)")
    runs_dir: str = opt("runs", "folder that holds run directories")
    device: str = opt("cpu", "torch device of DP-SGD and of the partition's passes (lloyd, kernel_kmeans), e.g. "
                             "cuda; the noise of every release other than DP-SGD's is drawn on the CPU")
    threads: int | None = opt(None, "threads for torch and BLAS (null: OMP_NUM_THREADS if set, else the cores "
                                    "available to the process less the threads other running processes use when "
                                    "it starts, see dpgm/threads.py; more oversubscribes)")
    keep_private: bool = opt(False, "keep the run's private/ folder (checkpoint, part assignments, generator state) "
                                    "after it completes; it is deleted by default")
    nonprivate_diagnostics: bool = opt(False, "show and log the mean training loss on the private batches and "
                                              "report each stage's wall seconds (NOT private: every report of "
                                              "the run then says so in its first line)")
    data: DataConfig = field(default_factory=DataConfig, metadata={"doc": "what to load"})
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig, metadata={"doc": "budget and accounting"})
    partition: PartitionConfig = field(default_factory=PartitionConfig, metadata={"doc": "DP partitioning stage"})
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"doc": "generative model per part"})
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={"doc": "DP-SGD training stage"})
    #: Dotted keys the YAML (and overrides) stated; set by config_from_dict, read by ``rules: public``.
    stated: typing.ClassVar[frozenset[str]] = frozenset()

    def validate(self) -> None:
        require(bool(self.name) and "/" not in self.name, "config", "name", "must be a non-empty name without '/'")
        require(self.threads is None or self.threads >= 1, "config", "threads", "must be >= 1")
        require(self.rules == "off" or self.privacy.target_epsilon is not None, "config", "rules",
                 "public rules need the budget: set privacy.target_epsilon")
        require(self.partition.empty_part_noise_multiplier is None or not self.model.follows_lengths,
                 "partition", "empty_part_noise_multiplier", "does not go with model.length_noise_multiplier (both set "
                 "how many empty records the release holds)")
        require(self.model.pairs_noise_multiplier is None or self.partition.method != "label", "model",
                 "pairs_noise_multiplier", "does not go with partition.method: label (a release drawn per label "
                 "would lose its label counts to the reweighting)")
        require(self.model.tree_above <= 0 or (self.partition.dependence_noise_multiplier is not None
                                               and self.data.min_items <= 1), "model", "tree_above",
                "needs partition.dependence_noise_multiplier (the measurement) and data.min_items 0 or 1")
        require(self.model.kind != "tree" or self.data.min_items <= 1, "model", "kind",
                 "tree supports data.min_items 0 or 1 (it keeps its frequencies among non-empty records only)")
        require(self.model.calibrate != "total"
                 or (self.data.min_items == 0 and self.partition.empty_part_noise_multiplier is None),
                 "model", "calibrate", "total does not go with data.min_items or partition.empty_part_noise_multiplier "
                 "(the release redraws short records, which the total does not count)")
        require(self.training.decoder_clip_share is None or self.model.kind in ("vae", "conv_vae"), "training",
                 "decoder_clip_share",
                 f"needs a model with a decoder (model.kind vae or conv_vae, not {self.model.kind})")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if hasattr(value, "validate"):
                value.validate()
        # after the sections': data.schema sets data.attribute_sizes
        require(not (self.model.kind == "tree" and self.model.options.get("by_attribute"))
                or self.data.attribute_sizes is not None, "model", "options",
                "by_attribute needs data.attribute_sizes or data.schema (the attributes its tree is over)")
        if self.model.kind == "tree" and self.model.options.get("target_parent"):
            self._declared_target()
        if self.model.kind == "table_vae":
            self._declare_attributes()
        if self.partition.method == "column" and self.partition.options.get("column") is not None:
            self._declare_column(str(self.partition.options["column"]))

    def _declared_target(self) -> None:
        """model.options.target_parent: data.schema declares the target its tree is rooted at."""
        require(self.data.schema is not None, "model", "options", "target_parent needs data.schema with a target")
        from dpgm.tables import table_schema

        require(table_schema(self.data.schema).target is not None, "model", "options",
                "target_parent needs data.schema to declare its target (the column every attribute is drawn given)")

    def _declare_attributes(self) -> None:
        """model.kind table_vae: its softmax outputs run over the attributes data.attribute_sizes (or data.schema)
        declares."""
        sizes = self.data.attribute_sizes
        require(sizes is not None, "model", "kind", "table_vae needs data.attribute_sizes or data.schema (one softmax "
                "output per attribute)")
        require(self.model.calibrate != "total", "model", "calibrate",
                "total shifts every item alike, for Bernoulli items; table_vae's values are calibrated per column "
                "(true)")
        stated = self.model.options.get("attribute_sizes")
        require(stated in (None, list(sizes)), "model", "options",
                "attribute_sizes differs from data.attribute_sizes (leave it out: the data's are used)")
        self.model.options = {**self.model.options, "attribute_sizes": list(sizes)}

    def _declare_column(self, name: str) -> None:
        """partition.method column named by its column: the first item and the number of values (partition.k) that
        data.schema declares for it (its items run column by column)."""
        require(self.data.schema is not None, "partition", "options", "column needs data.schema (the column's values)")
        from dpgm.tables import table_schema

        schema = table_schema(self.data.schema)
        require(name in schema.names, "partition", "options",
                f"column {name!r} is not a column of data.schema ({', '.join(schema.names)})")
        j = schema.names.index(name)
        self.partition.options = {**self.partition.options, "first": sum(schema.attribute_sizes[:j])}
        self.partition.k = schema.attribute_sizes[j]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
