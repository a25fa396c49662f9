"""The processes a proxy measurement runs, and the tapes it opens on them.

`bench.proxy_perf` compares the Groundhog proxy with mitmproxy itself, so it starts, as their own
processes (none shares the load's GIL): a fixed upstream, the real resolver, Groundhog proxies,
plain mitmdumps (one as a server-replay), an instant stand-in resolver, and a sidecar of each
kind per sibling. Each is started on a free loopback port, awaited until it answers, and stopped
when the measurement ends however it ends (`children`), or a failed run leaves servers behind
and the next run measures the wrong ones.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.harness import (
    LOOPBACK,
    ChildService,
    await_child,
    free_port,
    spawn_child,
    start_child,
    wait_for_child,
)
from groundhog.lifetime import tied_command

logger = logging.getLogger(__name__)

BODY = json.dumps({"items": [{"id": i, "title": f"result {i}"} for i in range(24)]}).encode()


def instant_resolve_answer() -> bytes:
    """A fixed `/v1/resolve` hit answer, so the proxy's own cost can be told apart."""
    head = [["Content-Type", "application/json"], ["Content-Length", str(len(BODY))]]
    response = {"status": 200, "headers": head, "body": base64.b64encode(BODY).decode()}
    answer = {
        "action": "serve",
        "decision": "shared",
        "occurrence": 0,
        "fingerprint": "",
        "request_key": "0" * 64,
        "ticket": None,
        "upstream_headers": [],
        "response": response,
    }
    return json.dumps(answer).encode()


async def serve_fixed(
    host: str, port: int, body: bytes, listening: asyncio.Event | None = None
) -> None:
    """A minimal keep-alive HTTP/1.1 server answering every request with `body`; `listening`
    is set once it accepts connections."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: %d\r\n\r\n" % len(body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                request_head = await reader.readuntil(b"\r\n\r\n")
                for line in request_head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                writer.write(head + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, port)
    if listening is not None:
        listening.set()
    async with server:
        await server.serve_forever()


def start_mitmdump(name: str, arguments: Sequence[str], log_dir: Path) -> ChildService:
    child = spawn_mitmdump(name, arguments, log_dir)
    await_mitmdump(child)
    return child


def await_mitmdump(child: ChildService) -> None:
    wait_for_child(
        child.name,
        child.command,
        child.process,
        url=child.url,
        health="tcp",
        timeout=60,
        log_tail=child.log_tail,
    )


def spawn_mitmdump(name: str, arguments: Sequence[str], log_dir: Path) -> ChildService:
    """mitmdump with `arguments`, started but not yet awaited (`await_mitmdump`)."""
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from mitmproxy.tools.main import mitmdump; mitmdump()",
        "-q",
        "--listen-host",
        LOOPBACK,
        "--listen-port",
        str(port),
        *arguments,
    ]
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(tied_command(command), stdout=log_file, stderr=subprocess.STDOUT)
    return ChildService(name, command, port, process, log_path)


def resolver_arguments(work: Path, database_url: str | None) -> list[str]:
    """The real resolver's command: its tapes in a SQLite file under `work`, or `database_url`."""
    arguments = ["resolver", "--data", str(work)]
    if database_url:
        arguments += ["--database-url", database_url]
    return arguments


def proxy_arguments(resolver_url: str, work: Path) -> list[str]:
    """The Groundhog proxy's command, asking the resolver at `resolver_url`."""
    return ["proxy", "--resolver-url", resolver_url, "--data", str(work), "--log-level", "warn"]


def open_tape(
    resolver_url: str, tape: str, children: int, config: dict[str, Any] | None = None
) -> list[str]:
    """Create `tape` (with `config`) and fork `children` branches off its root; their names."""
    created = httpx.post(
        f"{resolver_url}/v1/tapes",
        json={"name": tape, **(config or {})},
        trust_env=False,
        timeout=30,
    )
    if created.status_code != 201:  # an earlier run's tape would mix its recordings into ours
        raise RuntimeError(f"tape {tape} not created: {created.status_code} {created.text:.300}")
    return fork_children(resolver_url, tape, children)


def fork_children(resolver_url: str, tape: str, children: int) -> list[str]:
    """Fork `children` branches off the root of `tape`, which exists already; their names."""
    forked = httpx.post(
        f"{resolver_url}/v1/tapes/{tape}/fork",
        json={"parent": "root", "children": children},
        trust_env=False,
        timeout=120,
    )
    forked.raise_for_status()
    branches: list[str] = forked.json()["branches"]
    return branches


def delete_tapes(resolver_url: str, tapes: Sequence[str]) -> None:
    """Remove this run's tapes from a database that outlives it (best effort, logged)."""
    for tape in tapes:
        try:
            answer = httpx.delete(f"{resolver_url}/v1/tapes/{tape}", trust_env=False, timeout=120)
        except httpx.HTTPError as error:
            logger.warning("could not delete tape %s: %s", tape, error)
            continue
        if answer.status_code not in (204, 404):
            logger.warning("could not delete tape %s: %s", tape, answer.status_code)


def start_upstream_and_resolver(
    work: Path, database_url: str | None, kids: list[ChildService]
) -> tuple[ChildService, ChildService]:
    """The fixed upstream (`bench.proxy_perf --serve-upstream`) and the real resolver, each put
    in `kids` as it starts so that a failed start still stops the other."""
    upstream = start_child(
        "upstream", ["bench.proxy_perf", "--serve-upstream"], health="tcp", log_dir=work
    )
    kids.append(upstream)
    resolver_command = resolver_arguments(work, database_url)
    resolver = start_child("resolver", resolver_command, health="http", log_dir=work)
    kids.append(resolver)
    return upstream, resolver


def start_proxy(name: str, resolver_url: str, work: Path, *extra: str) -> ChildService:
    """A Groundhog proxy on the resolver (`extra`: more flags, e.g. `--set` options)."""
    command = [*proxy_arguments(resolver_url, work), *extra]
    return start_child(name, command, health="tcp", log_dir=work)


def start_sidecars(
    resolver_url: str, work: Path, kids: list[ChildService], group: int
) -> tuple[list[ChildService], list[ChildService]]:
    """`group` - 1 more Groundhog proxies on the resolver and as many more mitmdumps, so each
    of a group's workers has a sidecar of its own (the first of each kind is the main one)."""
    proxies = []
    for index in range(1, group):
        data = work / f"sidecar-{index}"  # its own CA directory: no two proxies create one file
        data.mkdir()
        child = spawn_child(f"sidecar-{index}", proxy_arguments(resolver_url, data), log_dir=work)
        kids.append(child)
        proxies.append(child)
    plains = []
    for index in range(1, group):
        plain = spawn_mitmdump(f"mitmdump-sidecar-{index}", [], work)
        kids.append(plain)
        plains.append(plain)
    for child in proxies:
        await_child(child, health="tcp")
    for plain in plains:
        await_mitmdump(plain)
    return proxies, plains


@contextlib.contextmanager
def child_processes() -> Iterator[list[ChildService]]:
    """A list to put started children in; each is stopped, last first, when the block ends."""
    children: list[ChildService] = []
    try:
        yield children
    finally:
        for child in reversed(children):
            child.stop()
