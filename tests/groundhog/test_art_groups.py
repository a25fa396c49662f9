"""OpenPipe ART trajectory groups on Groundhog forks, through the real `art` and the real stack.

Two scenarios, four rollouts each, gathered by the real `art.gather_trajectory_groups`: each
rollout takes a model turn through ART's own openai client (a mock chat-completions server),
reads its scenario's page from a world whose every live answer is fresh random bytes, and one
rollout per group writes a note before all of them read the notes back. Through the real proxy
and resolver, a group must be one fork keyed by the scenario's content, its rollouts' reads the
same bytes (the world hit once), the other scenario a different fork with its own draw, and the
writer's read after its write refetched live; a scenario keyed only by its address must fail
before anything is forked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

art = pytest.importorskip("art", reason="the art extra is not installed")

import pydantic  # noqa: E402

from groundhog.art_groups import BRANCH_METADATA, GROUP_METADATA, ArtGroups  # noqa: E402
from groundhog.client import Groundhog  # noqa: E402
from groundhog.verifiers_adapter import current_rollout_branch  # noqa: E402
from groundhog.verifiers_v1 import UnstableGroupKey  # noqa: E402
from tests.groundhog.model_server import ModelServer, serving_model  # noqa: E402
from tests.groundhog.random_world import World, serving_random_world  # noqa: E402

ROLLOUTS = 4


@pytest.fixture
def world() -> Iterator[World]:
    with serving_random_world() as state:
        yield state


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


class Scenario(pydantic.BaseModel):
    """What ART examples pass as a scenario: a pydantic model (keyed by its fields)."""

    topic: str
    question: str


def rollout_function(tools: Any, base: str) -> Any:
    """ART's `rollout(model, scenario) -> art.Trajectory`, as its examples write it."""

    async def rollout(model: Any, scenario: Scenario) -> Any:
        messages = [{"role": "user", "content": scenario.question}]
        completion = await model.openai_client().chat.completions.create(
            model=model.get_inference_name(), messages=messages
        )
        page = await tools.get(f"{base}/{scenario.topic}/page")
        branch = current_rollout_branch()
        assert branch is not None
        wrote = branch.path.endswith("/s1")  # one writer per group, the others only read
        if wrote:
            written = await tools.post(f"{base}/{scenario.topic}/notes", content=b"mine")
            assert written.headers["X-Groundhog-Decision"] == "write"
        notes = await tools.get(f"{base}/{scenario.topic}/notes")
        return art.Trajectory(
            messages_and_choices=[*messages, completion.choices[0]],
            reward=float(len(completion.choices[0].message.content or "")),
            metadata={
                "page": page.text,
                "page_decision": page.headers["X-Groundhog-Decision"],
                "wrote": wrote,
                "notes": notes.text,
                "notes_decision": notes.headers["X-Groundhog-Decision"],
            },
        )

    return rollout


def test_a_group_of_trajectories_is_one_fork_per_scenario_sharing_the_world(
    gh_proxied: Groundhog, tape_name: str, world: World, model_server: ModelServer
) -> None:
    art_groups = ArtGroups(gh_proxied.open(tape_name, world_seed=8))
    model = art.Model(
        name="policy",
        project="groundhog-test",
        inference_base_url=model_server.url,
        inference_api_key="none",
        inference_model_name="mock-model",
    )
    scenarios = [
        Scenario(topic="wind", question="What does the wind page say?"),
        Scenario(topic="solar", question="What does the solar page say?"),
    ]
    base = f"{world.url}/{tape_name}"

    async def train_step() -> list[Any]:
        async with art_groups.async_client() as tools:
            rollout = rollout_function(tools, base)
            return await art.gather_trajectory_groups(
                art_groups.trajectory_group(
                    scenario, (rollout(model, scenario) for _ in range(ROLLOUTS))
                )
                for scenario in scenarios
            )

    groups = asyncio.run(train_step())

    assert [len(group) for group in groups] == [ROLLOUTS, ROLLOUTS]
    assert len(model_server.requests) == 2 * ROLLOUTS  # one model turn per rollout, real SDK
    assert all("x-groundhog-branch" not in headers for headers in model_server.headers)
    events = list(gh_proxied.iter_events(tape_name))  # per scenario: 4 pages, a write, 4 notes
    assert len(events) == 2 * (2 * ROLLOUTS + 1) and not [
        e for e in events if "/chat/completions" in e.url
    ]
    forks = [group.metadata[GROUP_METADATA] for group in groups]
    assert len(set(forks)) == 2, "different scenarios are different forks"
    pages = []
    for scenario, group, fork in zip(scenarios, groups, forks, strict=True):
        metadata = [trajectory.metadata for trajectory in group]
        branches = sorted(m[BRANCH_METADATA] for m in metadata)
        assert branches == [f"{fork}/s{index}" for index in range(ROLLOUTS)]
        # Siblings read one draw of the world, byte for byte: it was fetched once.
        assert len({m["page"] for m in metadata}) == 1
        assert sorted(m["page_decision"] for m in metadata) == ["recorded"] + ["shared"] * 3
        assert world.hits[("GET", f"/{tape_name}/{scenario.topic}/page")] == 1
        pages.append(metadata[0]["page"])
        # The writer's read after its own write is fetched again, never served the base...
        (writer,) = [m for m in metadata if m["wrote"]]
        readers = [m for m in metadata if not m["wrote"]]
        assert writer["notes_decision"] == "refetched"
        # ...while its siblings, who wrote nothing, share the unwritten notes.
        assert sorted(m["notes_decision"] for m in readers) == ["recorded", "shared", "shared"]
        assert len({m["notes"] for m in readers}) == 1 and readers[0]["notes"] != writer["notes"]
        assert world.hits[("GET", f"/{tape_name}/{scenario.topic}/notes")] == 2
        assert world.hits[("POST", f"/{tape_name}/{scenario.topic}/notes")] == 1
    assert pages[0] != pages[1], "each scenario's fork draws the world on its own"
    listed = {branch.path for branch in gh_proxied.list_branches(tape_name)}
    assert listed == {"root", *forks, *(f"{f}/s{i}" for f in forks for i in range(ROLLOUTS))}

    # The key is the scenario's content: the same scenario loaded again (a new object) joins
    # the same fork, on branches of its own, and reads the world that fork already drew.
    again = Scenario.model_validate_json(scenarios[0].model_dump_json())
    assert art_groups.group_key(again) == art_groups.group_key(scenarios[0])
    assert art_groups.group_key(scenarios[1]) != art_groups.group_key(scenarios[0])

    async def same_scenario_again() -> list[Any]:
        async with art_groups.async_client() as tools:
            rollout = rollout_function(tools, base)
            group = art_groups.trajectory_group(again, (rollout(model, again) for _ in range(2)))
            return await art.gather_trajectory_groups([group])

    (joined,) = asyncio.run(same_scenario_again())
    assert joined.metadata[GROUP_METADATA] == forks[0]
    assert sorted(t.metadata[BRANCH_METADATA] for t in joined) == [
        f"{forks[0]}/s{ROLLOUTS}",
        f"{forks[0]}/s{ROLLOUTS + 1}",
    ]
    assert {t.metadata["page"] for t in joined} == {pages[0]}
    assert world.hits[("GET", f"/{tape_name}/wind/page")] == 1


class Opaque:
    """A scenario with no content to key on: its repr is `<… object at 0x…>`."""


def test_a_scenario_keyed_only_by_its_address_fails_loudly(
    gh_proxied: Groundhog, tape_name: str
) -> None:
    art_groups = ArtGroups(gh_proxied.open(tape_name, world_seed=9))
    started: list[int] = []

    async def rollout(scenario: object) -> Any:
        started.append(1)
        return art.Trajectory(reward=0.0)

    async def train_step() -> list[Any]:
        return await art.gather_trajectory_groups(
            [art_groups.trajectory_group(Opaque(), (rollout(Opaque()) for _ in range(2)))]
        )

    with pytest.raises(UnstableGroupKey, match="names a memory address"):
        asyncio.run(train_step())
    assert started == []
    assert gh_proxied.list_branches(tape_name)[0].children == []  # nothing was forked
    # A dict scenario holding such an object fails the same way; a JSON value keys fine.
    with pytest.raises(UnstableGroupKey):
        art_groups.group_key({"topic": "wind", "tool": Opaque()})
    assert art_groups.group_key({"topic": "wind"}) == art_groups.group_key({"topic": "wind"})
