"""A stand-in for the proxy and a tiny world, so resolver tests speak the real internal protocol.

The test plays the proxy: it asks `/v1/resolve`, and on `forward` makes up the world's answer
from the branch's own sandbox state plus a fresh noise draw, then calls `/v1/record`. Every live
call draws new noise, so identical bytes across branches can only come from the tape.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class World:
    """Per-branch sandboxes of documents; every live call draws new noise."""

    documents: dict[str, dict[str, str]] = field(default_factory=dict)
    live_calls: int = 0
    _noise: Any = field(default_factory=lambda: itertools.count(1000))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, branch: str, method: str, host: str, path: str, body: bytes) -> dict[str, Any]:
        with self._lock:
            self.live_calls += 1
            noise = next(self._noise)
            sandbox = self.documents.setdefault(branch, {})
            if method == "POST":
                sandbox[path] = body.decode(errors="replace")
                content = {"written": path}
            else:
                content = {"path": path, "doc": sandbox.get(path), "noise": noise, "host": host}
        payload = json.dumps(content, sort_keys=True).encode()
        return {
            "status": 200,
            "headers": [["Content-Type", "application/json"], ["X-Dup", "1"], ["X-Dup", "2"]],
            "body": base64.b64encode(payload).decode(),
        }


@dataclass
class Served:
    decision: str
    status: int
    body: bytes
    occurrence: int
    fingerprint: str
    resolution: dict[str, Any]

    def json(self) -> Any:
        return json.loads(self.body)


class ProxyDouble:
    def __init__(self, base_url: str, world: World | None = None, token: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url, timeout=30.0, trust_env=False, headers=headers)
        # Tests drop their doubles without closing them: the pooled connections close with the
        # double, not whenever the garbage collector reaches the sockets (a ResourceWarning).
        weakref.finalize(self, self.http.close)
        self.world = world or World()

    def resolve(
        self,
        tape: str,
        branch: str,
        method: str = "GET",
        path: str = "/",
        *,
        host: str = "api.example.com",
        body: bytes = b"",
        query: list[list[str]] | None = None,
        headers: list[list[str]] | None = None,
        follow: bool = True,
    ) -> httpx.Response:
        """`/v1/resolve`; with `follow`, a `wait` answer is long-polled on `/v1/wait` to the end."""
        reply = self.http.post(
            "/v1/resolve",
            json={
                "tape": tape,
                "branch": branch,
                "method": method,
                "scheme": "https",
                "host": host,
                "port": 443,
                "path": path,
                "query": query or [],
                "headers": headers or [],
                "body": base64.b64encode(body).decode(),
            },
        )
        while follow and reply.status_code == 200 and reply.json()["action"] == "wait":
            reply = self.wait(reply.json()["wait"])
        return reply

    def wait(self, token: str) -> httpx.Response:
        return self.http.post("/v1/wait", json={"wait": token})

    def ask(
        self,
        tape: str,
        branch: str,
        method: str = "GET",
        path: str = "/",
        *,
        host: str = "api.example.com",
        body: bytes = b"",
        error: str | None = None,
        response_headers: list[list[str]] | None = None,
        **kwargs: Any,
    ) -> Served:
        reply = self.resolve(tape, branch, method, path, host=host, body=body, **kwargs)
        reply.raise_for_status()
        resolution = reply.json()
        decision = resolution["decision"]
        if resolution["action"] == "serve":
            response = resolution["response"]
        elif resolution["ticket"] is None:
            response = self.world.answer(branch, method, host, path, body)
        else:
            if error:
                record = {"ticket": resolution["ticket"], "error": {"kind": error, "message": "x"}}
            else:
                response = self.world.answer(branch, method, host, path, body)
                response["headers"] += response_headers or []
                record = {"ticket": resolution["ticket"], "response": response}
            recorded = self.http.post("/v1/record", json=record)
            recorded.raise_for_status()
            # Serve what the resolver says (the stored form); a null body is the one sent.
            served = recorded.json()["response"]
            if served["body"] is None:
                served["body"] = response["body"]
            response = served
            decision = recorded.json()["decision"]
        return Served(
            decision=decision,
            status=response["status"],
            body=base64.b64decode(response["body"]),
            occurrence=resolution["occurrence"],
            fingerprint=resolution["fingerprint"],
            resolution=resolution,
        )

    def open(self, name: str, **config: Any) -> dict[str, Any]:
        reply = self.http.post("/v1/tapes", json={"name": name, **config})
        assert reply.status_code in (200, 201), reply.text
        return reply.json()

    def fork(self, tape: str, parent: str = "root", children: int | list[str] = 2) -> list[str]:
        reply = self.http.post(
            f"/v1/tapes/{tape}/fork", json={"parent": parent, "children": children}
        )
        assert reply.status_code == 201, reply.text
        return reply.json()["branches"]
