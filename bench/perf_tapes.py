"""The tapes the resolver's speed rows ask: bulk-loaded, forked, and every ask a hit.

`bench.resolver_perf` and `bench.hit_inprocess` time a resolve hit by tape size, up to a million
exchanges: too many to record through HTTP in a benchmark's time, so `bulk_load` writes them
straight through the store, all at occurrence 0 with fingerprint "", and forks BRANCHES fresh
branches. A (branch, item) pair is then asked once only (`hit_bodies`), so every ask is a hit
and none is served from an earlier ask's occurrence; tape names carry the run's time
(`tape_name`), so a database holding earlier runs' tapes is no obstacle, and `drop_tapes`
leaves such a database as it was.
"""

from __future__ import annotations

import json
import logging
import random
import time
from typing import Any

from sqlalchemy import Table

from engine.keys import request_key
from engine.request import RequestParts
from store import exchanges
from store.branches import fork_branch, get_branch
from store.db import open_store, transaction
from store.models import Exchange
from store.tapes import create_tape, delete_tape, get_tape

logger = logging.getLogger(__name__)

HOST = "api.example.com"
BODY = json.dumps({"items": [{"id": i, "title": f"result {i}"} for i in range(24)]}).encode()
BRANCHES = 16
LOAD_CHUNK = 20_000


def item_request(index: int) -> RequestParts:
    return RequestParts("GET", "https", HOST, 443, f"/items/{index}", (("q", "x"),))


def bulk_load(url: str, tape: str, size: int) -> None:
    """A tape of `size` exchanges at occurrence 0, fingerprint "", plus fresh branches."""
    store = open_store(url)
    started = time.perf_counter()
    with transaction(store.write) as session:
        tape_row = create_tape(
            session=session,
            name=tape,
            world_seed=0,
            mode="groundhog",
            online=True,
            dependency_model="closure",
            config={},
        )
        root = get_branch(tape_row.id, "root", session=session)
        if root is None:
            raise RuntimeError(f"tape {tape} was created without a root branch")
        for index in range(BRANCHES):
            fork_branch(root, f"root/b{index}", {}, session=session)
        body_sha = exchanges.put_blob(BODY, session=session)
        empty_sha = exchanges.put_blob(b"", session=session)
        tape_id = tape_row.id
    headers = [["Content-Type", "application/json"]]
    # Declarative models type __table__ as any FromClause; only a Table has .insert().
    table = Exchange.__table__
    assert isinstance(table, Table)
    for start in range(0, size, LOAD_CHUNK):
        rows = []
        for index in range(start, min(size, start + LOAD_CHUNK)):
            request = item_request(index)
            key = request_key(request)
            rows.append(
                {
                    "tape_id": tape_id,
                    "key_hash": key.hash,
                    "occurrence": 0,
                    "fingerprint": "",
                    "key_readable": key.readable,
                    "request_method": "GET",
                    "request_host": HOST,
                    "request_url": request.url(),
                    "request_headers": [],
                    "request_body_sha": empty_sha,
                    "response_status": 200,
                    "response_headers": headers,
                    "response_body_sha": body_sha,
                }
            )
        with transaction(store.write) as session:
            session.execute(table.insert(), rows)
    store.dispose()
    logger.info("loaded %s exchanges into %s in %.1fs", size, tape, time.perf_counter() - started)


def tape_name(size: int) -> str:
    """A name no earlier or concurrent run used: a database may hold their tapes."""
    return f"perf-{size}-{time.time_ns()}"


def drop_tapes(url: str, names: list[str]) -> None:
    """Delete the named tapes (those that exist) from the store at `url`."""
    store = open_store(url)
    try:
        for name in names:
            with transaction(store.write) as session:
                tape = get_tape(name, session=session)
                if tape is not None:
                    delete_tape(tape, session=session)
    finally:
        store.dispose()


def resolve_body(tape: str, branch: str, index: int) -> dict[str, Any]:
    request = item_request(index)
    return {
        "tape": tape,
        "branch": branch,
        "method": "GET",
        "scheme": "https",
        "host": HOST,
        "port": 443,
        "path": request.path,
        "query": [list(p) for p in request.query],
        "headers": [],
        "body": "",
    }


def hit_bodies(tape: str, size: int, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """`count` distinct (branch, key) pairs: each is occurrence 0 on its branch, so a hit."""
    total = size * BRANCHES
    picks = rng.sample(range(total), min(count, total))
    return [resolve_body(tape, f"root/b{pick % BRANCHES}", pick // BRANCHES) for pick in picks]
