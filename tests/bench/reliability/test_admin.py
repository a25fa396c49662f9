"""Unit tests for the reliability admin calls: token header, refusal messages, fork bodies."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from bench.reliability import admin
from bench.reliability.admin import AdminFailed, call, open_forked_tape


class FakeResolver:
    """Stands in for httpx.request: notes each call and answers from a route table."""

    def __init__(self, answers: dict[tuple[str, str], httpx.Response]) -> None:
        self.answers = answers
        self.calls: list[dict[str, Any]] = []

    def __call__(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        self.calls.append({"method": method, "url": url, **kwargs})
        return self.answers[(method, url)]


def install(monkeypatch: pytest.MonkeyPatch, fake: FakeResolver) -> None:
    monkeypatch.setattr(admin.httpx, "request", fake)


BASE = "http://127.0.0.1:7000"


def test_call_sends_the_bearer_token_and_returns_json(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResolver({("GET", BASE + "/v1/tapes"): httpx.Response(200, json={"tapes": []})})
    install(monkeypatch, fake)
    assert call(BASE, "GET", "/v1/tapes", token="abc") == {"tapes": []}
    sent = fake.calls[0]
    assert sent["headers"] == {"Authorization": "Bearer abc"}
    assert sent["trust_env"] is False


def test_call_without_token_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResolver({("DELETE", BASE + "/v1/tapes/x"): httpx.Response(204)})
    install(monkeypatch, fake)
    assert call(BASE, "DELETE", "/v1/tapes/x") is None
    assert fake.calls[0]["headers"] == {}


def test_refusal_names_method_route_status_and_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = {"type": "urn:groundhog:tape-exists", "detail": "tape t exists"}
    fake = FakeResolver({("POST", BASE + "/v1/tapes"): httpx.Response(409, json=problem)})
    install(monkeypatch, fake)
    with pytest.raises(AdminFailed) as caught:
        call(BASE, "POST", "/v1/tapes", json={"name": "t"})
    message = str(caught.value)
    assert message.startswith("POST /v1/tapes -> 409: ")
    assert "tape t exists" in message


def test_refusal_text_is_cut_to_500_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResolver({("GET", BASE + "/x"): httpx.Response(500, text="e" * 2000)})
    install(monkeypatch, fake)
    with pytest.raises(AdminFailed) as caught:
        call(BASE, "GET", "/x")
    assert str(caught.value) == "GET /x -> 500: " + "e" * 500


def test_open_forked_tape_opens_then_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    branches = ["root/0", "root/1", "root/2"]
    fake = FakeResolver(
        {
            ("POST", BASE + "/v1/tapes"): httpx.Response(201, json={"name": "t"}),
            ("POST", BASE + "/v1/tapes/t/fork"): httpx.Response(200, json={"branches": branches}),
        }
    )
    install(monkeypatch, fake)
    answer = open_forked_tape(BASE, "t", 3, token="tok", dependency_model="closure", online=False)
    assert answer == branches
    opened, forked = fake.calls
    assert opened["json"] == {
        "name": "t",
        "world_seed": 7,
        "mode": "groundhog",
        "online": False,
        "dependency_model": "closure",
    }
    assert forked["json"] == {"parent": "root", "children": 3}
    assert opened["headers"] == forked["headers"] == {"Authorization": "Bearer tok"}


def test_open_forked_tape_stops_at_a_refused_open(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResolver({("POST", BASE + "/v1/tapes"): httpx.Response(401, text="no token")})
    install(monkeypatch, fake)
    with pytest.raises(AdminFailed, match="401"):
        open_forked_tape(BASE, "t", 2)
    assert len(fake.calls) == 1  # the fork was never asked
    assert json.dumps(fake.calls[0]["json"])  # the body was JSON-serialisable
