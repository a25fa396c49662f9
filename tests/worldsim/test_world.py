"""The world object: seeded answers, branch sandboxes, occurrences, the cap, statistics."""

from __future__ import annotations

import json

import pytest

from worldsim import corpus
from worldsim.errors import BodyTooLarge, InvalidRequest, SandboxCapReached, UnknownEndpoint
from worldsim.world import World, WorldRequest

BRIEF = {"id": "brief-solar", "topic": "solar", "title": "Solar brief", "sources": ["d01", "d02"]}


def get(world: World, path: str, query=(), **headers: str):
    return world.handle(WorldRequest("GET", path, tuple(query), **headers))


def publish(world: World, brief: dict = BRIEF, **headers: str):
    return world.handle(WorldRequest("POST", "/docs", (), json.dumps(brief).encode(), **headers))


def payload(answer) -> dict:
    return json.loads(answer.body)


def test_same_seed_same_bytes_and_another_seed_differs() -> None:
    first, second, other = World(7), World(7), World(8)
    for path, query in [("/context", ()), ("/trends", ()), ("/search", [("q", "wind")])]:
        assert get(first, path, query) == get(second, path, query)
        assert get(first, path, query).body != get(other, path, query).body


def test_seed_header_overrides_the_server_seed() -> None:
    assert get(World(8), "/context", seed="7").body == get(World(7), "/context").body


def test_occurrence_comes_from_the_header_or_the_branch_counter() -> None:
    world = World(7)
    first = payload(get(world, "/context"))
    second = payload(get(world, "/context"))
    assert second["clock"] > first["clock"]
    assert (
        get(world, "/context", occurrence="0").body
        == json.dumps(first, sort_keys=True, separators=(",", ":")).encode()
    )
    # A fresh branch counts from zero on its own.
    assert payload(get(world, "/context", branch="other")) == first


def test_search_ranks_equally_relevant_hits_randomly_per_world() -> None:
    orders = {
        tuple(hit["id"] for hit in payload(get(World(seed), "/search", [("q", "solar")]))["hits"])
        for seed in range(8)
    }
    assert len(orders) > 1
    for order in orders:
        assert len(order) == 5
        assert all("solar" in corpus.BASE_DOCS[doc_id].terms for doc_id in order)


def test_a_branch_sees_its_own_writes_and_no_other_branch_does() -> None:
    world = World(7)
    assert payload(get(world, "/review", [("doc", "brief-solar")], branch="root/b0")) == {
        "doc": "brief-solar",
        "exists": False,
    }
    assert publish(world, branch="root/b0").status == 201
    review = payload(get(world, "/review", [("doc", "brief-solar")], branch="root/b0"))
    assert review["exists"] is True and review["revision"] == 1 and review["uplift"] > 0
    assert not payload(get(world, "/review", [("doc", "brief-solar")], branch="root/b1"))["exists"]
    assert get(world, "/docs/brief-solar", branch="root/b1").status == 404
    assert get(world, "/docs/brief-solar", branch="root/b0").status == 200
    # Searching many times finds the brief among the solar hits in its own branch only.
    found = {
        hit["id"]
        for occurrence in range(30)
        for hit in payload(
            get(world, "/search", [("q", "solar")], branch="root/b0", occurrence=str(occurrence))
        )["hits"]
    }
    assert "brief-solar" in found


def test_revising_a_brief_bumps_its_revision_and_addresses_the_review() -> None:
    world = World(7)
    publish(world)
    answer = publish(world, {**BRIEF, "body": "revised"})
    assert payload(answer) == {"id": "brief-solar", "revision": 2, "terms": ["solar"]}
    review = payload(get(world, "/review", [("doc", "brief-solar")]))
    assert review["uplift"] == 0.0 and review["revision"] == 2


def test_a_new_child_sandbox_starts_from_its_nearest_ancestor() -> None:
    world = World(7)
    publish(world, branch="root")
    assert get(world, "/docs/brief-solar", branch="root/b0/c1").status == 200
    assert get(world, "/docs/brief-solar", branch="elsewhere").status == 404


def test_sandbox_cap_refuses_new_branches_until_reset() -> None:
    world = World(7, sandbox_cap=2)
    get(world, "/context", branch="a")
    get(world, "/context", branch="b")
    with pytest.raises(SandboxCapReached) as refused:
        get(world, "/context", branch="c")
    assert refused.value.status == 429
    get(world, "/context", branch="a")  # existing sandboxes still answer
    assert world.reset("a") == ["a"]
    assert get(world, "/context", branch="c").status == 200
    assert world.reset() == ["b", "c"]


def test_bad_requests_raise_typed_errors() -> None:
    world = World(7, max_body_bytes=64)
    with pytest.raises(UnknownEndpoint):
        get(world, "/nowhere")
    with pytest.raises(InvalidRequest, match="X-Groundhog-Branch"):
        get(world, "/context", branch="../etc")
    with pytest.raises(InvalidRequest, match="non-negative integer"):
        get(world, "/context", occurrence="-1")
    with pytest.raises(InvalidRequest, match="X-Groundhog-Seed"):
        get(world, "/context", seed="abc")
    with pytest.raises(InvalidRequest, match="'q' is required"):
        get(world, "/search")
    with pytest.raises(BodyTooLarge):
        publish(world, {**BRIEF, "body": "x" * 100})
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        world.handle(WorldRequest("POST", "/docs", (), b"{nope"))


def test_stats_count_calls_per_endpoint_and_branch() -> None:
    world = World(7)
    get(world, "/context")
    get(world, "/search", [("q", "wind")], branch="root/b0")
    get(world, "/search", [("q", "grid")], branch="root/b0")
    stats = world.stats()
    assert stats["total"] == 3
    assert stats["endpoints"] == {"GET /context": 1, "GET /search": 2}
    assert stats["branches"]["root/b0"] == {"GET /search": 2, "total": 2}
    world.reset_stats("root/b0")
    assert world.stats()["total"] == 1
