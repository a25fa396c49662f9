"""Tokens the world issues in answer to a *read*, through the real proxy and resolver (issue 55).

`GET /session` answers with fresh random tokens (GitHub-format `access_token` and
`refresh_token`, an `id_token` JWT); `GET /me` accepts only tokens the world issued. A read's
answer is served from its stored form, even to the branch whose request went live, so without
care that branch would get surrogates and the world would refuse them. The rule checked here:
the branch whose request went live, and whose answer became the recording, gets the real
tokens (and the world takes them); a sibling served the recording — replaying it sealed, or
waiting on the same live read (the group's first fetch) — gets surrogates of the same shape,
deterministic per tape and branch, which key as the originals when presented. No stored byte
(data directory, export, events, viewer, a published dataset's Parquet) holds an issued token.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from groundhog.protocol.surrogates import served_with_surrogates
from tests.proxy.clients import proxy_url
from tests.proxy.secret_scans import published_values, stored_places
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream
from tests.resolver.test_resolution import single_flight_waits
from tests.support.servers import wait_until

FIELDS = ("access_token", "refresh_token", "id_token")
ISSUED_PLACEHOLDER = re.compile(r"\[redacted:issued\.[^\]]+\]")


@dataclass
class Visit:
    """What one branch got: the session read's tokens and decision, then `/me` with its
    access token (status, body, decision)."""

    tokens: dict[str, Any] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    me: tuple[int, Any] = (0, None)


@dataclass
class Run:
    stack: Stack
    upstream: Upstream
    replayed: str  # the tape recorded on root/a and replayed sealed on root/b
    waited: str  # the tape whose root/a and root/b asked the session read at once
    visits: dict[tuple[str, str], Visit] = field(default_factory=dict)

    def issued(self) -> list[str]:
        with self.upstream.state.lock:
            return list(self.upstream.state.issued)


def _client(stack: Stack, tape: str, branch: str) -> httpx.Client:
    return httpx.Client(
        proxy=proxy_url(stack.proxy.port, tape, branch), timeout=60, trust_env=False
    )


def _session(client: httpx.Client, base: str, visit: Visit, *, hold: bool = False) -> None:
    answer = client.get(f"{base}/session", params={"hold": "1"} if hold else {})
    assert answer.status_code == 200, answer.text
    visit.tokens = answer.json()
    visit.decisions.append(answer.headers["x-groundhog-decision"])


def _me(client: httpx.Client, base: str, visit: Visit) -> None:
    bearer = {"Authorization": f"Bearer {visit.tokens['access_token']}"}
    answer = client.get(f"{base}/me", headers=bearer)
    visit.me = (answer.status_code, answer.json())
    visit.decisions.append(answer.headers["x-groundhog-decision"])


def _replayed(run: Run) -> None:
    """root/a reads the session live, then `/me`; the tape is sealed; root/b does the same."""
    stack, base, tape = run.stack, run.upstream.url, run.replayed
    stack.fork(tape, ["a", "b"])
    for branch in ("root/a", "root/b"):
        if branch == "root/b":
            stack.seal(tape)
        visit = run.visits.setdefault((tape, branch), Visit())
        with _client(stack, tape, branch) as client:
            _session(client, base, visit)
            _me(client, base, visit)


def _waited(run: Run) -> None:
    """root/a and root/b ask the session read at once: one goes live, the other waits on it.
    Then the one that went live presents its token to `/me` first, the other after it."""
    stack, upstream, tape = run.stack, run.upstream, run.waited
    branches = ("root/a", "root/b")
    stack.fork(tape, ["a", "b"])
    visits = {branch: run.visits.setdefault((tape, branch), Visit()) for branch in branches}
    clients = {branch: _client(stack, tape, branch) for branch in branches}
    try:
        sessions_before = upstream.state.count("/session")
        waits_before = single_flight_waits(stack.resolver.url)
        upstream.state.gate.clear()
        with ThreadPoolExecutor(len(branches)) as pool:
            asked = [
                pool.submit(_session, clients[b], upstream.url, visits[b], hold=True)
                for b in branches
            ]
            try:
                wait_until(
                    lambda: upstream.state.count("/session") == sessions_before + 1,
                    what="the group's first fetch of the session read",
                )
                wait_until(
                    lambda: single_flight_waits(stack.resolver.url) > waits_before,
                    what="the sibling waiting on it",
                )
            finally:
                upstream.state.gate.set()
            for future in asked:
                future.result()
        live_first = sorted(branches, key=lambda b: visits[b].decisions[0] != "recorded")
        for branch in live_first:
            _me(clients[branch], upstream.url, visits[branch])
    finally:
        for client in clients.values():
            client.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    data = tmp_path_factory.mktemp("issued-tokens-read")
    with Upstream(name="world") as upstream, running_stack(data) as stack:
        result = Run(stack, upstream, stack.open_tape(), stack.open_tape())
        _replayed(result)
        _waited(result)
        yield result


def _assert_surrogates_of(surrogates: dict[str, Any], real: dict[str, Any]) -> None:
    for name in ("access_token", "refresh_token"):
        assert surrogates[name] != real[name] and len(surrogates[name]) == len(real[name])
        assert surrogates[name][:4] == real[name][:4] and surrogates[name][4:].isalnum()
    header, payload, _signature = surrogates["id_token"].split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none", "typ": "JWT"}
    assert json.loads(base64.urlsafe_b64decode(payload + "=="))["sub"] == "groundhog-surrogate"
    # A JWT's surrogate is a JWT (its length is not kept: its header and payload are its own).
    assert surrogates["id_token"] != real["id_token"]
    assert surrogates["token_type"] == "bearer" and surrogates["expires_in"] == 3600


def test_the_branch_whose_read_went_live_gets_the_real_tokens_and_the_world_takes_them(
    run: Run,
) -> None:
    recorder = run.visits[(run.replayed, "root/a")]
    assert recorder.decisions == ["recorded", "recorded"]
    assert [recorder.tokens[name] for name in FIELDS] == run.issued()[:3]
    assert recorder.me == (200, {"user": "ann"})


def test_a_sealed_sibling_replaying_it_gets_surrogates_that_key_as_the_originals(
    run: Run,
) -> None:
    recorder = run.visits[(run.replayed, "root/a")]
    replayer = run.visits[(run.replayed, "root/b")]
    assert replayer.decisions == ["shared", "shared"]
    _assert_surrogates_of(replayer.tokens, recorder.tokens)
    assert not set(replayer.tokens.values()) & set(run.issued())
    # Its `/me` presented the surrogate and was keyed as the recorder's: served from the tape.
    assert replayer.me == (200, {"user": "ann"})


def test_the_surrogates_are_deterministic_per_tape_and_branch(run: Run) -> None:
    stack, tape = run.stack, run.replayed
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": "root/a"})
    ids = [e["exchange_id"] for e in events.json()["events"] if e["exchange_id"]]
    stored = [stack.admin("GET", f"/v1/tapes/{tape}/exchanges/{i}").json() for i in ids]
    (session,) = [e for e in stored if e["request"]["url"].endswith("/session")]
    body = base64.b64decode(session["response"]["body"]).decode()
    assert len(ISSUED_PLACEHOLDER.findall(body)) == len(FIELDS)
    replayer = run.visits[(tape, "root/b")]
    assert json.loads(served_with_surrogates(body, tape, "root/b")) == replayer.tokens
    others = json.loads(served_with_surrogates(body, run.waited, "root/b"))
    assert all(others[name] != replayer.tokens[name] for name in FIELDS)


def test_of_siblings_waiting_on_one_live_read_only_the_one_that_went_live_gets_real_tokens(
    run: Run,
) -> None:
    visits = {b: run.visits[(run.waited, b)] for b in ("root/a", "root/b")}
    assert run.upstream.state.count("/session") == 2  # once per tape: the waiter never went live
    first = {b: v.decisions[0] for b, v in visits.items()}
    assert sorted(first.values()) == ["recorded", "shared"], first
    (live,) = [visits[b] for b, decision in first.items() if decision == "recorded"]
    (waiter,) = [visits[b] for b, decision in first.items() if decision == "shared"]
    assert [live.tokens[name] for name in FIELDS] == run.issued()[3:6]
    _assert_surrogates_of(waiter.tokens, live.tokens)
    # The live branch's token reached the world; the waiter's surrogate was keyed as it.
    assert live.me == (200, {"user": "ann"}) and live.decisions[1] == "recorded"
    assert waiter.me == (200, {"user": "ann"}) and waiter.decisions[1] == "shared"
    assert run.upstream.state.count("/me") == 2  # once per tape


def test_no_stored_byte_holds_an_issued_token(run: Run, tmp_path: Path) -> None:
    stack = run.stack
    tokens = [token.encode() for token in run.issued()]
    assert len(tokens) == 6
    places: dict[str, bytes] = {}
    for tape in (run.replayed, run.waited):
        places |= {f"{tape}: {where}": data for where, data in stored_places(stack, tape).items()}
        places |= {
            f"{tape} Parquet {cell}": data
            for cell, data in published_values(stack, tape, tmp_path / tape).items()
        }
        assert stack.admin("GET", f"/v1/tapes/{tape}/audit").json()["clean"] is True
    found = [
        f"token {i} in {where}"
        for where, data in places.items()
        for i, token in enumerate(tokens)
        if token in data
    ]
    assert found == []
