"""An acknowledged record survives `kill -9`; a failed one frees its address at once."""

from __future__ import annotations

import base64
import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from fastapi import FastAPI
from sqlalchemy.exc import OperationalError

from resolver import recording
from resolver.app import create_app
from resolver.resolve_results import Resolution, Waiting
from resolver.schemas import ResolveRequest
from resolver.settings import load_settings
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import running_server, start_server

with warnings.catch_warnings():
    # Starlette 1.x flags its httpx-based TestClient as deprecated; it still works as before.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def test_acknowledged_record_survives_kill_9(database_args: list[str]) -> None:
    args = ["resolver", *database_args]
    server = start_server(args)
    try:
        proxy = ProxyDouble(server.url)
        proxy.open("crash")
        a, b = proxy.fork("crash", children=2)
        recorded = [proxy.ask("crash", a, path=f"/item/{i}") for i in range(5)]
        assert all(s.decision == "recorded" for s in recorded)
        proxy.ask("crash", a, "POST", "/docs/1", body=b"w")
        server.kill_hard()
    finally:
        server.stop()
    with running_server(args) as restarted:
        proxy = ProxyDouble(restarted.url)
        replayed = [proxy.ask("crash", b, path=f"/item/{i}") for i in range(5)]
        assert [s.decision for s in replayed] == ["shared"] * 5
        assert [s.body for s in replayed] == [s.body for s in recorded]
        versions = proxy.http.get("/v1/tapes/crash/branches/root%2Fb0").json()["versions"]
        assert versions  # the write's version bump was committed with its record
        assert proxy.world.live_calls == 0


@pytest.fixture(params=[True, False], ids=["on-the-event-loop", "on-a-thread"])
def app_client(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    settings = load_settings(data_dir=tmp_path, resolve_on_event_loop=request.param)
    with TestClient(create_app(settings)) as client:
        yield client


def _full_disk(*_args: object, **_kwargs: object) -> None:
    raise OperationalError("INSERT INTO exchanges", {}, sqlite3.OperationalError("disk is full"))


def test_a_failed_record_frees_the_address_for_a_waiting_sibling_at_once(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = cast(FastAPI, app_client.app)
    resolver = app.state.resolver
    assert app_client.post("/v1/tapes", json={"name": "full"}).status_code == 201
    fork = app_client.post("/v1/tapes/full/fork", json={"parent": "root", "children": 2})
    a, b = fork.json()["branches"]

    def ask(branch: str) -> ResolveRequest:
        return ResolveRequest(tape="full", branch=branch, method="GET", host="h", port=80)

    holder = resolver.resolve(ask(a))
    assert isinstance(holder, Resolution) and holder.ticket is not None
    waiting = resolver.resolve(ask(b))
    assert isinstance(waiting, Waiting)

    answer = {"status": 200, "headers": [], "body": base64.b64encode(b"live").decode()}
    with monkeypatch.context() as patched:
        patched.setattr(recording.exchanges, "insert_exchange_first_wins", _full_disk)
        failed = app_client.post("/v1/record", json={"ticket": holder.ticket, "response": answer})
    assert failed.status_code == 503, failed.text
    assert failed.headers["content-type"] == "application/problem+json"
    assert failed.headers["retry-after"] == "1"
    assert "disk is full" in failed.json()["detail"]

    # Well inside the 30 s lease: the sibling is handed the address instead of waiting it out.
    taken = resolver.poll(waiting)
    assert isinstance(taken, Resolution) and taken.ticket not in (None, holder.ticket)
    assert taken.decision == "recorded"
    recorded = app_client.post("/v1/record", json={"ticket": taken.ticket, "response": answer})
    assert recorded.status_code == 200, recorded.text
    assert app_client.get("/v1/tapes/full").json()["exchanges"] == 1
