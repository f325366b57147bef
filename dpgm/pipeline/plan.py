"""What a run decides before its stages: generators, delta, public inputs, and the privacy report.

Every function here reads the config and public facts only (the order of magnitude N, the item
universe, the declared label set), except ``noisy_records``, the one release the rules read, and
``privacy_report``, which assembles released values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import yaml

from dpgm.artifact import CONFIG_FILE
from dpgm.clustering import PARTITIONERS
from dpgm.config import Config
from dpgm.config_fields import check_delta
from dpgm.data.chunks import ChunkedRecords, Records
from dpgm.errors import ConfigError
from dpgm.models import MODELS
from dpgm.plan import apply_public_rules, plan, words
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import default_delta, records_magnitude, sigma_for_share, zcdp_rho
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.privacy.verdict import stamped
from dpgm.progress import EpsilonSource
from dpgm.rules import COUNT_SHARE, PublicFacts, lengths_open, parts_open
from dpgm.stages.dependence import merges
from dpgm.stages.model_choice import tree_chosen, tree_options
from dpgm.tables import SCHEMA_FILE, public_input, schema_text, table_schema
from dpgm.training.mixture import STAGE


def generators(seed: int | None) -> tuple[np.random.Generator, torch.Generator]:
    """One numpy and one torch generator: from the seed (an experiment), else from fresh OS
    entropy that is kept nowhere but in the private checkpoint's generator state."""
    g = torch.Generator()
    if seed is not None:
        g.manual_seed(seed)
        return np.random.default_rng(seed), g
    entropy = collective.shared_entropy(192)  # the same on every rank of a distributed run
    g.manual_seed(entropy >> 128)
    return secure_generator(entropy & (2**128 - 1)), g  # released noise: OpenDP's exact samplers, OS CSPRNG


def released_config(cfg: Config) -> dict[str, Any]:
    """The config as written to release/: everything but the seed, which would let anyone replay
    the noise (docs/privacy.md, "Seeds"); a resume reads it back from the private checkpoint."""
    return {**cfg.to_dict(), "seed": None}


def released_texts(cfg: Config) -> dict[str, str]:
    """The run's public files beside its models, by name: the released config and, for a declared
    table, its schema (the release decodes its records with it)."""
    texts = {CONFIG_FILE: yaml.safe_dump(released_config(cfg), sort_keys=False)}
    if cfg.data.schema is not None:
        texts[SCHEMA_FILE] = schema_text(table_schema(cfg.data.schema))
    return texts


#: The ledger stage of the noisy count of the records that the rules read as n.
COUNT_STAGE = "record_count"


def noisy_records(cfg: Config, data: Records, delta: float, accountant: Accountant, rng: np.random.Generator) -> float:
    """n for the rules: the records' count plus Gaussian noise (sensitivity 1 under add/remove), COUNT_SHARE of
    the run's rho, charged before it is drawn (dpgm/rules.py)."""
    sigma = sigma_for_share(zcdp_rho(float(cfg.privacy.target_epsilon), delta), COUNT_SHARE)
    return float(gaussian_release(np.array([data.n_records]), sensitivity=1.0, noise_multiplier=sigma,
                                  accountant=accountant, stage=COUNT_STAGE, rng=rng)[0])


def public_facts(cfg: Config, data: Records, magnitude: int, delta: float, records: float | None = None) -> PublicFacts:
    """What ``rules: public`` may read (dpgm/rules.py): public (declared or listed) or released (``records``)."""
    return declared_facts(cfg, data.n_items, magnitude, delta, records)


def declared_facts(cfg: Config, n_items: int, magnitude: int, delta: float, records: float | None = None
                   ) -> PublicFacts:
    """The facts of a config over ``n_items`` items at N = ``magnitude`` and ``records`` (the noisy count, or as
    ``dpgm plan`` is told it, before any data)."""
    return PublicFacts(n_items=n_items, records_magnitude=magnitude, epsilon=float(cfg.privacy.target_epsilon),
                       delta=delta, min_items=cfg.data.min_items, attributes=cfg.data.attributes,
                       schema=cfg.data.attribute_sizes is not None, lengths=lengths_open(cfg, cfg.stated),
                       records=records)


def apply_rules(cfg: Config, data: Records, magnitude: int, delta: float, records: float | None
                ) -> tuple[dict[str, Any], str | None]:
    """Under ``rules: public``, set the options ``cfg`` leaves open from the facts and the noisy count ``records``;
    returns what was set and the rules' words (nothing and None otherwise)."""
    if cfg.rules != "public":
        return {}, None
    facts = public_facts(cfg, data, magnitude, delta, records)
    return apply_public_rules(cfg, facts, cfg.stated), rules_why(cfg, facts)


def rules_why(cfg: Config, facts: PublicFacts) -> str:
    """The rules' choice of model family and parts in words, and which of it the config stated."""
    stated = sorted(key for key in ("model.kind", "partition.k", "partition.method") if key in cfg.stated)
    kept = f" Stated in the config, so kept: {', '.join(stated)}." if stated else ""
    by_attribute = cfg.model.options.get("by_attribute")
    over = " A record draws one value of each attribute, each given another's." if by_attribute else ""
    schema = (" The declared schema (data.attribute_sizes) makes each group's noisy value frequencies of one "
              "attribute add up to one before its tree is fitted." + over if cfg.data.attribute_sizes is not None
              and cfg.model.kind == "tree" else "")
    chosen = plan(facts, top_items=cfg.data.top_items, merge=parts_open(cfg.stated))  # the rules' own, unstated
    return words(chosen) + schema + kept


def check_components(cfg: Config) -> None:
    """The partitioner and the model the config names are registered and their options are theirs
    (checked before the data are read, so a typo costs nothing)."""
    PARTITIONERS.options(cfg.partition.method, cfg.partition.options)
    MODELS.options(cfg.model.kind, cfg.model.options)
    if cfg.model.tree_above > 0:  # the tree a measured dependence may choose instead
        tree_options(cfg.model)


def check_plan(cfg: Config, data: Records, stages: list[Any]) -> None:
    """Refuse impossible plans. Only public facts decide: a check such as "k is more than the
    number of records" would tell whoever reads the error one bit about n, so k > n runs (its
    extra parts are empty, and their noisy statistics are noise like any other). Records read in
    chunks need every planned stage to read them so (``Stage.streams``)."""
    if cfg.partition.method == "label" and data.labels is None:
        raise ConfigError("partition.method: 'label' needs a dataset with labels")
    sizes = cfg.data.attribute_sizes
    if sizes is not None and sum(sizes) != data.n_items:  # the item universe is public
        raise ConfigError(f"data.attribute_sizes: its values add up to {sum(sizes)} items but the item universe "
                          f"holds {data.n_items}")
    held = [stage.name for stage in stages if not stage.streams]
    if isinstance(data, ChunkedRecords) and held:
        raise ConfigError(f"data.chunk_mb: stage(s) {', '.join(held)} need the records in memory; "
                          "switch them off or unset data.chunk_mb")



def run_magnitude(cfg: Config, data: Records) -> int:
    """N, the order of magnitude of the number of records: declared, else read off the data (and
    then listed as public); the one rounding rule behind the default delta and the rules."""
    n = int(collective.sum_over_ranks(np.array([data.n_records]))[0])  # every rank's records
    return cfg.data.records_magnitude or records_magnitude(n)


def run_delta(cfg: Config, magnitude: int) -> float:
    """The run's delta: the config's, else 1/(100 N); a delta above 1/N is refused (it would allow
    releasing a whole record with probability delta, and a data set holds n >= N records)."""
    delta = cfg.privacy.delta or default_delta(magnitude)
    check_delta(delta, magnitude, "privacy.delta")
    return delta


def public_inputs(cfg: Config, data: Records, magnitude: int) -> list[dict[str, Any]]:
    """Every data-dependent quantity the run treats as public (declared by the user, not private)."""
    out = []
    if cfg.data.records_magnitude is None:
        uses = ["the check delta <= 1/N"]
        uses += ["the default delta 1/(100 N)"] if cfg.privacy.delta is None else []
        out.append({"quantity": "order of magnitude of the number of records", "why": ", ".join(uses),
                    "value": f"N = {magnitude} (N <= n < 10 N)"})
    by_source = {"csv": "the CSV header"}.get(cfg.data.source, "the image format (one item per pixel)")
    universe = data.meta.get("universe") or by_source
    out.append({"quantity": "item universe", "value": f"{data.n_items} items", "why": universe})
    if cfg.data.attributes is not None:
        out.append({"quantity": "attributes of the table", "value": f"{cfg.data.attributes} (one item each per record)",
                    "why": "declared as data.attributes"})
    if cfg.data.attribute_sizes is not None:
        out.append({"quantity": "values of each attribute", "value": list(cfg.data.attribute_sizes),
                    "why": "declared as data.attribute_sizes (items run attribute by attribute)"})
    if cfg.data.schema is not None:
        out.append(public_input(table_schema(cfg.data.schema)))
    if data.image_shape is not None:
        out.append({"quantity": "image shape", "value": list(data.image_shape), "why": "fixed by the data format"})
    if cfg.partition.method == "label":
        out.append({"quantity": "label set", "value": f"{cfg.partition.k} labels", "why": "declared as partition.k"})
    if cfg.partition.method == "column":
        out.append({"quantity": "the groups", "value": f"one per value of items {cfg.partition.options.get('first', 0)}"
                    f" to {cfg.partition.options.get('first', 0) + cfg.partition.k - 1}",
                    "why": "a declared column's values (partition.method: column)"})
    if cfg.partition.init == "public" and cfg.data.source == "mnist":
        out.append({"quantity": "public sample", "value": "the other MNIST split",
                    "why": "initial k-means centres come from published data"})
    return out


def privacy_report(cfg: Config, accountant: Accountant, partition_sizes: np.ndarray, steps: int,
                   public: list[dict[str, Any]], stages: Mapping[str, Any] | None = None,
                   rules_why: str | None = None, records: float | None = None) -> dict[str, Any]:
    """The JSON report beside every release: epsilon, delta, relation, accountant, each of ``stages``
    (by name) in words, public inputs, the noisy part sizes and what each stage says of its released
    values (``Stage.report``: the noisy count of empty records, the measured dependence)."""
    stages = stages or {}
    report = accountant.report()
    caveats = sorted({e.event.description for e in accountant.ledger.entries if getattr(e.event, "description", "")})
    if caveats:  # releases whose guarantee is weaker than the epsilon says (e.g. a finite Gibbs chain)
        report["caveats"] = caveats
    report["accountant"] = "rdp (moments accountant), tight RDP-to-DP conversion"
    report["stage_lines"] = {name: stage.line for name, stage in stages.items()}
    if rules_why:
        report["rules"] = rules_why
    if records is not None:  # released (stage record_count): the n the rules read
        report["noisy_records"] = records
        report["stage_lines"][COUNT_STAGE] = "a noisy count of the records (Gaussian, sensitivity 1), the rules' n"
    report["fixed_seed"] = cfg.seed is not None
    report["public_inputs"] = public
    report["noisy_part_sizes"] = [float(s) for s in partition_sizes]
    for stage in stages.values():  # what each stage says of its released values (``Stage.report``)
        report.update(stage.report())
    measured = stages["dependence"].output if "dependence" in stages else None  # what it decided
    t = cfg.training
    method = "none: the items' dependence is below merge_below" if merges(cfg, measured) else cfg.partition.method
    model = "tree: the items' dependence is at least tree_above" if tree_chosen(cfg, measured) else cfg.model.kind
    report["plan"] = {"partition": method, "k": len(partition_sizes), "model": model,
                      "steps_taken": accountant.ledger.count(STAGE), "steps_planned": steps}
    flags = {"seeded": cfg.seed is not None, "diagnostics": cfg.nonprivate_diagnostics}
    report = stamped(report, [reason for reason, on in flags.items() if on])  # the verdict first
    if steps == 0:  # independent items or trees: the released statistics are the models, nothing was trained
        return report
    report["plan"].update({
        "schedule": t.schedule, "sampling_rate": t.sampling_rate, "noise_multiplier": t.noise_multiplier,
        "clipping": t.clipping, "calibrated_to_noisy_means": cfg.model.calibrate,
    })
    if t.clipping == "adaptive":
        report["plan"]["hist_noise_multiplier"] = t.hist_noise_multiplier
    else:
        report["plan"]["clip_norm"] = t.clip_norm
        if t.decoder_clip_share is not None:  # per-group clipping: the same sensitivity C, so the same event
            report["plan"]["decoder_clip_share"] = t.decoder_clip_share
    return report


def checkpoint_epsilon(cfg: Config, checkpoint: dict[str, Any]) -> EpsilonSource | None:
    """The epsilon a checkpoint's ledger holds, before the data are loaded again (None: its delta,
    which may depend on n, is not known yet: a checkpoint from before dpgm stored it)."""
    delta = checkpoint.get("delta") or cfg.privacy.delta
    if delta is None:
        return None
    epsilon = run_accountant(cfg, delta, PrivacyLedger.from_json(checkpoint["ledger"])).spent().epsilon
    return lambda: epsilon


def check_world(checkpoint: dict[str, Any], root: Any) -> None:
    """A run resumes on as many ranks as it ran on (each rank saved its own state: ``Stage.rank_state_dict``)."""
    if checkpoint.get("world", 1) != collective.world_size():
        raise ConfigError(f"{root}: the run ran on {checkpoint.get('world', 1)} rank(s); resume it on as many, "
                          f"not {collective.world_size()}")


def run_accountant(cfg: Config, delta: float, ledger: PrivacyLedger | None) -> Accountant:
    """The accountant of a run: its delta, budget and dependent-release bound, over ``ledger``."""
    p = cfg.privacy
    return Accountant(ledger, delta=delta, budget_epsilon=p.target_epsilon, bound=p.dependent_bound)
