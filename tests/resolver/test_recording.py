"""The record path (resolver/recording.py): an acknowledged record survives `kill -9`, a failed
one frees its address at once, a record writes without reading back what it wrote, and a small
answer is recorded on the event loop only when nothing need wait."""

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

from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting
from resolver import record_outcomes, resolve_tx
from resolver.app import create_app
from resolver.errors import ResolverError
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn
from resolver.settings import load_settings
from store.db import Store
from store.loop_writes import LoopWriter
from tests.resolver.proxy_double import ProxyDouble
from tests.resolver.test_hit_path import ask, branch_rows, statements_of
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
        patched.setattr(record_outcomes.exchanges, "insert_new_exchange", _full_disk)
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


# The pending row taken (DELETE … RETURNING), the claim released, the tape's fields, the body,
# the exchange (INSERT … RETURNING, not read back), the event finished, and the read's occurrence
# taken by its answer (its resolve gave it back: store/counters.py).
RECORD_STATEMENTS = 7


def test_a_record_writes_without_reading_back_what_it_wrote(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    forward = resolver.resolve(ask("/r", "root/a"))
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
    seen = statements_of(store)
    response = ResponseIn(status=200, headers=[("X-A", "1")], body=base64.b64encode(b"r").decode())
    result = Recorder(store, max_body_bytes=1024).record(
        RecordRequest(ticket=forward.ticket, response=response)
    )
    assert len(seen) == RECORD_STATEMENTS, seen
    assert not [s for s in seen if s.startswith("SELECT") and "gh_exchanges" in s], seen
    assert result.recorded and result.response is not None
    assert result.response["body"] is None and result.response["headers"] == [["X-A", "1"]]
    events, _ = branch_rows(store, "root/a")
    assert [decision for _, decision, _ in events] == ["recorded"]


def answer_of(body: bytes) -> ResponseIn:
    return ResponseIn(status=200, headers=[("X-A", "1")], body=base64.b64encode(body).decode())


def test_a_small_answer_is_recorded_on_the_event_loop(store: Store) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None
    resolver = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30, loop_writer=writer)
    recorder = Recorder(store, max_body_bytes=1 << 20, loop_writer=writer)
    try:
        forward = resolver.resolve(ask("/r", "root/a"))
        assert isinstance(forward, Resolution) and forward.ticket is not None
        wire = RecordRequest(ticket=forward.ticket, response=answer_of(b"small"))
        result = resolve_tx.record_on_loop(recorder, wire)
        served = resolver.resolve(ask("/r", "root/b"))
    finally:
        writer.close()
    assert result is not None and result.recorded and result.decision == "recorded"
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert served.response is not None and base64.b64decode(served.response["body"]) == b"small"


def test_a_record_the_event_loop_declines_is_left_whole_for_a_thread(store: Store) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None and store.write_lock is not None
    resolver = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30)
    recorder = Recorder(store, max_body_bytes=1 << 20, loop_writer=writer)
    try:
        tickets = []
        for path in ("/busy", "/large", "/bad", "/passthrough"):
            forward = resolver.resolve(ask(path, "root/a"))
            assert isinstance(forward, Resolution) and forward.ticket is not None
            tickets.append(forward.ticket)
        busy, large, bad, passthrough = (
            RecordRequest(ticket=tickets[0], response=answer_of(b"busy")),
            RecordRequest(ticket=tickets[1], response=answer_of(bytes(64 * 1024))),
            RecordRequest(
                ticket=tickets[2], response=ResponseIn(status=200, headers=[], body="%%")
            ),
            RecordRequest(ticket=tickets[3], passthrough="too-large"),
        )
        with store.write_lock:  # another writer of this process is mid-transaction
            assert resolve_tx.record_on_loop(recorder, busy) is None
        assert resolve_tx.record_on_loop(recorder, large) is None
        assert resolve_tx.record_on_loop(recorder, bad) is None
        assert resolve_tx.record_on_loop(recorder, passthrough) is None
        # Nothing was taken: on a thread each is recorded (or refused) as it always was.
        assert recorder.record(busy).recorded
        assert recorder.record(large).recorded
        with pytest.raises(ResolverError):
            recorder.record(bad)
        assert recorder.record(passthrough).decision == "passthrough"
    finally:
        writer.close()


def recorded_then_hit(
    store: Store, response: ResponseIn, *, method: str = "GET"
) -> tuple[Resolver, list[str], Resolution]:
    """Branch root/a records `response` at /kept with a resolver whose recorder keeps answers;
    root/b then asks the same address: the resolver, the statements of that hit, and its answer."""
    resolver = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30)
    recorder = Recorder(store, max_body_bytes=1 << 20, keep=resolver.keep)
    forward = resolver.resolve(ask("/kept", "root/a").model_copy(update={"method": method}))
    assert isinstance(forward, Resolution) and forward.ticket is not None
    assert recorder.record(RecordRequest(ticket=forward.ticket, response=response)).recorded
    seen = statements_of(store)
    served = resolver.resolve(ask("/kept", "root/b").model_copy(update={"method": method}))
    assert isinstance(served, Resolution)
    return resolver, seen, served


def test_a_recorded_read_is_kept_so_its_first_hit_reads_no_exchange(store: Store) -> None:
    # A Set-Cookie value is stored as a placeholder: what is kept is the stored form, the
    # bytes a read of the store gives, not what the proxy sent.
    headers = [("X-A", "1"), ("Set-Cookie", "sid=secret-value; Path=/")]
    body = base64.b64encode(b"kept body").decode()
    _, seen, served = recorded_then_hit(store, ResponseIn(status=201, headers=headers, body=body))
    assert served.decision is Decision.SHARED
    assert not [s for s in seen if "gh_exchanges" in s or "gh_blobs" in s], seen
    # A resolver that kept nothing reads the exchange; it serves the same bytes.
    from_store = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30)
    again = from_store.resolve(ask("/kept", "root/c"))
    assert isinstance(again, Resolution) and again.decision is Decision.SHARED
    assert served.response == again.response
    assert served.exchange_id == again.exchange_id
    assert served.response is not None and "secret-value" not in str(served.response["headers"])


def test_a_write_and_a_large_read_are_not_kept(store: Store) -> None:
    large = base64.b64encode(bytes(record_outcomes.KEPT_MAX_BYTES + 1)).decode()
    resolver, seen, served = recorded_then_hit(
        store, ResponseIn(status=200, headers=[], body=large)
    )
    assert served.decision is Decision.SHARED
    assert [s for s in seen if s.startswith("SELECT") and "gh_exchanges" in s], seen
    assert len(resolver.cache) == 1  # put by that first hit, as before
    write = ResponseIn(status=200, headers=[], body=base64.b64encode(b"w").decode())
    writer = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30)
    recorder = Recorder(store, max_body_bytes=1 << 20, keep=writer.keep)
    forward = writer.resolve(ask("/written", "root/a").model_copy(update={"method": "POST"}))
    assert isinstance(forward, Resolution) and forward.ticket is not None
    assert recorder.record(RecordRequest(ticket=forward.ticket, response=write)).recorded
    assert len(writer.cache) == 0  # each lineage's write answer is its own, never by address


def test_the_app_keeps_what_its_routes_record(app_client: TestClient) -> None:
    app = cast(FastAPI, app_client.app)
    assert app_client.post("/v1/tapes", json={"name": "kept"}).status_code == 201
    fork = app_client.post("/v1/tapes/kept/fork", json={"parent": "root", "children": 2})
    a, b = fork.json()["branches"]
    wire = {"tape": "kept", "method": "GET", "host": "h", "port": 80, "path": "/r"}
    forward = app_client.post("/v1/resolve", json={**wire, "branch": a}).json()
    answer = {"status": 200, "headers": [], "body": base64.b64encode(b"live").decode()}
    recorded = app_client.post("/v1/record", json={"ticket": forward["ticket"], "response": answer})
    assert recorded.status_code == 200, recorded.text
    assert len(app.state.resolver.cache) == 1  # before any hit: the record kept it
    hit = app_client.post("/v1/resolve", json={**wire, "branch": b}).json()
    assert hit["decision"] == "shared"
    assert base64.b64decode(hit["response"]["body"]) == b"live"
