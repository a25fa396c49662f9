"""bench.power_simulated: the sizes declared from in-process simulations, held to the protocol.

The MCP cell's sizes in bench/protocol.toml's `[sizes."mcp/uncooperative"]` must be what
bench.power's arithmetic gives on the MCP world's in-process variances, and SG1's seeds what
the shop agent's in-process reward tables give; a protocol edit that forgets either fails here.
"""

from __future__ import annotations

import copy
import json

import pytest

from bench import claims, power, power_simulated

MCP_FIELDS = {"groundhog.equivalence": "equivalence", "naive.calibration": "calibration"}


def test_the_protocol_declares_the_mcp_sizes_the_simulated_power_gives() -> None:
    protocol = claims.load()
    plan = power_simulated.simulated_mcp_plan(protocol)
    declared = protocol["sizes"][power_simulated.MCP_CELL]
    assert (declared["worlds"], declared["reference_pairs"]) == (
        plan["worlds"],
        plan["reference_pairs"],
    )
    powered = [c for c in protocol["claim"] if c["cell"] == power_simulated.MCP_CELL]
    assert {c["id"] for c in powered} == {"M1", "M2", "M3", "M4", "MA", "MB"}
    assert set(plan["needs"]) == {"equivalence", "calibration"}
    for claim in powered:
        field = MCP_FIELDS.get(claim["metric"])
        if field is not None:
            assert declared["power"][claim["id"]] == pytest.approx(plan["power"][field], abs=1e-3)
            assert plan["power"][field] >= power.target_of(field) - 1e-3


def test_the_mcp_plan_sizes_only_what_the_protocol_declares() -> None:
    """Without its control MA the MCP cell is sized by M2 alone: fewer worlds."""
    protocol = claims.load()
    without_control = copy.deepcopy(protocol)
    without_control["claim"] = [c for c in protocol["claim"] if c["id"] != "MA"]
    full = power_simulated.simulated_mcp_plan(protocol, days=200)
    reduced = power_simulated.simulated_mcp_plan(without_control, days=200)
    assert set(reduced["needs"]) == {"equivalence"}
    assert reduced["worlds"] < full["worlds"]


def test_the_shop_plan_takes_sg1s_seeds_from_the_shop_agent_in_process() -> None:
    protocol = claims.load()
    plans = power.plan(json.loads(power.SIZING_RUN.read_text()), protocol)
    shop = power_simulated.simulated_shop_grpo_plan(protocol["constants"])
    assert (plans[power_simulated.SHOP_CELL]["grpo_seeds"], shop["grpo_seeds"]) == (
        power_simulated.SHOP_GRPO_SEEDS,
        protocol["sizes"][power_simulated.SHOP_CELL]["grpo_seeds"],
    )
    assert (
        plans[power_simulated.SHOP_CELL]["power"]["grpo"]
        == (shop["policies"]["three strategies"]["power"])
    )
