"""Loader errors caused by private records show no value, line number or count of them.

Each bad file hides canaries in its private part (a cell, a label, an item id, the line that
holds it, the number of lines); every message must name the file and the problem and hold
none of them. Numbers in a message may only be public ones (header width, declared universe).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dpgm.data.csv import load_csv
from dpgm.data.dataset import BinaryDataset
from dpgm.data.mnist import load_mnist, read_idx
from dpgm.data.transactions import load_transactions
from dpgm.errors import DataError
from tests._forked import run_script
from tests.data._helpers import write_idx

ROOT = Path(__file__).resolve().parents[2]
N_ROWS = 347  # data lines in each bad file
BAD_ROW = 217  # 0-based data line holding the bad content: line 218 of a transaction file
PRIVATE_NUMBERS = {N_ROWS - 1, N_ROWS, N_ROWS + 1, BAD_ROW, BAD_ROW + 1, BAD_ROW + 2}
CANARIES = ("secret7", "987654321", "1234567890", "57", "Zq", "5a71")

Case = Callable[[Path], tuple[Callable[[], object], str, set[str]]]


def assert_private_free(message: str, where: str, public: set[str]) -> None:
    """One line naming ``where``, with no canary and no number other than the ``public`` ones."""
    assert "\n" not in message, message
    assert message.startswith(f"{where}: "), message
    rest = message[len(where) + 2 :]
    for canary in CANARIES:
        assert canary not in rest, f"{canary!r} in {message!r}"
    assert not re.search(r"\blines? \d", rest), message
    numbers = set(re.findall(r"\d+", rest))
    assert not numbers & {str(n) for n in PRIVATE_NUMBERS}, message
    assert numbers <= public, f"{numbers - public} in {message!r}"


def write_lines(path: Path, header: list[str], row: str, bad: str) -> Path:
    """``N_ROWS`` copies of ``row`` after ``header``, the one at ``BAD_ROW`` replaced by ``bad``."""
    rows = [row] * N_ROWS
    rows[BAD_ROW] = bad
    data = "\n".join([*header, *rows, ""]).encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def csv_case(bad: str, *, public: set[str], label: bool = False, name: str = "data.csv") -> Case:
    """A CSV whose data line ``BAD_ROW`` is ``bad`` (header ``a,b,c`` or ``a,lab,b``)."""

    def build(tmp: Path) -> tuple[Callable[[], object], str, set[str]]:
        header = "a,lab,b" if label else "a,b,c"
        path = write_lines(tmp / name, [header], "1,3,0" if label else "1,0,1", bad)
        column = "lab" if label else None
        return lambda: load_csv(path, label_column=column), str(path), public

    return build


def transactions_case(bad: str, *, public: set[str], n_items: int | None = None) -> Case:
    """A transaction file whose line ``BAD_ROW + 1`` is ``bad``, with an optional universe."""

    def build(tmp: Path) -> tuple[Callable[[], object], str, set[str]]:
        path = write_lines(tmp / "shop.txt", [], "0 2 4", bad)
        return lambda: load_transactions(path, n_items=n_items), str(path), public

    return build


def raw_csv_case(payload: bytes, name: str = "data.csv.gz") -> Case:
    """A CSV file holding ``payload`` as stored bytes (a broken gzip, a bad encoding)."""

    def build(tmp: Path) -> tuple[Callable[[], object], str, set[str]]:
        path = tmp / name
        path.write_bytes(payload)
        return lambda: load_csv(path), str(path), {"8"}  # "not UTF-8 text"

    return build


def mnist_case(
    images: bytes | np.ndarray, *, labels: int = N_ROWS, extra: bytes = b"", where: str = "images"
) -> Case:
    """An MNIST folder: ``images`` (an array, or the raw bytes of a broken file) and ``labels``;
    ``where`` names the file the message must start with."""

    def build(tmp: Path) -> tuple[Callable[[], object], str, set[str]]:
        image_path = tmp / "train-images-idx3-ubyte"
        label_path = write_idx(tmp / "train-labels-idx1-ubyte", np.zeros(labels))
        if isinstance(images, bytes):
            image_path.write_bytes(images)
        else:
            write_idx(image_path, images, extra=extra)
        path = label_path if where == "labels" else image_path
        return lambda: load_mnist(directory=tmp), str(path), {"0", "00000803", "3"}

    return build


def dataset_case(**fields: object) -> Case:
    """A BinaryDataset built in memory (name ``canary``) from private-looking ``fields``."""

    def build(tmp: Path) -> tuple[Callable[[], object], str, set[str]]:
        args = {"records": np.ones((N_ROWS, 3)), "item_names": ["a", "b", "c"], **fields}
        return lambda: BinaryDataset(name="canary", **args), "canary", {"1", "2"}

    return build


IMAGES = np.zeros((N_ROWS, 2, 2))
CASES: dict[str, Case] = {
    "csv non-binary": csv_case("1,987654321,0", public={"0", "1"}),
    "csv text cell": csv_case("1,secret7,0", public={"0", "1"}),
    "csv blank cell": csv_case("1,,0", public={"0", "1"}),
    "csv NaN cell": csv_case("1,NaN,0", public={"0", "1"}),
    "csv 57": csv_case("57,0,1", public={"0", "1"}, name="data.csv.gz"),
    "csv text label": csv_case("1,secret7,0", public=set(), label=True),
    "csv huge label": csv_case("1,987654321987654321987654321,0", public=set(), label=True),
    "csv long row": csv_case(",".join(["1"] * 57), public={"3"}),
    "csv short row": csv_case("1", public={"3"}),
    "csv blank line": csv_case("", public={"3"}),
    "csv not gzip": raw_csv_case(b"Zq,secret7\n1,0\n"),
    "csv truncated gzip": raw_csv_case(gzip.compress(b"a,b\n" + b"1,0\n" * N_ROWS)[:-9]),
    "csv not utf-8": raw_csv_case(b"a,b\n" + b"1,0\n" * BAD_ROW + b"1,\xff57\n", name="d.csv"),
    "txt text token": transactions_case("1 secret7 3", public={"0"}, n_items=5),
    "txt negative id": transactions_case("1 -57 3", public={"0"}, n_items=5),
    "txt decimal id": transactions_case("1 57.5", public={"0"}, n_items=5),
    "txt non-ascii": transactions_case("1 \u00e957", public={"0"}, n_items=5),
    "txt id too long": transactions_case("1 1234567890", public={"9", "10"}, n_items=5),
    "txt id outside": transactions_case("1 57", public={"5", "0", "4"}, n_items=5),
    "txt id too large": transactions_case("1 98765432", public={"10", "000"}),
    "idx labels short": mnist_case(IMAGES, labels=N_ROWS - 1, where="labels"),
    "idx size": mnist_case(IMAGES, extra=b"\x00" * 57),
    "idx magic": mnist_case(b"ZqXw" + b"\x00" * 987),
    "idx too short": mnist_case(b"Zq\x00"),
    "idx no records": mnist_case(np.zeros((0, 2, 2))),
    "dataset labels": dataset_case(labels=np.zeros(N_ROWS + 1)),
    "dataset text label": dataset_case(labels=["secret7"] * N_ROWS),
    "dataset 1-d": dataset_case(records=np.ones(N_ROWS)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loader_message_has_no_private_value(tmp_path: Path, name: str) -> None:
    load, where, public = CASES[name](tmp_path)
    with pytest.raises(DataError) as info:
        load()
    assert_private_free(str(info.value), where, public)


def test_no_item_ids_hides_the_number_of_lines(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("\n" * N_ROWS)
    with pytest.raises(DataError, match="no item ids") as info:
        load_transactions(path, n_items=5)
    assert_private_free(str(info.value), str(path), set())


def test_idx_header_too_short_hides_its_length(tmp_path: Path) -> None:
    path = tmp_path / "short"
    path.write_bytes(b"\x00" * 11)
    with pytest.raises(DataError, match="too short") as info:
        read_idx(path, 3)
    assert_private_free(str(info.value), str(path), set())


def test_checker_catches_a_leak() -> None:
    """The check itself fails on the kind of message the loaders must not write."""
    for leaky in (
        "f.csv: line 218, column 'b': non-binary value '2'",
        "f.csv: label column 'lab': 'secret7' is not an integer",
        f"f.txt: no item ids in {N_ROWS} lines",
        "f.txt: item id 57 is outside the 5 items",
    ):
        with pytest.raises(AssertionError):
            assert_private_free(leaky, leaky.split(":")[0], {"5"})


@pytest.mark.parametrize(
    "config, bad, sets",
    [
        ("csv.yaml", "a,b,c\n" + "1,0,1\n" * BAD_ROW + "1,secret7,0\n", []),
        ("transactions.yaml", "0 2\n" * BAD_ROW + "1 57\n" + "3\n" * 9, ["data.n_items=5"]),
    ],
)
def test_train_cli_prints_one_private_free_line(
    tmp_path: Path, config: str, bad: str, sets: list[str]
) -> None:
    path = tmp_path / ("bad.csv" if config == "csv.yaml" else "bad.txt")
    path.write_text(bad)
    overrides = [f"runs_dir={tmp_path / 'runs'}", f"data.path={path}", *sets]
    argv = ["--config", str(ROOT / "configs" / config), "--no-progress", *(arg for s in overrides for arg in ("--set", s))]
    (tmp_path / "out").mkdir()
    proc = run_script(ROOT / "train.py", argv, cwd=tmp_path, env=dict(os.environ), timeout=120, folder=tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: ")
    assert_private_free(line.removeprefix("error: "), str(path), {"0", "1", "4", "5"})
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
