"""Unit tests of worldsim/admin.py: the control routes (reset, stats, branches, oracle)."""

from __future__ import annotations

from .conftest import TestClient

BRIEF = {"id": "brief-wind", "topic": "wind", "title": "Wind brief", "sources": ["d06"]}


def _branch(name: str) -> dict[str, str]:
    return {"X-Groundhog-Branch": name}


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_stats_per_endpoint_and_branch_and_reset_of_one_branch(client: TestClient) -> None:
    client.get("/context", headers=_branch("root/a"))
    client.get("/context", headers=_branch("root/a"))
    client.get("/search", params={"q": "wind"}, headers=_branch("root/b"))
    stats = client.get("/_stats").json()
    assert stats["total"] == 3
    assert stats["endpoints"] == {"GET /context": 2, "GET /search": 1}
    assert stats["branches"]["root/a"] == {"total": 2, "GET /context": 2}
    assert stats["sandboxes"] == 2
    after = client.post("/_stats/reset", params={"branch": "root/a"}).json()
    assert after["total"] == 1 and list(after["branches"]) == ["root/b"]
    # Control routes are never counted as world calls.
    assert client.get("/_stats").json()["total"] == 1


def test_reset_of_an_unknown_branch_drops_nothing(client: TestClient) -> None:
    client.get("/context", headers=_branch("root/a"))
    assert client.post("/_reset", params={"branch": "root/zz"}).json() == {
        "dropped": [],
        "sandboxes": 1,
    }
    assert client.get("/_branches").json() == {"branches": ["root/a"]}


def test_a_malformed_branch_query_is_a_422_problem(client: TestClient) -> None:
    for route in ("/_reset", "/_stats/reset"):
        reply = client.post(route, params={"branch": "root/../x"})
        assert reply.status_code == 422
        assert "is not a branch path" in reply.json()["detail"]
    too_long = client.post("/_reset", params={"branch": "a" * 300})
    assert too_long.status_code == 422


def test_the_oracle_sees_a_branchs_write_and_the_batch_agrees(client: TestClient) -> None:
    assert client.post("/docs", json=BRIEF, headers=_branch("root/w")).status_code == 201
    read = {"branch": "root/w", "path": "/docs/brief-wind"}
    judged = client.post("/_oracle", json=read).json()
    assert judged["differs"] is True
    assert judged["base"]["status"] == 404 and judged["now"]["status"] == 200
    untouched = client.post("/_oracle", json={"branch": "root/other", "path": "/docs/d01"}).json()
    assert untouched["differs"] is False
    batch = client.post("/_oracle/batch", json={"reads": [read, {**read, "branch": "root/x"}]})
    results = batch.json()["results"]
    assert results[0] == judged and results[1]["differs"] is False
    stats = client.get("/_stats").json()
    assert stats["total"] == 1  # the oracle itself calls nothing


def test_the_oracle_refuses_writes(client: TestClient) -> None:
    reply = client.post("/_oracle", json={"branch": "root", "method": "POST", "path": "/docs"})
    assert reply.status_code == 422 and "judges reads (GET)" in reply.json()["detail"]


def test_one_reset_drops_every_branch_it_names_and_only_those(client: TestClient) -> None:
    for branch in ("root/a", "root/b", "root/c"):
        client.get("/context", headers=_branch(branch))
    reply = client.post("/_reset", params=[("branch", "root/a"), ("branch", "root/c")])
    assert reply.json() == {"dropped": ["root/a", "root/c"], "sandboxes": 1}
    assert client.get("/_branches").json() == {"branches": ["root/b"]}
    malformed = client.post("/_reset", params=[("branch", "root/b"), ("branch", "root/../x")])
    assert malformed.status_code == 422
    assert client.get("/_branches").json() == {"branches": ["root/b"]}  # nothing dropped
