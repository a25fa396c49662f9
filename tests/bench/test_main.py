"""The `python -m bench` command line: modes, overrides and refusals, without servers."""

from __future__ import annotations

import pytest

from bench import __main__ as cli


def test_quick_and_full_modes_differ_and_are_recorded() -> None:
    quick = cli.build_config(cli.parse_args(["--quick"]))
    full = cli.build_config(cli.parse_args([]))
    assert quick.quick and not full.quick
    assert quick.worlds < full.worlds
    assert quick.group_sizes == () and full.group_sizes == tuple(range(1, 9))
    assert quick.worlds_run == ("research",) and full.worlds_run == ("research", "shop", "mcp")
    assert quick.modes == full.modes == ("uncooperative", "cooperative")
    assert len(full.grpo_seeds) > len(quick.grpo_seeds)
    # A quick run has speed rows and the noise-share curve only when asked for; a full run
    # has both, as the protocol lays it out (its speed rows at the scripts' quick sizes).
    assert not quick.measure_speed and not quick.noise_curve
    assert full.measure_speed and full.quick_speed and full.noise_curve
    assert cli.build_config(cli.parse_args(["--quick", "--speed"])).measure_speed
    assert not cli.build_config(cli.parse_args(["--no-speed"])).measure_speed
    # Running services without an MCP world: the full run leaves the MCP cell out.
    urls = ["--world-url", "http://w", "--shop-world-url", "http://s"]
    assert cli.build_config(cli.parse_args(urls)).worlds_run == ("research", "shop")


def test_overrides_apply() -> None:
    config = cli.build_config(cli.parse_args(["--quick", "--worlds", "12", "--no-speed"]))
    assert (config.worlds, config.measure_speed) == (12, False)
    assert config.to_json()["rollouts_horizon"] == 24


def test_worlds_run_is_chosen_and_checked() -> None:
    chosen = cli.build_config(cli.parse_args(["--quick", "--worlds-run", "shop"]))
    assert chosen.worlds_run == ("shop",)
    with pytest.raises(SystemExit, match="choose from research, shop"):
        cli.build_config(cli.parse_args(["--worlds-run", "moon"]))
    # Running services without a shop: the research world only.
    only = cli.build_config(cli.parse_args(["--world-url", "http://w"]))
    assert only.worlds_run == ("research",)


def test_too_few_worlds_is_refused_with_the_fix() -> None:
    with pytest.raises(SystemExit, match="at least 8"):
        cli.build_config(cli.parse_args(["--worlds", "3"]))


def test_some_but_not_all_service_urls_is_refused(capsys) -> None:
    assert cli.main(["--world-url", "http://127.0.0.1:1"]) == 2
    assert "all three" in capsys.readouterr().err
