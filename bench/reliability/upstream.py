"""`python -m bench.reliability.upstream`: a small world that counts and logs every call.

The reliability checks must know exactly when and how often anything reached the world: a call
that arrives while the resolver is down and that no resolver granted is a silent live call.
Every answer carries a per-path call number, so two recordings of one address would differ in
bytes and be caught. Fault routes make the world time out, reset the connection, answer 5xx
or set a cookie, so the proxy's handling of each can be checked.

Routes (counted): `/item/...` 200 JSON; `POST /docs/...` 201; `/slow/...?delay=S` sleeps;
`/slow-once/...?delay=S` sleeps on the first call only; `/reset/...` resets the connection;
`/status/CODE` answers CODE; `/big/...?size=N` answers N bytes; `/cookie` sets a secret
cookie; `/echo` echoes request headers.
Not counted: `/healthz`, `/_stats`, `/_log`, `/_headers?path=P` (headers of the last call to P).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import time
from collections import Counter

from aiohttp import web

STATS = web.AppKey("stats", dict)
SECRET_COOKIE = "session=upstream-secret-cookie-7f3a"


def _json(payload: object, status: int = 200, **headers: str) -> web.Response:
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return web.Response(
        text=body, status=status, content_type="application/json", headers=headers or None
    )


async def _world(request: web.Request) -> web.StreamResponse:
    stats = request.app[STATS]
    path = request.path
    body = await request.read()
    stats["per_path"][path] += 1
    number = stats["per_path"][path]
    stats["log"].append([time.time(), request.method, path])
    stats["headers"][path] = [[name, value] for name, value in request.headers.items()]
    if path.startswith("/slow/") or (path.startswith("/slow-once/") and number == 1):
        await asyncio.sleep(float(request.query.get("delay", "5")))
    if path.startswith("/reset/"):
        transport = request.transport
        assert transport is not None
        raw = transport.get_extra_info("socket")
        if raw is not None:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        return web.Response(status=500)
    if path.startswith("/status/"):
        code = int(path.split("/")[2])
        return _json({"world_error": code, "call": number}, status=code)
    if path.startswith("/big/"):
        size = int(request.query.get("size", "100000"))
        return web.Response(body=(path.encode() + b"|") * (size // (len(path) + 1) + 1))
    if path == "/cookie":
        return _json({"call": number}, **{"Set-Cookie": SECRET_COOKIE})
    if path == "/echo":
        return _json({"headers": [[k, v] for k, v in request.headers.items()], "call": number})
    if request.method == "POST":
        return _json({"written": path, "bytes": len(body), "call": number}, status=201)
    return _json({"path": path, "query": request.query_string, "call": number})


async def _stats(request: web.Request) -> web.Response:
    stats = request.app[STATS]
    return _json({"calls": sum(stats["per_path"].values()), "by_path": stats["per_path"]})


async def _log(request: web.Request) -> web.Response:
    return _json({"log": request.app[STATS]["log"]})


async def _headers(request: web.Request) -> web.Response:
    seen = request.app[STATS]["headers"].get(request.query.get("path", ""), [])
    return _json({"headers": seen})


async def _healthz(_request: web.Request) -> web.Response:
    return _json({"status": "ok"})


def create_app() -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[STATS] = {"per_path": Counter(), "log": [], "headers": {}}
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/_stats", _stats)
    app.router.add_get("/_log", _log)
    app.router.add_get("/_headers", _headers)
    app.router.add_route("*", "/{tail:.*}", _world)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability.upstream")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args(argv)
    web.run_app(
        create_app(),
        host=args.host,
        port=args.port,
        print=None,
        access_log=None,
        shutdown_timeout=1.0,
    )


if __name__ == "__main__":
    main()
