"""`python -m bench.reliability.tap`: a pass-through between proxy and resolver that keeps a ledger.

"Every exchange acknowledged before the crash survives it" can only be checked against what was
really acknowledged: the resolver's `200` to `/v1/record`, and the bytes `/v1/resolve` served.
The tap forwards every call unchanged and, before answering, appends one JSON line per
acknowledgement (flushed, so it outlives any other process) naming the address, the exchange id
and the SHA-256 of the body. When the resolver is unreachable it answers 502, which the proxy
treats like an unreachable resolver (503 to the worker, nothing forwarded).

A resolve that answers `wait` is continued on `/v1/wait`, whose answer has the shape of a
resolve: it can serve the address, or hand this asker a `forward` (its holder's claim lapsed or
it released the claim) — a live call granted there and nowhere else. So `/v1/wait` answers are
ledgered as `resolve` lines too (`via: "wait"`), with the tape and branch read from the token.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

import aiohttp
from aiohttp import web

from resolver import wait_tokens
from resolver.errors import InvalidInput

SKIPPED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
LEDGER = web.AppKey("ledger", TextIO)
TARGET = web.AppKey("target", str)
SESSION = web.AppKey("session", aiohttp.ClientSession)


def body_sha(encoded: str | None) -> str:
    return hashlib.sha256(base64.b64decode(encoded or "")).hexdigest()


def waited_ask(token: Any) -> dict[str, Any]:
    """The tape and branch a `/v1/wait` token continues (empty if it cannot be read)."""
    try:
        ask = wait_tokens.decode(token)
    except (InvalidInput, TypeError, AttributeError):
        return {}
    return {"tape": ask.tape_name, "branch": ask.branch}


def ledger_entries(route: str, asked: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The ledger line for one acknowledged call (a `/v1/wait` answer is a `resolve` line)."""
    entry: dict[str, Any] = {"t": time.time(), "route": route}
    if route == "wait":
        entry.update(route="resolve", via="wait")
        asked = waited_ask(asked.get("wait"))
    if entry["route"] == "resolve":
        response = answer.get("response")
        entry.update(
            tape=asked.get("tape"),
            branch=asked.get("branch"),
            action=answer.get("action"),
            decision=answer.get("decision"),
            request_key=answer.get("request_key"),
            occurrence=answer.get("occurrence"),
            fingerprint=answer.get("fingerprint"),
            ticket=answer.get("ticket"),
            status=response.get("status") if isinstance(response, dict) else None,
            body_sha=body_sha(response.get("body")) if isinstance(response, dict) else None,
        )
    else:
        recorded = asked.get("response")
        entry.update(
            ticket=asked.get("ticket"),
            exchange_id=answer.get("exchange_id"),
            decision=answer.get("decision"),
            kind="response" if recorded else ("error" if asked.get("error") else "passthrough"),
            error_kind=(asked.get("error") or {}).get("kind"),
            status=recorded.get("status") if recorded else None,
            body_sha=body_sha(recorded.get("body")) if recorded else None,
        )
    return entry


async def _forward(request: web.Request) -> web.Response:
    app = request.app
    body = await request.read()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in SKIPPED_HEADERS}
    try:
        async with app[SESSION].request(
            request.method,
            app[TARGET] + request.rel_url.raw_path_qs,
            headers=headers,
            data=body or None,
            timeout=aiohttp.ClientTimeout(total=120),
        ) as answer:
            content = await answer.read()
            status = answer.status
            content_type = answer.headers.get("Content-Type", "application/octet-stream")
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        return web.Response(status=502, text=f"tap: resolver unreachable: {error}")
    route = request.path.rsplit("/", 1)[-1]
    if status == 200 and request.method == "POST" and route in ("resolve", "wait", "record"):
        entry = ledger_entries(route, json.loads(body), json.loads(content))
        ledger = app[LEDGER]
        ledger.write(json.dumps(entry, separators=(",", ":")) + "\n")
        ledger.flush()
    return web.Response(body=content, status=status, headers={"Content-Type": content_type})


def create_app(target: str, ledger_path: Path) -> web.Application:
    app = web.Application(client_max_size=256 * 1024 * 1024)
    app[TARGET] = target.rstrip("/")
    app[LEDGER] = ledger_path.open("a", encoding="utf-8")

    async def session_context(app: web.Application) -> AsyncIterator[None]:
        app[SESSION] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=256), trust_env=False
        )
        yield
        await app[SESSION].close()
        app[LEDGER].close()

    app.cleanup_ctx.append(session_context)
    app.router.add_route("*", "/{tail:.*}", _forward)
    return app


def read_ledger(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability.tap")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--target", required=True, help="the resolver's base URL")
    parser.add_argument("--ledger", type=Path, required=True)
    args = parser.parse_args(argv)
    app = create_app(args.target, args.ledger)
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
