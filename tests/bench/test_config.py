"""A full run takes each cell's sizes from the protocol; a quick or overridden one keeps its own."""

from __future__ import annotations

from dataclasses import replace

from bench import claims
from bench.config import declared_sizes, for_cell, full_config, quick_config


def test_a_full_run_takes_each_cells_sizes_from_the_protocol() -> None:
    sizes = claims.load()["sizes"]
    cell = for_cell(full_config(), "shop", "uncooperative", sizes)
    declared = sizes["shop/uncooperative"]
    assert declared_sizes(cell) == {
        name: declared[name] for name in ("worlds", "reference_pairs", "grpo_seeds", "grpo_steps")
    }
    assert cell.actions == ("impulse", "compare", "deal")


def test_quick_and_overridden_runs_keep_their_sizes() -> None:
    sizes = claims.load()["sizes"]
    quick = for_cell(quick_config(), "research", "cooperative", sizes)
    assert quick.worlds == quick_config().worlds
    overridden = replace(full_config(), worlds=200, extra={"sizes_overridden": True})
    assert for_cell(overridden, "research", "cooperative", sizes).worlds == 200
