"""The dependency ground truth, and the world's own hints scored against it."""

from __future__ import annotations

import json

import pytest

from worldsim import corpus
from worldsim.errors import InvalidRequest
from worldsim.oracle import OracleQuery, judge
from worldsim.world import World, WorldRequest

from .conftest import TestClient

BRANCH = "root/b0"


def sample_reads() -> list[tuple[str, tuple[tuple[str, str], ...], int]]:
    """A spread of reads: every endpoint, every topic, every base study, two occurrences."""
    reads: list[tuple[str, tuple[tuple[str, str], ...], int]] = []
    for occurrence in (0, 1):
        reads += [("/context", (), occurrence), ("/trends", (), occurrence)]
        reads += [("/search", (("q", topic),), occurrence) for topic in corpus.TOPICS]
        reads += [("/review", (("doc", doc),), occurrence) for doc in ("brief-solar", "brief-wind")]
    reads += [(f"/docs/{doc_id}", (), 0) for doc_id in [*corpus.BASE_DOCS, "brief-solar"]]
    return reads


def header(answer, name: str) -> set[str]:
    value = dict(answer.headers)[name]
    return set(value.split(",")) if value else set()


@pytest.mark.parametrize("seed", [1, 7, 12])
def test_hints_never_miss_a_changed_read_and_rarely_over_warn(seed: int) -> None:
    world = World(seed)
    brief = {"id": "brief-solar", "topic": "solar", "title": "Solar grid brief", "sources": ["d01"]}
    recorded = {}
    for path, query, occurrence in sample_reads():
        base = world.handle(
            WorldRequest("GET", path, query, branch="probe", occurrence=str(occurrence))
        )
        recorded[(path, query, occurrence)] = header(base, "X-Groundhog-Reads")
    write = world.handle(
        WorldRequest("POST", "/docs", (), json.dumps(brief).encode(), branch=BRANCH)
    )
    writes = header(write, "X-Groundhog-Writes")
    assert writes == {"doc:brief-solar", "review:brief-solar", "index:solar", "index:grid"}
    true_positive = false_positive = false_negative = 0
    for (path, query, occurrence), reads in recorded.items():
        truth = judge(
            world,
            OracleQuery(
                branch=BRANCH,
                path=path,
                query=list(map(list, query)),
                occurrence=occurrence,
                seed=seed,
            ),
        )["differs"]
        predicted = bool(reads & writes)
        true_positive += truth and predicted
        false_positive += predicted and not truth
        false_negative += truth and not predicted
        if predicted and not truth:
            # Only a top-k view can be named as a dependency and still not change.
            assert path == "/search", (path, query)
    assert false_negative == 0
    assert true_positive >= 3  # the brief itself, its review at both occurrences
    assert true_positive / (true_positive + false_positive) >= 0.5


def test_the_oracle_touches_no_state_and_compares_with_a_baseline() -> None:
    world = World(7)
    query = OracleQuery(branch="root/b1", path="/review", query={"doc": "brief-solar"})
    assert judge(world, query)["differs"] is False
    assert world.branches() == []
    world.handle(
        WorldRequest(
            "POST", "/docs", (), b'{"topic":"solar","title":"Solar brief"}', branch="root/b1"
        )
    )
    answer = judge(world, query)
    assert answer["differs"] is True
    assert answer["base"]["status"] == answer["now"]["status"] == 200
    assert answer["base"]["sha256"] != answer["now"]["sha256"]
    same_writes = OracleQuery(
        branch="root/b1", baseline="root/b1", path="/review", query={"doc": "brief-solar"}
    )
    assert judge(world, same_writes)["differs"] is False
    assert world.branches() == ["root/b1"]


def test_the_oracle_refuses_writes() -> None:
    with pytest.raises(InvalidRequest, match="judges reads"):
        judge(World(7), OracleQuery(branch="root", method="POST", path="/docs"))


def test_oracle_over_http_single_and_batch(client: TestClient) -> None:
    headers = {"X-Groundhog-Branch": "root/b2"}
    client.post("/docs", json={"topic": "wind", "title": "Wind brief"}, headers=headers)
    reads = [
        {"branch": "root/b2", "path": "/docs/brief-wind"},
        {"branch": "root/b2", "path": "/context", "occurrence": 3},
        {"branch": "root/b2", "path": "/docs/nope"},
    ]
    single = client.post("/_oracle", json=reads[0]).json()
    assert single["differs"] is True
    assert (single["base"]["status"], single["now"]["status"]) == (404, 200)
    batch = client.post("/_oracle/batch", json={"reads": reads}).json()["results"]
    assert [result["differs"] for result in batch] == [True, False, False]
    assert batch[1]["seed"] == 7 and batch[1]["request_key"] == "GET /context"
    bad = client.post("/_oracle", json={"branch": "root", "path": "/nowhere"}).json()
    assert bad["differs"] is False and bad["now"]["status"] == 404
    assert client.post("/_oracle", json={"branch": "root"}).status_code == 422
