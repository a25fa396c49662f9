"""Sessions, the uncooperative mode and the served-read oracle of the world."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from worldsim.app import create_app
from worldsim.config import load_config

GROUNDHOG_HEADERS = {"X-Groundhog-Seed": "5", "X-Groundhog-Occurrence": "0"}
BRIEF = {"id": "brief-solar", "topic": "solar", "title": "Solar brief", "sources": ["d01"]}


def _client(cooperative: bool) -> TestClient:
    return TestClient(create_app(load_config(seed=3, cooperative=cooperative)))


def _session(client: TestClient, **body: object) -> dict[str, str]:
    opened = client.post("/sessions", json=body)
    assert opened.status_code == 201, opened.text
    return {"Authorization": f"Bearer {opened.json()['session']}"}


def test_an_uncooperative_world_ignores_groundhog_headers_and_draws_per_call() -> None:
    with _client(cooperative=False) as client:
        auth = _session(client, epoch=11)
        first = client.get("/search", params={"q": "solar"}, headers={**auth, **GROUNDHOG_HEADERS})
        second = client.get("/search", params={"q": "solar"}, headers={**auth, **GROUNDHOG_HEADERS})
        assert not any(name.startswith("x-groundhog") for name in first.headers)
        assert "x-world-occurrence" not in first.headers
        latencies = {first.headers["x-world-latency-ms"], second.headers["x-world-latency-ms"]}
        assert len(latencies) == 2  # a fresh draw per call, whatever the headers say


def test_the_day_is_shared_by_sessions_on_one_epoch_and_calls_are_not() -> None:
    with _client(cooperative=False) as client:
        days = []
        for _ in range(3):
            auth = _session(client, epoch=42)
            days.append(client.get("/context", headers=auth).json()["day"])
        other = client.get("/context", headers=_session(client, epoch=43)).json()["day"]
    assert len(set(days)) == 1 and other != days[0]


def test_a_cooperative_world_draws_by_the_header_seed_within_a_session() -> None:
    with _client(cooperative=True) as client:
        one = client.get("/trends", headers={**_session(client, epoch=1), **GROUNDHOG_HEADERS})
        two = client.get("/trends", headers={**_session(client, epoch=1), **GROUNDHOG_HEADERS})
    assert one.content == two.content
    assert one.headers["x-request-id"] == two.headers["x-request-id"]


def test_an_idempotency_key_names_the_same_session() -> None:
    with _client(cooperative=False) as client:
        first = client.post("/sessions", json={"epoch": 2, "client": "k1"}).json()
        again = client.post("/sessions", json={"epoch": 2, "client": "k1"}).json()
        other = client.post("/sessions", json={"epoch": 2, "client": "k2"}).json()
    assert first == again and first["session"] != other["session"]


@pytest.mark.parametrize(
    ("body", "detail"),
    [(b"[1]", "must be"), (b'{"epoch": -1}', "epoch"), (b'{"client": "a b"}', "client")],
)
def test_bad_session_requests_get_a_problem(body: bytes, detail: str) -> None:
    with _client(cooperative=False) as client:
        answer = client.post("/sessions", content=body)
    assert answer.status_code == 422 and detail in answer.json()["detail"]


def test_an_unknown_token_is_refused() -> None:
    with _client(cooperative=True) as client:
        answer = client.get("/context", headers={"Authorization": "Bearer s-0123456789abcdef"})
    assert answer.status_code == 401
    assert answer.headers["content-type"] == "application/problem+json"


def test_the_oracle_grades_a_served_read_against_the_askers_own_state() -> None:
    with _client(cooperative=False) as client:
        writer, other = _session(client, epoch=9), _session(client, epoch=9)
        before = client.get("/review", params={"doc": "brief-solar"}, headers=writer)
        assert before.json()["exists"] is False
        assert client.post("/docs", content=json.dumps(BRIEF), headers=writer).status_code == 201
        rid = before.headers["x-request-id"]
        reads = [
            {"request_id": rid, "sandbox": writer["Authorization"][7:]},
            {"request_id": rid, "sandbox": other["Authorization"][7:]},
        ]
        graded = client.post("/_oracle/served", json={"reads": reads}).json()["results"]
        missing = client.post(
            "/_oracle/served", json={"reads": [{"request_id": "nope", "sandbox": "x"}]}
        )
    # Served to the writer after its write, the old answer is a lie; to anyone else it is true.
    assert graded[0]["stale"] is True and graded[0]["changed"] is True
    assert graded[1]["stale"] is False and graded[1]["changed"] is False
    assert missing.status_code == 404
