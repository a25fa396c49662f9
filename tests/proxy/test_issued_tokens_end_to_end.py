"""Tokens the world issues, through the real proxy and resolver (issue 55, item 3).

A login answers with fresh random OAuth tokens (`access_token` and `refresh_token` in GitHub's
formats, an `id_token` JWT); an authorised read presents the access token. The recording branch
gets the real tokens and the world accepts them; a sealed sibling replaying the login is served
surrogates of the same shape, and its read presenting the surrogate is served from the tape as
the recording's. No stored byte — the SQLite files, the export, the events, exchanges and
viewer, a published dataset's Parquet — holds an issued token, and the audit is clean.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.secret_scans import published_values, recorded_then_replayed, stored_places
from tests.proxy.stack import Stack

Received = list[dict[str, Any]]


def _login_then_read(received: Received):
    def send_all(client: httpx.Client, base: str) -> list[str]:
        login = client.post(f"{base}/oauth/token", data={"grant_type": "password", "user": "ann"})
        assert login.status_code == 200, login.text
        tokens = login.json()
        me = client.get(f"{base}/me", headers={"Authorization": f"Bearer {tokens['access_token']}"})
        assert me.status_code == 200 and me.json() == {"user": "ann"}, me.text
        received.append(tokens)
        return [login.headers["x-groundhog-decision"], me.headers["x-groundhog-decision"]]

    return send_all


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Stack, str, list[str], list[str], Received]]:
    data = tmp_path_factory.mktemp("issued-tokens")
    received: Received = []
    with recorded_then_replayed(data, _login_then_read(received)) as (stack, tape, first, replay):
        yield stack, tape, first, replay, received


def _issued(received: Received) -> list[str]:
    live = received[0]
    return [live["access_token"], live["refresh_token"], live["id_token"]]


def test_the_login_records_and_replays_sealed_and_the_read_after_it_is_shared(recorded) -> None:
    _stack, _tape, first, replay, _received = recorded
    assert first == ["write", "refetched"]  # a read after a write of its origin
    assert replay == ["replayed-write", "shared"]


def test_the_replaying_branch_gets_surrogates_of_the_same_shape(recorded) -> None:
    _stack, _tape, _first, _replay, received = recorded
    live, replayed = received
    for field in ("access_token", "refresh_token"):
        real, surrogate = live[field], replayed[field]
        assert surrogate != real and len(surrogate) == len(real)
        assert surrogate[:4] == real[:4] and surrogate[4:].isalnum()
    header, payload, signature = replayed["id_token"].split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none", "typ": "JWT"}
    assert json.loads(base64.urlsafe_b64decode(payload + "=="))["sub"] == "groundhog-surrogate"
    assert signature and replayed["id_token"] != live["id_token"]
    assert replayed["token_type"] == "bearer" and replayed["expires_in"] == 3600


def test_no_stored_byte_holds_an_issued_token(recorded, tmp_path: Path) -> None:
    stack, tape, _first, _replay, received = recorded
    tokens = [token.encode() for token in _issued(received)]
    places = stored_places(stack, tape)
    places |= {
        f"Parquet {cell}": data for cell, data in published_values(stack, tape, tmp_path).items()
    }
    found = [
        f"token {i} in {where}"
        for where, data in places.items()
        for i, token in enumerate(tokens)
        if token in data
    ]
    assert found == []
    assert stack.admin("GET", f"/v1/tapes/{tape}/audit").json()["clean"] is True
