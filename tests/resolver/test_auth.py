"""Unit tests of resolver/auth.py: bearer-token guards on a minimal app."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

from resolver.auth import require_admin, require_proxy
from resolver.problem_handlers import install_error_handlers


def _client(admin_token: str | None, proxy_token: str | None) -> TestClient:
    app = FastAPI()
    app.state.settings = SimpleNamespace(admin_token=admin_token, proxy_token=proxy_token)
    install_error_handlers(app)

    @app.get("/admin", dependencies=[Depends(require_admin)])
    def admin() -> dict[str, str]:
        return {"ok": "admin"}

    @app.get("/proxy", dependencies=[Depends(require_proxy)])
    def proxy() -> dict[str, str]:
        return {"ok": "proxy"}

    return TestClient(app)


def test_no_token_configured_lets_anyone_in() -> None:
    client = _client(None, "")
    assert client.get("/admin").json() == {"ok": "admin"}
    assert client.get("/proxy").json() == {"ok": "proxy"}


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer wrong",
        "Basic admin-secret",
        "Bearer",
        "Bearer admin-secret ",
        "admin-secret",
    ],
)
def test_wrong_or_missing_credentials_get_a_401_problem(header: str | None) -> None:
    client = _client("admin-secret", None)
    headers = {"Authorization": header} if header is not None else {}
    reply = client.get("/admin", headers=headers)
    assert reply.status_code == 401
    assert reply.headers["content-type"] == "application/problem+json"
    assert reply.headers["www-authenticate"] == "Bearer"
    problem = reply.json()
    assert problem["type"].endswith("/unauthorized")
    assert "Bearer <admin token>" in problem["detail"]
    assert "GROUNDHOG_ADMIN_TOKEN" in problem["detail"]


def test_scheme_is_case_insensitive_and_roles_are_separate() -> None:
    client = _client("admin-secret", "proxy-secret")
    assert client.get("/admin", headers={"Authorization": "bearer admin-secret"}).status_code == 200
    assert client.get("/admin", headers={"Authorization": "Bearer proxy-secret"}).status_code == 401
    refused = client.get("/proxy", headers={"Authorization": "Bearer admin-secret"})
    assert refused.status_code == 401 and "GROUNDHOG_PROXY_TOKEN" in refused.json()["detail"]
    assert client.get("/proxy", headers={"Authorization": "Bearer proxy-secret"}).status_code == 200


def test_non_ascii_token_is_refused_not_crashed() -> None:
    client = _client("admin-secret", None)
    reply = client.get("/admin", headers={"Authorization": "Bearer caf\u00e9".encode()})
    assert reply.status_code == 401
