"""Shared by the end-to-end secret tests: record a set of requests through the real proxy, replay
them on a sealed sibling, and read back every place a secret could have landed."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pandas as pd

from groundhog.client import Groundhog
from groundhog.dataset.folder import TABLES, table_file
from groundhog.dataset.publish import publish
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


SIBLINGS = ("root/a", "root/b")


def event_and_exchange_pages(
    stack: Stack, tape: str, branches: tuple[str, ...] = SIBLINGS
) -> tuple[dict[str, bytes], set[int]]:
    """Each branch's events page (by branch) and the ids of the exchanges they name."""
    pages: dict[str, bytes] = {}
    ids: set[int] = set()
    for branch in branches:
        events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branch})
        pages[branch] = events.content
        ids |= {e["exchange_id"] for e in events.json()["events"] if e["exchange_id"]}
    return pages, ids


def stored_places(
    stack: Stack, tape: str, branches: tuple[str, ...] = SIBLINGS
) -> dict[str, bytes]:
    """Every place a recorded byte can be read back, by name: each file of the data directory,
    the export, each branch's events and timeline, each named exchange in the API and viewer."""
    places: dict[str, bytes] = {
        str(path.relative_to(stack.data_dir)): path.read_bytes()
        for path in stack.data_dir.rglob("*")
        if path.is_file()
    }
    assert "groundhog.sqlite3" in places
    places["export"] = stack.admin("GET", f"/v1/tapes/{tape}/export").content
    pages, ids = event_and_exchange_pages(stack, tape, branches)
    for branch, page in pages.items():
        places[f"events of {branch}"] = page
        timeline = stack.admin("GET", f"/ui/tapes/{tape}/timeline", params={"branch": branch})
        places[f"timeline of {branch}"] = timeline.content
    for exchange_id in sorted(ids):
        for route in (
            f"/v1/tapes/{tape}/exchanges/{exchange_id}",
            f"/ui/tapes/{tape}/exchanges/{exchange_id}",
        ):
            places[route] = stack.admin("GET", route).content
    return places


def published_values(stack: Stack, tape: str, folder: Path) -> dict[str, bytes]:
    """Each cell of a published dataset's Parquet tables, as bytes, by `table.column[row]`."""
    published = publish(Groundhog(stack.resolver.url), tape, folder)
    assert published.audit.clean
    cells: dict[str, bytes] = {}
    for table in TABLES:
        frame = pd.read_parquet(table_file(published.folder, table))
        for column in frame.columns:
            for row, value in enumerate(frame[column]):
                data = value if isinstance(value, bytes) else str(value).encode()
                cells[f"{table}.{column}[{row}]"] = data
    return cells
