"""resolver/resolve_tx, the one door: each call runs on the event loop where the store lets it
without waiting and on a thread otherwise, with the same answer; the plain routes answer the
proxy's calls where uvicorn's protocol does not."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engine.policy import Action, Decision
from engine.resolve_results import Resolution, Waiting
from resolver import resolve_tx
from resolver.app import create_app
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.resolve_tx import Lane, lane_of
from resolver.schemas import RecordRequest, ResponseIn
from resolver.settings import load_settings
from store.db import Store
from store.loop_writes import LoopWriter
from tests.resolver.test_hit_path import ask, branch_rows, record


@pytest.fixture
def writer(store: Store) -> Iterator[LoopWriter]:
    made = LoopWriter.for_store(store)
    assert made is not None
    yield made
    made.close()


class Threads:
    """Counts the calls the door hands to a worker thread (starlette's `run_in_threadpool`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = resolve_tx.run_in_threadpool

        async def counted(function: Callable[..., Any], *args: Any) -> Any:
            self.calls.append(getattr(function, "__name__", repr(function)))
            return await real(function, *args)

        monkeypatch.setattr(resolve_tx, "run_in_threadpool", counted)


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> Threads:
    return Threads(monkeypatch)


def answer_of(body: bytes) -> ResponseIn:
    return ResponseIn(status=200, headers=[], body=base64.b64encode(body).decode())


def test_the_lane_is_the_loop_only_where_the_store_has_a_loop_writer(
    store: Store, writer: LoopWriter
) -> None:
    assert (lane_of(writer), lane_of(None)) == (Lane.LOOP, Lane.THREAD)
    with pytest.raises(ValueError, match="'loop', 'thread'"):
        Lane("fiber")


def test_a_hit_is_settled_on_the_loop_without_a_thread(
    store: Store, writer: LoopWriter, threads: Threads
) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    record(store, resolver, "/x", "root/a", b"answer")
    served = asyncio.run(resolve_tx.resolve(resolver, ask("/x", "root/b")))
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert threads.calls == []


def test_a_resolve_that_would_wait_runs_whole_on_a_thread(
    store: Store, writer: LoopWriter, threads: Threads
) -> None:
    """Another writer holds SQLite's lock: the loop lane takes nothing, the thread lane waits
    for the lock and gives the same answer, counting the occurrence once."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    record(store, resolver, "/x", "root/a", b"answer")
    assert store.write_lock is not None
    held, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        with store.write_lock:  # type: ignore[union-attr]
            held.set()
            release.wait(60)

    holder = threading.Thread(target=other_writer)
    holder.start()
    held.wait(60)

    async def resolve_then_release() -> Resolution | Waiting:
        task = asyncio.ensure_future(resolve_tx.resolve(resolver, ask("/x", "root/b")))
        give_up = asyncio.get_running_loop().time() + 60
        while not threads.calls:  # the loop lane declined; the thread lane is waiting
            assert asyncio.get_running_loop().time() < give_up, "no thread lane was taken"
            await asyncio.sleep(0)
        release.set()
        return await task

    try:
        served = asyncio.run(resolve_then_release())
    finally:
        release.set()
        holder.join()
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert served.ask.occurrence == 0 and len(threads.calls) == 1
    events, counters = branch_rows(store, "root/b")
    assert events == [(1, "shared", 0)] and list(counters.values()) == [1]


def test_without_a_loop_writer_every_call_goes_to_a_thread(store: Store, threads: Threads) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    recorder = Recorder(store, max_body_bytes=1024)
    forward = asyncio.run(resolve_tx.resolve(resolver, ask("/y", "root/a")))
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
    waiting = asyncio.run(resolve_tx.resolve(resolver, ask("/y", "root/b")))
    assert isinstance(waiting, Waiting)
    assert isinstance(asyncio.run(resolve_tx.poll(resolver, waiting)), Waiting)
    assert forward.ticket is not None
    wire = RecordRequest(ticket=forward.ticket, response=answer_of(b"y"))
    assert asyncio.run(resolve_tx.record(recorder, wire)).recorded
    served = asyncio.run(resolve_tx.poll(resolver, waiting))
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert len(threads.calls) == 5


def test_a_small_record_is_committed_on_the_loop_and_a_large_one_on_a_thread(
    store: Store, writer: LoopWriter, threads: Threads
) -> None:
    resolver = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30, loop_writer=writer)
    recorder = Recorder(store, max_body_bytes=1 << 20, loop_writer=writer)
    small, large = (resolver.resolve(ask(path, "root/a")) for path in ("/s", "/l"))
    assert isinstance(small, Resolution) and small.ticket is not None
    assert isinstance(large, Resolution) and large.ticket is not None
    wire = RecordRequest(ticket=small.ticket, response=answer_of(b"s"))
    assert asyncio.run(resolve_tx.record(recorder, wire)).recorded
    assert threads.calls == []
    wire = RecordRequest(ticket=large.ticket, response=answer_of(bytes(64 * 1024)))
    assert asyncio.run(resolve_tx.record(recorder, wire)).recorded
    assert threads.calls == ["record"]


def test_a_record_that_fails_on_the_loop_releases_its_claim_on_a_thread(
    store: Store, writer: LoopWriter, threads: Threads, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    recorder = Recorder(store, max_body_bytes=1024, loop_writer=writer)
    forward = resolver.resolve(ask("/f", "root/a"))
    assert isinstance(forward, Resolution) and forward.ticket is not None

    def broken(*_args: Any) -> None:
        raise OSError("disk I/O error")

    monkeypatch.setattr(recorder, "_commit", broken)
    wire = RecordRequest(ticket=forward.ticket, response=answer_of(b"f"))
    with pytest.raises(OSError, match="disk I/O error"):
        asyncio.run(resolve_tx.record(recorder, wire))
    assert threads.calls == ["fail"]
    # Released: a sibling's ask takes the address over at once instead of waiting on it.
    sibling = resolver.resolve(ask("/f", "root/b"))
    assert isinstance(sibling, Resolution) and sibling.action is Action.FORWARD


def test_the_plain_routes_answer_the_proxys_calls_with_the_apps_problems(
    tmp_path: Path,
) -> None:
    """Under an ASGI server that is not uvicorn (here Starlette's test client) no protocol
    lane runs: FastAPI's routes answer, with the guard, FastAPI's 422 shape and its 405."""
    app = create_app(load_settings(data_dir=tmp_path, proxy_token="proxy-secret"))
    with TestClient(app) as client:
        auth = {"Authorization": "Bearer proxy-secret"}
        refused = client.post("/v1/wait", json={"wait": "x"})
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        invalid = client.post("/v1/wait", json={}, headers=auth)
        assert invalid.status_code == 422
        assert invalid.json()["errors"][0]["field"] == "wait"
        assert client.get("/v1/resolve", headers=auth).status_code == 405
        missing = client.post(
            "/v1/resolve",
            json={"tape": "nope", "branch": "root", "method": "GET", "host": "h", "port": 80},
            headers=auth,
        )
        assert missing.status_code == 404
        assert missing.json()["type"].endswith("/not-found")
