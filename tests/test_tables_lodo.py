"""benchmarks/tables_lodo.py: its candidates patch constants that exist, and one that does not is refused."""

from __future__ import annotations

import pytest

from tests._benchmarks import load_benchmark

lodo = load_benchmark("tables_lodo")


@pytest.mark.parametrize("name", sorted(lodo.CANDIDATES))
def test_every_candidate_patches_a_constant_that_exists(name: str) -> None:
    assert lodo.candidate_patch(name) == lodo.CANDIDATES[name]


def test_a_candidate_naming_a_removed_constant_is_refused_before_any_fit(monkeypatch) -> None:
    monkeypatch.setitem(lodo.CANDIDATES, "gone", {"dpgm.stages.attribute_pairs.NO_SUCH_CONSTANT": 1.0})
    with pytest.raises(SystemExit, match="candidate gone: no constant dpgm.stages.attribute_pairs.NO_SUCH_CONSTANT"):
        lodo.candidate_patch("gone")
    with pytest.raises(SystemExit, match="candidate gone"):
        lodo.main(["--candidates", "gone", "--tables", "salary", "--data-dir", "/nonexistent"])
