"""Unit tests of resolver/fast_lane.py: hot POSTs skip the router, answers stay the app's own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from resolver.app import create_app
from resolver.auth import check_proxy
from resolver.errors import NotFound, install_error_handlers
from resolver.fast_lane import FastLane
from resolver.settings import load_settings


class Boom(Exception):
    """An error no handler claims."""


def _app(proxy_token: str | None = None) -> tuple[FastAPI, list[str]]:
    """An app whose router records every request it sees, with two fast routes."""
    reached_router: list[str] = []
    app = FastAPI()
    app.state.settings = SimpleNamespace(proxy_token=proxy_token)
    install_error_handlers(app)

    async def echo(_state: object, body: bytes) -> bytes:
        return b"fast:" + body

    async def missing(_state: object, _body: bytes) -> bytes:
        raise NotFound("no tape named 'x'; create it with POST /v1/tapes", tape="x")

    async def broken(_state: object, _body: bytes) -> bytes:
        raise Boom("unexpected")

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def everything(path: str) -> dict[str, str]:
        reached_router.append(path)
        return {"router": path}

    routes = {"/v1/echo": echo, "/v1/missing": missing, "/v1/broken": broken}
    app.add_middleware(FastLane, routes=routes, guard=check_proxy)
    return app, reached_router


def test_a_fast_post_is_answered_without_the_router() -> None:
    app, reached_router = _app()
    reply = TestClient(app).post("/v1/echo", content=b"body bytes")
    assert reply.status_code == 200
    assert reply.content == b"fast:body bytes"
    assert reached_router == []


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/echo"), ("POST", "/v1/other"), ("POST", "/v1/echo/x")]
)
def test_other_methods_and_paths_go_to_fastapi(method: str, path: str) -> None:
    app, reached_router = _app()
    reply = TestClient(app).request(method, path)
    assert reply.json() == {"router": path.lstrip("/")}
    assert reached_router == [path.lstrip("/")]


def test_the_guard_refuses_before_the_endpoint_runs_with_the_apps_problem() -> None:
    app, _ = _app(proxy_token="proxy-secret")
    client = TestClient(app)
    refused = client.post("/v1/echo", content=b"x")
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["www-authenticate"] == "Bearer"
    assert "GROUNDHOG_PROXY_TOKEN" in refused.json()["detail"]
    allowed = client.post(
        "/v1/echo", content=b"x", headers={"Authorization": "Bearer proxy-secret"}
    )
    assert allowed.content == b"fast:x"


def test_a_typed_error_becomes_the_same_problem_the_router_would_give() -> None:
    app, _ = _app()
    reply = TestClient(app).post("/v1/missing")
    assert reply.status_code == 404
    assert reply.headers["content-type"] == "application/problem+json"
    problem = reply.json()
    assert problem["type"].endswith("/not-found")
    assert problem["tape"] == "x"


def test_an_unhandled_error_is_a_500_from_the_server_error_middleware() -> None:
    app, _ = _app()
    with pytest.raises(Boom):
        TestClient(app).post("/v1/broken")
    reply = TestClient(app, raise_server_exceptions=False).post("/v1/broken")
    assert reply.status_code == 500


def test_the_resolver_answers_its_hot_routes_through_the_fast_lane(tmp_path: Path) -> None:
    """The real app: invalid bodies keep FastAPI's 422 shape, other methods its 405."""
    app = create_app(load_settings(data_dir=tmp_path, proxy_token="proxy-secret"))
    fast = [m for m in app.user_middleware if m.cls is FastLane]
    assert [sorted(m.kwargs["routes"]) for m in fast] == [["/v1/record", "/v1/resolve", "/v1/wait"]]
    with TestClient(app) as client:
        auth = {"Authorization": "Bearer proxy-secret"}
        assert client.post("/v1/wait", json={"wait": "x"}).status_code == 401
        invalid = client.post("/v1/wait", json={}, headers=auth)
        assert invalid.status_code == 422
        assert invalid.json()["errors"][0]["field"] == "wait"
        assert client.get("/v1/resolve", headers=auth).status_code == 405
