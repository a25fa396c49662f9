"""A full run takes each cell's sizes from the protocol; a quick or overridden one keeps its own."""

from __future__ import annotations

from dataclasses import replace

from bench import claims
from bench.config import ACTIONS, declared_sizes, for_cell, for_world, full_config, quick_config


def test_a_full_run_takes_each_cells_sizes_from_the_protocol() -> None:
    sizes = claims.load()["sizes"]
    cell = for_cell(full_config(), "shop", "uncooperative", sizes)
    declared = sizes["shop/uncooperative"]
    assert declared_sizes(cell) == {
        name: declared[name] for name in ("worlds", "reference_pairs", "grpo_seeds", "grpo_steps")
    }
    assert cell.actions == ("impulse", "compare", "deal", "coupon")
    assert cell.learning_actions == ("impulse", "compare", "deal")
    # A world's GRPO actions never leak into another world's config.
    assert for_world(cell, "research").learning_actions == ACTIONS


def test_quick_and_overridden_runs_keep_their_sizes() -> None:
    sizes = claims.load()["sizes"]
    quick = for_cell(quick_config(), "research", "cooperative", sizes)
    assert quick.worlds == quick_config().worlds
    overridden = replace(full_config(), worlds=200, extra={"sizes_overridden": True})
    assert for_cell(overridden, "research", "cooperative", sizes).worlds == 200


def test_a_full_run_is_laid_out_as_the_protocol_declares() -> None:
    protocol = claims.load()
    config = full_config(protocol)
    layout, curves = protocol["run"], protocol["curves"]
    assert (config.workers, config.cell_workers) == (layout["workers"], layout["cell_workers"])
    assert config.group_sizes == tuple(curves["group_size"]["sizes"])
    assert config.curve_worlds == curves["group_size"]["worlds"]
    assert config.noise_curve == tuple(curves["noise_share"]["weights"])
    assert config.noise_curve_worlds == curves["noise_share"]["worlds"]
    assert config.measure_speed and config.quick_speed == (layout["speed"] == "quick")
    assert config.worlds_run == ("research", "shop", "mcp")


def test_a_protocol_without_a_layout_keeps_the_defaults() -> None:
    config = full_config({"version": 1})
    assert (config.workers, config.cell_workers, config.noise_curve) == (2, 1, ())
    assert not config.measure_speed and config.group_sizes == (1, 2, 4)
