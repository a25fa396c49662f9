"""Unit tests of resolver/errors.py: typed errors rendered once as RFC 9457 problem+json."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field
from sqlalchemy.exc import OperationalError

from resolver.app import create_app
from resolver.errors import (
    PROBLEM_MEDIA_TYPE,
    BodyTooLarge,
    Conflict,
    InvalidInput,
    NotFound,
    ResolverError,
    ResolveTimeout,
    Unauthorized,
    problem_body,
)
from resolver.problem_handlers import install_error_handlers, problem_response
from resolver.settings import load_settings


class _Payload(BaseModel):
    name: str
    count: int = Field(ge=0)


def _app() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/typed/{kind}")
    def typed(kind: str) -> None:
        errors: dict[str, ResolverError] = {
            "conflict": Conflict("clash", branches=["root/a"]),
            "unauthorized": Unauthorized("token please"),
            "plain": ResolverError("plain detail"),
        }
        raise errors[kind]

    @app.post("/payload")
    def payload(body: _Payload) -> dict[str, str]:
        return {"name": body.name}

    @app.get("/store")
    def store() -> None:
        raise OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full"))

    @app.get("/teapot")
    def teapot() -> None:
        raise HTTPException(status_code=418, detail="short and stout")

    return TestClient(app, raise_server_exceptions=False)


def test_problem_body_is_sorted_compact_and_carries_extras() -> None:
    raw = problem_body(404, "not-found", "Not found", "gone", tape="t", zeta=1)
    assert raw == (
        b'{"detail":"gone","status":404,"tape":"t",'
        b'"title":"Not found","type":"https://groundhog.dev/problems/not-found","zeta":1}'
    )


def test_problem_response_sets_media_type_status_and_headers() -> None:
    response = problem_response(503, "x", "X", "d", headers={"Retry-After": "1"}, a=[1])
    assert response.status_code == 503
    assert response.media_type == PROBLEM_MEDIA_TYPE
    assert response.headers["retry-after"] == "1"
    assert json.loads(response.body) == {
        "type": "https://groundhog.dev/problems/x",
        "title": "X",
        "status": 503,
        "detail": "d",
        "a": [1],
    }


@pytest.mark.parametrize(
    ("error_class", "status", "slug"),
    [
        (ResolverError, 400, "bad-request"),
        (NotFound, 404, "not-found"),
        (Conflict, 409, "conflict"),
        (InvalidInput, 422, "invalid-input"),
        (BodyTooLarge, 413, "body-too-large"),
        (Unauthorized, 401, "unauthorized"),
        (ResolveTimeout, 504, "resolve-timeout"),
    ],
)
def test_each_error_class_has_its_status_and_slug(
    error_class: type[ResolverError], status: int, slug: str
) -> None:
    error = error_class("why", field="x")
    assert (error.status, error.slug) == (status, slug)
    assert error.detail == str(error) == "why"
    assert error.extras == {"field": "x"}


def test_typed_errors_become_problems_with_extras() -> None:
    client = _app()
    conflict = client.get("/typed/conflict")
    assert conflict.status_code == 409
    assert conflict.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert conflict.json() == {
        "type": "https://groundhog.dev/problems/conflict",
        "title": "Conflict",
        "status": 409,
        "detail": "clash",
        "branches": ["root/a"],
    }
    assert "www-authenticate" not in conflict.headers
    plain = client.get("/typed/plain")
    assert plain.status_code == 400 and plain.json()["title"] == "Bad request"


def test_unauthorized_asks_for_a_bearer_token() -> None:
    reply = _app().get("/typed/unauthorized")
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"


def test_validation_errors_list_every_field_without_the_body_prefix() -> None:
    reply = _app().post("/payload", json={"count": -1})
    assert reply.status_code == 422
    problem = reply.json()
    assert problem["type"].endswith("/invalid-input")
    fields = [issue["field"] for issue in problem["errors"]]
    assert sorted(fields) == ["count", "name"]
    for issue in problem["errors"]:
        assert f"{issue['field']}: {issue['message']}" in problem["detail"]
    assert problem["detail"].count("; ") == 1


def test_a_body_that_is_not_an_object_is_located_at_body() -> None:
    client = _app()
    listed = client.post("/payload", json=[1])
    assert listed.status_code == 422
    assert [issue["field"] for issue in listed.json()["errors"]] == ["body"]
    garbled = client.post(
        "/payload", content=b"not json", headers={"content-type": "application/json"}
    )
    assert garbled.status_code == 422
    assert "JSON decode error" in garbled.json()["detail"]


def test_store_failures_are_503_with_retry_after(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="resolver.errors"):
        reply = _app().get("/store")
    assert reply.status_code == 503
    assert reply.headers["retry-after"] == "1"
    problem = reply.json()
    assert problem["type"].endswith("/store-unavailable")
    assert "database or disk is full" in problem["detail"]
    assert "nothing was recorded" in problem["detail"]
    assert any("could not be written" in record.message for record in caplog.records)


def test_framework_http_errors_become_problems() -> None:
    client = _app()
    missing = client.get("/no-such-route")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert missing.json()["type"].endswith("/not-found")
    teapot = client.get("/teapot")
    assert teapot.status_code == 418
    assert teapot.json()["type"].endswith("/http-error")
    assert teapot.json()["detail"] == "short and stout"


def test_framework_errors_keep_their_headers() -> None:
    client = _app()
    wrong_method = client.post("/teapot")
    assert wrong_method.status_code == 405
    assert wrong_method.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert wrong_method.headers.get("allow") == "GET"


def test_the_resolver_app_answers_a_wrong_method_with_a_405_problem(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'r.db'}")
    with TestClient(create_app(settings)) as client:
        reply = client.post("/healthz")
    assert reply.status_code == 405
    assert reply.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert reply.json()["type"].endswith("/http-error")
