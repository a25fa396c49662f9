"""Unit tests for the ledger tap: ledger lines per acknowledged call, pass-through, 502."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bench.harness import free_port
from bench.reliability.tap import body_sha, create_app, ledger_entries, read_ledger
from engine.asks import Ask
from engine.dependencies import Classification
from engine.keys import RequestKey
from engine.policy import Decision, DependencyModel, Mode
from engine.request import RequestParts
from resolver import wait_tokens

SERVED = b'{"items": [1, 2, 3]}'
RECORDED = b"recorded body"


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_body_sha_hashes_the_decoded_bytes() -> None:
    assert body_sha(encoded(SERVED)) == hashlib.sha256(SERVED).hexdigest()
    empty = hashlib.sha256(b"").hexdigest()
    assert body_sha(None) == empty
    assert body_sha("") == empty


def test_resolve_entry_names_address_decision_and_served_bytes() -> None:
    asked = {"tape": "t", "branch": "root/b1", "method": "GET"}
    answer = {
        "action": "serve",
        "decision": "shared",
        "request_key": "k" * 64,
        "occurrence": 2,
        "fingerprint": "fp",
        "ticket": None,
        "response": {"status": 200, "headers": [], "body": encoded(SERVED)},
    }
    entry = ledger_entries("resolve", asked, answer)
    assert isinstance(entry.pop("t"), float)
    assert entry == {
        "route": "resolve",
        "tape": "t",
        "branch": "root/b1",
        "action": "serve",
        "decision": "shared",
        "request_key": "k" * 64,
        "occurrence": 2,
        "fingerprint": "fp",
        "ticket": None,
        "status": 200,
        "body_sha": hashlib.sha256(SERVED).hexdigest(),
    }


def test_resolve_entry_without_a_response_has_no_status_or_hash() -> None:
    answer = {"action": "fetch", "decision": "fresh", "ticket": "tk"}
    entry = ledger_entries("resolve", {"tape": "t", "branch": "root"}, answer)
    assert entry["status"] is None
    assert entry["body_sha"] is None
    assert entry["ticket"] == "tk"


def wait_token(tape: str, branch: str) -> str:
    """A real `/v1/wait` token for an ask on `tape`/`branch`."""
    ask = Ask(
        tape_id=1,
        tape_name=tape,
        mode=Mode.GROUNDHOG,
        online=True,
        model=DependencyModel.RULES,
        world_seed=0,
        cooperative=True,
        branch_id=2,
        branch=branch,
        request=RequestParts("GET", "http", "example.com", 80, "/item/1", (), (), b""),
        key=RequestKey("v1 GET http://example.com/item/1", "k" * 64),
        body_sha="0" * 64,
        classification=Classification(False, frozenset(), frozenset()),
        occurrence=0,
        true_fingerprint="",
        fingerprint="",
    )
    return wait_tokens.encode(ask, Decision.RECORDED)


def test_a_forward_granted_by_wait_is_a_resolve_line_of_the_waited_tape() -> None:
    # A waiter that takes over a lapsed claim goes live on this grant alone: the ledger must
    # hold it, on the tape and branch the token continues, like a forward from /v1/resolve.
    answer = {
        "action": "forward",
        "decision": "recorded",
        "request_key": "k" * 64,
        "occurrence": 0,
        "fingerprint": "",
        "ticket": "tk",
        "response": None,
    }
    entry = ledger_entries("wait", {"wait": wait_token("t", "root/b3")}, answer)
    assert entry["route"] == "resolve"
    assert entry["via"] == "wait"
    assert (entry["tape"], entry["branch"]) == ("t", "root/b3")
    assert (entry["action"], entry["ticket"], entry["request_key"]) == ("forward", "tk", "k" * 64)
    unreadable = ledger_entries("wait", {"wait": "not a token"}, answer)
    assert (unreadable["route"], unreadable["tape"], unreadable["ticket"]) == (
        "resolve",
        None,
        "tk",
    )


def test_record_entry_of_a_response() -> None:
    asked = {"ticket": "tk", "response": {"status": 201, "body": encoded(RECORDED)}}
    entry = ledger_entries("record", asked, {"exchange_id": 17, "decision": "fresh"})
    assert entry["kind"] == "response"
    assert entry["exchange_id"] == 17
    assert entry["status"] == 201
    assert entry["body_sha"] == hashlib.sha256(RECORDED).hexdigest()
    assert entry["error_kind"] is None


def test_record_entry_of_an_error_and_of_a_passthrough() -> None:
    error = ledger_entries("record", {"ticket": "a", "error": {"kind": "timeout"}}, {})
    assert (error["kind"], error["error_kind"], error["status"], error["body_sha"]) == (
        "error",
        "timeout",
        None,
        None,
    )
    passthrough = ledger_entries("record", {"ticket": "b"}, {"exchange_id": None})
    assert passthrough["kind"] == "passthrough"
    assert passthrough["error_kind"] is None


def test_read_ledger_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_ledger(tmp_path / "absent.jsonl") == []


def test_read_ledger_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"route":"resolve"}\n\n  \n{"route":"record"}\n')
    assert [entry["route"] for entry in read_ledger(path)] == ["resolve", "record"]


def fake_resolver() -> web.Application:
    """Resolve serves a body, wait grants a forward, record gives an id; else 404 or 200."""

    async def resolve(request: web.Request) -> web.Response:
        asked = await request.json()
        answer = {
            "action": "serve",
            "decision": "shared",
            "branch_seen": asked["branch"],
            "auth_seen": request.headers.get("Authorization"),
            "response": {"status": 200, "body": encoded(SERVED)},
        }
        return web.json_response(answer)

    async def record(request: web.Request) -> web.Response:
        return web.json_response({"exchange_id": 5, "decision": "fresh"})

    async def waited(request: web.Request) -> web.Response:
        return web.json_response({"action": "forward", "decision": "recorded", "ticket": "w"})

    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"detail": "no such tape"}, status=404)

    async def tapes(request: web.Request) -> web.Response:
        return web.json_response({"tapes": []})

    app = web.Application()
    app.router.add_post("/v1/resolve", resolve)
    app.router.add_post("/v1/record", record)
    app.router.add_post("/v1/wait", waited)
    app.router.add_post("/v1/refused/resolve", refuse)
    app.router.add_get("/v1/tapes", tapes)
    return app


def test_tap_forwards_and_ledgers_only_acknowledged_posts(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"

    async def run() -> None:
        async with TestServer(fake_resolver(), host="127.0.0.1") as resolver:
            target = str(resolver.make_url("/"))
            tap = create_app(target, ledger)
            async with TestClient(TestServer(tap, host="127.0.0.1")) as client:
                resolve = await client.post(
                    "/v1/resolve",
                    json={"tape": "t", "branch": "root/b0"},
                    headers={"Authorization": "Bearer s3cret"},
                )
                assert resolve.status == 200
                answer = await resolve.json()
                assert answer["branch_seen"] == "root/b0"
                assert answer["auth_seen"] == "Bearer s3cret"
                waited = await client.post("/v1/wait", json={"wait": wait_token("t", "root/b1")})
                assert (await waited.json())["ticket"] == "w"
                record = await client.post("/v1/record", json={"ticket": "tk"})
                assert (await record.json())["exchange_id"] == 5
                listing = await client.get("/v1/tapes")
                assert await listing.json() == {"tapes": []}
                refused = await client.post("/v1/refused/resolve", json={"tape": "x"})
                assert refused.status == 404

    asyncio.run(run())
    entries = read_ledger(ledger)
    assert [(entry["route"], entry["decision"]) for entry in entries] == [
        ("resolve", "shared"),
        ("resolve", "recorded"),
        ("record", "fresh"),
    ]
    assert entries[0]["body_sha"] == hashlib.sha256(SERVED).hexdigest()
    assert (entries[1]["via"], entries[1]["branch"], entries[1]["ticket"]) == (
        "wait",
        "root/b1",
        "w",
    )
    assert entries[2]["kind"] == "passthrough"
    assert json.loads(ledger.read_text().splitlines()[0])["branch"] == "root/b0"


def test_tap_answers_502_when_the_resolver_is_unreachable(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    # A port that was just free: nothing listens there.
    target = f"http://127.0.0.1:{free_port()}"

    async def run() -> None:
        async with TestClient(TestServer(create_app(target, ledger), host="127.0.0.1")) as client:
            response = await client.post("/v1/resolve", json={"tape": "t"})
            assert response.status == 502
            assert "resolver unreachable" in await response.text()

    asyncio.run(run())
    assert read_ledger(ledger) == []
