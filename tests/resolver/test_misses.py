"""Unit tests of resolver/misses.py: which recordings a sealed miss is explained against, and
the 502 it renders.

The explaining itself is engine/near_miss.py (tested there as pure functions) and the refusal's
wording is resolver/answers.py; this module is the store side between them. These tests record
a few real exchanges on an in-process store and ask `near_misses` and `sealed_miss` directly:
the candidates come from the asked host, else the asked method, never from another tape; every
recorded address of a candidate is listed; and the problem carries the older key versions the
tape holds even when they are not among the nearest.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import update

from engine.asks import Ask
from engine.keys import KEY_VERSION, request_key
from engine.near_miss import Recording
from engine.policy import Action, Decision
from engine.request import RequestParts
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution
from groundhog.protocol.wire import WireResponse
from resolver import misses
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn
from store.db import Store, transaction
from store.models import Exchange
from store.tapes import create_tape, get_tape, set_online
from tests.engine.test_facts import make_ask


@pytest.fixture
def resolver(store: Store) -> Resolver:
    return Resolver(store, max_body_bytes=1024, claim_seconds=30)


def wire(method: str, host: str, path: str, branch: str = "root/a", **query: str) -> ResolveRequest:
    return ResolveRequest(
        tape="t", branch=branch, method=method, scheme="http", host=host, port=80, path=path,
        query=list(query.items()),
    )  # fmt: skip


def record(store: Store, resolver: Resolver, request: ResolveRequest) -> None:
    forward = resolver.resolve(request)
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD, forward
    assert forward.ticket is not None
    body = base64.b64encode(b"answer").decode()
    Recorder(store, max_body_bytes=1024).record(
        RecordRequest(ticket=forward.ticket, response=ResponseIn(status=200, headers=[], body=body))
    )


def tape_id(store: Store, name: str = "t") -> int:
    with transaction(store.read) as session:
        tape = get_tape(name, session=session)
        assert tape is not None
        return tape.id


def asking(
    store: Store, method: str, host: str, path: str, *, occurrence: int = 0, **query: str
) -> Ask:
    """An ask on tape `t` for the request, keyed as the resolver keys it."""
    parts = RequestParts(method, "http", host, 80, path, tuple(query.items()))
    return make_ask(
        tape_id=tape_id(store), request=parts, key=request_key(parts), occurrence=occurrence,
        fingerprint="", true_fingerprint="",
    )  # fmt: skip


def problem(response: WireResponse) -> dict[str, Any]:
    assert response["body"] is not None
    body: dict[str, Any] = json.loads(base64.b64decode(response["body"]))
    return body


@pytest.fixture
def recorded(store: Store, resolver: Resolver) -> None:
    """On w.example: /search twice (occurrences 0 and 1), /docs/1, a POST; a GET elsewhere."""
    record(store, resolver, wire("GET", "w.example", "/search"))
    record(store, resolver, wire("GET", "w.example", "/search"))
    record(store, resolver, wire("GET", "w.example", "/docs/1"))
    record(store, resolver, wire("POST", "w.example", "/docs"))
    record(store, resolver, wire("GET", "elsewhere.example", "/search"))


def test_candidates_come_from_the_asked_host_with_every_recorded_address(
    store: Store, recorded: None
) -> None:
    with transaction(store.read) as session:
        near = misses.near_misses(session, asking(store, "GET", "w.example", "/search", q="x"))
    keys = [miss.key for miss in near]
    # Every recording on the host (any method) is a candidate; the other host's is not.
    assert sorted(keys) == sorted(
        f"{KEY_VERSION} {method} http://w.example{path}"
        for method, path in (("GET", "/search"), ("GET", "/docs/1"), ("POST", "/docs"))
    )
    nearest = near[0]
    assert nearest.key == f"{KEY_VERSION} GET http://w.example/search"
    assert nearest.recordings == (Recording(0, ""), Recording(1, ""))
    assert [(d.part, d.name, d.asked, d.recorded) for d in nearest.differences] == [
        ("query", "q", "x", None)
    ]


def test_the_same_request_asked_more_often_is_explained_by_its_occurrences(
    store: Store, recorded: None
) -> None:
    with transaction(store.read) as session:
        near = misses.near_misses(
            session, asking(store, "GET", "w.example", "/search", occurrence=2)
        )
    assert near[0].differences == ()
    assert "occurrence 2 is not recorded (recorded: 0, 1)" in near[0].summary


def test_without_the_host_the_candidates_are_the_same_method_anywhere(
    store: Store, recorded: None
) -> None:
    with transaction(store.read) as session:
        near = misses.near_misses(session, asking(store, "GET", "new.example", "/search"))
    keys = {miss.key for miss in near}
    assert f"{KEY_VERSION} POST http://w.example/docs" not in keys  # another method, host
    assert keys == {
        f"{KEY_VERSION} GET http://{host}{path}"
        for host, path in (
            ("w.example", "/search"), ("w.example", "/docs/1"), ("elsewhere.example", "/search")
        )
    }  # fmt: skip
    assert all([d.part for d in miss.differences][:1] == ["host"] for miss in near)


def test_nothing_alike_gives_no_near_misses_and_says_so(store: Store, recorded: None) -> None:
    ask = asking(store, "DELETE", "new.example", "/gone")
    with transaction(store.read) as session:
        assert misses.near_misses(session, ask) == []
        answer = misses.sealed_miss(session, ask)
    body = problem(answer)
    assert answer["status"] == 502 and body["nearest_keys"] == [] and body["near_misses"] == []
    assert body["detail"].endswith("the tape has nothing like it")


def test_another_tapes_recordings_are_never_candidates(store: Store, recorded: None) -> None:
    with transaction(store.write) as session:
        other = create_tape(
            session=session, name="other", world_seed=1, mode="groundhog", online=False,
            dependency_model="closure", config={},
        )  # fmt: skip
        other_id = other.id
    ask = replace(asking(store, "GET", "w.example", "/search"), tape_id=other_id)
    with transaction(store.read) as session:
        assert misses.near_misses(session, ask) == []


def test_a_sealed_miss_is_a_502_naming_the_nearest_and_carrying_extras(
    store: Store, recorded: None
) -> None:
    ask = asking(store, "GET", "w.example", "/search", q="x")
    with transaction(store.read) as session:
        near = misses.near_misses(session, ask)
        answer = misses.sealed_miss(session, ask, simulator_error="the simulator said no")
    body = problem(answer)
    assert answer["status"] == 502 and body["type"].endswith("/sealed-miss")
    assert body["request_key"] == ask.key.readable and body["tape"] == "t"
    assert body["near_misses"] == [miss.as_json() for miss in near]
    assert body["nearest_keys"] == [miss.key for miss in near]
    assert body["simulator_error"] == "the simulator said no"
    assert body["recorded_key_versions"] == []


def test_older_key_versions_are_named_even_when_not_among_the_nearest(
    store: Store, resolver: Resolver
) -> None:
    for path in ("/search", "/search/a", "/search/b", "/search/c", "/docs/1"):
        record(store, resolver, wire("GET", "w.example", path))
    old = f"{KEY_VERSION} GET http://w.example/docs/1"
    with transaction(store.write) as session:
        session.execute(
            update(Exchange)
            .where(Exchange.key_readable == old)
            .values(key_readable=old.replace(KEY_VERSION, "v0", 1))
        )
    ask = asking(store, "GET", "w.example", "/search", q="x")
    with transaction(store.read) as session:
        body = problem(misses.sealed_miss(session, ask))
    assert not [key for key in body["nearest_keys"] if key.startswith("v0 ")]
    assert body["recorded_key_versions"] == ["v0"]
    assert "key version v0" in body["detail"]


def test_the_resolve_path_refuses_with_this_answer(
    store: Store, resolver: Resolver, recorded: None
) -> None:
    with transaction(store.write) as session:
        tape = get_tape("t", session=session)
        assert tape is not None
        set_online(tape, False, session=session)
    refused = resolver.resolve(wire("GET", "w.example", "/search", branch="root/b", q="x"))
    assert isinstance(refused, Resolution) and refused.decision is Decision.REFUSED
    assert refused.response is not None
    with transaction(store.read) as session:
        assert problem(misses.sealed_miss(session, refused.ask)) == problem(refused.response)
