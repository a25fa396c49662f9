"""World designs: deterministic per seed, every noise kind covered, and served by the world."""

from __future__ import annotations

import json
import math

import pytest

from bench import world_designs as designs
from worldsim.__main__ import parse_args
from worldsim.agent import run_rollout
from worldsim.config import load_config
from worldsim.simulate import InProcessTransport
from worldsim.world import World, WorldRequest

KNOB = {
    "read": "attention_call_weight",
    "write": "write_noise_sd",
    "agent": "writing_noise_sd",
    "clock": "clock_scale",
}


def test_the_same_seed_draws_the_same_designs_and_another_seed_others() -> None:
    assert designs.draw_many(5, 12) == designs.draw_many(5, 12)
    assert designs.draw_many(5, 12) != designs.draw_many(6, 12)


def test_a_design_does_not_depend_on_how_many_are_drawn() -> None:
    assert designs.draw_many(5, 30)[7] == designs.draw(5, 7) == designs.draw_many(5, 8)[7]


def test_every_kind_of_noise_is_drawn_dominant_and_absent() -> None:
    drawn = designs.draw_many(58005, 32)
    for kind in designs.KINDS:
        shares = [design.shares[kind] for design in drawn]
        assert max(shares) > 0.5, kind
        assert min(shares) == 0.0, kind


def test_a_kind_is_off_exactly_when_its_share_is_zero_and_the_shares_add_to_one() -> None:
    for design in designs.draw_many(3, 40):
        assert math.isclose(sum(design.shares.values()), 1.0)
        for kind, knob in KNOB.items():
            assert (getattr(design, knob) == 0.0) == (design.shares[kind] == 0.0), (kind, design)


def test_every_design_is_a_valid_world_command_line() -> None:
    for design in designs.draw_many(11, 40):
        args = parse_args(design.world_arguments())
        config = load_config(
            attention_call_weight=args.attention_call_weight,
            write_noise_sd=args.write_noise_sd,
            clock_scale=args.clock_scale,
            seed=args.seed,
            cooperative=args.cooperative,
        )
        assert not config.cooperative
        assert config.write_noise_sd == design.write_noise_sd
        assert config.clock_scale == design.clock_scale


def _publish(world: World, branch: str) -> tuple[dict, float]:
    body = b'{"id":"brief-x","topic":"sleep","title":"T","body":"b","sources":[]}'
    answer = world.handle(
        WorldRequest("POST", "/docs", body=body, branch=branch, seed="9", occurrence="0")
    )
    return json.loads(answer.body), float(answer.latency_ms or 0.0)


def test_the_world_serves_write_noise_and_scales_its_clock() -> None:
    declared, latency = _publish(World(1), "a")
    designed, scaled = _publish(World(1, write_noise_sd=0.7, clock_scale=3.0), "a")
    assert "reception" not in declared  # the declared world's bytes are unchanged
    assert designed["reception"] != 0.0
    assert scaled == pytest.approx(3.0 * latency, abs=0.1)


def test_the_agents_reward_terms_add_up_and_its_writing_noise_follows_the_design() -> None:
    world = World(4, cooperative=False, write_noise_sd=0.5, clock_scale=2.0)
    for strategy in ("verify", "deep", "skim", "guess"):
        transport = InProcessTransport(world, branch=f"b-{strategy}")
        rollout = run_rollout(transport, strategy, 17, epoch=3, writing_noise_sd=0.0)
        assert math.fsum(value for _, value in rollout.sources()) == pytest.approx(rollout.reward)
        assert rollout.writing_noise == 0.0
        assert rollout.reception != 0.0
