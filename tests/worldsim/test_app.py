"""The HTTP contract: endpoints, headers, control routes, and problem+json for bad input."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worldsim.app import create_app
from worldsim.config import load_config

from .conftest import TestClient

PROBLEM = "application/problem+json"
BRIEF = {"id": "brief-wind", "topic": "wind", "title": "Wind brief", "sources": ["d06"]}


def assert_problem(response, status: int, detail_contains: str) -> dict:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == status
    assert problem["type"].startswith("urn:groundhog:worldsim:problem:")
    assert problem["title"]
    assert detail_contains in problem["detail"]
    return problem


def test_health_and_every_endpoint_answers_with_latency_and_hints(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    context = client.get("/context")
    assert set(context.json()) == {"attention", "clock", "day", "hour", "time"}
    assert float(context.headers["x-world-latency-ms"]) > 0
    assert context.headers["x-groundhog-reads"] == ""
    assert context.headers["x-groundhog-writes"] == ""
    assert "date" not in context.headers and "server" not in context.headers
    search = client.get("/search", params={"q": "wind"})
    hit_ids = [hit["id"] for hit in search.json()["hits"]]
    assert search.headers["x-groundhog-reads"].split(",") == sorted(
        ["index:wind", *(f"doc:{doc_id}" for doc_id in hit_ids)]
    )
    doc = client.get(f"/docs/{hit_ids[0]}")
    assert doc.json()["id"] == hit_ids[0]
    assert doc.headers["x-groundhog-reads"] == f"doc:{hit_ids[0]}"
    published = client.post("/docs", json=BRIEF)
    assert published.status_code == 201
    assert published.json() == {"id": "brief-wind", "revision": 1, "terms": ["wind"]}
    assert published.headers["x-groundhog-writes"] == "doc:brief-wind,index:wind,review:brief-wind"
    review = client.get("/review", params={"doc": "brief-wind"})
    assert review.json()["exists"] is True
    assert review.headers["x-groundhog-reads"] == "doc:brief-wind,doc:d06,review:brief-wind"
    trends = client.get("/trends").json()["trends"]
    assert [trend["mentions"] for trend in trends] == sorted(
        (trend["mentions"] for trend in trends), reverse=True
    )


def test_responses_are_canonical_json(client: TestClient) -> None:
    body = client.get("/context").content
    assert body == json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    stats = client.get("/_stats").content
    assert stats == json.dumps(json.loads(stats), sort_keys=True, separators=(",", ":")).encode()


def test_hints_can_be_switched_off() -> None:
    with TestClient(create_app(load_config(seed=7, hints=False))) as quiet:
        response = quiet.get("/search", params={"q": "wind"})
    assert response.status_code == 200
    assert "x-groundhog-reads" not in response.headers
    assert "x-groundhog-writes" not in response.headers
    assert "x-world-latency-ms" in response.headers


def test_unknown_document_is_a_404_problem_with_its_dependency(client: TestClient) -> None:
    response = client.get("/docs/brief-none")
    problem = assert_problem(response, 404, "brief-none")
    assert problem["doc"] == "brief-none"
    assert response.headers["x-groundhog-reads"] == "doc:brief-none"
    assert_problem(client.get("/nowhere"), 404, "GET /nowhere")


def test_malformed_and_invalid_bodies_are_422(client: TestClient) -> None:
    assert_problem(client.post("/docs", content=b"{not json"), 422, "not valid JSON")
    problem = assert_problem(client.post("/docs", json={"topic": 3}), 422, "schema")
    assert {"loc": ["title"], "msg": "Field required"} in problem["errors"]
    assert_problem(client.post("/docs", json={**BRIEF, "id": "Bad Id!"}), 422, "schema")
    assert_problem(client.get("/search"), 422, "query.q")
    assert_problem(client.get("/context", headers={"X-Groundhog-Occurrence": "x"}), 422, "Occ")


def test_publishing_over_a_base_study_is_a_409(client: TestClient) -> None:
    assert_problem(client.post("/docs", json={**BRIEF, "id": "d01"}), 409, "base-corpus")


def test_oversized_body_is_413(client: TestClient) -> None:
    big = json.dumps({**BRIEF, "body": "x" * 5000}).encode()
    assert_problem(client.post("/docs", content=big), 413, "limit is 4096")

    def chunks():
        yield b'{"topic": "wind", "title": "t", "body": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    assert_problem(client.post("/docs", content=chunks()), 413, "limit of 4096")


def test_sandbox_cap_is_a_429_and_reset_clears_it(client: TestClient) -> None:
    for index in range(8):
        assert client.get("/context", headers={"X-Groundhog-Branch": f"b{index}"}).is_success
    problem = assert_problem(
        client.get("/context", headers={"X-Groundhog-Branch": "b8"}), 429, "/_reset"
    )
    assert problem["sandbox_cap"] == 8
    assert client.post("/_reset", params={"branch": "b0"}).json()["dropped"] == ["b0"]
    assert client.get("/context", headers={"X-Groundhog-Branch": "b8"}).is_success
    assert client.post("/_reset").json() == {
        "dropped": [f"b{index}" for index in range(1, 9)],
        "sandboxes": 0,
    }
    assert client.get("/_branches").json() == {"branches": []}


def test_stats_count_world_calls_only(client: TestClient) -> None:
    client.get("/context", headers={"X-Groundhog-Branch": "root/b1"})
    client.get("/trends")
    client.get("/healthz")
    client.get("/_stats")
    stats = client.get("/_stats").json()
    assert stats["total"] == 2
    assert stats["branches"]["root/b1"] == {"GET /context": 1, "total": 1}
    assert client.post("/_stats/reset").json()["total"] == 0


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(["/context", "/search", "/docs/x", "/review", "/trends", "/_oracle"]),
    value=st.text(max_size=30),
    header=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    body=st.binary(max_size=200),
)
def test_arbitrary_input_never_gets_a_500(
    client: TestClient, path: str, value: str, header: str, body: bytes
) -> None:
    headers = {"X-Groundhog-Branch": header, "X-Groundhog-Seed": header}
    read = client.get(path, params={"q": value, "doc": value}, headers=headers)
    write = client.post(path if path == "/_oracle" else "/docs", content=body, headers=headers)
    for response in (read, write):
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert response.headers["content-type"] == PROBLEM


def test_sleeping_the_latency_changes_no_byte() -> None:
    with TestClient(create_app(load_config(seed=7, sleep_latency=True))) as sleepy:
        slept = sleepy.get("/trends")
    with TestClient(create_app(load_config(seed=7))) as quick:
        fast = quick.get("/trends")
    assert slept.content == fast.content
    assert slept.headers["x-world-latency-ms"] == fast.headers["x-world-latency-ms"]
