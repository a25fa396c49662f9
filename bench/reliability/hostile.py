"""Hand-made hostile input against the real resolver and proxy: traversal names, huge headers
and bodies, invalid UTF-8, deeply nested JSON, gzip bombs.

Each case says what a correct answer looks like: a clear 4xx (problem+json where Groundhog
answers), or — where the design forwards the request (a bomb is keyed by the hash of its raw
bytes) — the world's own answer. Never a 5xx of ours, never a dead process, and never a jump in
resident memory that would show an unbounded allocation.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.reliability.client import Answer, direct, through_proxy
from bench.reliability.processes import scenario_children
from bench.reliability.stack import Stack, start_stack
from groundhog.protocol import headers as protocol_headers

BOMB_DECOMPRESSED_BYTES = 512 * 1024 * 1024
MEMORY_JUMP_LIMIT_KIB = 192 * 1024
NESTING = 100_000


@dataclass
class Case:
    name: str
    expect: str  # "4xx": a clear refusal; "answered": the world's answer or a clear 4xx
    send: Callable[[Stack, str, list[str]], Answer]


def gzip_bomb() -> bytes:
    """A gzip body of about 500 KiB that inflates to 512 MiB."""
    buffer = io.BytesIO()
    block = b"\0" * (1024 * 1024)
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as compressor:
        for _ in range(BOMB_DECOMPRESSED_BYTES // len(block)):
            compressor.write(block)
    return buffer.getvalue()


def _raw(proxy_url: str, request: bytes) -> Answer:
    """Send raw bytes to the proxy (for what no HTTP client will send) and read the status."""
    split = urlsplit(proxy_url)
    with socket.create_connection((split.hostname, split.port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data:
        return Answer(None, error="connection closed with no answer")
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    content_type = ""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-type":
            content_type = value.strip().decode("latin-1")
    return Answer(status, content_type=content_type, body=rest)


def _resolve(stack: Stack, tape: str, branch: str, **changes: Any) -> Answer:
    payload: dict[str, Any] = {
        "tape": tape,
        "branch": branch,
        "method": "POST",
        "scheme": "http",
        "host": "127.0.0.1",
        "port": stack.upstream.port,
        "path": "/docs/hostile",
        "query": [],
        "headers": [["Content-Type", "application/json"]],
        "body": "",
    }
    payload.update(changes)
    return direct("POST", f"{stack.resolver.url}/v1/resolve", json=payload)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _cases(bomb: bytes) -> list[Case]:
    nested = b"[" * NESTING + b"]" * NESTING

    def admin(method: str, route: str, **kwargs: Any) -> Callable[[Stack, str, list[str]], Answer]:
        return lambda stack, _tape, _branches: direct(method, stack.resolver.url + route, **kwargs)

    def proxied(method: str, path: str, **kwargs: Any) -> Callable[[Stack, str, list[str]], Answer]:
        return lambda stack, tape, branches: through_proxy(
            stack.proxies[0].url,
            stack.upstream.url + path,
            tape=tape,
            branch=branches[0],
            method=method,
            **kwargs,
        )

    json_type = {"Content-Type": "application/json"}
    bomb_headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    return [
        Case(
            "traversal: tape ../ in path", "4xx", admin("GET", "/v1/tapes/..%2F..%2Fetc%2Fpasswd")
        ),
        Case("traversal: export ../", "4xx", admin("GET", "/v1/tapes/..%2F..%2Fetc/export")),
        Case("traversal: tape name '..'", "4xx", admin("GET", "/v1/tapes/%2E%2E")),
        Case(
            "traversal: open tape '../x'",
            "4xx",
            admin("POST", "/v1/tapes", json={"name": "../outside"}),
        ),
        Case(
            "traversal: import as '../x'",
            "4xx",
            admin("POST", "/v1/tapes/import?name=..%2F..%2Foutside", content=b"SQLite format 3\0"),
        ),
        Case(
            "traversal: fork child '../x'",
            "4xx",
            lambda stack, tape, _b: direct(
                "POST",
                f"{stack.resolver.url}/v1/tapes/{tape}/fork",
                json={"parent": "root", "children": ["../x"]},
            ),
        ),
        Case(
            "traversal: branch 'root/../x'",
            "4xx",
            lambda stack, tape, _b: direct(
                "GET", f"{stack.resolver.url}/v1/tapes/{tape}/branches/root%2F..%2Fx"
            ),
        ),
        Case(
            "admin: deeply nested JSON",
            "4xx",
            admin("POST", "/v1/tapes", content=nested, headers=json_type),
        ),
        Case(
            "admin: invalid UTF-8 JSON",
            "4xx",
            admin("POST", "/v1/tapes", content=b'{"name": "\xff\xfe"}', headers=json_type),
        ),
        Case(
            "admin: 32 MiB JSON body",
            "4xx",
            admin(
                "POST",
                "/v1/tapes",
                content=b'{"name": "' + b"a" * (32 * 1024 * 1024) + b'"}',
                headers=json_type,
            ),
        ),
        Case(
            "resolve: body over max_body_bytes",
            "4xx",
            lambda stack, tape, b: _resolve(stack, tape, b[0], body=_b64(b"x" * (9 * 1024 * 1024))),
        ),
        Case(
            "resolve: body not base64",
            "4xx",
            lambda stack, tape, b: _resolve(stack, tape, b[0], body="%%%not-base64%%%"),
        ),
        Case(
            "resolve: deeply nested JSON body",
            "answered",
            lambda stack, tape, b: _resolve(stack, tape, b[0], body=_b64(nested)),
        ),
        Case(
            "resolve: gzip bomb body",
            "answered",
            lambda stack, tape, b: _resolve(
                stack,
                tape,
                b[0],
                headers=[["Content-Type", "application/json"], ["Content-Encoding", "gzip"]],
                body=_b64(bomb),
            ),
        ),
        Case(
            "resolve: 10,000 headers",
            "answered",
            lambda stack, tape, b: _resolve(
                stack, tape, b[0], headers=[[f"X-H{i}", "v"] for i in range(10_000)]
            ),
        ),
        Case(
            "proxy: gzip bomb body",
            "answered",
            proxied("POST", "/docs/bomb", content=bomb, headers=bomb_headers),
        ),
        Case(
            "proxy: deeply nested JSON body",
            "answered",
            proxied("POST", "/docs/nested", content=nested, headers=json_type),
        ),
        Case(
            "proxy: invalid UTF-8 JSON body",
            "answered",
            proxied("POST", "/docs/utf8", content=b'{"a": "\xff\xfe\xfd"}', headers=json_type),
        ),
        Case(
            "proxy: 1 MiB header value",
            "answered",
            proxied("GET", "/item/huge-header", headers={"X-Huge": "a" * (1024 * 1024)}),
        ),
        Case(
            "proxy: 5,000 headers",
            "answered",
            proxied("GET", "/item/many-headers", headers=[(f"X-H{i}", "v") for i in range(5000)]),
        ),
        Case(
            "proxy: 64 MiB body (over the record limit)",
            "answered",
            proxied("POST", "/docs/huge", content=b"x" * (64 * 1024 * 1024)),
        ),
        Case(
            "proxy: invalid UTF-8 in path, query and header",
            "answered",
            lambda stack, tape, b: _raw(
                stack.proxies[0].url,
                b"GET " + stack.upstream.url.encode() + b"/item/\xff\xfe?q=\xc3\x28 HTTP/1.1\r\n"
                b"Host: "
                + stack.upstream.url.split("//")[1].encode()
                + b"\r\n"
                + protocol_headers.TAPE.encode()
                + b": "
                + tape.encode()
                + b"\r\n"
                + protocol_headers.BRANCH.encode()
                + b": "
                + b[0].encode()
                + b"\r\n"
                b"X-Bad: \xff\xfe\r\nConnection: close\r\n\r\n",
            ),
        ),
    ]


def _verdict(case: Case, answer: Answer) -> bool:
    if answer.status is None:
        return False
    if case.expect == "4xx":
        return 400 <= answer.status < 500
    return answer.status < 500


def run_hostile(root: Path | None = None) -> dict[str, Any]:
    bomb = gzip_bomb()
    with scenario_children("gh-hostile-", root) as (base, group):
        stack = start_stack(group, base)
        tape, branches = stack.open_tape("hostile", 2)
        results = []
        for case in _cases(bomb):
            before = {p.name: p.rss_kib() or 0 for p in (stack.resolver, *stack.proxies)}
            answer = case.send(stack, tape, branches)
            after = {p.name: p.rss_kib() or 0 for p in (stack.resolver, *stack.proxies)}
            jump = max(after[name] - before[name] for name in before)
            alive = stack.resolver.alive() and all(p.alive() for p in stack.proxies)
            results.append(
                {
                    "case": case.name,
                    "expect": case.expect,
                    "status": answer.status,
                    "problem": answer.is_problem,
                    "decision": answer.decision,
                    "error": answer.error,
                    "detail": _detail(answer),
                    "rss_jump_mib": round(jump / 1024, 1),
                    "alive": alive,
                    "held": _verdict(case, answer) and alive and jump < MEMORY_JUMP_LIMIT_KIB,
                }
            )
        outside = [*base.rglob("outside*"), *base.parent.glob("outside*")]
        return {
            "cases": results,
            "tried": len(results),
            "files_written_outside": [str(p) for p in outside],
            "held": all(r["held"] for r in results) and not outside,
        }


def _detail(answer: Answer) -> str:
    if not answer.is_problem:
        return answer.body[:120].decode(errors="replace")
    try:
        return str(json.loads(answer.body).get("detail", ""))[:200]
    except ValueError:
        return ""
