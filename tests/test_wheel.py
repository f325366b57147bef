"""The wheel: built from this checkout, installed into a fresh venv outside it, run from elsewhere.

The build is offline (``pip wheel --no-deps --no-build-isolation --no-index``) from a copy of
the sources, so the checkout gets no build/ folder. The fresh venv has no pip and no packages
of its own but the wheel; the run-time dependencies come from this interpreter's
site-packages through a ``.pth`` file naming a filtered view of them: links to every entry
except dpgm's own (the editable install's finder and metadata), so the dpgm imported there
is the wheel's. Then, from a folder outside the checkout, a shipped config runs by name
through the console script and the Python API fits once.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _missing_machinery() -> str | None:
    """Why the wheel cannot be built and installed here (None: it can)."""
    for module in ("setuptools", "pip", "venv"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed in this interpreter"
    import pip

    if tuple(int(x) for x in re.findall(r"\d+", pip.__version__)[:2]) < (22, 3):
        return f"pip {pip.__version__} has no --python option (22.3 or later)"
    return None


pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(_missing_machinery() is not None, reason=f"cannot build the wheel: {_missing_machinery()}"),
]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, check=False)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def quiet_env(**extra: str) -> dict[str, str]:
    """This environment without anything that points Python or pip at the checkout or an index."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", OMP_NUM_THREADS="1", **extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dpgm's wheel, built offline from a copy of the checkout's sources."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("dpgm", "configs"):  # dpgm/configs: the link to ../configs is copied as a link
        shutil.copytree(ROOT / folder, src / folder, symlinks=True, ignore=skip)
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        src, "-w", out, cwd=src, env=quiet_env())
    (found,) = out.glob("dpgm-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel; the dependencies are this interpreter's, dpgm's own left out."""
    home = tmp_path_factory.mktemp("venv")
    venv = home / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=home)
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel,
        cwd=home, env=quiet_env())
    lines = []
    for i, packages in enumerate(p for p in map(Path, site.getsitepackages()) if p.is_dir()):
        view = home / f"deps{i}"
        view.mkdir()
        for entry in packages.iterdir():
            if entry.name.startswith(("__editable__", "dpgm")) or entry.suffix == ".pth" or entry.name == "__pycache__":
                continue  # the editable install (its finder, .pth and metadata) and dpgm itself
            (view / entry.name).symlink_to(entry)
        lines.append(str(view))
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=home).stdout.strip()
    (Path(purelib) / "_dpgm_test_deps.pth").write_text("\n".join(lines) + "\n")
    return venv


def test_the_wheel_holds_the_package_the_configs_and_the_commands(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read("dpgm-0.1.0.dist-info/entry_points.txt").decode()
        metadata = z.read("dpgm-0.1.0.dist-info/METADATA").decode()
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "dpgm").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources - names == set()  # every module of the checkout, subpackages included
    configs = {f"dpgm/configs/{p.name}" for p in (ROOT / "configs").glob("*.yaml")}
    assert configs and configs <= names
    commands = {f"dpgm/commands/{m}.py" for m in ("__init__", "__main__", "main", "train", "generate", "evaluate", "sketch")}
    assert commands | {"dpgm/__main__.py"} <= names
    assert not any(n.startswith(("tests/", "configs/", "benchmarks/")) for n in names)
    assert re.search(r"^dpgm = dpgm\.commands\.main:main$", entry_points, re.MULTILINE)
    always = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert always and not [line for line in always if re.search(r"opacus|torchvision|pytest", line)]


def test_installed_console_script_runs_a_shipped_config_by_name(venv, tmp_path):
    """From a folder outside the checkout: dpgm train --config transactions (the generic config) on a small file
    there, then dpgm generate."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "shop.txt").write_text("".join(f"{i % 7} {(i * 3) % 11}\n" for i in range(300)))
    dpgm = venv / "bin" / "dpgm"
    env = quiet_env()
    proc = run(dpgm, "train", "--config", "transactions", "--no-progress", "--set", f"runs_dir={elsewhere / 'runs'}",
               "--set", "name=from_wheel", "--set", "seed=0", "--set", "data.path=shop.txt",
               "--set", "data.n_items=11", cwd=elsewhere, env=env)
    assert "epsilon =" in proc.stdout
    release = elsewhere / "runs" / "from_wheel" / "release"
    assert (release / "privacy_report.json").is_file() and (release / "models.pt").is_file()
    assert "name: from_wheel" in (release / "config.yaml").read_text()
    run(dpgm, "generate", "--run", release.parent, "--n", "20", "--out", "syn.csv", "--seed", "1",
        "--no-progress", cwd=elsewhere, env=env)
    assert len((elsewhere / "syn.csv").read_text().splitlines()) == 21  # header + 20 records
    bad = subprocess.run([str(dpgm), "train", "--config", "no_such_config"], capture_output=True, text=True,
                         cwd=elsewhere, env=env, check=False)
    assert bad.returncode == 2 and "shipped configs: " in bad.stderr and "transactions" in bad.stderr


def test_installed_package_is_the_wheel_and_its_api_fits(venv, tmp_path):
    code = """
import sys
import numpy as np
import dpgm
from dpgm.config import SHIPPED_CONFIGS, resolve_config_path, shipped_config_names
assert not any("Editable" in type(f).__name__ or "Editable" in getattr(f, "__name__", "") for f in sys.meta_path)
print(dpgm.__file__)
print(resolve_config_path("mnist"))
print(",".join(shipped_config_names()))
rng = np.random.default_rng(0)
release = dpgm.fit((rng.random((400, 12)) < 0.3).astype(np.uint8), epsilon=2.0, delta=1e-4, seed=0,
                   options={"training.epochs": 1})
assert release.privacy_report["epsilon"] <= 2.0
print(release.sample(50, seed=1).shape)
"""
    out = run(venv / "bin" / "python", "-c", code, cwd=tmp_path, env=quiet_env()).stdout.splitlines()
    site_packages = venv.resolve() / "lib"
    assert Path(out[0]).resolve().is_relative_to(site_packages), out[0]  # not the checkout's dpgm
    assert Path(out[1]).resolve().is_relative_to(site_packages) and Path(out[1]).name == "mnist.yaml"
    assert out[2].split(",") == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    assert out[3] == "(50, 12)"
