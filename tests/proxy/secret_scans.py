"""Shared by the end-to-end secret tests: record a set of requests through the real proxy, replay
them on a sealed sibling, and read back every place a secret could have landed."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx

from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream

SendAll = Callable[[httpx.Client, str], list[str]]


def spellings(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [
        raw,
        quote(secret, safe="").encode(),
        quote_plus(secret).encode(),
        base64.b64encode(raw),
        base64.b64encode(raw).rstrip(b"="),
        base64.urlsafe_b64encode(raw).rstrip(b"="),
    ]


@contextlib.contextmanager
def recorded_then_replayed(
    data: Path, send_all: SendAll
) -> Iterator[tuple[Stack, str, list[str], list[str]]]:
    """(stack, tape, decisions recording on root/a, decisions replaying on root/b sealed), the
    requests sent to an upstream that echoes everything it received."""
    with Upstream(name="echo") as upstream, running_stack(data) as stack:
        tape = stack.open_tape()
        stack.fork(tape, ["a", "b"])
        decisions = []
        for branch in ("root/a", "root/b"):
            if branch == "root/b":
                stack.seal(tape)
            with httpx.Client(
                proxy=proxy_url(stack.proxy.port, tape, branch), timeout=30, trust_env=False
            ) as client:
                decisions.append(send_all(client, upstream.url))
        yield stack, tape, decisions[0], decisions[1]


def event_and_exchange_pages(stack: Stack, tape: str) -> tuple[dict[str, bytes], set[int]]:
    """Each branch's events page (by branch) and the ids of the exchanges they name."""
    pages: dict[str, bytes] = {}
    ids: set[int] = set()
    for branch in ("root/a", "root/b"):
        events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branch})
        pages[branch] = events.content
        ids |= {e["exchange_id"] for e in events.json()["events"] if e["exchange_id"]}
    return pages, ids
