"""The one noise module: charge first (all or none), then noise of the documented scale."""

from __future__ import annotations

import ast
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dpgm.artifact import LEDGER_FILE
from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.events import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
)
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.mechanisms import (
    SNAP_SHARE,
    exponential_mechanisms,
    floor_counts,
    gaussian_release,
    gaussian_releases,
    grid_sensitivity,
    laplace_release,
    noisy_releases,
    project_to_total,
    snap_grid,
)
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dpgm"

#: Random draws that are NOT privacy noise: data-independent maps, initialisation and sampling.
DATA_INDEPENDENT_DRAWS = {
    "features/rff.py",            # random Fourier frequencies (public randomness)
    "clustering/noisy_lloyd.py",  # random initial centres on the sphere
    "clustering/sketch/frequencies.py",  # sketch frequencies (public randomness)
    "clustering/sketch/projection.py",   # a random projection basis (public randomness)
    "models/vae.py",              # reparameterisation noise and sampling from the model
    "models/rbm.py",              # weight initialisation
    "clustering/lsh_tree.py",     # the SimHash hyperplanes (public randomness)
}
#: Samplers whose draws ARE the mechanism, charged before they run: the Gibbs chain of the asymptotic
#: exponential mechanism (mechanisms.asymptotic_exponential_chain charges it, then runs the chain).
MECHANISM_SAMPLERS = {"clustering/subspace/bingham.py"}
NOISE_CALLS = {"normal", "normal_", "laplace", "randn"}


def test_noise_is_drawn_only_in_the_mechanism_module() -> None:
    """Grep the package's syntax trees: privacy noise comes from privacy/mechanisms.py only."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "privacy/mechanisms.py" or rel in DATA_INDEPENDENT_DRAWS | MECHANISM_SAMPLERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NOISE_CALLS:
                offenders.append(f"{rel}:{node.lineno} .{node.func.attr}(")
    assert offenders == []


#: The functions of mechanisms.py that draw DP-SGD's continuous torch noise (by design).
TORCH_NOISE_FUNCTIONS = {"gaussian_noise", "standard_normal_"}


def test_released_statistics_never_get_a_floating_point_draw() -> None:
    """In mechanisms.py only the DP-SGD torch helpers call normal/laplace; the exact samplers of
    discrete.py are imported by mechanisms.py alone (the one place noise meets private values)."""
    tree = ast.parse((PACKAGE / "privacy" / "mechanisms.py").read_text())
    for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        calls = {c.func.attr for c in ast.walk(func)
                 if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)}
        assert func.name in TORCH_NOISE_FUNCTIONS or not calls & NOISE_CALLS, func.name
    importers = sorted(
        path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
        if any(isinstance(n, ast.ImportFrom) and n.module == "dpgm.privacy.discrete"
               and {a.name for a in n.names} & {"discrete_gaussian", "discrete_laplace", "noisy_max_index"}
               for n in ast.walk(ast.parse(path.read_text())))
    )
    assert importers == ["privacy/mechanisms.py"]


def test_gaussian_release_charges_a_discrete_event_then_adds_noise_of_the_right_scale() -> None:
    """A real-valued release: snapped to a power-of-two grid, noise std sigma x sensitivity
    (inflated by at most SNAP_SHARE), one DiscreteGaussianEvent at the caller's multiplier."""
    acc = Accountant(delta=1e-5)
    values = np.linspace(-3.0, 3.0, 20_000)
    out = gaussian_release(values, sensitivity=2.0, noise_multiplier=3.0, accountant=acc,
                           stage="s", rng=np.random.default_rng(0))
    ((entry),) = acc.ledger.entries
    event = entry.event
    assert isinstance(event, DiscreteGaussianEvent) and entry.count == 1 and entry.stage == "s"
    grid = snap_grid(2.0, values.size)
    assert event == DiscreteGaussianEvent(noise_multiplier=3.0, dim=values.size, grid=grid,
                                          sensitivity=grid_sensitivity(2.0 * (1 + 2**-50), values.size, grid))
    assert math.log2(grid) == int(math.log2(grid)) and grid * math.sqrt(values.size) <= SNAP_SHARE * 2.0
    assert np.all(out / grid == np.rint(out / grid))  # released on the grid
    assert (out - values).std() == pytest.approx(6.0, rel=0.02) and abs((out - values).mean()) < 0.1
    assert acc.spent().epsilon == Accountant(delta=1e-5).epsilon_if(GaussianEvent(noise_multiplier=3.0))


def test_integer_statistics_are_released_on_the_integers() -> None:
    acc = Accountant(delta=1e-5)
    counts = np.array([0, 5, 17, 1000], dtype=np.int64)
    out = gaussian_release(counts, sensitivity=1.0, noise_multiplier=2.0, accountant=acc, stage="c",
                           rng=np.random.default_rng(1))
    assert out.dtype == np.float64 and np.all(out == np.rint(out))
    (entry,) = acc.ledger.entries
    assert entry.event.grid == 1.0 and entry.event.dim == 4
    assert entry.event.sensitivity == pytest.approx(1.0, rel=1e-12) and entry.event.sensitivity >= 1.0


def test_several_releases_are_charged_together_and_repeat_with_the_seed() -> None:
    def run(seed: int) -> tuple[list[np.ndarray], Accountant]:
        acc = Accountant(delta=1e-5)
        outs = gaussian_releases([np.zeros(3), np.zeros((2, 2))], [1.0, 5.0], noise_multiplier=2.0,
                                 accountant=acc, stage="s", rng=np.random.default_rng(seed))
        return outs, acc

    (a, b), acc = run(1)
    (a2, b2), _ = run(1)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    assert a.shape == (3,) and b.shape == (2, 2)
    assert [e.event.dim for e in acc.ledger.entries] == [3, 4]
    assert {e.event.noise_multiplier for e in acc.ledger.entries} == {2.0}


def test_the_snapping_bound_holds_and_is_openDP_s_rule() -> None:
    """||rint(a/g) - rint(b/g)||_2 <= ||a - b||_2 / g + sqrt(d) on random neighbours, and the
    resulting rho equals OpenDP's for its float Gaussian with granularity 2^k = g."""
    dp = pytest.importorskip("opendp.prelude")
    rng = np.random.default_rng(5)
    d, sens = 50, 3.0
    grid = snap_grid(sens, d)
    units = grid_sensitivity(sens, d, grid)
    for _ in range(2000):
        a = rng.normal(0.0, 100.0, d)
        step = rng.normal(size=d)
        b = a + sens * step / np.linalg.norm(step) * rng.random()
        coarse = grid * 2**rng.integers(0, 12)  # also on coarse grids, where rounding dominates
        gap = np.linalg.norm(np.rint(a / coarse) - np.rint(b / coarse))
        assert gap <= grid_sensitivity(sens, d, coarse)
        assert np.linalg.norm(np.rint(a / grid) - np.rint(b / grid)) <= units
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=d), dp.l2_distance(T=float)
    theirs = dp.m.make_gaussian(*space, scale=7.0, k=int(math.log2(grid))).map(sens)
    ours = (units * grid / 7.0) ** 2 / 2
    assert ours >= theirs and ours == pytest.approx(theirs, rel=1e-12)


def test_refused_release_draws_nothing_and_records_nothing() -> None:
    acc = Accountant(delta=1e-5, budget_epsilon=0.5)
    rng = np.random.default_rng(2)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        noisy_releases([np.zeros(2), 0.0], [1.0, 1.0], [GaussianEvent(noise_multiplier=100.0), LaplaceEvent(epsilon=1.0)],
                       accountant=acc, stage="s", rng=rng)
    assert acc.ledger.entries == [] and rng.bit_generator.state == state


def test_exponential_mechanisms_charge_one_event_for_disjoint_selections() -> None:
    acc = Accountant(delta=1e-5)
    picks = exponential_mechanisms([np.array([0.0, 500.0, 1.0]), np.array([300.0, 0.0])], epsilon=1.0,
                                   sensitivity=1.0, accountant=acc, stage="s", rng=np.random.default_rng(3))
    assert picks == [1, 0]  # a score gap of hundreds at epsilon 1: the best, with probability ~1
    [entry] = acc.ledger.entries
    assert entry.event == ExponentialEvent(epsilon=1.0) and entry.count == 1
    refusing = Accountant(delta=1e-5, budget_epsilon=0.5)
    rng = np.random.default_rng(2)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        exponential_mechanisms([np.zeros(3)], epsilon=5.0, sensitivity=1.0, accountant=refusing, stage="s", rng=rng)
    assert refusing.ledger.entries == [] and rng.bit_generator.state == state


@pytest.mark.parametrize("epsilon, sensitivity", [(0.1, 1.0), (1.0, 1.0), (2.0, 3.0)])
def test_the_selection_sampler_is_the_epsilon_exponential_mechanism_by_opendps_map(epsilon, sensitivity) -> None:
    """OpenDP's own zCDP map of the Gumbel noisy max that draws a selection (scale 2 sensitivity /
    epsilon) is the epsilon exponential mechanism's rho = epsilon^2 / 8; the accountant's curve of
    ExponentialEvent(epsilon) (bounded range, Cesar and Rogers 2021) stays within a rho and epsilon."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    measurement = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=2 * sensitivity / epsilon)
    rho = measurement.map(sensitivity)
    acc = Accountant(delta=1e-5)
    curve = acc.curve(ExponentialEvent(epsilon=epsilon))
    orders = np.asarray(acc.orders)
    assert rho == pytest.approx(epsilon**2 / 8)
    assert np.all(curve > 0) and np.all(curve <= orders * rho * (1 + 1e-9) + 1e-12)
    assert np.all(curve <= epsilon + 1e-12)


def test_laplace_release_scale_and_event() -> None:
    acc = Accountant(delta=1e-5)
    out = laplace_release(np.zeros(50_000), l1_sensitivity=2.0, epsilon=0.5, accountant=acc, stage="s",
                          rng=np.random.default_rng(3))
    (entry,) = acc.ledger.entries
    matched = matched_discrete_laplace_epsilon(0.5)
    assert isinstance(entry.event, DiscreteLaplaceEvent) and entry.event.epsilon == matched < 0.5
    assert entry.event.sensitivity * entry.event.grid <= 2.0 * (1 + SNAP_SHARE) * (1 + 1e-12)
    assert np.abs(out).mean() == pytest.approx(2.0 / matched, rel=0.03)  # E|Lap_Z(b)| ~ b = 2 / e'
    assert acc.spent().epsilon == pytest.approx(matched)  # pure composition


def test_secure_generator_releases_from_the_os_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SecureGenerator's own stream is never used for noise; seeded generators feed the exact sampler."""
    rng = secure_generator()
    state = rng.bit_generator.state
    a = gaussian_release(np.zeros(5), sensitivity=1.0, noise_multiplier=1.0, accountant=Accountant(delta=1e-5),
                         stage="s", rng=rng)
    assert rng.bit_generator.state == state and a.shape == (5,)


class GuardedGenerator(np.random.Generator):
    """A run's numpy generator whose normal and laplace refuse callers outside the public-randomness
    modules (numpy's Generator type itself cannot be patched)."""

    def normal(self, *args, **kwargs):  # type: ignore[override]
        _check_public_caller("normal")
        return super().normal(*args, **kwargs)

    def laplace(self, *args, **kwargs):  # type: ignore[override]
        _check_public_caller("laplace")
        return super().laplace(*args, **kwargs)


def _check_public_caller(name: str) -> None:
    caller = sys._getframe(2).f_code.co_filename
    if not caller.startswith(tuple(str(PACKAGE / rel) for rel in DATA_INDEPENDENT_DRAWS)):
        raise AssertionError(f"floating-point {name} draw from {caller}")


def test_no_float_gaussian_in_a_pipeline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/csv.yaml end to end (partition, empty records, part means, record lengths, a few
    DP-SGD steps, release) with a run generator whose normal and laplace refuse every private
    caller: each release went through the exact samplers and charged a discrete event."""
    import torch

    from dpgm.config import load_config
    from dpgm.pipeline import run as run_mod
    from dpgm.privacy import mechanisms

    monkeypatch.setattr(run_mod, "generators", lambda seed: (GuardedGenerator(np.random.PCG64(seed)),
                                                              torch.Generator().manual_seed(seed)))
    drawn: list[tuple[int, ...]] = []
    real_release = mechanisms._release
    monkeypatch.setattr(mechanisms, "_release",
                        lambda value, plan, rng: drawn.append(value.shape) or real_release(value, plan, rng))
    cfg = load_config(ROOT / "configs" / "csv.yaml", [
        f"runs_dir={tmp_path}", "seed=0", "threads=1", "training.epochs=0.05",
        "model.length_noise_multiplier=100", "model.kind=vae"])  # a VAE: the rules would fit a tree
    run_dir, report = run_mod.train(cfg, progress=False)
    ledger = PrivacyLedger.load(Path(run_dir) / "release" / LEDGER_FILE)
    released = [e for e in ledger.entries if e.stage != "training"]
    assert {e.stage for e in released} >= {"partition", "part_means", "record_lengths"}
    assert all(isinstance(e.event, DiscreteGaussianEvent) for e in released)
    assert len(drawn) == sum(e.count for e in released) and report["epsilon"] > 0


def test_count_and_laplace_stages_draw_no_float_noise(tiny_dataset) -> None:
    """The stages the csv run above does not reach: empty records, Laplace and Gaussian marginals."""
    from dpgm.evaluation.marginals import fit_marginals
    from dpgm.stages.empty_records import noisy_empty_count

    rng = GuardedGenerator(np.random.PCG64(0))
    acc = Accountant(delta=1e-5)
    noisy_empty_count(tiny_dataset, noise_multiplier=3.0, accountant=acc, rng=rng)
    fit_marginals(tiny_dataset, accountant=acc, rng=rng, mechanism="laplace", epsilon=1.0)
    fit_marginals(tiny_dataset, accountant=acc, rng=rng, mechanism="gaussian", noise_multiplier=5.0)
    kinds = [type(e.event) for e in acc.ledger.entries]
    assert kinds == [DiscreteGaussianEvent, DiscreteLaplaceEvent, DiscreteGaussianEvent]


def test_floor_counts() -> None:
    np.testing.assert_array_equal(floor_counts([-3.0, 0.5, 7.0]), [1.0, 1.0, 7.0])


def test_projection_keeps_the_total_hand_computed() -> None:
    np.testing.assert_allclose(project_to_total([3.0, -1.0, 1.0], 3.0), [2.5, 0.0, 0.5])
    np.testing.assert_allclose(project_to_total([5.0, 5.0], 6.0, caps=[2.0, 10.0]), [2.0, 4.0])
    np.testing.assert_allclose(project_to_total([-4.0, -1.0], -2.0), [0.0, 0.0])  # total clipped to 0
    cols = project_to_total(np.array([[3.0, 5.0], [-1.0, 5.0], [1.0, 0.0]]), np.array([3.0, 6.0]),
                            caps=[10.0, 2.0, 10.0])
    np.testing.assert_allclose(cols, [[2.5, 4.0], [0.0, 2.0], [0.5, 0.0]])


def test_projection_adds_no_mass_where_clamping_does() -> None:
    """20 parts each holding 2 records of a rare item (true total 40), noise std 20: clamping each
    part's noisy count at 0 inflates the total about 4.5-fold; the projection's total is exactly
    the noisy total clipped at 0 (one clip, not 20)."""
    rng = np.random.default_rng(0)
    noisy = 2.0 + rng.normal(0.0, 20.0, size=(20, 5000))
    clamped = np.maximum(noisy, 0.0).sum(axis=0)
    projected = project_to_total(noisy, noisy.sum(axis=0), caps=np.full(20, 1000.0)).sum(axis=0)
    np.testing.assert_allclose(projected, np.maximum(noisy.sum(axis=0), 0.0), atol=1e-6)
    assert clamped.mean() > 150.0 and projected.mean() < 65.0  # E[max(N(40, 89^2), 0)] = 59
